"""CPU backend: AND + popcount over uint64 words, term by term (numpy only).

Slower than the BLAS backend on the CPU, but it computes exactly what the GPU's
1-bit tensor-core instruction does, so it cross-checks the packing.
"""

import numpy as np

from genotile.core.bits import popcount_rows

ROW_CHUNK = 64  # rows of block I per broadcast step: bounds the temporary


def is_available() -> bool:
    return True


def _product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    out = np.empty((left.shape[0], right.shape[0]), dtype=np.int64)
    for r0 in range(0, left.shape[0], ROW_CHUNK):
        anded = left[r0 : r0 + ROW_CHUNK, None, :] & right[None, :, :]
        out[r0 : r0 + ROW_CHUNK] = np.bitwise_count(anded).sum(axis=2, dtype=np.int64)
    return out


def count_matrices(left: np.ndarray, right: np.ndarray, counts: dict) -> dict[str, np.ndarray]:
    result = {}
    for name, terms in counts.items():
        acc = np.zeros((left.shape[0], right.shape[0]), dtype=np.int64)
        for term in terms:
            if term.left is None:
                acc += term.coef * popcount_rows(right[:, slice(*term.right)])[None, :]
            elif term.right is None:
                acc += term.coef * popcount_rows(left[:, slice(*term.left)])[:, None]
            else:
                acc += term.coef * _product(left[:, slice(*term.left)], right[:, slice(*term.right)])
        result[name] = acc
    return result
