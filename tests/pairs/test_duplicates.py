"""Identical vectors computed once (store/duplicates.py): runs with and without the collapse give
the same pairs.tsv.gz, matrix.tsv and histogram.tsv bytes and the same summary counts, for every
2-way metric, on inputs full of duplicates (missing data included: ibs and king of a sample
with itself are not 0), whatever the block size and threshold."""

import json

import numpy as np
import pytest
from conftest import make_alignment, write_fasta
from genodata import random_genotypes, vcf_text, write_vcf

from genotile import pipeline
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.store.duplicates import distinct_rows, expand_pairs, expand_self, self_values

OUTPUTS = ("matrix.tsv", "pairs.tsv.gz", "histogram.tsv")
SUMMARY_KEYS = ("n_vectors", "n_fields", "n_fields_kept", "pairs_computed", "pairs_passing", "columns", "threshold")


def duplicated_fasta(path, n=40, distinct=9, length=170, seed=0):
    records = make_alignment(distinct, length, seed=seed)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, distinct, n)
    return write_fasta(path, [(f"c{k}", records[int(p)][1]) for k, p in enumerate(picks)], width=60)


def duplicated_vcf(path, n=36, distinct=8, variants=60, seed=0):
    g = random_genotypes(distinct, variants, p_missing=0.15, seed=seed)
    rng = np.random.default_rng(seed)
    rows = np.concatenate([np.arange(distinct), rng.integers(0, distinct, n - distinct)])
    return write_vcf(path, vcf_text(g[rng.permutation(rows)], seed=seed))


def compare(tmp_path, source, metric, threshold, block_size):
    runs = {}
    for collapse in (True, False):
        out = tmp_path / f"{metric}_{collapse}"
        thresholds = {} if threshold is None else {metric: threshold}
        summary = pipeline.run_all(
            source, out, [metric], block_size=block_size, thresholds=thresholds, collapse_duplicates=collapse
        )[metric]
        runs[collapse] = (out / metric, summary)
    (on, s_on), (off, s_off) = runs[True], runs[False]
    for name in OUTPUTS:
        assert (on / name).read_bytes() == (off / name).read_bytes(), f"{metric} {name}"
    for key in SUMMARY_KEYS:
        assert s_on[key] == s_off[key], key
    assert s_on["plan"]["n_vectors"] < s_off["plan"]["n_vectors"], "the collapsed run tiles fewer vectors"
    assert s_on["plan"]["n_input"] == s_off["plan"]["n_vectors"]
    return s_on


@pytest.mark.parametrize("block_size", [4, 1000])
@pytest.mark.parametrize(("metric", "threshold"), [("snp", None), ("snp", 9), ("hamming", None), ("hamming", 12)])
def test_alignment_metrics_collapse_exactly(tmp_path, metric, threshold, block_size):
    source = duplicated_fasta(tmp_path / "dups.fa")
    compare(tmp_path, source, metric, threshold, block_size)


@pytest.mark.parametrize("block_size", [3, 1000])
@pytest.mark.parametrize(("metric", "threshold"), [("ibs", None), ("ibs", 0.3), ("king", None), ("king", 0.1)])
def test_genotype_metrics_collapse_exactly(tmp_path, metric, threshold, block_size):
    source = duplicated_vcf(tmp_path / "dups.vcf")
    summary = compare(tmp_path, source, metric, threshold, block_size)
    assert summary["pairs_computed"] == 36 * 35 // 2


def test_self_pairs_of_copies_are_not_always_zero(tmp_path):
    """ibs of a sample with missing calls against its copy: n is its own called sites, and the
    copies' pair is in pairs.tsv.gz with those values."""
    source = duplicated_vcf(tmp_path / "dups.vcf", n=12, distinct=4)
    pipeline.run_all(source, tmp_path / "o", ["ibs"], block_size=5)
    import gzip

    rows = gzip.decompress((tmp_path / "o" / "ibs" / "pairs.tsv.gz").read_bytes()).decode().splitlines()[1:]
    manifest = json.loads((tmp_path / "o" / "store" / "genotype" / "manifest.json").read_text())
    index = np.asarray(manifest["distinct_index"])
    ids = manifest["ids"]
    same = [r.split("\t") for r in rows if index[ids.index(r.split("\t")[0])] == index[ids.index(r.split("\t")[1])]]
    assert same, "copies give self pairs"
    assert {int(r[3]) for r in same} - {0}, "n of a self pair counts the sample's called sites"
    assert all(r[2] == "0" for r in same), "a sample's ibs_count with itself is 0"


def test_ccc2_store_is_not_collapsed(tmp_path):
    """ccc3 reads the genotype_t store too (its triples are not expanded): never collapsed."""
    g = random_genotypes(10, 6, seed=1)
    g[:, 3] = g[:, 2]  # two identical SNP vectors
    source = write_vcf(tmp_path / "snps.vcf", vcf_text(g))
    pipeline.run_all(source, tmp_path / "o", ["ccc2"], block_size=4)
    manifest = json.loads((tmp_path / "o" / "ingest" / "genotype_t.json").read_text())
    assert "distinct_index" not in manifest


def test_distinct_rows_and_expansion_against_brute_force():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, (50, 4)).astype(np.uint8)
    first, index = distinct_rows(codes)
    assert np.array_equal(codes[first[index]], codes)
    assert np.array_equal(first, np.sort(first)) and len(set(map(bytes, codes))) == first.size
    k = first.size
    a, b = np.triu_indices(k, 1)
    values = {"v": a * 100 + b}
    x, y, out = expand_pairs(a, b, values, index, k)
    got = sorted(zip(x.tolist(), y.tolist(), out["v"].tolist(), strict=True))
    want = sorted(
        (i, j, int(min(index[i], index[j]) * 100 + max(index[i], index[j])))
        for i in range(50)
        for j in range(i + 1, 50)
        if index[i] != index[j]
    )
    assert got == want
    sx, sy, sout = expand_self(np.arange(k), {"v": np.arange(k)}, index, k)
    got_self = sorted(zip(sx.tolist(), sy.tolist(), sout["v"].tolist(), strict=True))
    want_self = sorted((i, j, int(index[i])) for i in range(50) for j in range(i + 1, 50) if index[i] == index[j])
    assert got_self == want_self


@pytest.mark.parametrize("metric", ["snp", "king"])
def test_weighing_in_bands_of_rows_changes_nothing(tmp_path, monkeypatch, metric):
    """weigh_tile a few cells at a time (bands of 1-2 rows, diagonal and off-diagonal tiles)."""
    from genotile.store import duplicates

    monkeypatch.setattr(duplicates, "WEIGH_CELLS", 13)
    if metric == "snp":
        source = duplicated_fasta(tmp_path / "dups.fa")
    else:
        source = duplicated_vcf(tmp_path / "dups.vcf")
    compare(tmp_path, source, metric, None, 5)


def _distinct_reference(codes):
    seen, first, index = {}, [], []
    for r, row in enumerate(codes):
        g = seen.setdefault(row.tobytes(), len(first))
        if g == len(first):
            first.append(r)
        index.append(g)
    return first, index


@pytest.mark.parametrize("width", [0, 1, 7, 8, 9, 37])
def test_distinct_rows_equal_a_dictionary_of_row_bytes(width, monkeypatch):
    from genotile.store import duplicates

    monkeypatch.setattr(duplicates, "ROW_CHUNK", 16)  # many blocks, on several threads
    rng = np.random.default_rng(width)
    base = rng.integers(0, 4, (40, width)).astype(np.uint8)
    codes = base[rng.integers(0, 40, 300)]  # copies of 40 rows, in random order
    codes[rng.random(300) < 0.1, :] ^= 1  # and some rows of their own
    first, index = duplicates.distinct_rows(codes, threads=3)
    want_first, want_index = _distinct_reference(codes)
    assert first.tolist() == want_first and index.tolist() == want_index


def test_distinct_rows_survive_a_hash_collision(monkeypatch):
    from genotile.store import duplicates

    monkeypatch.setattr(duplicates, "row_hashes", lambda codes, threads=None: np.zeros((len(codes), 2), np.uint64))
    first, index = duplicates.distinct_rows(np.array([[2, 1], [1, 2], [2, 1], [0, 0], [1, 2]], np.uint8))
    assert first.tolist() == [0, 1, 3] and index.tolist() == [0, 1, 0, 2, 1]


def test_row_hashes_tell_apart_rows_differing_in_top_bytes():
    """Differences in a word's top byte (8 of every 8 bytes' last) that cancelled in the plain
    multiply-sum: every pair of the rows below differs there at two words only."""
    from genotile.store import duplicates

    rng = np.random.default_rng(3)
    base = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 2000)]
    rows = np.repeat(base[None, :], 3000, 0)
    for r in range(1, 3000):  # two top bytes changed a row: 3000 rows, ~4.5M pairs
        cols = rng.choice(250, 2, replace=False) * 8 + 7
        rows[r, cols] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 2)]
    h = duplicates.row_hashes(rows)
    unique_rows = np.unique(rows, axis=0).shape[0]
    assert np.unique(h, axis=0).shape[0] == unique_rows


def test_self_values_equal_a_tile_of_the_row_with_itself(tmp_path):
    from genotile.pairs.tile import compute_tile
    from genotile.store.pack import open_store

    source = duplicated_vcf(tmp_path / "dups.vcf", n=10, distinct=10)
    pipeline.run_all(source, tmp_path / "o", ["king"], block_size=100, collapse_duplicates=False)
    store = tmp_path / "o" / "store" / "genotype"
    planes, manifest, layout = open_store(store / "planes.npy", store / "manifest.json")
    plan = Plan.from_json(manifest["plan"])
    perm = np.load(store / "perm.npy")
    for name in ("ibs", "king"):
        metric = get_metric(name)
        arrays, _ = compute_tile(planes, layout, perm, plan, metric, 0, 0, None, True, "numpy")
        mine = self_values(np.asarray(planes), layout, metric)
        diag = np.diagonal(arrays["dense"])
        assert np.array_equal(mine[metric.dense_column], diag, equal_nan=True)


def test_workflow_collapses_and_writes_the_same_outputs(tmp_path):
    """Through Snakemake (config collapse_duplicates: true): the same bytes as the in-process run
    without collapsing; the plan tiles the distinct sequences only."""
    from snakerun import snakemake

    source = duplicated_fasta(tmp_path / "dups.fa", n=30, distinct=6)
    config = {
        "datasets": {"d": {"input": str(source), "metrics": ["snp"]}},
        "thresholds": {"snp": 9},
        "block_size": 4,
        "collapse_duplicates": True,
    }
    (tmp_path / "wf").mkdir()
    snakemake(tmp_path / "wf", config)
    pipeline.run_all(source, tmp_path / "ref", ["snp"], block_size=4, thresholds={"snp": 9}, collapse_duplicates=False)
    for name in OUTPUTS:
        assert (tmp_path / "wf" / "results" / "d" / "snp" / name).read_bytes() == (
            tmp_path / "ref" / "snp" / name
        ).read_bytes(), name
    plan = json.loads((tmp_path / "wf" / "results" / "d" / "store" / "nucleotide" / "plan.json").read_text())
    assert plan["n_vectors"] < 30 and plan["n_input"] == 30


@pytest.mark.parametrize(("tile_gpu", "collapsed"), [("false", True), ("true", False)])
def test_auto_collapses_where_tiles_run_on_the_cpu(tmp_path, tile_gpu, collapsed):
    """collapse_duplicates: auto (the default) collapses for CPU tile jobs, not for GPU ones."""
    from snakerun import snakemake

    source = duplicated_fasta(tmp_path / "dups.fa", n=30, distinct=6)
    config = {
        "datasets": {"d": {"input": str(source), "metrics": ["snp"]}},
        "block_size": 4,
        "tile_gpu": tile_gpu == "true",
    }
    snakemake(tmp_path, config, "--until", "store")
    plan = json.loads((tmp_path / "results" / "d" / "store" / "nucleotide" / "plan.json").read_text())
    assert (plan["n_vectors"] == 6) == collapsed and plan.get("n_input", plan["n_vectors"]) == 30
