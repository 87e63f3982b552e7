"""The merge's one sort of all pairs (pairs/merge.sort_pairs) and the texts of its value columns,
against the plain argsort they replace (issue 16: the merge job's time)."""

import numpy as np
import pytest

from genotile.io.tsvgz import text_column
from genotile.pairs import merge


def as_texts(cells) -> list[str]:
    return [cells.texts[k] for k in cells.codes.tolist()]


@pytest.mark.parametrize("n", [2, 37, 40_000, 2**31 + 11])  # the last: keys too wide to pack with positions
@pytest.mark.parametrize("size", [0, 1, 2, 1000])
def test_sort_pairs_is_argsort_of_the_keys(n, size):
    rng = np.random.default_rng(size + n % 1000)
    a = rng.integers(0, n - 1, size)
    b = a + 1 + rng.integers(0, n - 1 - a, size) if size else a
    a, b = a.astype(np.int32) if n < 2**31 else a, b
    keys, order = merge.sort_pairs(a, b, n)
    want = a.astype(np.int64) * n + b
    assert keys.dtype == np.int64 and np.array_equal(keys, np.sort(want)) and np.array_equal(want[order], keys)
    assert np.array_equal(np.sort(order), np.arange(size))


@pytest.mark.parametrize("threads", [2, 3, 16, 200])
@pytest.mark.parametrize("spread", ["uniform", "one a", "few a", "pairs a < b"])
def test_sort_pairs_in_ranges_on_threads_is_the_one_sort(monkeypatch, threads, spread):
    """Ranges of a sorted on threads (merge._sort_in_ranges, from SORT_SPLIT_MIN pairs): the
    keys and order of one sort, repeats in their order, whatever the spread of a (all pairs of
    one vector, a few vectors, a < b as tiles hold them; more ranges than values of a)."""
    monkeypatch.setattr(merge, "SORT_SPLIT_MIN", 1)
    rng = np.random.default_rng(threads)
    n, size = 1000, 5000
    if spread == "uniform":
        a, b = rng.integers(0, n, size), rng.integers(0, n, size)
    elif spread == "one a":
        a, b = np.full(size, 7), rng.integers(0, n, size)
    elif spread == "few a":
        a, b = rng.choice([0, 3, 999], size), rng.integers(0, 50, size)
    else:
        a = rng.integers(0, n - 1, size)
        b = a + 1 + rng.integers(0, n - 1 - a, size)
    keys, order = merge.sort_pairs(a, b, n, threads=threads)
    want = a.astype(np.int64) * n + b
    assert np.array_equal(order, np.argsort(want, kind="stable"))
    assert np.array_equal(keys, want[order])
    one_keys, one_order = merge.sort_pairs(a, b, n, threads=1)
    assert np.array_equal(one_keys, keys) and np.array_equal(one_order, order)


def test_sort_pairs_keeps_repeats_in_their_order():
    keys, order = merge.sort_pairs(np.array([3, 1, 3, 1]), np.array([4, 2, 4, 2]), 5)
    assert keys.tolist() == [7, 7, 19, 19] and order.tolist() == [1, 3, 0, 2]


@pytest.mark.parametrize("kind", ["small", "wide", "float"])
def test_sorted_text_is_text_column_of_the_sorted_values(kind):
    rng = np.random.default_rng(5)
    if kind == "small":
        values = rng.integers(0, 21, 500)
    elif kind == "wide":
        values = rng.integers(-(2**40), 2**40, 500)
    else:
        values = np.concatenate([rng.standard_normal(495), [np.nan, -0.0, 0.0, np.inf, 0.25]])
    order = rng.permutation(values.size)
    assert as_texts(merge._sorted_text(values, order)) == as_texts(text_column(values[order]))
