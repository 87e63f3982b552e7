"""`block_size: auto` (core/blocks.py): one tile where a tile fits, more where work or memory asks."""

import json

import pytest

from genotile.core import blocks
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.store import stage as store_stage


def test_small_inputs_are_one_tile():
    for n in (1, 2, 23, 2000, 10_000):
        assert blocks.auto_block_size(n, 94, ["snp"], gpu=False) == n
        assert blocks.auto_block_size(n, 94, ["snp"], gpu=True, dense=True, device_bytes=80 * 2**30) == n


def test_cpu_memory_bounds_the_block():
    # king keeps 4 value columns: its tiles hold more bytes a pair than snp's, so smaller blocks
    snp = blocks.auto_block_size(40_000, 10, ["snp"], gpu=False)
    king = blocks.auto_block_size(40_000, 10, ["king"], gpu=False)
    assert king < snp < 40_000
    for size, name in ((snp, "snp"), (king, "king")):
        assert size**2 * blocks.bytes_per_pair([name]) <= blocks.CPU_TILE_BYTES
    # the block is the largest the memory allows, cut evenly (no sliver of a last block)
    plan = Plan(40_000, king, 1)
    assert plan.block(plan.n_blocks - 1).stop - plan.block(plan.n_blocks - 1).start > king // 2


def test_cpu_work_bounds_the_tile():
    n, words = 8_000, 20_000  # 3.2e7 pairs x 20,000 words: past CPU_TILE_WORK for one tile
    size = blocks.auto_block_size(n, words, ["snp"], gpu=False)
    plan = Plan(n, size, 1)
    assert plan.n_blocks > 1
    biggest = size * size * words
    assert biggest <= 2 * blocks.CPU_TILE_WORK  # each tile about the work asked, not far past it
    fewer = Plan(n, blocks.blocks_for(n, plan.n_blocks - 1), 1)
    assert fewer.n_blocks < plan.n_blocks  # and no more tiles than it takes
    assert n * (n - 1) // 2 * words / len(fewer.tiles()) > blocks.CPU_TILE_WORK


def test_gpu_blocks():
    assert blocks.auto_block_size(200_000, 8, ["snp"], gpu=True) == 200_000  # no dense: one tile
    assert blocks.auto_block_size(1_000_000, 8, ["snp"], gpu=True) <= blocks.GPU_MAX_BLOCK
    # a dense block must fit a quarter of the device
    size = blocks.auto_block_size(20_000, 8, ["snp"], gpu=True, dense=True, device_bytes=2**30)
    assert size < 20_000 and size * size * 8 <= 2**30 * blocks.GPU_DENSE_FRACTION * 1.01


def test_gpu_tiles_follows_the_backend(monkeypatch):
    assert blocks.gpu_tiles("cupy-b1") and blocks.gpu_tiles("cupy-int8")
    assert not blocks.gpu_tiles("numba") and not blocks.gpu_tiles("numpy")
    monkeypatch.setattr(blocks, "_dev_names", lambda: ["null", "nvidia0", "nvidiactl"])
    assert blocks.gpu_tiles("auto")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not blocks.gpu_tiles("auto")  # devices hidden from this job
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(blocks, "_dev_names", lambda: ["null", "nvidiactl"])
    assert not blocks.gpu_tiles("auto")


def test_plan_step_resolves_auto(tmp_path):
    manifest = tmp_path / "m.json"
    manifest.write_text(
        json.dumps({"n_vectors": 30, "n_fields": 100, "n_kept": 40, "ids": [str(i) for i in range(30)]})
    )
    p = store_stage.plan(
        manifest, "auto", 1, tmp_path / "plan.json", tmp_path / "perm.npy", metrics=["snp"], backend="numpy"
    )
    assert p.block_size == 30 and json.loads((tmp_path / "plan.json").read_text())["block_size"] == 30
    p = store_stage.plan(manifest, 7, 1, tmp_path / "plan.json", tmp_path / "perm.npy")
    assert p.n_blocks == 5
    for bad in (0, -3, "big", 2.5, True):
        with pytest.raises(GenotileError, match="block_size"):
            store_stage.plan(manifest, bad, 1, tmp_path / "plan.json", tmp_path / "perm.npy")


def test_a_collapsed_store_sizes_gpu_blocks_for_the_dense_block_that_weighs_it(monkeypatch):
    """A store of distinct rows keeps each tile's dense block (duplicates.weigh_tile): 87,905
    distinct of 200,000 on an 80 GB GPU is two blocks, not one 62 GB dense block (an OOM)."""
    from genotile.store import stage as store_stage

    monkeypatch.setattr(store_stage, "device_memory_bytes", lambda: 80 * 2**30)
    manifest = {"n_vectors": 200_000, "n_fields": 30_000, "n_kept": 300}
    assert store_stage.resolve_auto_block_size(manifest, ["snp"], "cupy-b1", 20_000) == 200_000
    collapsed = {**manifest, "n_distinct": 87_905}
    size = store_stage.resolve_auto_block_size(collapsed, ["snp"], "cupy-b1", 20_000)
    assert size < 87_905 and 8 * size * size <= 0.25 * 80 * 2**30
