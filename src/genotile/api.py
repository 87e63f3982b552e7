"""Python API: all pairs (or triples) of an array or a file, in this process, as pandas / numpy / scipy.

`pairwise(x, metric=...)` (and `triplewise(x)` for ccc3) runs the pipeline's own stages -- the
store's ingest, plan and pack (store/) and `compute_tile` (pairs/tile.py) for every tile of the
plan -- without Snakemake, and keeps the result in memory: the same numbers `genotile run` and
the workflow write (tests/test_api.py compares them). An array goes to the store's ingest as an
input of its own reader (io/readers/array.py), and from there to the packer, in memory: no file
is opened for writing unless `workdir=` names a folder for the stages' files. A genotype file's
codes are held in memory too; a FASTA file's where it is a regular alignment that fits, else
they are written to a scratch folder removed at the end.

x is a file (FASTA alignment, VCF/BCF, a PLINK fileset named by its .bed / .pgen, or a VCF-Zarr
.vcz directory) or an array: genotypes as ALT allele counts of shape **(samples, variants)** -- 0,
1, 2, missing as a negative number, NaN or 255 -- for ibs, king, ccc2 and ccc3; an alignment (a
sequence of str or bytes, or an (n, length) array of one-character strings or of printable ASCII
codes) for snp and hamming. A value that does not fit is refused naming the array, the value and its
position (io/readers/array.py). scikit-allel's and sgkit's genotypes, which hold variants first,
are read in their own orientation, and a pandas object's index names its rows
(io/readers/array_objects.py); `rows="variants"` reads a plain (variants, samples) array such
as allel's `to_n_alt()`.

The defaults are the workflow's (config/config.yaml): `block_size="auto"` (store/stage.py
resolve_auto_block_size; ccc3's blocks ccc3.CPU_BLOCK_SIZE), `seed=1`, the matrix kept up
to `dense_max` 20,000 vectors. A threshold is checked as the workflow checks one
(core/limits.check_threshold): a finite number or None.
"""

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genotile import backends, settings
from genotile.core import ccc3
from genotile.core.encodings import ENCODINGS
from genotile.core.limits import check_threshold
from genotile.core.metrics import get_metric
from genotile.core.registry import REGISTRY
from genotile.errors import GenotileError
from genotile.io.readers.array import AlignmentArray, GenotypeArray
from genotile.io.readers.array_objects import alignment_of, check_rows, genotypes_of
from genotile.pairs.tile import compute_tile
from genotile.store import stage
from genotile.store.ingest import ingest
from genotile.store.inputs import check_against, check_input, inputs_of, metric_encoding
from genotile.store.pack import layout_from_json, open_store, pack

DENSE_MAX = 20000  # the workflow's default dense_max: a matrix is kept up to this many vectors
TRIPLEWISE_MAX = 20_000_000  # passing triples triplewise holds in memory (88 bytes each in its arrays)
PAIRWISE = tuple(name for name, facts in REGISTRY.items() if facts.workload == "pairs")


@dataclass(repr=False)
class PairwiseResult:
    """The pairs of one metric, in input order.

    Attributes
    ----------
    metric : str
        The metric's name.
    ids : list of str
        Vector IDs in input order (samples, sequences or, for ccc2, variants).
    a, b : numpy.ndarray of int64, shape (pairs,)
        Input indices of each passing pair, a < b, sorted by a then b.
    values : dict of str to numpy.ndarray, each of shape (pairs,)
        The metric's columns (as in pairs.tsv.gz) for each pair.
    dense : numpy.ndarray of shape (n, n) or None
        The matrix of the metric's matrix column (as matrix.tsv), when it was kept: int64 for
        the counts of snp and hamming, float64 for the others.
    threshold : float or None
        The threshold the pairs passed.
    n_query : int
        A query (``against=``): the first n_query IDs are the input's, the others the FILE's;
        every pair is a < n_query <= b, ``matrix()`` is (n_query, n_against) and ``to_sparse()``
        too (rows the input, columns the FILE). 0: all pairs of one set.
    """

    metric: str
    ids: list[str]
    a: np.ndarray
    b: np.ndarray
    values: dict[str, np.ndarray]
    dense: np.ndarray | None = None
    threshold: float | None = None
    transposed: tuple = field(default=())
    dense_column: str = ""
    n_query: int = 0

    def __repr__(self) -> str:
        """One line: the metric, its sizes and settings, never the arrays (thousands of values)."""
        kept = "not kept" if self.dense is None else f"{self.dense.shape} {self.dense.dtype}"
        return (
            f"PairwiseResult(metric={self.metric!r}, vectors={len(self.ids)}, pairs={self.a.size}, "
            f"threshold={self.threshold!r}, columns={list(self.values)}, matrix={kept})"
        )

    @property
    def pairs(self):
        """pandas.DataFrame with columns id1, id2 and the metric's columns: pairs.tsv.gz's rows."""
        pd = _pandas()
        ids = np.asarray(self.ids, dtype=object)
        return pd.DataFrame({"id1": ids[self.a], "id2": ids[self.b], **self.values})

    def matrix(self) -> np.ndarray:
        """The dense (n, n) matrix of the metric's matrix column (matrix.tsv's values).

        Kept when the result was computed with ``matrix=True`` (by default up to 20,000 vectors).
        """
        if self.dense is None:
            raise GenotileError("no dense matrix was kept: call pairwise(..., matrix=True)")
        return self.dense

    def to_sparse(self, column: str | None = None):
        """scipy.sparse.csr_array (n, n) of a column over the passing pairs, both (a, b) and (b, a).

        For an asymmetric pair of columns (ccc2's ccc_01 and ccc_10), entry (b, a) of one holds
        the other's value at (a, b), so the array reads value(row vector, column vector). The
        diagonal and the pairs that did not pass the threshold are not stored.
        """
        from scipy import sparse

        column = column or self.dense_column
        if column not in self.values:
            raise GenotileError(f"{self.metric} has no column {column!r}; columns: {', '.join(self.values)}")
        partner = dict(self.transposed) | {c2: c1 for c1, c2 in self.transposed}
        upper = self.values[column]
        lower = self.values[partner.get(column, column)]
        n = len(self.ids)
        if self.n_query:  # a query's rectangle: (input, FILE), each pair once
            shape = (self.n_query, n - self.n_query)
            return sparse.csr_array((upper, (self.a, self.b - self.n_query)), shape=shape)
        data = np.concatenate([upper, lower])
        rows, cols = np.concatenate([self.a, self.b]), np.concatenate([self.b, self.a])
        return sparse.csr_array((data, (rows, cols)), shape=(n, n))


@dataclass(repr=False)
class TriplewiseResult:
    """The triples of variants under ccc3, in input order.

    Attributes
    ----------
    ids : list of str
        Variant IDs in input order.
    a, b, c : numpy.ndarray of int64, shape (triples,)
        Input indices of each passing triple, a < b < c, sorted by a, then b, then c.
    values : dict of str to numpy.ndarray of float64, each of shape (triples,)
        ccc_000 ... ccc_111 of each triple.
    threshold : float or None
        The threshold the triples passed.
    metric : str
        "ccc3".
    """

    ids: list[str]
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    values: dict[str, np.ndarray]
    threshold: float | None = None
    metric: str = ccc3.NAME

    def __repr__(self) -> str:
        """One line: sizes and settings, never the arrays."""
        return (
            f"TriplewiseResult(metric={self.metric!r}, vectors={len(self.ids)}, triples={self.a.size}, "
            f"threshold={self.threshold!r}, columns={list(self.values)})"
        )

    @property
    def triples(self):
        """pandas.DataFrame with columns id1, id2, id3 and ccc_000 ... ccc_111: triples.tsv.gz's
        rows (what `triplewise` returned itself before it returned this object)."""
        pd = _pandas()
        ids = np.asarray(self.ids, dtype=object)
        return pd.DataFrame({"id1": ids[self.a], "id2": ids[self.b], "id3": ids[self.c], **self.values})


def _pandas():
    try:
        import pandas
    except ImportError:
        raise GenotileError("the result's tables need pandas: pip install 'genotile[api]'") from None
    return pandas


def _reader_options(samples, regions, filter_pass, multiallelic) -> dict:
    """The file readers' options (the config's names) that were given: pairwise's and triplewise's."""
    given = {"samples": samples, "regions": regions, "filter_pass": filter_pass, "multiallelic": multiallelic}
    return {k: v for k, v in given.items() if v is not None}


def _threshold(threshold):
    """The threshold, checked as the workflow checks one (core/limits.check_threshold: a finite
    number or None; NaN would keep nothing and an infinity all or nothing, each silently). A
    numpy scalar counts as its number."""
    if isinstance(threshold, np.generic):
        threshold = threshold.item()
    check_threshold(threshold, "threshold")
    return threshold


def _array_input(x, encoding: str, ids, rows) -> GenotypeArray | AlignmentArray:
    """The reader of an array for a store of `encoding` (io/readers/array.py), its values checked.

    Another library's object is first read in its own orientation, with the names it carries
    (io/readers/array_objects.py); `ids`, where given, name the vectors instead.
    """
    if not ENCODINGS[encoding].genotypes:
        if rows == "variants":
            raise GenotileError("rows='variants' is for genotypes; an alignment's rows are its sequences")
        sequences, names = alignment_of(x)
        return AlignmentArray(sequences, names if ids is None else ids)
    g, samples, variants = genotypes_of(x, rows)
    if ENCODINGS[encoding].transposed:  # vectors are variants (ccc2, ccc3)
        return GenotypeArray(g, samples=samples, variants=variants if ids is None else ids)
    return GenotypeArray(g, samples=samples if ids is None else ids, variants=variants)


def _files(x, what: str = "x"):
    """`x` as the store takes it where it is a list of pathlib.Path objects: two or more as the list
    of their paths, one as its path (store/inputs.given); anything else (an array, a sequence of
    str: an alignment's sequences) as it is, and False. `what`: the argument, as messages name it."""
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, os.PathLike) for p in x):
        from genotile.store.inputs import given

        return given(list(x)), True
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, str) and os.path.isfile(p) for p in x):
        # names of files read as sequences would be compared as sequences, silently
        raise GenotileError(
            f"{what}: a list of str is an alignment's sequences, but these name files ({', '.join(x[:3])}"
            f"{', ...' if len(x) > 3 else ''}): give pathlib.Path objects to read them as one input"
        )
    return x, False


def _query_part(x, metric_name: str, ids, rows, options: dict, what: str, listed: bool = False):
    """One side of a query (store/query.py Part): a file (or, `listed`, a list of files read as
    one: `_files`) read with the reader options, or an array read by its reader."""
    from genotile.io.readers.query import Part
    from genotile.store.query import read_side

    encoding = metric_encoding(metric_name)
    if listed or isinstance(x, (str, os.PathLike)):
        if ids is not None:
            raise GenotileError(f"{what}ids: a file names its own vectors; ids are for arrays")
        check_input(x, [metric_name], options)
        return read_side(x, encoding, options)[0]
    if options:
        raise GenotileError(
            f"option(s) {', '.join(sorted(options))} apply to {inputs_of('genotypes')}, not to an array"
        )
    reader = _array_input(x, encoding, ids, rows)
    name = "the array against" if what else "the array x"
    if isinstance(reader, AlignmentArray):
        return Part(name, reader.sha256(), reader.ids, reader.rows)
    if ENCODINGS[encoding].transposed:
        return Part(name, reader.sha256(), reader.variants, reader.codes, reader.samples)
    return Part(name, reader.sha256(), reader.samples, reader.codes, reader.variants)


def _query_store(x, against, metric_name: str, ids, against_ids, rows, options: dict, block_size, seed: int, **auto):
    """_store's query form (store/query.py): x's vectors then against's, in memory."""
    from genotile.store import query

    (x, files), (against, listed) = _files(x), _files(against, "against")  # files, or lists of pathlib.Path objects
    if (files or isinstance(x, (str, os.PathLike))) and (listed or isinstance(against, (str, os.PathLike))):
        check_input(x, [metric_name], options)
        check_against(x, against, [metric_name], options)
    encoding = metric_encoding(metric_name)
    made = query.ingest_query(
        _query_part(x, metric_name, ids, rows, options, "", files),
        _query_part(against, metric_name, against_ids, rows, options, "against: ", listed),
        encoding,
    )
    plan = query.plan_query(made.manifest, block_size, seed, **auto)
    perm = plan.permutation()
    store, planes = pack(made.stored, made.manifest, plan, perm, None, None)
    return planes, layout_from_json(store["layout"]), perm, plan, store["ids"]


def _store(x, metric_name: str, ids, rows, options: dict, block_size, seed: int, workdir, **auto):
    """The store stage (store/: ingest, plan, pack) of `x` for a metric, in memory, or with its
    files in `workdir`; returns (planes, layout, perm, plan, ids). `auto`: stage.plan's keywords
    that size `block_size="auto"` (metrics, backend, dense_max).

    An array is read by its reader in memory and packed from its codes; a genotype file from its
    reader's blocks of codes held in memory; a FASTA file held in memory where it is a regular
    alignment that fits (io/readers/fasta.py), else its codes written to a scratch folder,
    removed at the end. Nothing else is written unless `workdir` names a folder for every file.
    """
    encoding = metric_encoding(metric_name)
    source: str | os.PathLike | GenotypeArray | AlignmentArray
    x, listed = _files(x)
    if listed and isinstance(x, list):  # files read as one input, the reader options applied to each
        from genotile.store.listed import read_list

        if ids is not None or rows is not None:
            raise GenotileError("ids, rows: files name and orient their own vectors; ids and rows are for arrays")
        check_input(x, [metric_name], options)
        source, options = read_list(x, encoding, options, hold=False), {}
    elif isinstance(x, (str, os.PathLike)):
        if ids is not None:
            raise GenotileError("ids: a file names its own vectors; ids are for arrays")
        if rows is not None:
            raise GenotileError("rows: a file's orientation is its format's; rows is for arrays")
        check_input(x, [metric_name], options)
        source = x
    else:
        if options:
            raise GenotileError(
                f"option(s) {', '.join(sorted(options))} apply to {inputs_of('genotypes')}, not to an array"
            )
        source = _array_input(x, encoding, ids, rows)
    names = ("codes.npy", "ingest.json", "plan.json", "perm.npy", "planes.npy", "store.json")
    files: dict[str, Path | None] = dict.fromkeys(names)
    if workdir is not None:  # every stage's file, asked for
        Path(workdir).mkdir(parents=True, exist_ok=True)
        files = {name: Path(workdir) / name for name in names}
    fasta_file = isinstance(source, (str, os.PathLike)) and not ENCODINGS[encoding].genotypes
    with contextlib.ExitStack() as scratch:
        if fasta_file and workdir is None:  # a FASTA file's codes where it is not held in memory
            files["codes.npy"] = (
                Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="genotile."))) / "codes.npy"
            )
        # a FASTA file held where it can be (nothing written); not a .bed's bits (they pack to a file)
        hold = fasta_file and workdir is None
        made = ingest(source, encoding, files["codes.npy"], files["ingest.json"], hold=hold, **options)
        plan = stage.plan(made.manifest, block_size, seed, files["plan.json"], files["perm.npy"], **auto)
        perm = plan.permutation()
        store, planes = pack(made.stored, made.manifest, plan, perm, files["planes.npy"], files["store.json"])
        if planes is None:  # written (workdir=): read back as a tile reads it
            mapped, store, _ = open_store(files["planes.npy"], files["store.json"])
            planes = np.array(mapped)
    return planes, layout_from_json(store["layout"]), perm, plan, store["ids"]


def pairwise(
    x,
    metric: str = "king",
    *,
    threshold: float | None = None,
    backend: str = "auto",
    ids=None,
    rows: str | None = None,
    matrix: bool | None = None,
    params: dict | None = None,
    block_size: int | str = "auto",
    seed: int = 1,
    samples=None,
    regions=None,
    filter_pass: bool | None = None,
    multiallelic: str | None = None,
    workdir=None,
    against=None,
    against_ids=None,
) -> PairwiseResult:
    """Every pair of vectors of `x` under one metric, as the pipeline computes it.

    Parameters
    ----------
    x : str, os.PathLike, array_like, pandas object, scikit-allel or sgkit genotypes
        A file: FASTA alignment (plain or gzip), VCF/BCF, a PLINK fileset named by its .bed or
        .pgen, or a VCF-Zarr .vcz directory. Or genotypes (ibs, king, ccc2): an array of shape
        **(samples, variants)** -- rows are samples, columns variants -- of ALT allele counts 0,
        1, 2, a missing call negative (-1), NaN or 255; a pandas DataFrame of the same (its index
        names the samples); scikit-allel's GenotypeArray or HaplotypeArray, or an sgkit Dataset
        (its call_genotype), each read in its own orientation, **variants first**. Or an
        alignment (snp, hamming): a sequence of n str / bytes of one length (a pandas Series: its
        index names them), or an (n, length) array of characters or printable ASCII codes. Or a
        list of files of one kind as `pathlib.Path` objects (a list of str is an alignment's
        sequences), read as one input in their order: FASTA files of one length, or genotype
        inputs with the same variants (the workflow's list `input:`, store/listed.py).
    metric : {"snp", "hamming", "ibs", "king", "ccc2"}
        The metric (README "What it computes"); ccc3 is `triplewise`.
    threshold : float, optional
        Keep the pairs at or below it (snp, hamming, ibs) or at or above it (king; ccc2: any
        column); a finite number. None keeps every pair.
    backend : str
        "auto", "numba", "numpy", "numpy-popcount", "cupy-b1" or "cupy-int8"; every backend
        gives the same numbers.
    ids : sequence of str, optional
        Names of an array's vectors (samples; for ccc2 the variants; for an alignment the
        sequences). Default: the names the input carries (a DataFrame's index or columns, an
        sgkit Dataset's sample_id / variant_id), else "0", "1", ...
    rows : {"samples", "variants"}, optional
        What the rows of a plain genotype array (or DataFrame) hold: "samples" (the default) or
        "variants", for a (variants, samples) array such as scikit-allel's ``to_n_alt()`` or a
        VCF's order. allel's and sgkit's own objects need no `rows`: they say their orientation.
    matrix : bool, optional
        Keep the dense (n, n) matrix (`PairwiseResult.matrix()`); default: up to 20,000 vectors
        (the workflow's dense_max).
    params : dict, optional
        The metric's parameters (ccc2: ``{"multiplier": 4.5, "param": 2/3}``).
    block_size : int or "auto"
        Vectors per block of the tile plan (no effect on the numbers); "auto", the workflow's
        default, sizes them by the work and memory of a tile.
    seed : int
        The plan's permutation seed (no effect on the numbers).
    samples, regions, filter_pass, multiallelic
        The VCF options of the config (VCF/BCF, PLINK and VCF-Zarr inputs only).
    workdir : str or os.PathLike, optional
        Write every stage's file here (codes.npy, ingest.json, plan.json, perm.npy, planes.npy,
        store.json); by default the store is made in memory (a FASTA file that is not held
        writes its codes to a scratch folder, removed).
    against : str, os.PathLike, list of pathlib.Path or array_like, optional
        Query mode: every vector of `x` against every vector of this (a file or array of x's
        kind: an alignment of the same length, genotypes of the same variants; for ccc2 the same
        samples), the cross pairs only: id1 from `x`, id2 from `against` (a name may be in both).
        The two are encoded together, as the workflow's `against:` does. A list of
        pathlib.Path objects is files of one kind read as one, in their order (as `x`).
    against_ids : sequence of str, optional
        Names of `against`'s vectors where it is an array (as `ids`).

    Returns
    -------
    PairwiseResult
        ``.pairs`` (pandas.DataFrame: id1, id2 and the metric's columns, pairs.tsv.gz's rows),
        ``.matrix()`` (numpy (n, n): int64 for snp and hamming, float64 for the others),
        ``.to_sparse()`` (scipy.sparse (n, n)), and the raw arrays ``.a``, ``.b``, ``.values``.

    Raises
    ------
    GenotileError
        One line naming the argument or the input and the problem: an unknown metric, a
        threshold that is not a finite number, genotypes given to snp or hamming (or sequences
        to a genotype metric), a value that is no genotype, no samples or variants, repeated IDs.

    Examples
    --------
    >>> import numpy as np, genotile
    >>> g = np.array([[0, 1, 2, 1], [0, 1, 2, 2], [2, 1, -1, 0]])  # 3 samples x 4 variants
    >>> r = genotile.pairwise(g, metric="ibs", backend="numpy", ids=["a", "b", "c"])
    >>> r
    PairwiseResult(metric='ibs', vectors=3, pairs=3, threshold=None,
                   columns=['ibs_count', 'n', 'dist_1ibs'], matrix=(3, 3) float64)
    >>> print(r.pairs.to_string(index=False))
    id1 id2  ibs_count  n  dist_1ibs
      a   b          1  4   0.125000
      a   c          3  3   0.500000
      b   c          4  3   0.666667
    >>> r.matrix()[0]
    array([0.   , 0.125, 0.5  ])
    >>> r = genotile.pairwise(g, metric="king", threshold=0.0442, backend="numpy", ids=["a", "b", "c"])
    >>> print(r.pairs.to_string(index=False))
    id1 id2  nsnp  hethet  ibs0  kinship
      a   b     4       1     0     0.25
    >>> genotile.pairwise(g.T, metric="king", threshold=0.0442, backend="numpy", rows="variants").a.tolist()
    [0]
    >>> r = genotile.pairwise(["ACGTN", "ACGAA", "TCGTA"], metric="snp", threshold=1, backend="numpy")
    >>> print(r.pairs.to_string(index=False))
    id1 id2  snp
      0   1    1
      0   2    1
    >>> r.matrix()
    array([[0, 1, 1],
           [1, 0, 2],
           [1, 2, 0]])
    >>> r.to_sparse().toarray()
    array([[0, 1, 1],
           [1, 0, 0],
           [1, 0, 0]])
    """
    if metric == ccc3.NAME:
        raise GenotileError("ccc3 compares triples of variants: call genotile.triplewise(x, ...)")
    if not isinstance(metric, str) or metric not in PAIRWISE:
        raise GenotileError(f"unknown metric {metric!r}; pairwise takes {', '.join(PAIRWISE)} (ccc3: triplewise)")
    m = get_metric(metric, **(params or {}))
    threshold = _threshold(threshold)
    check_rows(rows)
    backends.resolve(backend)  # an unknown or unavailable backend refused before any store work
    # auto block sizes, as the workflow's: by the metric, backend and whether tiles keep the matrix
    dense_max = {None: DENSE_MAX, True: sys.maxsize, False: None}[None if matrix is None else bool(matrix)]
    options = _reader_options(samples, regions, filter_pass, multiallelic)
    if against is None:
        if against_ids is not None:
            raise GenotileError("against_ids name the vectors of `against`, which was not given")
        planes, layout, perm, plan, ids_out = _store(
            x,
            metric,
            ids,
            rows,
            options,
            block_size,
            seed,
            workdir,
            metrics=[metric],
            backend=backend,
            dense_max=dense_max,
        )
    else:  # query mode: x's vectors against against's, the cross pairs only (store/query.py)
        if workdir is not None:
            raise GenotileError("workdir: a query's store is made in memory; use genotile run --against for its files")
        planes, layout, perm, plan, ids_out = _query_store(
            x, against, metric, ids, against_ids, rows, options, block_size, seed, metrics=[metric], backend=backend
        )
    dense = (plan.n_vectors <= DENSE_MAX) if matrix is None else bool(matrix)
    parts = []
    full = None
    n_q = plan.n_query if plan.n_against else 0
    for bi, bj in plan.tiles():
        arrays, _ = compute_tile(planes, layout, perm, plan, m, bi, bj, threshold, dense, backend)
        parts.append({k: arrays[k] for k in ("a", "b", *m.columns)})
        if dense:
            block = arrays["dense"]
            if full is None:  # the blocks' own type: int64 counts (snp, hamming), float64 ratios
                shape = (n_q, plan.n_against) if n_q else (plan.n_vectors, plan.n_vectors)
                full = np.zeros(shape, dtype=block.dtype)
            if n_q:  # a query's rectangle: rows the input, columns the FILE
                full[np.ix_(arrays["dense_rows"], arrays["dense_cols"] - n_q)] = block
                continue
            full[np.ix_(arrays["dense_rows"], arrays["dense_cols"])] = block
            full[np.ix_(arrays["dense_cols"], arrays["dense_rows"])] = block.T
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.lexsort((merged["b"], merged["a"]))  # pairs.tsv.gz's order
    return PairwiseResult(
        metric=m.name,
        ids=list(ids_out),
        a=merged["a"][order],
        b=merged["b"][order],
        values={c: merged[c][order] for c in m.columns},
        dense=full,
        threshold=threshold,
        transposed=m.transposed,
        dense_column=m.dense_column,
        n_query=n_q,
    )


def triplewise(
    x,
    *,
    threshold: float | None = None,
    backend: str = "auto",
    ids=None,
    rows: str | None = None,
    params: dict | None = None,
    block_size: int | str = "auto",
    seed: int = 1,
    samples=None,
    regions=None,
    filter_pass: bool | None = None,
    multiallelic: str | None = None,
    workdir=None,
) -> TriplewiseResult:
    """Every triple of variants under CoMet's 3-way CCC (ccc3), as the pipeline computes it.

    Parameters
    ----------
    x : str, os.PathLike, array_like, pandas.DataFrame, scikit-allel or sgkit genotypes
        A VCF/BCF, PLINK fileset or VCF-Zarr .vcz directory, or genotypes as for `pairwise`:
        a plain array **(samples, variants)** unless `rows="variants"`; allel's and sgkit's
        objects variants first, as they hold them.
    threshold : float, optional
        Keep a triple when any of its 8 values is at or above it; a finite number. None keeps
        all (refused past 2,000 variants, as in the workflow). The triples are held in memory:
        more than TRIPLEWISE_MAX (20 million, ~1.8 GB) passing is refused, a null threshold at
        the plan, a threshold once they pass (`genotile run` streams any number to a file).
    block_size : int or "auto"
        ccc3's blocks; "auto" (the workflow's default) is ccc3.CPU_BLOCK_SIZE, 4096.
    backend, ids, rows, params, seed, samples, regions, filter_pass, multiallelic, workdir
        As for `pairwise` (ids name the variants; params: ccc3's multiplier and param).

    Returns
    -------
    TriplewiseResult
        ``.triples`` (pandas.DataFrame: id1, id2, id3 (input order, id1 < id2 < id3) and
        ccc_000 ... ccc_111, rows as triples.tsv.gz), and the raw arrays ``.a``, ``.b``,
        ``.c``, ``.values``. (Until this object, triplewise returned that DataFrame itself.)

    Examples
    --------
    >>> import numpy as np, genotile
    >>> g = np.array([[0, 1, 2], [1, 1, 0], [2, 0, 1], [0, 2, 1]])  # 4 samples x 3 variants
    >>> t = genotile.triplewise(g, backend="numpy")
    >>> t
    TriplewiseResult(metric='ccc3', vectors=3, triples=1, threshold=None,
                     columns=['ccc_000', 'ccc_001', 'ccc_010', 'ccc_011', 'ccc_100', 'ccc_101', 'ccc_110', 'ccc_111'])
    >>> t.triples[["id1", "id2", "id3"]].values.tolist(), round(float(t.triples["ccc_000"][0]), 6)
    ([['0', '1', '2']], 0.072917)
    """
    from genotile.triples.stage import plan_triples
    from genotile.triples.tile import ROW_BYTES, TooManyTriples, compute_triples

    prm = ccc3.Params.make(**(params or {}))
    threshold = _threshold(threshold)
    check_rows(rows)
    backends.resolve(backend)
    block_size = settings.ccc3_plan_settings({"block_size": block_size})[0]  # "auto": the workflow's
    options = _reader_options(samples, regions, filter_pass, multiallelic)
    planes, layout, perm, plan, ids_out = _store(x, ccc3.NAME, ids, rows, options, block_size, seed, workdir)
    plan3 = plan_triples(plan, block_size, 1, threshold, words=layout.words)  # ccc3's plan and its bound on output
    if threshold is None and plan3.n_triples > TRIPLEWISE_MAX:
        raise GenotileError(
            f"triplewise with a null threshold would hold all {plan3.n_triples:,} triples of {plan3.n_vectors:,} "
            f"variants in memory (about {plan3.n_triples * ROW_BYTES / 1e9:.3g} GB; at most {TRIPLEWISE_MAX:,}): "
            "give a threshold, or run `genotile run`, which streams them to a file"
        )
    parts, held = [], 0
    for bi, bj, bk, part in plan3.jobs():  # part: the ccc3 stage of the job
        left = TRIPLEWISE_MAX - held
        try:
            arrays, _ = compute_triples(planes, layout, perm, plan3, prm, bi, bj, bk, part, threshold, backend, left)
        except TooManyTriples:
            raise GenotileError(
                f"triplewise: more than {TRIPLEWISE_MAX:,} triples pass (held in memory, about "
                f"{TRIPLEWISE_MAX * ROW_BYTES / 1e9:.3g} GB): raise the threshold, or run `genotile run`, "
                "which streams them to a file"
            ) from None
        held += arrays["a"].size
        parts.append(arrays)
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if not k.startswith("hist")}
    order = np.lexsort((merged["c"], merged["b"], merged["a"]))
    return TriplewiseResult(
        ids=list(ids_out),
        a=merged["a"][order],
        b=merged["b"][order],
        c=merged["c"][order],
        values={c: merged[c][order] for c in ccc3.COLUMNS},
        threshold=threshold,
    )
