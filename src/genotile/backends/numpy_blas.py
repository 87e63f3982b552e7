"""CPU backend: bit planes unpacked to float32 0/1 and multiplied by BLAS sgemm.

Exact: every operand is a small integer, so every partial sum is an integer;
K is cut into chunks small enough that no partial sum can reach 2**24, the
limit below which float32 holds every integer. Chunks are summed in int64.
All the plane products of one count are fused into one GEMM by concatenating
their ranges along K, with the coefficient folded into the right operand.
"""

import numpy as np

from ..pack import WORD_BITS, popcount_rows, unpack_bits

EXACT_LIMIT = 2**24
CHUNK_WORDS = 256  # words per GEMM slice (16,384 fields): bounds the unpacked temporaries


def is_available() -> bool:
    return True


def _slices(terms, chunk_words):
    """Split each product term's word range into chunks, as (coef, left, right) slices."""
    for term in terms:
        (l0, l1), (r0, _) = term.left, term.right
        for off in range(0, l1 - l0, chunk_words):
            width = min(chunk_words, l1 - l0 - off)
            yield term.coef, slice(l0 + off, l0 + off + width), slice(r0 + off, r0 + off + width)


def _fused_products(left: np.ndarray, right: np.ndarray, terms) -> np.ndarray:
    """sum(coef * left[range] . right[range]') over product terms, as few exact GEMMs."""
    acc = np.zeros((left.shape[0], right.shape[0]), dtype=np.int64)
    max_coef = max(abs(t.coef) for t in terms)
    # words per GEMM: no partial sum may reach 2**24 (and bound the unpacked temporaries)
    limit = min(CHUNK_WORDS, max(1, EXACT_LIMIT // (max_coef * WORD_BITS) - 1))
    batch_l, batch_r, words = [], [], 0
    for coef, ls, rs in _slices(terms, limit):
        if words + (ls.stop - ls.start) > limit:
            acc += np.rint(np.concatenate(batch_l, axis=1) @ np.concatenate(batch_r, axis=1).T).astype(np.int64)
            batch_l, batch_r, words = [], [], 0
        batch_l.append(unpack_bits(left[:, ls]))
        batch_r.append(unpack_bits(right[:, rs]) * np.float32(coef))
        words += ls.stop - ls.start
    if batch_l:
        acc += np.rint(np.concatenate(batch_l, axis=1) @ np.concatenate(batch_r, axis=1).T).astype(np.int64)
    return acc


def count_matrices(left: np.ndarray, right: np.ndarray, counts: dict) -> dict[str, np.ndarray]:
    result = {}
    for name, terms in counts.items():
        acc = np.zeros((left.shape[0], right.shape[0]), dtype=np.int64)
        products = []
        for term in terms:
            if term.left is None:
                acc += term.coef * popcount_rows(right[:, slice(*term.right)])[None, :]
            elif term.right is None:
                acc += term.coef * popcount_rows(left[:, slice(*term.left)])[:, None]
            else:
                products.append(term)
        if products:
            acc += _fused_products(left, right, products)
        result[name] = acc
    return result
