"""The Python API (genotile.pairwise, genotile.triplewise) gives the pipeline's numbers, in memory.

Each result is compared with `genotile run`'s files on the same input (pairs.tsv.gz text,
through the same number formatting; matrix.tsv values; triples.tsv.gz), for a VCF with missing
calls, the same genotypes as an array, a FASTA alignment and its sequences as a list.
"""

import csv
import doctest
import gzip
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
    t = genotile.triplewise(small, threshold=0.2, backend="numpy", block_size=11)
    ours = [list(t.columns)] + [
        list(map(str, row))
        for row in zip(
            *[t[c].tolist() for c in ("id1", "id2", "id3")],
            *[format_column(t[c].to_numpy()) for c in t.columns[3:]],
            strict=True,
        )
    ]
    assert ours == expected and len(expected) > 10


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
    with pytest.raises(GenotileError, match=r"option\(s\) samples apply to a VCF/BCF or PLINK file, not to an array"):
        genotile.pairwise(np.zeros((3, 4)), "ibs", samples=["a"])
    with pytest.raises(GenotileError, match="genotype 3 at sample 1, variant 2: not 0, 1, 2 or missing"):
        genotile.pairwise(np.array([[0, 1, 2], [0, 1, 3]]), "ibs")
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
