"""Integer arrays: checks over keys (pair and triple indices) by sorting, and the narrowest type
that holds a block of counts.

numpy 2.4's `np.unique` without `return_index`/`return_inverse` takes a hash-table path that
is ~20x slower than a sort on millions of distinct int64 keys (2.5 s against 0.12 s for the 2M
pair keys of one tile): every merge checks each tile's keys, so these sort instead.
"""

import numpy as np


def has_repeats(keys: np.ndarray) -> bool:
    """Whether any value of the 1-D `keys` occurs twice.

    >>> has_repeats(np.array([5, 1, 3])), has_repeats(np.array([5, 1, 5]))
    (False, True)
    """
    s = np.sort(np.asarray(keys).ravel())
    return bool(s.size > 1 and (s[1:] == s[:-1]).any())


def has_repeated_rows(rows: np.ndarray) -> bool:
    """Whether any row of the 2-D integer `rows` occurs twice (rows sorted by np.lexsort).

    >>> has_repeated_rows(np.array([[1, 2, 3], [1, 2, 4]])), has_repeated_rows(np.array([[1, 2], [1, 2]]))
    (False, True)
    """
    rows = np.asarray(rows)
    if rows.shape[0] < 2:
        return False
    s = rows[np.lexsort(rows.T[::-1])]
    return bool((s[1:] == s[:-1]).all(axis=1).any())


def count_distinct(keys: np.ndarray) -> int:
    """The number of distinct values of `keys`.

    >>> count_distinct(np.array([4, 4, 2, 9, 2]))
    3
    """
    s = np.sort(np.asarray(keys).ravel())
    return int(s.size and 1 + np.count_nonzero(s[1:] != s[:-1]))


def narrowest(values: np.ndarray) -> np.ndarray:
    """Integer `values` in the narrowest integer type that holds them all (others unchanged): a
    tile's dense block of counts, written and gathered in a quarter of int64's bytes or less.

    >>> narrowest(np.array([0, 300])).dtype, narrowest(np.array([-1, 5])).dtype, narrowest(np.array([0.5])).dtype
    (dtype('uint16'), dtype('int16'), dtype('float64'))
    """
    if values.dtype.kind not in "iu" or not values.size:
        return values
    kind = np.result_type(np.min_scalar_type(values.min()), np.min_scalar_type(values.max()))
    return values.astype(kind, copy=False)
