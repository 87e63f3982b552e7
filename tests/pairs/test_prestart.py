"""The tile worker the Snakefile starts for a pending append (pairs/prestart.py): when it is
started, what it computes (the tiles and records the store job would have written), what it
refuses, and that it ends with Snakemake's process."""

import json
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from snakerun import assert_same_early_tiles, random_alignment, write_fasta

from genotile.pairs import early, prestart


def _store_record(root, dataset, size):
    record = root / "results" / dataset / "store" / "nucleotide" / "append.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"genotile": "0", "input": {"path": "data.fa", "size": size, "sha256": "ab"}}))


@pytest.mark.parametrize(("recorded", "pending"), [(10, True), (13, False), (20, False)])
def test_an_append_is_pending_where_the_input_outgrew_its_stores_record(tmp_path, monkeypatch, recorded, pending):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.fa").write_bytes(b">a\nACGTACGTAC")  # 13 bytes
    _store_record(tmp_path, "d", recorded)
    config = {"datasets": {"d": {"input": "data.fa", "metrics": ["snp"]}}}
    assert prestart.pending_append(config) is pending
    # a list of files, or a query (`against`), is left to the store job alone
    assert not prestart.pending_append({"datasets": {"d": {"input": ["data.fa"], "metrics": ["snp"]}}})
    assert not prestart.pending_append({"datasets": {"d": {**config["datasets"]["d"], "against": "x.fa"}}})
    assert not prestart.pending_append({"datasets": {"other": config["datasets"]["d"]}})


def test_no_worker_for_other_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.fa").write_bytes(b">a\nACGTACGTAC")
    _store_record(tmp_path, "d", 10)
    config = {"datasets": {"d": {"input": "data.fa", "metrics": ["snp"]}}}
    assert not prestart.wanted({**config, "backend": "numpy"})
    assert not prestart.wanted({**config, "tiles_in_store": False})


def _worker(path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "genotile.pairs.prestart", str(path)], stdin=subprocess.PIPE, stderr=subprocess.PIPE
    )
    for _ in range(600):
        if path.exists():
            return proc
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"no socket: {proc.stderr.read().decode() if proc.stderr else ''}")


def test_the_workers_tiles_and_records_are_the_store_jobs(tmp_path):
    """The worker computes what early.compute_tiles computes in the job itself (every array, the
    tile's metadata but its timings), with the same records; it refuses a job of another Python,
    and ends when its stdin closes."""
    from genotile.settings import tile_settings
    from genotile.store import stage

    source = tmp_path / "aln.fa"
    write_fasta(source, random_alignment(np.random.default_rng(3), 23, 40))
    pytest.importorskip("numba")
    cfg = {"thresholds": {"snp": 9, "hamming": 9}, "backend": "numba", "dense_max": 100}
    path = tmp_path / "w.sock"
    worker = _worker(path)
    try:
        made = {}
        for name in ("job", "worker"):
            store_dir = tmp_path / name / "store"
            plan = stage.store(source, "nucleotide", tmp_path / name / "ingest.json", store_dir, 8, 1)
            settings = {m: tile_settings(cfg, m, plan) for m in ("snp", "hamming")}
            at = (lambda d, todo, m: prestart.compute(str(path), d, todo, m)) if name == "worker" else None
            assert early.compute_tiles(store_dir, plan, settings, gpu_only=False, worker=at) > 0
            made[name] = sorted((store_dir / early.EARLY_DIR).rglob("tile_*.npz"))
            assert len(made[name]) == 12  # 6 tiles a metric
        assert_same_early_tiles(tmp_path / "job", made["job"], tmp_path / "worker", made["worker"])
        with socket.socket(socket.AF_UNIX) as conn:  # another environment's job is refused
            conn.connect(str(path))
            with conn.makefile("rw") as fh:
                fh.write(json.dumps({"python": "/elsewhere/python", "genotile": "0", "todo": []}) + "\n")
                fh.flush()
                assert json.loads(fh.readline())["ok"] is False
        assert worker.poll() is None
    finally:
        assert worker.stdin is not None
        worker.stdin.close()  # as Snakemake's process ends
        worker.wait(timeout=30)
    assert not path.exists()


def test_a_job_computes_its_tiles_itself_where_the_worker_is_gone(tmp_path):
    from genotile.settings import tile_settings
    from genotile.store import stage

    source = tmp_path / "aln.fa"
    write_fasta(source, random_alignment(np.random.default_rng(4), 12, 40))
    store_dir = tmp_path / "store"
    plan = stage.store(source, "nucleotide", tmp_path / "ingest.json", store_dir, 8, 1)
    settings = {"snp": tile_settings({"thresholds": {"snp": 9}, "backend": "numpy", "dense_max": 0}, "snp", plan)}
    gone = str(tmp_path / "gone.sock")
    at = lambda d, todo, m: prestart.compute(gone, d, todo, m)  # noqa: E731
    assert early.compute_tiles(store_dir, plan, settings, gpu_only=False, worker=at) > 0
    assert len(list((store_dir / early.EARLY_DIR).rglob("tile_*.json"))) == 3


def test_confirm_hands_the_socket_to_jobs_only_where_they_run_here(monkeypatch):
    import os

    class Pipe:
        closed = False

        def close(self):
            self.closed = True

    class Worker:
        def __init__(self):
            self.stdin = Pipe()

    monkeypatch.delenv(prestart.ENV, raising=False)
    for here in (True, False):
        worker = Worker()
        monkeypatch.setattr(prestart, "_worker", worker)
        monkeypatch.setattr(prestart, "_socket", "/tmp/x.sock")
        prestart.confirm(here)
        assert (os.environ.get(prestart.ENV) == "/tmp/x.sock") is here
        assert worker.stdin.closed is not here
        prestart.stop()
        assert prestart.ENV not in os.environ and worker.stdin.closed
