"""CPU backend: AND + popcount compiled by numba, exact, generic over any metric's Terms.

The same arithmetic as `numpy-popcount` (and as the GPU's 1-bit tensor-core
instruction), compiled to vector popcounts and run on every CPU this process may
use: the fastest CPU backend wherever numba is installed (bench/RESULTS.md).
The kernel and its tiling are in popcount_kernel.py; here:

1. Products. The distinct (left range, right range) products of all counts, each
   with its coefficient in every count (a coefficient matrix P x C), so each
   product is computed once however many counts use it.
2. Diagonal tiles (right is left): only block tiles on and right of the diagonal
   are computed; each also writes its transposed place, where product (a, b) is
   product (b, a) of the computed place, so the product set is closed under
   transposition first (ibs, king, ccc2, snp and hamming already are).
3. Row sums (terms with an all-ones side) are popcounts of one side's rows.
"""

import importlib.util
from collections import defaultdict

import numpy as np

from genotile.backends.terms import add_row_sums, is_diagonal
from genotile.util.cpus import usable_cpus

_KERNEL = None
MAX_THREADS: int | None = None  # at most this many threads (backends.limit_threads), else every usable CPU


def is_available() -> bool:
    return importlib.util.find_spec("numba") is not None


def _kernel():
    """The compiled kernel module, imported on first use (numba's import costs ~0.3 s), with
    numba's thread count set: every usable CPU, at most MAX_THREADS."""
    global _KERNEL
    import numba

    if _KERNEL is None:
        from genotile.backends.cpu import popcount_kernel

        _KERNEL = popcount_kernel
    cap = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(usable_cpus(cap if MAX_THREADS is None else min(MAX_THREADS, cap)))
    return _KERNEL


def warm() -> None:
    """Import numba and the kernel and make one call of it on a few zeros (numba's start in a
    process, about 0.5 s: backends.numba_start_s), so that a process about to compute tiles
    (an appended store's, scripts/store.py) may do it on a thread while it reads its input; then
    `auto` takes numba for its tiles, its start paid. The argument types are count_matrices',
    so that the kernel it loads is the one they use (another would be compiled, seconds)."""
    kernel = _kernel()
    b = kernel.BLOCK_ROWS
    words = _padded(np.zeros((b, 1), np.uint64), b)  # read-only, as a tile's (one kernel type)
    one = np.ones(1, np.int64)
    kernel.tile_counts(
        words,
        words,
        np.zeros(1, np.int64),
        np.zeros(1, np.int64),
        one,
        np.zeros((1, 2), np.int64),
        np.ones((1, 1), np.int64),
        np.ones((1, 1), np.int64),
        False,
        np.empty((1, b, b), np.int64),
    )


def ccc3_kernel():
    """The compiled ccc3 kernel module (ccc3_kernel.py; numba_ccc3.py drives it), with numba's
    threads set as for `_kernel`."""
    _kernel()
    from genotile.backends.cpu import ccc3_kernel

    return ccc3_kernel


def _products(counts: dict, diagonal: bool):
    """(products, coef_upper, coef_lower): the products to compute as (left, right) word
    ranges and their coefficient matrices (products x counts) at (i, j) and at (j, i)."""
    coef: dict = defaultdict(lambda: defaultdict(int))
    for c, terms in enumerate(counts.values()):
        for t in terms:
            if t.left is not None and t.right is not None and t.left[1] > t.left[0] and t.coef:
                coef[(tuple(t.left), tuple(t.right))][c] += t.coef
    products = [key for key, by_count in coef.items() if any(by_count.values())]
    if diagonal:
        # Close the computed set under transposition: a product whose coefficients cancel to zero
        # is left out above, but its mirror may still be needed below the diagonal.
        computed = set(products)
        products += [(r, le) for le, r in products if (r, le) not in computed]
    shape = (len(products), len(counts))
    upper, lower = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    for p, (le, r) in enumerate(products):
        for c, v in coef.get((le, r), {}).items():
            upper[p, c] = v
        for c, v in coef.get((r, le), {}).items():
            lower[p, c] = v
    return products, upper, lower


def _padded(words: np.ndarray, rows: int) -> np.ndarray:
    """The words padded to `rows` rows, C-contiguous and always read-only: numba compiles a
    kernel per argument type, and a read-only array (a memory-mapped store) is another type than
    a writable one (a padded copy), so one fixed kind means one compilation, cached once."""
    if words.shape[0] == rows and words.flags.c_contiguous:
        out = words.view()
    else:
        out = np.zeros((rows, words.shape[1]), np.uint64)
        out[: words.shape[0]] = words
    out.flags.writeable = False
    return out


def count_matrices(left: np.ndarray, right: np.ndarray, counts: dict) -> dict[str, np.ndarray]:
    n_i, n_j = left.shape[0], right.shape[0]
    diagonal = is_diagonal(left, right)
    products, upper, lower = _products(counts, diagonal)
    names = list(counts)
    result = {}
    if products and n_i and n_j:
        kernel = _kernel()
        b = kernel.BLOCK_ROWS
        blocks_i, blocks_j = -(-n_i // b), -(-n_j // b)
        left_p = _padded(np.asarray(left, np.uint64), blocks_i * b)
        right_p = left_p if diagonal else _padded(np.asarray(right, np.uint64), blocks_j * b)
        if diagonal:
            pairs = [(bi, bj) for bi in range(blocks_i) for bj in range(bi, blocks_j)]
        else:
            pairs = [(bi, bj) for bi in range(blocks_i) for bj in range(blocks_j)]
        out = np.empty((len(names), blocks_i * b, blocks_j * b), np.int64)
        kernel.tile_counts(
            left_p,
            right_p,
            np.array([le[0] for le, _ in products], np.int64),
            np.array([r[0] for _, r in products], np.int64),
            np.array([le[1] - le[0] for le, _ in products], np.int64),
            np.array(pairs, np.int64).reshape(-1, 2),
            upper,
            lower,
            diagonal,
            out,
        )
        for c, name in enumerate(names):
            # a view of the padded block: a contiguous copy of each count matrix cost as much as
            # the counting (two 9,216^2 int64 copies: 2.4 s of a 10,000-sequence tile on 2 cores)
            result[name] = out[c, :n_i, :n_j]
    return add_row_sums(result, left, right, counts)
