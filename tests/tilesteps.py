"""What the tests of a store job's early tiles share (tests/pairs/test_early_deferred.py without a
GPU, tests/io/test_gpu_bed_pass.py on one): a spy on each tile's two steps, and the check that
the early tiles are adopted as the tiles their jobs compute."""

import numpy as np

from genotile.io.tilefile import read_tile
from genotile.pairs import early
from genotile.pairs import stage as pairs_stage
from genotile.pairs import tile as tile_module


def spy_tile_steps(monkeypatch, manifest, on_count=None) -> list[tuple[str, bool]]:
    """[(step, whether `manifest` was there then)] of each tile counted (pairs/tile.compute_tile:
    "counted") and written (pairs/stage._write_tile: "written"), in order; `on_count(events)`
    after each count is recorded."""
    events: list[tuple[str, bool]] = []
    real_count, real_write = tile_module.compute_tile, pairs_stage._write_tile

    def counted(*a, **k):
        events.append(("counted", manifest.exists()))
        if on_count is not None:
            on_count(events)
        return real_count(*a, **k)

    def written(*a, **k):
        events.append(("written", manifest.exists()))
        return real_write(*a, **k)

    monkeypatch.setattr(tile_module, "compute_tile", counted)
    monkeypatch.setattr(pairs_stage, "_write_tile", written)
    return events


def assert_adopted_as_computed(manifest, metric: str, tiles, settings: dict, tmp_path) -> None:
    """Each early tile of `tiles` is adopted (pairs/early.adopt, with `settings`) as the tile its
    job computes with numpy from the store as written: the same arrays, the same store named."""
    store = manifest.parent
    for i, j in tiles:
        adopted, want = tmp_path / f"a{i}_{j}.npz", tmp_path / f"w{i}_{j}.npz"
        assert early.adopt(manifest, metric, i, j, settings, adopted)
        pairs_stage.tile(store / "planes.npy", manifest, store / "perm.npy", metric, i, j,
                         tile_out=want, **{**settings, "backend": "numpy"})  # fmt: skip
        (got, got_meta, _), (ref, ref_meta, _) = read_tile(adopted), read_tile(want)
        assert got.keys() == ref.keys() and all(np.array_equal(got[k], ref[k], equal_nan=True) for k in ref)
        assert got_meta["store"] == ref_meta["store"] and got_meta["store"]["input_sha256"] is not None
