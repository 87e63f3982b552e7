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
.vcz directory) or an array: genotypes as ALT allele counts of shape (samples, variants) -- 0, 1,
2, missing as a negative number, NaN or 255 -- for ibs, king, ccc2 and ccc3; an alignment (a
sequence of str or bytes, or an (n, length) array of one-character strings or of printable ASCII
codes) for snp and hamming. A value that does not fit is refused naming the array, the value and its
position (io/readers/array.py).
"""

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genotile.core.encodings import ENCODINGS
from genotile.core.metrics import get_metric
from genotile.errors import GenotileError
from genotile.io.readers.array import AlignmentArray, GenotypeArray
from genotile.pairs.tile import compute_tile
from genotile.store import stage
from genotile.store.ingest import ingest
from genotile.store.inputs import check_input, inputs_of, metric_encoding
from genotile.store.pack import layout_from_json, open_store, pack

DENSE_MAX = 20000  # the workflow's default dense_max: a matrix is kept up to this many vectors


@dataclass
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
        The matrix of the metric's matrix column (as matrix.tsv), when it was kept.
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
        data = np.concatenate([upper, lower])
        rows, cols = np.concatenate([self.a, self.b]), np.concatenate([self.b, self.a])
        return sparse.csr_array((data, (rows, cols)), shape=(n, n))


def _pandas():
    try:
        import pandas
    except ImportError:
        raise GenotileError("PairwiseResult.pairs needs pandas: pip install pandas") from None
    return pandas


def _array_input(x, encoding: str, ids) -> GenotypeArray | AlignmentArray:
    """The reader of an array for a store of `encoding` (io/readers/array.py), its values checked."""
    if not ENCODINGS[encoding].genotypes:
        return AlignmentArray(x, ids)
    if ENCODINGS[encoding].transposed:  # vectors are variants (ccc2, ccc3)
        return GenotypeArray(x, variants=ids)
    return GenotypeArray(x, samples=ids)


def _store(x, metric_name: str, ids, options: dict, block_size, seed: int, workdir):
    """The store stage (store/: ingest, plan, pack) of `x` for a metric, in memory, or with its
    files in `workdir`; returns (planes, layout, perm, plan, ids).

    An array is read by its reader in memory and packed from its codes; a genotype file from its
    reader's blocks of codes held in memory; a FASTA file held in memory where it is a regular
    alignment that fits (io/readers/fasta.py), else its codes written to a scratch folder,
    removed at the end. Nothing else is written unless `workdir` names a folder for every file.
    """
    encoding = metric_encoding(metric_name)
    source: str | os.PathLike | GenotypeArray | AlignmentArray
    if isinstance(x, (str, os.PathLike)):
        if ids is not None:
            raise GenotileError("ids: a file names its own vectors; ids are for arrays")
        check_input(x, [metric_name], options)
        source = x
    else:
        given = sorted(k for k, v in options.items() if v is not None)
        if given:
            raise GenotileError(f"option(s) {', '.join(given)} apply to {inputs_of('genotypes')}, not to an array")
        source = _array_input(x, encoding, ids)
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
        plan = stage.plan(made.manifest, block_size, seed, files["plan.json"], files["perm.npy"])
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
    matrix: bool | None = None,
    params: dict | None = None,
    block_size: int = 4096,
    seed: int = 1,
    samples=None,
    regions=None,
    filter_pass: bool | None = None,
    multiallelic: str | None = None,
    workdir=None,
) -> PairwiseResult:
    """Every pair of vectors of `x` under one metric, as the pipeline computes it.

    Parameters
    ----------
    x : str, os.PathLike, numpy.ndarray or sequence
        A file: FASTA alignment (plain or gzip), VCF/BCF, a PLINK fileset named by its .bed or
        .pgen, or a VCF-Zarr .vcz directory. Or an array: genotypes, shape (samples, variants),
        ALT allele counts 0, 1, 2 with missing calls negative, NaN or 255 (ibs, king, ccc2); or an
        alignment: a sequence of n str / bytes of one length, or an (n, length) array of characters
        or printable ASCII codes (snp, hamming).
    metric : {"snp", "hamming", "ibs", "king", "ccc2"}
        The metric (README "What it computes"); ccc3 is `triplewise`.
    threshold : float, optional
        Keep the pairs at or below it (snp, hamming, ibs) or at or above it (king; ccc2: any
        column). None keeps every pair.
    backend : str
        "auto", "numba", "numpy", "numpy-popcount", "cupy-b1" or "cupy-int8"; every backend
        gives the same numbers.
    ids : sequence of str, optional
        Names of an array's vectors (rows; for ccc2 the variants); default "0", "1", ...
    matrix : bool, optional
        Keep the dense (n, n) matrix (`PairwiseResult.matrix()`); default: up to 20,000 vectors.
    params : dict, optional
        The metric's parameters (ccc2: ``{"multiplier": 4.5, "param": 2/3}``).
    block_size, seed : int
        The tile plan (no effect on the numbers).
    samples, regions, filter_pass, multiallelic
        The VCF options of the config (VCF/BCF, PLINK and VCF-Zarr inputs only).
    workdir : str or os.PathLike, optional
        Write every stage's file here (codes.npy, ingest.json, plan.json, perm.npy, planes.npy,
        store.json); by default the store is made in memory (a FASTA file that is not held
        writes its codes to a scratch folder, removed).

    Returns
    -------
    PairwiseResult
        ``.pairs`` (pandas.DataFrame: id1, id2 and the metric's columns, pairs.tsv.gz's rows),
        ``.matrix()`` (numpy (n, n)), ``.to_sparse()`` (scipy.sparse (n, n)), and the raw
        arrays ``.a``, ``.b``, ``.values``.

    Examples
    --------
    >>> import numpy as np, genotile
    >>> g = np.array([[0, 1, 2, 1], [0, 1, 2, 2], [2, 1, -1, 0]])  # 3 samples x 4 variants
    >>> r = genotile.pairwise(g, metric="ibs", backend="numpy", ids=["a", "b", "c"])
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
    >>> r = genotile.pairwise(["ACGTN", "ACGAA", "TCGTA"], metric="snp", threshold=1, backend="numpy")
    >>> print(r.pairs.to_string(index=False))
    id1 id2  snp
      0   1    1
      0   2    1
    >>> r.to_sparse().toarray()
    array([[0, 1, 1],
           [1, 0, 0],
           [1, 0, 0]])
    """
    if metric == "ccc3":
        raise GenotileError("ccc3 compares triples of variants: call genotile.triplewise(x, ...)")
    m = get_metric(metric, **(params or {}))
    options = {"samples": samples, "regions": regions, "filter_pass": filter_pass, "multiallelic": multiallelic}
    options = {k: v for k, v in options.items() if v is not None}
    planes, layout, perm, plan, ids_out = _store(x, metric, ids, options, block_size, seed, workdir)
    dense = (plan.n_vectors <= DENSE_MAX) if matrix is None else bool(matrix)
    parts = []
    full = np.zeros((plan.n_vectors, plan.n_vectors)) if dense else None
    for bi, bj in plan.tiles():
        arrays, _ = compute_tile(planes, layout, perm, plan, m, bi, bj, threshold, dense, backend)
        parts.append({k: arrays[k] for k in ("a", "b", *m.columns)})
        if dense:
            assert full is not None
            block = arrays["dense"]
            full = full.astype(np.result_type(full, block), copy=False)
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
    )


def triplewise(
    x,
    *,
    threshold: float | None = None,
    backend: str = "auto",
    ids=None,
    params: dict | None = None,
    block_size: int = 4096,
    seed: int = 1,
    samples=None,
    regions=None,
    filter_pass: bool | None = None,
    multiallelic: str | None = None,
    workdir=None,
):
    """Every triple of variants under CoMet's 3-way CCC (ccc3), as the pipeline computes it.

    Parameters
    ----------
    x : str, os.PathLike or numpy.ndarray
        A VCF/BCF, PLINK fileset or VCF-Zarr .vcz directory, or genotypes (samples, variants) as for
        `pairwise`.
    threshold : float, optional
        Keep a triple when any of its 8 values is at or above it; None keeps all (refused past
        2,000 variants, as in the workflow).
    backend, ids, params, block_size, seed, samples, regions, filter_pass, multiallelic, workdir
        As for `pairwise` (ids name the variants).

    Returns
    -------
    pandas.DataFrame
        Columns id1, id2, id3 (input order, id1 < id2 < id3) and ccc_000 ... ccc_111, rows as
        triples.tsv.gz.

    Examples
    --------
    >>> import numpy as np, genotile
    >>> g = np.array([[0, 1, 2], [1, 1, 0], [2, 0, 1], [0, 2, 1]])  # 4 samples x 3 variants
    >>> t = genotile.triplewise(g, backend="numpy")
    >>> t[["id1", "id2", "id3"]].values.tolist(), round(float(t["ccc_000"][0]), 6)
    ([['0', '1', '2']], 0.072917)
    """
    from genotile.core import ccc3
    from genotile.triples.stage import plan_triples
    from genotile.triples.tile import compute_triples

    options = {"samples": samples, "regions": regions, "filter_pass": filter_pass, "multiallelic": multiallelic}
    options = {k: v for k, v in options.items() if v is not None}
    prm = ccc3.Params.make(**(params or {}))
    planes, layout, perm, plan, ids_out = _store(x, "ccc3", ids, options, block_size, seed, workdir)
    plan3 = plan_triples(plan, block_size, 1, threshold)  # ccc3's plan and its bound on output
    parts = []
    for bi, bj, bk, part in plan3.jobs():  # part: the ccc3 stage of the job
        arrays, _ = compute_triples(planes, layout, perm, plan3, prm, bi, bj, bk, part, threshold, backend)
        parts.append(arrays)
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if not k.startswith("hist")}
    order = np.lexsort((merged["c"], merged["b"], merged["a"]))
    names = np.asarray(ids_out, dtype=object)
    pd = _pandas()
    columns = {f"id{k}": names[merged[c][order]] for k, c in ((1, "a"), (2, "b"), (3, "c"))}
    return pd.DataFrame({**columns, **{c: merged[c][order] for c in ccc3.COLUMNS}})
