"""The Python API (genotile.pairwise, genotile.triplewise) gives the pipeline's numbers, in memory.

Each result is compared with `genotile run`'s files on the same input (pairs.tsv.gz text,
through the same number formatting; matrix.tsv values; triples.tsv.gz), for a VCF with missing
calls, the same genotypes as an array, a FASTA alignment and its sequences as a list.
"""

import csv
import doctest
import gzip
import os
import sys
import tempfile

import numpy as np
import pytest
from genodata import MISSING, random_genotypes, read_float_matrix, vcf_text, write_vcf

import genotile
from genotile import api
from genotile.errors import GenotileError
from genotile.io.tsvgz import format_column
from genotile.pipeline import run_all, run_ccc3

pd = pytest.importorskip("pandas", reason="the API's tables are pandas DataFrames")


def test_doctests_of_the_api_module():
    result = doctest.testmod(api, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 10 and result.failed == 0


def pipeline_rows(path) -> list[list[str]]:
    with gzip.open(path, "rt") as fh:
        return list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def api_rows(result) -> list[list[str]]:
    """The result's pairs as the pipeline writes them (same formatting of every column)."""
    ids = np.asarray(result.ids, dtype=object)
    columns = [ids[result.a], ids[result.b]] + [format_column(v) for v in result.values.values()]
    header = ["id1", "id2", *result.values]
    return [header] + [list(map(str, row)) for row in zip(*columns, strict=True)]


@pytest.fixture(scope="module")
def genotypes(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    g = random_genotypes(41, 90, p_missing=0.1, seed=11)
    vcf = write_vcf(root / "g.vcf", vcf_text(g, seed=11))
    thresholds = {"ibs": 0.3, "king": 0.0, "ccc2": 0.6}
    run_all(vcf, root / "run", ["ibs", "king", "ccc2"], block_size=16, thresholds=thresholds, backend="numpy")
    return g, vcf, root / "run", thresholds


@pytest.mark.parametrize("metric", ["ibs", "king", "ccc2"])
def test_genotype_metrics_equal_the_pipeline_from_the_file_and_from_the_array(genotypes, metric):
    g, vcf, run, thresholds = genotypes
    expected = pipeline_rows(run / metric / "pairs.tsv.gz")
    from_file = genotile.pairwise(vcf, metric, threshold=thresholds[metric], backend="numpy", block_size=7)
    assert api_rows(from_file) == expected and len(expected) > 10
    # the array: samples x variants, missing as -1; ccc2's vectors are the variants (named by index)
    array = np.where(g == MISSING, -1, g).astype(np.int64)
    names = from_file.ids if metric != "ccc2" else None
    from_array = genotile.pairwise(array, metric, threshold=thresholds[metric], backend="numpy", ids=names)
    if metric == "ccc2":  # the VCF names variants CHROM:POS:REF:ALT; the array by index
        rename = dict(zip(from_array.ids, from_file.ids, strict=True))
        from_array.ids = [rename[i] for i in from_array.ids]
    assert api_rows(from_array) == expected
    ids, matrix = read_float_matrix(run / metric / "matrix.tsv")
    assert ids == from_file.ids
    np.testing.assert_array_equal(from_file.matrix(), matrix)
    table = from_file.pairs
    assert list(table.columns) == expected[0] and len(table) == len(expected) - 1


def test_sparse_holds_each_passing_pair_both_ways(genotypes):
    _, vcf, _, _ = genotypes
    r = genotile.pairwise(vcf, "ccc2", backend="numpy")  # no threshold: every pair
    n = len(r.ids)
    full = r.to_sparse().toarray()
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_array_equal(full[off], r.matrix()[off])  # ccc_11, symmetric
    # ccc_01 read at (b, a) is ccc_10 at (a, b): value(row vector, column vector)
    s01 = r.to_sparse("ccc_01").toarray()
    np.testing.assert_array_equal(s01[r.b, r.a], r.values["ccc_10"])
    np.testing.assert_array_equal(s01[r.a, r.b], r.values["ccc_01"])
    with pytest.raises(GenotileError, match="no column 'kinship'"):
        r.to_sparse("kinship")


def test_snp_and_hamming_equal_the_pipeline(tmp_path):
    rng = np.random.default_rng(5)
    base = rng.choice(list("ACGT"), 300)
    seqs = []
    for _ in range(25):
        s = base.copy()
        hit = rng.random(300) < 0.1
        s[hit] = rng.choice(list("ACGTNn-RY"), hit.sum())
        seqs.append("".join(s))
    fasta = tmp_path / "a.fa"
    fasta.write_text("".join(f">q{k}\n{s}\n" for k, s in enumerate(seqs)))
    run_all(fasta, tmp_path / "run", ["snp", "hamming"], thresholds={"snp": 25}, backend="numpy")
    for metric, threshold in (("snp", 25), ("hamming", None)):
        expected = pipeline_rows(tmp_path / "run" / metric / "pairs.tsv.gz")
        assert api_rows(genotile.pairwise(fasta, metric, threshold=threshold, backend="numpy")) == expected
        names = [f"q{k}" for k in range(25)]
        as_chars = np.array([list(s) for s in seqs])  # (n, length) of one-character strings
        for x in (seqs, [s.encode() for s in seqs], as_chars):
            assert api_rows(genotile.pairwise(x, metric, threshold=threshold, ids=names, backend="numpy")) == expected


def test_triples_equal_the_pipeline(genotypes, tmp_path):
    g, vcf, run, _ = genotypes
    sub = g[:, :30]  # 30 SNPs: 4060 triples
    small = write_vcf(tmp_path / "s.vcf", vcf_text(sub, seed=2))
    run_all(small, tmp_path / "run", ["ccc2"], backend="numpy")
    run_ccc3(tmp_path / "run" / "store" / "genotype_t", tmp_path / "ccc3", block_size=9, threshold=0.2)
    expected = pipeline_rows(tmp_path / "ccc3" / "triples.tsv.gz")
    result = genotile.triplewise(small, threshold=0.2, backend="numpy", block_size=11)
    t = result.triples
    ours = [list(t.columns)] + [
        list(map(str, row))
        for row in zip(
            *[t[c].tolist() for c in ("id1", "id2", "id3")],
            *[format_column(t[c].to_numpy()) for c in t.columns[3:]],
            strict=True,
        )
    ]
    assert ours == expected and len(expected) > 10
    assert [result.ids[k] for k in result.c] == t["id3"].tolist()  # the raw arrays are the table's


def test_backends_agree_and_nothing_is_left_behind(genotypes, tmp_path, monkeypatch):
    _, vcf, _, _ = genotypes
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    results = [genotile.pairwise(vcf, "king", backend=b) for b in ("numpy", "numpy-popcount", "numba")]
    for r in results[1:]:
        assert api_rows(r) == api_rows(results[0])
    assert list(tmp_path.iterdir()) == []  # the scratch folder is gone
    kept = genotile.pairwise(vcf, "king", backend="numpy", workdir=tmp_path / "keep")
    assert (tmp_path / "keep" / "planes.npy").is_file() and api_rows(kept) == api_rows(results[0])


def test_refusals_name_the_problem(genotypes, tmp_path):
    _, vcf, _, _ = genotypes
    with pytest.raises(GenotileError, match="metric.s. snp need a FASTA alignment"):
        genotile.pairwise(vcf, "snp")
    with pytest.raises(
        GenotileError,
        match=r"option\(s\) samples apply to a VCF/BCF, a PLINK fileset or a VCF-Zarr store, not to an array",
    ):
        genotile.pairwise(np.zeros((3, 4)), "ibs", samples=["a"])
    with pytest.raises(GenotileError, match="dosages are not supported"):
        genotile.pairwise(np.array([[0.5, 1.0], [0.0, 2.0]]), "king")
    with pytest.raises(GenotileError, match="ids: 2 given for 3 samples"):
        genotile.pairwise(np.zeros((3, 4), dtype=int), "ibs", ids=["a", "b"])
    with pytest.raises(GenotileError, match=r"ccc3 compares triples of variants: call genotile.triplewise"):
        genotile.pairwise(np.zeros((3, 4), dtype=int), "ccc3")
    with pytest.raises(GenotileError, match="unknown metric 'nope'"):
        genotile.pairwise(np.zeros((3, 4), dtype=int), "nope")
    r = genotile.pairwise(np.zeros((3, 4), dtype=int), "ibs", matrix=False, backend="numpy")
    with pytest.raises(GenotileError, match="no dense matrix was kept"):
        r.matrix()


class WritesSeen:
    """Files opened for writing (and folders made) while `on`: an audit hook (sys.addaudithook),
    which sees builtins.open, io.open, os.open and os.mkdir, numpy's saves and tempfile's among
    them. A hook cannot be removed: it records only while `on`."""

    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def __init__(self):
        self.on, self.seen = False, []
        sys.addaudithook(self.hook)

    def hook(self, event, args):
        if not self.on:
            return
        if event == "open":
            path, mode, flags = args
            writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & self.WRITE_FLAGS)
            if writes:
                self.seen.append((event, path))
        elif event in ("os.mkdir", "tempfile.mkdtemp", "tempfile.mkstemp"):
            self.seen.append((event, args[0]))


@pytest.fixture(scope="module")
def writes():
    return WritesSeen()


def test_an_array_goes_to_the_store_in_memory_opening_no_file_for_writing(genotypes, writes, tmp_path):
    g, vcf, _, _ = genotypes
    array = np.where(g == MISSING, -1, g).astype(np.int16)
    alignment = ["ACGTNACGT", "ACGAAACGA", "TCGTAACGT", "ACGTAACCT"]
    fasta = tmp_path / "a.fa"
    fasta.write_text("".join(f">s{k}\n{s}\n" for k, s in enumerate(alignment)))
    calls = [
        lambda: genotile.pairwise(array, "king", backend="numpy"),
        lambda: genotile.pairwise(array, "ccc2", threshold=0.6, backend="numpy"),
        lambda: genotile.pairwise(alignment, "snp", backend="numpy"),
        lambda: genotile.pairwise(np.array([list(s) for s in alignment]), "hamming", backend="numpy"),
        lambda: genotile.triplewise(array[:, :12], threshold=0.3, backend="numpy"),
        lambda: genotile.pairwise(vcf, "ibs", backend="numpy"),  # a genotype file: its codes held too
    ]
    held = lambda: genotile.pairwise(fasta, "snp", backend="numpy")  # noqa: E731
    before = [call() for call in calls] + [held()]  # imports (and their bytecode caches) done before looking
    writes.on = True
    try:
        after = [call() for call in calls]
        assert writes.seen == []
        # a FASTA file's scratch folder is made (its codes go there unless it is held), but a
        # regular alignment that fits is held: no file is written
        after.append(held())
        assert [event for event, _ in writes.seen] == ["tempfile.mkdtemp", "os.mkdir"]
    finally:
        writes.on = False
    writes.seen.clear()
    writes.on = True  # the hook does see them: every stage's file, where they are asked for
    try:
        genotile.pairwise(alignment, "snp", backend="numpy", workdir=tmp_path / "w")
    finally:
        writes.on = False
    folder = os.fspath(tmp_path / "w")
    assert len(writes.seen) >= 6 and all(os.fspath(path).startswith(folder) for _, path in writes.seen)
    for old, new in zip(before[:4] + before[5:], after[:4] + after[5:], strict=True):
        assert api_rows(old) == api_rows(new)
    assert before[4].triples.equals(after[4].triples)


def test_workdir_keeps_every_stage_file_of_an_array(tmp_path):
    g = random_genotypes(12, 40, p_missing=0.1, seed=3)
    array = np.where(g == MISSING, -1, g)
    in_memory = genotile.pairwise(array, "ibs", backend="numpy")
    kept = genotile.pairwise(array, "ibs", backend="numpy", workdir=tmp_path / "w")
    names = {"codes.npy", "ingest.json", "plan.json", "perm.npy", "planes.npy", "store.json"}
    assert {p.name for p in (tmp_path / "w").iterdir()} == names
    assert api_rows(kept) == api_rows(in_memory)


def test_array_refusals_speak_of_the_array():
    genotypes = np.array([[0, 1, 2, 1], [2, -1, 0, 0]])
    with pytest.raises(GenotileError) as refused:  # genotypes given to an alignment metric
        genotile.pairwise(genotypes, "snp")
    message = str(refused.value)
    assert message.startswith("the alignment, shape (2, 4), holds the numbers -1, 0, 1, 2: genotypes")
    assert "snp and hamming read sequences" in message and "input.fa" not in message
    with pytest.raises(GenotileError) as refused:
        genotile.pairwise(np.array([[0, 1, 2], [0, 1, 3]]), "ibs")
    assert str(refused.value) == (
        "the genotype array, shape (2, 3): value 3 at row 1, column 2 (sample 1, variant 2); "
        "genotypes are ALT allele counts 0, 1, 2, a missing call as a negative number, NaN or 255"
    )
    with pytest.raises(GenotileError, match=r"^the genotype array, shape \(2, 2\): value 254 at row 0, column 1"):
        genotile.triplewise(np.array([[0, 254], [1, 2]]))
    with pytest.raises(GenotileError) as refused:
        genotile.pairwise(["ACGT", "ACGT", "ACG"], "hamming", ids=["a", "b", "c"])
    assert str(refused.value) == (
        "the alignment: sequence 2 has length 3, but sequence 0 has length 4: "
        "the sequences of an alignment are of one length"
    )
    with pytest.raises(GenotileError, match=r"^the alignment, shape \(2, 2\): 'é' \(code 233\) at row 1, column 0"):
        genotile.pairwise(np.array([["A", "C"], ["é", "C"]]), "snp")
    with pytest.raises(GenotileError, match=r"^the alignment: sequence 1: '\\t' \(code 9\) at column 2"):
        genotile.pairwise(["ACGT", "AC\tT"], "snp")
    with pytest.raises(GenotileError, match=r"^the genotype array, shape \(1, 2\) holds text, not numbers"):
        genotile.pairwise(np.array([["A", "C"]]), "king")
    with pytest.raises(GenotileError, match=r"^the alignment: duplicate sequence ID 'a' \(sequences 1 and 2\)"):
        genotile.pairwise(["AC", "AG"], "snp", ids=["a", "a"])


@pytest.mark.parametrize("shape, what", [((3, 0), "no variants"), ((0, 4), "no samples")])
@pytest.mark.parametrize("metric", ["ibs", "ccc2"])
def test_an_empty_genotype_array_is_refused(shape, what, metric):
    """No samples or no variants: refused as a file without them is, naming the array's shape."""
    with pytest.raises(GenotileError, match=rf"the genotype array, shape \({shape[0]}, {shape[1]}\) has {what}"):
        genotile.pairwise(np.zeros(shape, dtype=np.int8), metric=metric, backend="numpy")


def test_repeated_sample_ids_of_a_genotype_array_are_refused():
    """Sample IDs name the rows and columns of the outputs: given twice, refused as a VCF's are."""
    g = np.zeros((3, 5), dtype=np.int8)
    with pytest.raises(GenotileError, match="the genotype array.*'a'"):
        genotile.pairwise(g, metric="ibs", ids=["a", "b", "a"], backend="numpy")


@pytest.mark.parametrize("call", ["pairwise", "triplewise"])
def test_an_unknown_or_absent_backend_is_refused_before_the_store(call, monkeypatch):
    def no_store(*args, **kwargs):
        raise AssertionError("the store was made before the backend was checked")

    monkeypatch.setattr(api, "_store", no_store)
    monkeypatch.setattr(api, "ingest", no_store)
    g = np.array([[0, 1, 2], [1, 1, 0], [2, 0, 1]])
    with pytest.raises(GenotileError, match=r"unknown backend 'bogus'; known: auto"):
        getattr(genotile, call)(g, backend="bogus")
    monkeypatch.setattr(genotile.backends.BACKENDS["cupy-b1"], "is_available", lambda: False)
    with pytest.raises(GenotileError, match=r"backend 'cupy-b1' is not available on this machine"):
        getattr(genotile, call)(g, backend="cupy-b1")
