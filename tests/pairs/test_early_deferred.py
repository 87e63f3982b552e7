"""The store job's early tiles while its manifest is written behind them (store/resident.py, a
store made on the GPU: the manifest waits for the input's SHA-256), without a GPU: every tile is
counted from the provisional manifest first, each written once the manifest is in, naming the
store as written, and adopted by its tile job as the tile it would compute (pairs/early.py,
pairs/stage.tile's `deferred`)."""

import json
import threading

import numpy as np
from snakerun import random_alignment, write_fasta
from tilesteps import assert_adopted_as_computed, spy_tile_steps

from genotile.core.plan import Plan
from genotile.pairs import early
from genotile.store import resident
from genotile.store import stage as store_stage


def test_tiles_are_counted_first_and_written_after_the_manifest(tmp_path, monkeypatch):
    source = tmp_path / "aln.fa"
    write_fasta(source, random_alignment(np.random.default_rng(3), 23, 40))
    store = tmp_path / "store"
    store_stage.store(source, "nucleotide", tmp_path / "ingest.json", store, 8, 1)
    manifest = store / "manifest.json"
    written = manifest.read_bytes()
    plan = Plan.from_json(json.loads(written)["plan"])
    manifest.unlink()  # being written behind the tiles: the provisional one lacks the checksum
    provisional = json.loads(written) | {"input_sha256": None, "sources": None}
    go = threading.Event()
    # the manifest comes in once every tile is counted
    events = spy_tile_steps(monkeypatch, manifest, lambda events: len(events) == len(plan.tiles()) and go.set())
    settings = {"threshold": 9, "dense": False, "backend": "numpy", "metric_params": None}
    try:
        resident.hold(store / "planes.npy", None, 0, 40)
        resident.manifests_behind(
            store / "planes.npy", manifest, provisional, lambda: go.wait(30) and manifest.write_bytes(written)
        )
        assert early.compute_tiles(store, plan, {"snp": settings}, gpu_only=False) > 0
        resident.settle()
    finally:
        resident.release()
    n = len(plan.tiles())
    assert n == 6 and [e for e, _ in events] == ["counted"] * n + ["written"] * n
    assert not any(there for e, there in events if e == "counted") and all(t for e, t in events if e == "written")
    assert_adopted_as_computed(manifest, "snp", plan.tiles(), settings, tmp_path)
