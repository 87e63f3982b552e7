"""Exact histograms: per tile, summed, against a direct count."""

import math

import numpy as np

from genotile.core.histogram import add, column_histogram, rows
from genotile.core.metrics import METRICS

SNP, KING = METRICS["snp"], METRICS["king"]


def test_integer_bincount_and_padding_sum():
    a = column_histogram(np.array([[0, 3], [3, 1]]), SNP, "snp")
    b = column_histogram(np.array([5, 0]), SNP, "snp")
    total = add(add({}, {"hist_snp": a}), {"hist_snp": b})["hist_snp"]
    assert total.tolist() == [2, 1, 0, 2, 0, 1]
    assert list(rows(SNP, "snp", total))[3] == ("snp", "3", "3", 2)


def test_float_bins_match_direct_count():
    rng = np.random.default_rng(1)
    low, high, bins = KING.float_bins["kinship"]
    width = (high - low) / bins
    which = rng.integers(0, bins, 5000)
    inside = low + (which + 0.5 + rng.uniform(-0.4, 0.4, which.size)) * width  # never near an edge
    v = np.concatenate([inside, [np.nan, -np.inf, np.inf, -3.0, 0.9, low, high]])
    counts = column_histogram(v, KING, "kinship")
    expected = np.bincount(which, minlength=bins)
    expected[0] += 1  # low itself
    expected[-1] += 1  # high itself goes to the last bin
    assert counts[:bins].tolist() == expected.tolist()
    assert counts[bins:].tolist() == [2, 2, 1]  # below (-inf, -3), above (inf, 0.9), nan
    table = list(rows(KING, "kinship", counts))
    assert len(table) == bins + 3 and sum(c for *_, c in table) == v.size
    assert float(table[0][1]) == low and float(table[bins - 1][2]) == high
    assert math.isinf(float(table[bins][1]))
