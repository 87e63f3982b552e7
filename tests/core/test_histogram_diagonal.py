"""histogram.diagonal_tile_histograms (a symmetric block's histogram from its cells and its
diagonal) equals tile_histograms over the upper triangle's mask, on random symmetric blocks."""

import numpy as np
import pytest

from genotile.core import histogram
from genotile.core.metrics import get_metric


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", ["snp", "hamming"])
def test_diagonal_tile_histograms_equal_the_upper_triangle(seed, name):
    metric = get_metric(name)
    assert histogram.symmetric_counts(metric)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    upper = np.triu(rng.integers(0, int(rng.integers(1, 30)), (n, n)), 1)
    block = upper + upper.T + np.diag(rng.integers(0, 3, n))  # a diagonal that is not always 0
    values = {c: block for c in metric.columns}
    want = histogram.tile_histograms(metric, values, np.triu(np.ones((n, n), bool), 1))
    got = histogram.diagonal_tile_histograms(metric, values)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key].tolist() == want[key].tolist() and got[key].dtype == want[key].dtype


def test_metrics_with_float_bins_or_transposed_columns_keep_the_mask():
    assert not any(histogram.symmetric_counts(get_metric(m)) for m in ("ibs", "king", "ccc2"))
