"""A .bed's store made on the GPU (backends/cuda/bed_device.py: the pass's blocks of records
transposed there; store/resident.py: held there for the store job's tiles, planes.npy written
from it behind them) is the host's pass's, byte for byte: the rows, the counts, every file of
the store job, and the tiles computed from the held rows. Skipped without a GPU.
"""

import time

import numpy as np
import pytest
from genodata import random_genotypes
from test_bed import npy_bytes, reference_bits, reference_counts, store_job, tile_arrays, tiny_pass, write_fileset
from tilesteps import assert_adopted_as_computed, spy_tile_steps

from genotile.backends.cuda import cupy_common
from genotile.core.encode import MISSING
from genotile.io.readers import bed
from genotile.store import resident

needs_gpu = pytest.mark.skipif(
    not cupy_common.has_gpu(), reason="no CUDA GPU / CuPy: the GPU's pass over a .bed is not testable here"
)


@needs_gpu
@pytest.mark.parametrize("n, m", [(1, 1), (37, 301), (101, 64), (70, 700), (2100, 130), (3000, 1100)])
@pytest.mark.parametrize("tiny", [False, True])
def test_the_devices_rows_and_counts_are_the_host_pass(tmp_path, monkeypatch, n, m, tiny):
    from genotile.backends.cuda.bed_device import DeviceBits

    if tiny:  # blocks of one word of records, two buffers: many blocks, taken in turn
        tiny_pass(monkeypatch)
    g = random_genotypes(n, m, p_missing=0.1, seed=n + m)
    if m > 8:
        g[:, 7], g[:, 8] = MISSING, 1  # all missing; monomorphic
    path = write_fileset(tmp_path / "x", g, padding="random")
    want = reference_bits(g)
    rows_of = np.random.default_rng(n).permutation(n)
    for rows in (rows_of, rows_of[: max(1, n // 2)]):  # every sample, or some (their counts all the same)
        sink = DeviceBits(rows, n, m)
        got = bed.stream_to(path, n, m, sink, threads=3)
        assert got == {"variants": m, **reference_counts(g)}
        assert np.array_equal(sink.bits.get(), want[rows].reshape(rows.size, -1))
        sink.write(tmp_path / "s.npy")
        assert (tmp_path / "s.npy").read_bytes() == npy_bytes(want[rows].reshape(rows.size, -1))


@needs_gpu
@pytest.mark.parametrize("options", [{}, {"regions": "1:1-300,2:400-900"}])  # the .bed's records; pgenlib's
def test_a_store_job_on_the_device_leaves_the_host_jobs_files(tmp_path, monkeypatch, options):
    monkeypatch.setattr(bed, "BLOCK_BYTES", 1)  # blocks of 512 records: several
    g = random_genotypes(333, 1500, p_missing=0.05, seed=9)
    path = write_fileset(tmp_path / "x", g, padding="random")
    host = store_job(path, tmp_path / "host", **options)
    out = tmp_path / "device"
    with resident.on_device():
        store_job(path, out, **options)
        planes = out / "store" / "planes.npy"
        assert resident.lookup(planes) is not None  # held for the job's tiles, planes.npy written behind them
    assert resident.lookup(planes) is None  # written, and let go, on leaving
    assert {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == host


@needs_gpu
@pytest.mark.parametrize("metric", ["ibs", "king"])
@pytest.mark.parametrize("backend", ["cupy-b1", "cupy-int8"])
def test_tiles_of_the_held_rows_equal_the_files(tmp_path, monkeypatch, metric, backend):
    from genotile.backends.cuda import transfers

    g = random_genotypes(450, 700, p_missing=0.05, seed=4)
    path = write_fileset(tmp_path / "x", g, padding="random")
    store = tmp_path / "device" / "store"
    held: list[dict] = []
    real = transfers.upload
    with resident.on_device(), monkeypatch.context() as patch:
        store_job(path, tmp_path / "device")
        patch.setattr(transfers, "upload", lambda *a, **k: held.append(real(*a, **k)) or held[-1])
        on_device = {t: tile_arrays(store, metric, *t, backend, tmp_path / f"d{t}.tile") for t in [(0, 0), (1, 4)]}
    assert held and all(h.get("resident") for h in held)  # the tiles read the held rows, not the file
    for t, got in on_device.items():
        want = tile_arrays(store, metric, *t, "numpy", tmp_path / "n.tile")
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k], equal_nan=True) for k in want)


def _gpus() -> int:
    return cupy_common.cupy_module().cuda.runtime.getDeviceCount() if cupy_common.has_gpu() else 0


@pytest.mark.skipif(
    _gpus() < 2, reason="fewer than 2 GPUs (or no CUDA GPU / CuPy): the store's copies are not testable here"
)
def test_tiles_on_every_gpu_from_copies_of_the_held_store(tmp_path):
    from genotile.core.plan import Plan
    from genotile.io.tilefile import read_tile
    from genotile.pairs import early
    from genotile.util.readback import load_json

    g = random_genotypes(450, 700, p_missing=0.05, seed=6)
    path = write_fileset(tmp_path / "x", g, padding="random")
    store = tmp_path / "device" / "store"
    settings = {"threshold": None, "dense": True, "backend": "cupy-b1", "metric_params": None}
    with resident.on_device():
        store_job(path, tmp_path / "device")
        assert resident.spread(store / "planes.npy", 2)
        with cupy_common.cupy_module().cuda.Device(1):
            assert resident.lookup(store / "planes.npy") is not None  # a copy on the second GPU
        plan = Plan.from_json(load_json(store / "manifest.json", "manifest", ("plan",))["plan"])
        tiles = plan.tiles()
        digest = early.store_digest(store / "manifest.json")
        on = early._threads_per_device(
            2, [("king", i, j) for i, j in tiles], lambda m, i, j: (m, i, j, settings, digest), store
        )
    assert [int(part.split(": ")[1].split()[0]) > 0 for part in on.split(", ")] == [True, True]  # both took tiles
    for i, j in tiles:
        got, _, _ = read_tile(early.tile_path(store, "king", i, j))
        want = tile_arrays(store, "king", i, j, "numpy", tmp_path / "n.tile")
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k], equal_nan=True) for k in want)


@needs_gpu
def test_tiles_start_before_the_manifests_and_name_the_written_store(tmp_path, monkeypatch):
    """The store job's tiles run while its manifests wait for the input's SHA-256 (written behind
    them): from the provisional manifest, each tile file naming the store as written."""
    from genotile.io.tilefile import read_tile
    from genotile.pairs import stage as pairs_stage
    from genotile.store import ingest as ingest_module
    from genotile.store import stage as store_stage
    from genotile.store.manifest import store_identity
    from genotile.util.readback import load_json

    real_sha = ingest_module._sha256
    monkeypatch.setattr(ingest_module, "_sha256", lambda *a: time.sleep(1.0) or real_sha(*a))
    g = random_genotypes(450, 700, p_missing=0.05, seed=8)
    path = write_fileset(tmp_path / "x", g, padding="random")
    host = store_job(path, tmp_path / "host")
    out, seen = tmp_path / "device", {}
    store = out / "store"

    def tiles(p):
        seen["before"] = (store / "manifest.json").exists(), (out / "ingest.json").exists()
        for t in [(0, 0), (1, 4)]:
            pairs_stage.tile(
                store / "planes.npy", store / "manifest.json", store / "perm.npy", "king", *t,
                threshold=None, dense=True, backend="cupy-b1", tile_out=tmp_path / f"d{t}.tile",
            )  # fmt: skip

    with resident.on_device():
        store_stage.store(path, "genotype", out / "ingest.json", store, 5, 3, after_pack=tiles)
    assert seen["before"] == (False, False)  # the tiles came first
    assert {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == host
    identity = store_identity(load_json(store / "manifest.json", "manifest", ("plan",)))
    for t in [(0, 0), (1, 4)]:
        got, meta, _ = read_tile(tmp_path / f"d{t}.tile")
        want = tile_arrays(store, "king", *t, "numpy", tmp_path / "n.tile")
        assert meta["store"] == identity
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k], equal_nan=True) for k in want)


@needs_gpu
def test_early_tiles_are_counted_while_the_manifests_wait_and_adopted_after(tmp_path, monkeypatch):
    """The store job's early tiles (pairs/early.compute_tiles) are counted while its manifests
    wait for the SHA-256, written once they are in, and adopted by their tile jobs."""
    from genotile.pairs import early
    from genotile.store import ingest as ingest_module
    from genotile.store import stage as store_stage

    real_sha = ingest_module._sha256
    out = tmp_path / "device"
    manifest = out / "store" / "manifest.json"
    monkeypatch.setattr(ingest_module, "_sha256", lambda *a: time.sleep(1.5) or real_sha(*a))
    events = spy_tile_steps(monkeypatch, manifest)
    path = write_fileset(tmp_path / "x", random_genotypes(450, 700, p_missing=0.05, seed=10), padding="random")
    settings = {"threshold": 0.1, "dense": False, "backend": "cupy-b1", "metric_params": None}
    plans = []

    def tiles(p):
        plans.append(p)
        assert early.compute_tiles(manifest.parent, p, {"king": settings}, gpu_only=False) > 0

    with resident.on_device():
        store_stage.store(path, "genotype", out / "ingest.json", manifest.parent, 150, 3, after_pack=tiles)
    n = len(plans[0].tiles())
    assert n == 6 and [e for e, _ in events] == ["counted"] * n + ["written"] * n  # every tile counted first
    assert not events[0][1] and all(there for e, there in events if e == "written")
    assert_adopted_as_computed(manifest, "king", plans[0].tiles(), settings, tmp_path)


@needs_gpu
def test_two_tiles_at_once_on_the_gpu_holding_the_store(tmp_path, monkeypatch, caplog):
    """On the GPU holding the store, the store job's tiles run two at once (pairs/early: a thread
    each, the next tile counted while one is read back and written) where its memory holds both:
    the tiles those of one at a time; one at a time where it does not."""
    import logging

    from genotile.io.tilefile import read_tile
    from genotile.pairs import early
    from genotile.store import stage as store_stage

    path = write_fileset(tmp_path / "x", random_genotypes(450, 700, p_missing=0.05, seed=12), padding="random")
    settings = {"threshold": 0.05, "dense": False, "backend": "cupy-b1", "metric_params": None}
    got = {}
    for in_flight in (1, 2):
        monkeypatch.setattr(early, "TILES_IN_FLIGHT", in_flight)
        store = tmp_path / f"in_flight_{in_flight}" / "store"
        plans = []

        def tiles(p, store=store, in_flight=in_flight, plans=plans):
            plans.append(p)
            assert early.tiles_in_flight(store, p.block_size) == in_flight
            caplog.clear()
            assert early.compute_tiles(store, p, {"king": settings}, gpu_only=False) > 0
            assert f"({in_flight} at once)" in caplog.text
            with monkeypatch.context() as m:
                m.setattr(early, "TILE_BYTES_PER_ROW_BYTE", 1 << 40)  # no room for two
                assert early.tiles_in_flight(store, p.block_size) == 1

        with resident.on_device(), caplog.at_level(logging.INFO, logger="genotile"):
            store_stage.store(path, "genotype", store.parent / "ingest.json", store, 150, 3, after_pack=tiles)
        assert len(plans[0].tiles()) == 6
        got[in_flight] = {t: read_tile(early.tile_path(store, "king", *t))[0] for t in plans[0].tiles()}
    for t, arrays in got[1].items():
        assert arrays.keys() == got[2][t].keys()
        assert all(np.array_equal(arrays[k], got[2][t][k], equal_nan=True) for k in arrays)
