"""ccc3 in bounded memory whatever passes (issue 30): a job's triples in sorted runs
(triples/runs.py), the merge a range of id1 at a time (triples/merge.py); the same
triples.tsv.gz text as one sort of everything, a triple listed twice refused, and a null
threshold whose triples took 2.3 GB before run in a fraction of it."""

import gzip
import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cpu_backends import CPU_BACKEND_PARAMS
from genodata import random_genotypes, vcf_text, write_vcf

from genotile import pipeline
from genotile.backends.cpu import numba_ccc3
from genotile.errors import GenotileError
from genotile.io.tilefile import read_tile, write_tile
from genotile.store.reuse import current_store
from genotile.triples import merge, runs, stage, tile

TESTS = Path(__file__).resolve().parents[1]


def run(tmp_path, name, *, threshold, backend, stages=1, n=16):
    path = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(9, n, seed=8), seed=8))
    current_store(path, "genotype_t", tmp_path / "out", 64, 1)
    store = tmp_path / "out" / "store" / "genotype_t"
    out = tmp_path / name
    summary = pipeline.run_ccc3(store, out, block_size=6, stages=stages, threshold=threshold, backend=backend)
    return store, out, summary


def text(folder) -> bytes:
    return gzip.decompress((folder / "triples.tsv.gz").read_bytes())


@pytest.mark.parametrize("backend", CPU_BACKEND_PARAMS)
@pytest.mark.parametrize("threshold", [None, 0.3])
def test_runs_and_ranges_write_what_one_sort_writes(tmp_path, monkeypatch, backend, threshold):
    _, whole, summary = run(tmp_path, "whole", threshold=threshold, backend=backend)
    files = sorted((whole / "triples").glob("*.npz"))
    assert all("runs" not in read_tile(f)[0] for f in files)  # one run: the file as it always was
    monkeypatch.setattr(runs, "RUN_ROWS", 2)
    monkeypatch.setattr(merge, "MERGE_ROWS", 5)
    monkeypatch.setattr(merge, "CHECK_ROWS", 3)
    monkeypatch.setattr(numba_ccc3, "CAPACITY", 4)
    monkeypatch.setattr(tile, "BATCH_ELEMENTS", 4)
    _, cut, summary_cut = run(tmp_path, "cut", threshold=threshold, backend=backend)
    several = [read_tile(f) for f in sorted((cut / "triples").glob("*.npz"))]
    assert any(m.get("runs", 1) > 1 and arrays["runs"].sum() == m["triples_passing"] for arrays, m, _ in several)
    assert not list((cut / "triples").glob("*.runs"))  # the spilled runs are removed
    assert text(cut) == text(whole) and summary_cut["triples_passing"] == summary["triples_passing"] > 0
    if threshold is None:
        assert summary["triples_passing"] == 16 * 15 * 14 // 6


def test_a_triple_in_two_job_files_is_refused(tmp_path):
    """Two stages of one block triple: each file sound alone, one triple in both."""
    store, folder, _ = run(tmp_path, "o", threshold=None, backend="numpy", stages=2)
    first, second = folder / "triples" / "triples_0_1_2_0.npz", folder / "triples" / "triples_0_1_2_1.npz"
    a, _, _ = read_tile(first)
    b, meta, _ = read_tile(second)
    both = {k: np.concatenate([b[k], a[k][:1]]) for k in b}
    order = np.lexsort((both["c"], both["b"], both["a"]))
    write_tile(second, {k: v[order] for k, v in both.items()}, {**meta, "triples_passing": order.size})
    plan = stage.plan3(json.loads((store / "manifest.json").read_text()), 6, 2)
    with pytest.raises(GenotileError, match=r"triple \(\d+, \d+, \d+\) is listed twice in the triple files"):
        stage.merge(
            stage.triple_paths(folder / "triples", plan),
            store / "manifest.json",
            block_size=6,
            stages=2,
            triples_out=folder / "t.tsv.gz",
            summary_out=folder / "s.json",
            config={},
        )
    assert not (folder / "t.tsv.gz").exists()  # nothing half-written


SCRIPT = """
import resource, sys
sys.path.insert(0, {tests!r})
from genodata import random_genotypes, vcf_text, write_vcf
from genotile import pipeline
from genotile.store.reuse import current_store
from pathlib import Path
out = Path({out!r})
path = write_vcf(out / "g.vcf", vcf_text(random_genotypes(30, 300, seed=5), seed=5))
current_store(path, "genotype_t", out, 64, 1)
s = pipeline.run_ccc3(out / "store" / "genotype_t", out / "ccc3", block_size=4096, threshold=None, backend="auto")
print(s["triples_passing"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def test_a_null_threshold_runs_in_bounded_memory(tmp_path):
    """300 SNPs, null threshold: 4,455,100 triples. Before the runs and ranges this run peaked
    at 2,290 MB (and 450 SNPs would take ~8 GB); now ~0.66 GB, the same at 450."""
    code = textwrap.dedent(SCRIPT.format(tests=str(TESTS), out=str(tmp_path)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    passing, rss_mb = map(int, done.stdout.split())
    assert passing == 300 * 299 * 298 // 6
    assert rss_mb < 1000, f"peak RSS {rss_mb} MB"
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 < 1000


def test_triplewise_refuses_more_triples_than_it_may_hold(monkeypatch):
    """The API holds its triples in memory: past TRIPLEWISE_MAX a null threshold stops at the plan
    and a threshold once that many pass, each with one error, never a kill."""
    import genotile
    from genotile import api

    g = random_genotypes(12, 14, seed=2)  # samples x variants: 364 triples
    assert len(genotile.triplewise(g, backend="numpy").a) == 364
    monkeypatch.setattr(api, "TRIPLEWISE_MAX", 100)
    with pytest.raises(GenotileError, match=r"null threshold would hold all 364 triples of 14 variants in memory"):
        genotile.triplewise(g, backend="numpy")
    with pytest.raises(GenotileError, match=r"more than 100 triples pass .* run `genotile run`"):
        genotile.triplewise(g, threshold=0.0, backend="numpy", block_size=5)
