"""Job sizing changes no output byte: `block_size: auto` and fixed sizes give the same results.

A tile job's size (its blocks) is the one knob of how work is cut into Snakemake jobs; the
outputs must be the same for every size, and a lost tile must cost only its own job.
"""

import json

import numpy as np
import pytest
from snakerun import jobs_run, random_alignment, snakemake, write_fasta

OUTPUTS = ("pairs.tsv.gz", "matrix.tsv", "histogram.tsv")
# what a summary records of how the work was cut and timed, not of the result
RUN_KEYS = ("plan", "tiles", "timings", "config", "outputs")


@pytest.fixture(scope="module")
def alignment(tmp_path_factory):
    seqs = random_alignment(np.random.default_rng(11), 19, 157)
    path = tmp_path_factory.mktemp("aln") / "aln.fa"
    write_fasta(path, seqs)
    return path


def run(tmp_path_factory, alignment, block_size):
    workdir = tmp_path_factory.mktemp(f"bs{block_size}")
    config = {
        "datasets": {"d": {"input": str(alignment), "metrics": ["snp"]}},
        "thresholds": {"snp": 60},
        "block_size": block_size,
    }
    snakemake(workdir, config)
    return workdir, config


@pytest.fixture(scope="module")
def runs(tmp_path_factory, alignment):
    return {size: run(tmp_path_factory, alignment, size) for size in ("auto", 4, 9)}


def result_of(workdir):
    out = workdir / "results/d/snp"
    files = {name: (out / name).read_bytes() for name in OUTPUTS}
    summary = json.loads((out / "summary.json").read_text())
    files["summary"] = {k: v for k, v in summary.items() if k not in RUN_KEYS}
    files["output_digest"] = {k: v["digest"] for k, v in summary["outputs"].items()}
    return files


def test_every_block_size_gives_the_same_outputs(runs):
    auto, _ = runs["auto"]
    plan = json.loads((auto / "results/d/store/nucleotide/plan.json").read_text())
    assert plan["block_size"] == 19 and plan["n_tiles"] == 1  # auto: this input is one tile's work
    tiles = {size: len(list((w / "results/d/snp/pairs").glob("tile_*.npz"))) for size, (w, _) in runs.items()}
    assert tiles == {"auto": 1, 4: 15, 9: 6}
    expected = result_of(auto)
    for size in (4, 9):
        got = result_of(runs[size][0])
        for key, value in expected.items():
            assert got[key] == value, (size, key)


def test_a_lost_tile_reruns_its_own_job_only(runs):
    workdir, config = runs[4]
    before = {p: p.read_bytes() for p in (workdir / "results/d/snp").glob("*.tsv*")}
    others = {p: p.stat().st_mtime_ns for p in (workdir / "results/d/snp/pairs").glob("tile_*.npz")}
    lost = workdir / "results/d/snp/pairs/tile_1_2.npz"
    lost.unlink()
    del others[lost]
    proc = snakemake(workdir, config)
    assert jobs_run(proc.stderr) == {"all": 1, "matrix": 1, "merge": 1, "tile": 1}
    assert lost.exists()
    assert {p: p.stat().st_mtime_ns for p in others} == others  # no other tile was rewritten
    for path, content in before.items():
        assert path.read_bytes() == content, path
