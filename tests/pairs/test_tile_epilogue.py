"""The CPU tile's epilogue in bands (pairs/tile.passing_pairs, histogram's banded bincount)
against the whole-block reference: np.nonzero of the thresholded, upper-triangle-masked block,
and one np.bincount of the raveled block."""

import numpy as np
import pytest

from genotile.core import histogram
from genotile.core.metrics import get_metric
from genotile.pairs import tile


def _reference_pairs(metric, values, threshold, diagonal):
    keep = metric.passes(values, threshold)
    if diagonal:
        keep &= np.triu(np.ones(keep.shape, dtype=bool), k=1)
    return np.nonzero(keep)


@pytest.mark.parametrize("threshold", [None, 0, 3, 50])
@pytest.mark.parametrize(
    ("shape", "diagonal"),
    [((1, 1), True), ((7, 7), True), ((40, 40), True), ((7, 7), False), ((33, 90), False), ((0, 5), False)],
)
def test_passing_pairs_equal_nonzero_of_the_masked_block(monkeypatch, shape, threshold, diagonal):
    rng = np.random.default_rng(sum(shape) + (threshold or 0))
    metric = get_metric("snp")
    padded = rng.integers(0, 8, (shape[0] + 3, shape[1] + 5)).astype(np.int32)
    values = {"snp": padded[: shape[0], : shape[1]]}  # a view into a padded buffer, as tiles give
    monkeypatch.setattr(tile, "PASS_CELLS", 37)  # many bands, some cutting rows short
    got = tile.passing_pairs(metric, values, threshold, diagonal)
    want = _reference_pairs(metric, values, threshold, diagonal)
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    assert all(g.dtype == np.int64 for g in got)


def test_passing_pairs_of_a_similarity_keep_ge():
    metric = get_metric("king")
    rng = np.random.default_rng(3)
    k = rng.normal(0, 0.2, (30, 30))
    k[rng.random(k.shape) < 0.1] = np.nan
    vals = {c: k for c in metric.columns}
    got = tile.passing_pairs(metric, vals, 0.0442, diagonal=True)
    want = _reference_pairs(metric, vals, 0.0442, diagonal=True)
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    assert got[0].size > 0


@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("shape", [(1, 1), (50, 13), (13, 50), (0, 4)])
def test_banded_bincount_equals_bincount(monkeypatch, shape, dtype):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    padded = rng.integers(0, 200, (shape[0] + 2, shape[1] + 3)).astype(dtype)
    block = padded[: shape[0], : shape[1]]
    monkeypatch.setattr(histogram, "BINCOUNT_CELLS", 29)
    got = histogram.column_histogram(block, get_metric("snp"), "snp")
    want = np.bincount(block.ravel().astype(np.int64), minlength=1)
    assert got.dtype == np.int64
    assert got.tolist() == want.tolist()
