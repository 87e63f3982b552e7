"""Faults a cluster throws at a run: killed writers, damaged tiles, changed configs."""

import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from snakerun import REPO, job_counts, jobs_run, random_alignment, snakemake, write_fasta

TILES = "results/f/snp/pairs"


@pytest.fixture()
def finished_run(tmp_path):
    rng = np.random.default_rng(11)
    path = tmp_path / "aln.fa"
    write_fasta(path, random_alignment(rng, 17, 130))
    config = {
        "datasets": {"f": {"input": str(path), "metrics": ["snp"]}},
        "thresholds": {"snp": 30},
        "block_size": 6,
    }
    work = tmp_path / "work"
    work.mkdir()
    snakemake(work, config)
    outputs = {p.relative_to(work): p.read_bytes() for p in (work / "results/f").glob("*/*.tsv*")}
    return work, config, outputs


def assert_outputs(work, outputs):
    for rel, content in outputs.items():
        assert (work / rel).read_bytes() == content, rel


KILL_MID_WRITE = """
import os, signal, sys
import numpy as np
sys.path.insert(0, {src!r})
from genotile.pairs import stage as pairs_stage

def savez_then_die(fh, **arrays):  # half a file reaches the disk, then the job is killed
    fh.write(b"PK\\x03\\x04" + bytes(1000))
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)

np.savez = savez_then_die
store = "results/f/store/nucleotide"
pairs_stage.tile(store + "/planes.npy", store + "/manifest.json", store + "/perm.npy", "snp", 0, 1,
           threshold=30, dense=True, backend="numpy", tile_out={out!r})
"""


def test_tile_killed_mid_write_leaves_no_tile_and_rerun_recomputes_only_it(finished_run):
    work, config, outputs = finished_run
    target = work / TILES / "tile_0_1.npz"
    target.unlink()
    code = KILL_MID_WRITE.format(src=str(REPO / "src"), out=str(target))
    proc = subprocess.run([sys.executable, "-c", code], cwd=work)
    assert proc.returncode == -9  # SIGKILL
    assert not target.exists()  # the half-written bytes never had the tile's name
    assert list((work / TILES).glob(".tile_0_1.npz.*.tmp"))  # they are in a temporary file
    proc = snakemake(work, config)
    assert jobs_run(proc.stderr) == {"all": 1, "matrix": 1, "merge": 1, "tile": 1}
    assert not list((work / TILES).glob(".*.tmp"))  # the rewrite cleared the leftover
    assert_outputs(work, outputs)


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_tile_is_refused_by_name_and_recovered_after_removal(finished_run, damage):
    work, config, outputs = finished_run
    tile = work / TILES / "tile_1_2.npz"
    data = bytearray(tile.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:  # one bit in the middle of the largest stored array: the zip's CRC or the tile's SHA-256 catches it
        with zipfile.ZipFile(tile) as zf:
            member = max(zf.infolist(), key=lambda m: m.file_size)
        name_len, extra_len = struct.unpack("<HH", bytes(data[member.header_offset + 26 : member.header_offset + 30]))
        start = member.header_offset + 30 + name_len + extra_len
        data[start + member.compress_size // 2] ^= 0x10
    tile.write_bytes(bytes(data))
    proc = snakemake(work, config, check=False)
    assert proc.returncode != 0
    assert f"tile {TILES}/tile_1_2.npz" in proc.stderr
    assert ("truncated or corrupted" in proc.stderr) or ("checksum mismatch" in proc.stderr)
    tile.unlink()
    proc = snakemake(work, config)
    assert jobs_run(proc.stderr)["tile"] == 1
    assert_outputs(work, outputs)


def test_threshold_change_reruns_only_that_metrics_tiles(finished_run):
    work, config, _ = finished_run
    config = {**config, "datasets": {"f": {**config["datasets"]["f"], "metrics": ["snp", "hamming"]}}}
    snakemake(work, config)  # adding a metric: its own ingest, plan, pack and tiles, snp untouched
    changed = {**config, "thresholds": {**config["thresholds"], "snp": 10}}
    dry = snakemake(work, changed, "-n")
    assert job_counts(dry.stdout) == {"all": 1, "matrix": 1, "merge": 1, "tile": 6}  # 3 blocks: 6 snp tiles
    assert "metric=snp" in dry.stdout and "metric=hamming" not in dry.stdout


def test_metric_added_runs_only_the_new_metrics_jobs(finished_run):
    work, config, outputs = finished_run
    added = {**config, "datasets": {"f": {**config["datasets"]["f"], "metrics": ["snp", "hamming"]}}}
    dry = snakemake(work, added, "-n")
    # only the new metric's jobs: its store, and the merge that waits on its plan (its tiles
    # appear once the store checkpoint has run); the snp merge stays as it is
    assert job_counts(dry.stdout) == {"all": 1, "store": 1, "merge": 1}
    assert "wildcards: dataset=f, encoding=categorical" in dry.stdout
    assert "encoding=nucleotide" not in dry.stdout
    proc = snakemake(work, added)
    assert jobs_run(proc.stderr)["tile"] == 6
    assert_outputs(work, outputs)  # the snp outputs were not touched


def test_tile_of_another_input_is_refused_by_name(finished_run, tmp_path):
    work, config, outputs = finished_run
    other = tmp_path / "other.fa"
    write_fasta(other, random_alignment(np.random.default_rng(12), 17, 130))  # same shape, other data
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    snakemake(elsewhere, {**config, "datasets": {"f": {**config["datasets"]["f"], "input": str(other)}}})
    stale = work / TILES / "tile_0_2.npz"
    stale.write_bytes((elsewhere / TILES / "tile_0_2.npz").read_bytes())  # a newer file: merges rerun
    proc = snakemake(work, config, check=False)
    assert proc.returncode != 0
    assert f"tile {TILES}/tile_0_2.npz: computed from another input or plan" in proc.stderr
    stale.unlink()
    snakemake(work, config)
    assert_outputs(work, outputs)
