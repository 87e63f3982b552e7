"""The `numba` backend's kernel against plain AND + popcount (numpy-popcount), on random Term
sets: products that are not their own transpose, missing mirrors on diagonal tiles, row sums,
zero coefficients, zero-width ranges, and row counts that are not multiples of its block tile."""

import numpy as np
import pytest
from cpu_backends import NUMBA
from hypothesis import given, settings
from hypothesis import strategies as st

from genotile import backends
from genotile.core.metrics import Term

pytestmark = pytest.mark.skipif(not NUMBA, reason="numba is not installed")

PLANE_WORDS = 3  # words per plane; rows hold 4 planes


def _range(k: int, width: int = PLANE_WORDS):
    return (k * PLANE_WORDS, k * PLANE_WORDS + width)


terms = st.lists(
    st.builds(
        Term,
        st.integers(-3, 3),
        st.one_of(st.none(), st.integers(0, 3).map(_range)),
        st.one_of(st.none(), st.integers(0, 3).map(_range)),
    ).filter(lambda t: t.left is not None or t.right is not None),  # no all-ones . all-ones
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(terms, min_size=1, max_size=4),
    n_i=st.integers(0, 40),
    n_j=st.integers(1, 40),
    diagonal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_counts_equal_plain_popcount(counts, n_i, n_j, diagonal, seed):
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**64, size=(n_i + n_j, 4 * PLANE_WORDS), dtype=np.uint64, endpoint=False)
    words &= rng.integers(0, 2**64, size=words.shape, dtype=np.uint64)  # sparser bits too
    left = words[:n_i]
    right = left if diagonal else words[n_i:]
    spec = {f"c{k}": ts for k, ts in enumerate(counts)}
    want = backends.get("numpy-popcount").count_matrices(left, right, spec)
    got = backends.get("numba").count_matrices(left, right, spec)
    assert got.keys() == want.keys()
    for name in spec:
        assert got[name].dtype == np.int64 and got[name].shape == want[name].shape
        assert np.array_equal(got[name], want[name]), name


def test_diagonal_tile_without_mirror_product():
    """L.V' alone on a diagonal tile: the blocks left of the diagonal need V.L', which the
    backend must compute itself (not copy from L.V')."""
    rng = np.random.default_rng(7)
    planes = rng.integers(0, 2**63, size=(37, 2 * PLANE_WORDS), dtype=np.uint64)
    spec = {"x": [Term(1, _range(0), _range(1))], "width0": [Term(5, (0, 0), (0, 0))]}
    got = backends.get("numba").count_matrices(planes, planes, spec)
    a, v = planes[:, :PLANE_WORDS], planes[:, PLANE_WORDS:]
    want = np.bitwise_count(a[:, None, :] & v[None, :, :]).sum(axis=2, dtype=np.int64)
    assert not np.array_equal(want, want.T)  # the test means something
    assert np.array_equal(got["x"], want)
    assert not got["width0"].any()


def test_limit_threads_caps_numba_and_blas_threads(monkeypatch):
    """A job's `threads` (scripts/tile.py) bound the CPU backends' threads."""
    import numba

    from genotile.backends.cpu import numba_popcount, numpy_blas

    monkeypatch.setattr(numba_popcount, "MAX_THREADS", None)
    monkeypatch.setattr(numpy_blas, "THREADS", 8)
    planes = np.ones((20, PLANE_WORDS), np.uint64)
    spec = {"x": [Term(1, _range(0), _range(0))]}
    backends.limit_threads(1)
    try:
        got = backends.get("numba").count_matrices(planes, planes, spec)
        assert numba.get_num_threads() == 1 and numpy_blas.THREADS == 1
        assert (got["x"] == PLANE_WORDS).all()  # one set bit per word
    finally:
        monkeypatch.undo()
        numba_popcount._kernel()  # every usable CPU again for the tests after this one


def test_diagonal_tile_with_cancelling_terms_keeps_the_mirror():
    """Terms whose coefficients cancel (2 L.V' - 2 L.V') beside V.L': L.V' is left out of the
    products, but V.L' at the places left of the diagonal is L.V' of the computed places."""
    rng = np.random.default_rng(1)
    planes = rng.integers(0, 2**63, size=(20, 4 * PLANE_WORDS), dtype=np.uint64)
    spec = {"c": [Term(2, _range(0), _range(1)), Term(-2, _range(0), _range(1)), Term(3, _range(1), _range(0))]}
    want = backends.get("numpy-popcount").count_matrices(planes, planes, spec)["c"]
    got = backends.get("numba").count_matrices(planes, planes, spec)["c"]
    assert not np.array_equal(want, want.T)  # the lower triangle is not a copy of the upper
    assert np.array_equal(got, want)
