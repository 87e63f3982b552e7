"""CPU ceilings the benchmarks measure in their own run (docs/ceilings.md: ratios, same run)."""

import time

import numpy as np


def numba_popcount_words() -> float:
    """AND + popcount word pairs/s of the `numba` backend's own 2 x 2 micro tile, on every
    thread it uses, with its operands in L1 (256-word rows): the most its kernel can do."""
    import numba
    from numba import njit, prange

    from genotile.backends.cpu import numba_popcount, popcount_kernel

    numba_popcount._kernel()  # sets the thread count as the backend does
    micro = popcount_kernel._micro_tile

    @njit(parallel=True)
    def spin(rows, reps):
        total = np.zeros(rows.shape[0], np.uint64)
        for t in prange(rows.shape[0]):
            s = np.uint64(0)
            for _ in range(reps):
                s00, s01, s10, s11 = micro(rows[t, 0], rows[t, 1], rows[t, 2], rows[t, 3], rows.shape[2])
                s += s00 + s01 + s10 + s11
            total[t] = s
        return total

    threads = numba.get_num_threads()
    rows = np.random.default_rng(0).integers(0, 2**63, (threads, 4, 256), dtype=np.uint64)
    spin(rows, 1)
    reps = 20000
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        spin(rows, reps)
        best = min(best, time.perf_counter() - t0)
    return threads * reps * 4 * 256 / best
