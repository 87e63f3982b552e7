#!/usr/bin/env python3
"""CPU ceilings the benchmarks measure in their own run (docs/ceilings.md: ratios, same run).

    PYTHONPATH=src python3 bench/ceilings.py [--smoke]

Run alone it prints the `numba` backend's AND + popcount ceiling on this machine. `--smoke` (CI,
tests/workflow/test_bench_smoke.py): a few repeats, seconds, and the micro tile's counts checked
against numpy's popcounts of the same words (a mismatch fails the run).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPS = 20000  # micro tiles a thread runs per timing (~0.1 s)


def numba_popcount_words() -> float:
    """AND + popcount word pairs/s of the `numba` backend's own 2 x 2 micro tile, on every
    thread it uses, with its operands in L1 (256-word rows): the most its kernel can do."""
    return _measure(REPS)[0]


def _measure(reps: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(word pairs/s, each thread's summed counts uint64 (threads,), its rows uint64
    (threads, 4, 256)) of `reps` micro tiles a thread, best of 3."""
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
    best, total = float("inf"), np.zeros(0, np.uint64)
    for _ in range(3):
        t0 = time.perf_counter()
        total = spin(rows, reps)
        best = min(best, time.perf_counter() - t0)
    return threads * reps * 4 * 256 / best, total, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="a few repeats, counts checked against numpy (CI)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    reps = 200 if args.smoke else REPS
    rate, total, rows = _measure(reps)
    print(f"numba AND + popcount ceiling: {rate:.3g} word pairs/s on {rows.shape[0]} threads ({reps} repeats)")
    if not args.smoke:
        return 0
    # the four products of a micro tile: rows 0, 1 against rows 2, 3 of each thread
    pairs = [(0, 2), (0, 3), (1, 2), (1, 3)]
    bits = [np.unpackbits((rows[:, x] & rows[:, y]).view(np.uint8), axis=1).sum(axis=1) for x, y in pairs]
    want = np.uint64(reps) * np.sum(bits, axis=0, dtype=np.uint64)
    same = bool((total == want).all()) and rate > 0
    print(f"the micro tile's counts equal numpy's popcounts: {'yes' if same else 'NO   <<< MISMATCH'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
