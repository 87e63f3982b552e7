"""ccc3 jobs on the CPU with numba: counts, epilogue and threshold fused (ccc3_kernel.py).

The numpy path (triples/tile.py) writes a batch's 8 count matrices, then the epilogue's
tallies, frequencies and 8 value matrices, each a full (rows x columns) array: on the bundled
example (941 SNPs x 40 samples, 1.4e8 triples) that was 50 s of a 51 s run on 2 cores, the
popcounts a small part of it. Here each triple's 27 products, 8 tallies and 8 values live in
registers and only passing triples are written.

Work is cut into units (one middle row j, a range of rows i, every column k of the triangle)
of about UNIT_TRIPLES triples, and units into calls whose triples fit CAPACITY: a call has room
for every triple it computes, so a null threshold needs no second pass, and what one call
holds (CAPACITY x 88 bytes) bounds this path's memory whatever passes.
"""

from collections.abc import Iterator

import numpy as np

from genotile.backends.cpu import numba_popcount
from genotile.core import ccc3

UNIT_TRIPLES = 1 << 14  # triples of one unit (one prange item)
CAPACITY = 1 << 18  # triples one kernel call may write (its output buffers: 23 MB)


def _units(middle, n_i, n_k, same_ij, same_jk, unit_triples):
    """int64 (u, 4) rows (j, i0, i1, k0) covering every triple of the middle rows."""
    units = []
    for j in middle:
        i_end = j if same_ij else n_i
        k0 = j + 1 if same_jk else 0
        width = n_k - k0
        if i_end <= 0 or width <= 0:
            continue
        step = max(1, unit_triples // width)
        units += [(j, i0, min(i_end, i0 + step), k0) for i0 in range(0, i_end, step)]
    return np.array(units, np.int64).reshape(-1, 4)


def _side(stats, params):
    """(f as float64 (rows, 2): f(0), f(1), as ccc3.freqs makes it; q = 1 - p f; ok: c > 0) of one
    block."""
    f = ccc3.freqs(*stats)
    f2 = np.ascontiguousarray(np.stack([f[0], f[1]], axis=1))
    with np.errstate(invalid="ignore"):
        return f2, 1 - params.param * f2, np.asarray(stats[0] > 0)


def triples_chunks(
    blocks, stats, layout, plan, params, block_ids, stage, threshold, capacity: int | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The job's passing triples, a chunk of at most `capacity` at a time.

    Parameters
    ----------
    blocks : list of 3 numpy.ndarray of uint64, each (rows, layout.total_words)
        Blocks I, J, K's planes.
    stats : list of 3 (c, s1) int64 arrays, each (rows,)
        ccc3.vector_stats of each block.
    layout, plan, params, block_ids, stage, threshold
        As triples/tile.compute_triples.
    capacity : int, optional
        Triples one kernel call may write (default CAPACITY; at least one unit's).

    Yields
    ------
    tuple of numpy.ndarray
        ti, tj, tk (int64 (t,): rows within blocks I, J, K) and values (float64 (t, 8), (i, j, k)
        bit order), ccc3.epilogue's bits.
    """
    kernel = numba_popcount.ccc3_kernel()
    capacity = CAPACITY if capacity is None else capacity
    bi, bj, bk = block_ids
    n_i, n_k = blocks[0].shape[0], blocks[2].shape[0]
    middle = list(plan.stage_rows(bj, stage))
    units = _units(middle, n_i, n_k, bi == bj, bj == bk, min(UNIT_TRIPLES, capacity))
    sizes = (units[:, 2] - units[:, 1]) * (n_k - units[:, 3])
    (f_i, q_i, ok_i), (f_j, q_j, ok_j), (f_k, q_k, ok_k) = (_side(s, params) for s in stats)
    planes = [np.array(b, dtype=np.uint64) for b in blocks]  # writable copies: one compiled type
    cap = int(min(capacity, sizes.sum())) if sizes.size else 0
    cap = max(cap, int(sizes.max(initial=0)))
    out = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty((cap, 8)))
    thr = 0.0 if threshold is None else float(threshold)
    u0 = 0
    while u0 < units.shape[0]:
        ends = np.cumsum(sizes[u0:])
        u1 = u0 + max(1, int(np.searchsorted(ends, cap, side="right")))
        offset = np.concatenate([[0], ends[: u1 - u0 - 1]]).astype(np.int64)
        found = np.zeros(u1 - u0, np.int64)
        kernel.select(
            *planes,
            layout.words,
            units[u0:u1],
            offset,
            f_i,
            f_j,
            f_k,
            q_i,
            q_j,
            q_k,
            ok_i,
            ok_j,
            ok_k,
            float(params.multiplier),
            float(params.param),
            thr,
            threshold is None,
            out,
            found,
        )
        u0 = u1
        if found.any():
            rows = np.concatenate([np.arange(o, o + n) for o, n in zip(offset, found, strict=True) if n])
            yield out[0][rows], out[1][rows], out[2][rows], out[3][rows]
