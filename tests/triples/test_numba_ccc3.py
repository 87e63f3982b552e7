"""The fused numba ccc3 kernel (backends/cpu/numba_ccc3.py) against the numpy path: the same
triples and the same value bits, on missing and complete data, diagonal and off-diagonal block
triples, stages, thresholds that keep none, some or all, several words a plane, and chunks cut
small (units and calls of a few triples)."""

import numpy as np
import pytest
from ccc3ref import store
from cpu_backends import NUMBA

from genotile.core import ccc3
from genotile.triples import tile

pytestmark = pytest.mark.skipif(not NUMBA, reason="numba is not installed")


def genotypes(n, m, missing, seed):
    rng = np.random.default_rng(seed)
    g = rng.binomial(2, rng.beta(0.6, 0.6, size=n)[:, None], size=(n, m)).astype(np.uint8)
    g[rng.random(g.shape) < missing] = 255
    g[3] = 0  # a monomorphic vector, and one with no call
    g[5] = 255
    return g


def job_bytes(g, backend, *, block_size, stages, threshold, params):
    planes, layout, perm = store(g, seed=3)
    plan = ccc3.Plan3(g.shape[0], block_size, 3, stages)
    out = []
    for job in plan.jobs():
        arrays, meta = tile.compute_triples(planes, layout, perm, plan, params, *job, threshold, backend)
        assert meta["backend"] == backend
        out.append({k: v.tobytes() for k, v in arrays.items()})
    return out


@pytest.mark.parametrize(
    ("n", "m", "missing", "block_size", "stages", "threshold", "param"),
    [
        (23, 40, 0.1, 7, 2, None, 0.7),
        (23, 40, 0.0, 7, 1, 0.17, 0.7),  # thresholds near the median of the triples' largest value
        (30, 150, 0.05, 11, 3, 0.21, 2 / 3),  # 3 words a plane
        (19, 64, 0.2, 19, 1, 0.0, 0.7),  # one block: every triple diagonal; zeros pass
        (19, 64, 0.2, 6, 1, 9.0, 0.7),  # none passes
        (23, 40, 0.1, 7, 1, 0.09, 1.8),  # 1 - p f < 0: negative values
        (23, 40, 0.1, 7, 1, -0.01, 1.8),  # ... and a negative threshold (zeros pass)
        (23, 40, 0.1, 7, 1, 5.4, -0.5),  # p < 0: the factors grow with f
    ],
)
@pytest.mark.parametrize("small", [False, True])
def test_numba_jobs_are_the_numpy_jobs_byte_for_byte(
    monkeypatch, n, m, missing, block_size, stages, threshold, param, small
):
    from genotile.backends.cpu import numba_ccc3

    if small:  # units of 3 triples, calls of 5: every chunk boundary crossed
        monkeypatch.setattr(numba_ccc3, "UNIT_TRIPLES", 3)
        monkeypatch.setattr(numba_ccc3, "CAPACITY", 5)
    g = genotypes(n, m, missing, seed=n + m)
    params = ccc3.Params.make(multiplier=4.5, param=param)
    kw = {"block_size": block_size, "stages": stages, "threshold": threshold, "params": params}
    got = job_bytes(g, "numba", **kw)
    assert got == job_bytes(g, "numpy", **kw)
    passing = sum(len(job["a"]) // 8 for job in got)
    assert passing == 0 if threshold == 9.0 else passing > 0


def test_chunks_never_exceed_the_capacity(monkeypatch):
    from genotile.backends.cpu import numba_ccc3

    g = genotypes(40, 40, 0.1, seed=1)
    planes, layout, perm = store(g, seed=1)
    plan = ccc3.Plan3(40, 40, 1, 1)
    blocks = [planes] * 3
    stats = [ccc3.vector_stats(planes, layout)] * 3
    chunks = list(numba_ccc3.triples_chunks(blocks, stats, layout, plan, ccc3.Params(), (0, 0, 0), 0, None, 1000))
    assert max(len(c[0]) for c in chunks) <= 1000
    assert sum(len(c[0]) for c in chunks) == 40 * 39 * 38 // 6


def test_the_kernels_tallies_are_ccc3_tallies():
    from genotile.backends.cpu import numba_popcount

    rng = np.random.default_rng(0)
    counts = {name: rng.integers(0, 100, size=50) for name in ccc3.COUNTS}
    want = ccc3.tallies(counts)
    got = numba_popcount.ccc3_kernel().tallies(np.stack([counts[name] for name in ccc3.COUNTS]))
    for e, bits in enumerate(sorted(want)):
        assert np.array_equal(got[e], want[bits])


def test_a_threshold_equal_to_a_value_keeps_that_triple():
    """The bound leaves nothing out at the edge: thresholds exactly equal to computed values."""
    g = genotypes(23, 40, 0.1, seed=4)
    params = ccc3.Params()
    everything = job_bytes(g, "numpy", block_size=7, stages=1, threshold=None, params=params)
    values = np.concatenate([np.frombuffer(job[col]) for job in everything for col in ccc3.COLUMNS])
    for threshold in np.quantile(values[values > 0], [0.5, 0.9, 1.0], method="nearest"):
        kw = {"block_size": 7, "stages": 1, "threshold": float(threshold), "params": params}
        got = job_bytes(g, "numba", **kw)
        assert got == job_bytes(g, "numpy", **kw) and sum(len(job["a"]) for job in got) > 0
