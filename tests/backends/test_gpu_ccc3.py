"""ccc3 triple files from the GPU backends (cupy-b1, cupy-int8) equal the numpy path's, byte for byte.

Skipped where there is no CUDA GPU / CuPy. On a GPU machine: every job of seeded plans whose
blocks and stages split unevenly (diagonal and off-diagonal block triples), missing and complete
data, thresholds None / passing about a fifth; small batches of middle rows and a passing-triples
buffer that overflows, so the batching and the regrow-and-rerun path run. And in bounded memory
(issue 30): a buffer held to a few triples, so every batch is cut into ranges read back one chunk
each, through the whole run (job files in several sorted runs, the merge) to the CPU's
triples.tsv.gz, byte for byte.
"""

import gzip

import numpy as np
import pytest
from ccc3ref import store
from genodata import random_genotypes, vcf_text, write_vcf

from genotile import pipeline
from genotile.backends.cuda import cupy_common
from genotile.core import ccc3
from genotile.io.tilefile import arrays_digest, read_tile
from genotile.store.reuse import current_store
from genotile.triples import runs
from genotile.triples.tile import compute_triples, iter_triples

needs_gpu = pytest.mark.skipif(
    not cupy_common.has_gpu(80), reason="no CUDA GPU (compute capability >= 8.0) / CuPy: ccc3 device path untestable"
)


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    if cupy_common.has_gpu(80):
        from genotile.backends.cuda import cupy_ccc3

        monkeypatch.setattr(cupy_common, "POISON", True)
        monkeypatch.setattr(cupy_ccc3, "BATCH_ROWS", 40)
        monkeypatch.setattr(cupy_ccc3, "INITIAL_CAPACITY", 17)


@needs_gpu
@pytest.mark.parametrize("backend", ["cupy-b1", "cupy-int8"])
@pytest.mark.parametrize("kind", ["missing", "complete"])
@pytest.mark.parametrize("threshold", [None, "fifth"])
def test_device_triples_equal_numpy(backend, kind, threshold):
    if kind == "missing":
        g = np.ascontiguousarray(random_genotypes(150, 26, p_missing=0.1, seed=31).T)
    else:
        g = np.ascontiguousarray(random_genotypes(150, 26, p_missing=0.0, seed=32, special=False).T)
    planes, layout, perm = store(g, 3)
    plan = ccc3.Plan3(g.shape[0], 9, 3, 2)  # blocks of 9, 9, 8; middle blocks in 2 stages
    params = ccc3.Params()
    if threshold == "fifth":
        arrays, _ = compute_triples(planes, layout, perm, plan, params, 0, 1, 2, 0, None, "numpy")
        threshold = float(np.quantile(np.max([arrays[c] for c in ccc3.COLUMNS], axis=0), 0.8))
    passing = 0
    for job in plan.jobs():
        want, _ = compute_triples(planes, layout, perm, plan, params, *job, threshold, "numpy")
        got, meta = compute_triples(planes, layout, perm, plan, params, *job, threshold, backend)
        assert meta["backend"] == backend
        assert arrays_digest(got) == arrays_digest(want), job
        passing += want["a"].size
    assert passing > 0


@needs_gpu
@pytest.mark.parametrize("backend", ["cupy-b1", "cupy-int8"])
@pytest.mark.parametrize("threshold", [None, 0.2])  # every triple; about half of them
def test_device_chunks_are_bounded_and_the_run_writes_the_cpus_bytes(tmp_path, monkeypatch, backend, threshold):
    from genotile.backends.cuda import cupy_ccc3

    path = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(11, 21, seed=9), seed=9))
    current_store(path, "genotype_t", tmp_path / "out", 64, 1)
    store_dir = tmp_path / "out" / "store" / "genotype_t"
    kwargs = {"block_size": 7, "stages": 2, "threshold": threshold}
    cpu = pipeline.run_ccc3(store_dir, tmp_path / "cpu", backend="numpy", **kwargs)
    monkeypatch.setattr(cupy_ccc3, "BATCH_ROWS", 9)  # a middle row or two a batch
    monkeypatch.setattr(cupy_ccc3, "INITIAL_CAPACITY", 1)
    monkeypatch.setattr(cupy_ccc3, "MAX_CAPACITY", 3)  # grows 1 -> 2 -> 3, then ranges are cut
    monkeypatch.setattr(runs, "RUN_ROWS", 4)
    # each chunk is one readback of at most MAX_CAPACITY triples
    g = np.ascontiguousarray(random_genotypes(30, 21, p_missing=0.1, seed=10).T)
    planes, layout, perm = store(g, 4)
    plan = ccc3.Plan3(g.shape[0], 8, 4, 1)
    for job in plan.jobs():
        sizes = [
            ids.shape[0] for ids, _ in iter_triples(planes, layout, perm, plan, ccc3.Params(), *job, threshold, backend)
        ]
        want, _ = compute_triples(planes, layout, perm, plan, ccc3.Params(), *job, threshold, "numpy")
        assert sum(sizes) == want["a"].size and all(1 <= t <= 3 for t in sizes), (job, sizes)
        assert len(sizes) >= -(-want["a"].size // 3)
    gpu = pipeline.run_ccc3(store_dir, tmp_path / "gpu", backend=backend, **kwargs)
    files = [read_tile(f) for f in sorted((tmp_path / "gpu" / "triples").glob("*.npz"))]
    assert all(meta["backend"] == backend for _, meta, _ in files)
    assert any(meta.get("runs", 1) > 1 for _, meta, _ in files)  # spilled in sorted runs
    got = gzip.decompress((tmp_path / "gpu" / "triples.tsv.gz").read_bytes())
    want = gzip.decompress((tmp_path / "cpu" / "triples.tsv.gz").read_bytes())
    assert got == want and gpu["triples_passing"] == cpu["triples_passing"] > 0
    if threshold is None:
        assert cpu["triples_passing"] == 21 * 20 * 19 // 6


@needs_gpu
@pytest.mark.parametrize("kernel", ["resident", "streamed"])
@pytest.mark.parametrize("samples", [26, 300, 1100])  # planes of 1, 5, 18 words: padded to 4 or 16 words
@pytest.mark.parametrize("threshold", ["fifth", "rare", -1.0, None])
def test_fused_kernel_equals_numpy_across_tiles(monkeypatch, kernel, samples, threshold):
    """The fused kernels (ccc3_fused, planes held whole; ccc3_fused_streamed, planes through
    cp.async stages of 16 words, 1100 samples in two) over blocks of 70 rows (64-row tiles and
    their ragged ends, diagonal and off-diagonal block triples, middle blocks in 2 stages): the
    numpy path's triples byte for byte; a null threshold forced through them too."""
    from genotile.backends.cuda import ccc3_fused, cupy_ccc3

    calls = []
    real = ccc3_fused.triples_fused

    def spy(*args, **kwargs):
        calls.append((args[5], kwargs["streamed"]))  # block ids, the kernel
        yield from real(*args, **kwargs)

    monkeypatch.setattr(ccc3_fused, "triples_fused", spy)
    monkeypatch.setattr(cupy_ccc3, "fused_kernel", lambda *a: kernel)
    monkeypatch.setattr(ccc3_fused, "J_PER_LAUNCH", 24)  # several launches a stage, ragged at the end
    monkeypatch.setattr(ccc3_fused, "J_PER_BLOCK", 5)
    g = np.ascontiguousarray(random_genotypes(samples, 150, p_missing=0.05, seed=41).T)
    planes, layout, perm = store(g, 5)
    plan = ccc3.Plan3(g.shape[0], 70, 5, 2)  # blocks of 70, 70, 10
    params = ccc3.Params()
    if isinstance(threshold, str):
        arrays, _ = compute_triples(planes, layout, perm, plan, params, 0, 1, 1, 0, None, "numpy")
        values = np.max([arrays[c] for c in ccc3.COLUMNS], axis=0)
        threshold = float(np.quantile(values, 0.8 if threshold == "fifth" else 0.999))
    passing = 0
    for job in plan.jobs():
        want, _ = compute_triples(planes, layout, perm, plan, params, *job, threshold, "numpy")
        got, meta = compute_triples(planes, layout, perm, plan, params, *job, threshold, "cupy-b1")
        assert arrays_digest(got) == arrays_digest(want), job
        passing += want["a"].size
    assert passing > 0 and len(calls) == len(plan.jobs())
    assert {streamed for _, streamed in calls} == {kernel == "streamed"}


@needs_gpu
def test_planes_too_wide_to_hold_take_the_streamed_kernel():
    """cupy-b1 with a threshold: the resident kernel where the planes fit this GPU's shared
    memory, the streamed one past it where the GPU grants its stages (sm_90), else the select
    path; no threshold: the select path."""
    from types import SimpleNamespace

    from genotile.backends.cuda import ccc3_fused, cupy_b1, cupy_ccc3

    smem = ccc3_fused.device_smem()
    wide = "streamed" if ccc3_fused.streamed_smem_bytes() <= smem else None
    for words, want in ((1, "resident"), (313, wide), (4_000, wide)):
        assert cupy_ccc3.fused_kernel(cupy_b1.ENGINE, SimpleNamespace(words=words), 0.5) == want
    assert cupy_ccc3.fused_kernel(cupy_b1.ENGINE, SimpleNamespace(words=1), None) is None


@needs_gpu
def test_fused_kernel_cuts_its_launches_to_the_buffer(monkeypatch):
    """A buffer of 3 triples: launches cut down along j, i and k until each fits; every chunk
    one readback of at most 3; the same triples as numpy."""
    from genotile.backends.cuda import cupy_ccc3

    monkeypatch.setattr(cupy_ccc3, "INITIAL_CAPACITY", 1)
    monkeypatch.setattr(cupy_ccc3, "MAX_CAPACITY", 3)
    g = np.ascontiguousarray(random_genotypes(100, 80, p_missing=0.05, seed=43).T)
    planes, layout, perm = store(g, 6)
    plan = ccc3.Plan3(g.shape[0], 80, 6, 1)  # one block: the diagonal block triple
    params = ccc3.Params()
    want, _ = compute_triples(planes, layout, perm, plan, params, 0, 0, 0, 0, 0.05, "numpy")
    sizes = [ids.shape[0] for ids, _ in iter_triples(planes, layout, perm, plan, params, 0, 0, 0, 0, 0.05, "cupy-b1")]
    assert sum(sizes) == want["a"].size > 3 and all(1 <= t <= 3 for t in sizes)
    got, _ = compute_triples(planes, layout, perm, plan, params, 0, 0, 0, 0, 0.05, "cupy-b1")
    assert arrays_digest(got) == arrays_digest(want)


def test_the_fused_kernel_leaves_extreme_parameters_to_the_select_path():
    """Its float bound keeps a 1e-5 margin only for 2^-20 <= |M| <= 2^20 and |P| <= 2^20: further
    out (floats under- or overflow) the select path computes the exact values (runs without a GPU:
    decided before the device is asked)."""
    from types import SimpleNamespace

    from genotile.backends.cuda import cupy_ccc3

    b1 = SimpleNamespace(name="cupy-b1")
    layout = SimpleNamespace(words=32)
    for multiplier, param in ((1e-40, 2 / 3), (4.5, -1e9), (1e30, 2 / 3)):
        assert cupy_ccc3.fused_kernel(b1, layout, 0.3, ccc3.Params(multiplier, param)) is None
