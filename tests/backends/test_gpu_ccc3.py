"""ccc3 triple files from the GPU backends (cupy-b1, cupy-int8) equal the numpy path's, byte for byte.

Skipped where there is no CUDA GPU / CuPy. On a GPU machine: every job of seeded plans whose
blocks and stages split unevenly (diagonal and off-diagonal block triples), missing and complete
data, thresholds None / passing about a fifth; small batches of middle rows and a passing-triples
buffer that overflows, so the batching and the regrow-and-rerun path run.
"""

import numpy as np
import pytest
from ccc3ref import store
from genodata import random_genotypes

from genotile.backends.cuda import cupy_common
from genotile.core import ccc3
from genotile.io.tilefile import arrays_digest
from genotile.triples.tile import compute_triples

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
