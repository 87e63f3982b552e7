"""What the CPU backends share around their products: telling a diagonal tile from its
arrays, and adding the row-sum terms (a side that is the all-ones plane) to the counts."""

import numpy as np

from genotile.core.bits import popcount_rows


def is_diagonal(left: np.ndarray, right: np.ndarray) -> bool:
    """right is left's rows: the same object, or a view of the same memory and layout."""
    return right is left or (
        left.shape == right.shape
        and left.strides == right.strides
        and left.__array_interface__["data"][0] == right.__array_interface__["data"][0]
    )


def add_row_sums(result: dict, left: np.ndarray, right: np.ndarray, counts: dict) -> dict:
    """result[name] += the count's terms with one all-ones side (O(n) row sums); a count
    missing from result starts at zeros."""
    n_i, n_j = left.shape[0], right.shape[0]
    for name, terms in counts.items():
        acc = result.setdefault(name, np.zeros((n_i, n_j), dtype=np.int64))
        for term in terms:
            if term.coef == 0:
                continue
            if term.left is None and term.right is not None:
                acc += term.coef * popcount_rows(right[:, slice(*term.right)])[None, :]
            elif term.right is None and term.left is not None:
                acc += term.coef * popcount_rows(left[:, slice(*term.left)])[:, None]
    return result
