"""core/keys.py (sorting checks) against np.unique on random keys, repeats or not."""

import numpy as np
import pytest

from genotile.core.keys import count_distinct, has_repeated_rows, has_repeats


@pytest.mark.parametrize("seed", range(20))
def test_keys_checks_equal_np_unique(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 200))
    keys = rng.integers(0, int(rng.choice([3, 1000, 2**60])), n)
    distinct = np.unique(keys).size
    assert count_distinct(keys) == distinct
    assert has_repeats(keys) == (distinct != n)
    rows = rng.integers(0, int(rng.choice([2, 50])), (n, 3))
    assert has_repeated_rows(rows) == (np.unique(rows, axis=0).shape[0] != n)
