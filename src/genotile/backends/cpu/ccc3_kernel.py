"""Compiled ccc3 kernel (numba; imported only by numba_ccc3.py): counts, epilogue and threshold
of many triples in one pass, so that no count or value matrix is ever written.

A *unit* is one middle row j and rows i0..i1-1 of block I against rows k0..n_k-1 of block K.
For each i the 9 masked words X_i & Y_j (X, Y in L, H, V) are formed once; for each k the 27
products popcount(X_i & Y_j & Z_k) add up, word by word, into the 8 counts of ccc3.COUNTS; the
tallies r(a, b, c) are their signed sums (`_tallies`, ccc3.tallies written out). With a
threshold, a bound (one division a triple, the factors (1 - p f) taken per vector, no sort)
leaves out the triples that cannot pass; each remaining value is ccc3.epilogue's expression
evaluated in its order, on the same doubles, so the bits are the numpy path's: m * (r / c_ijk),
then times (1 - p f) for f_min, f_mid, f_max (sort3's min/max).
A unit writes its passing triples from out[offset[u]] on (it has room for all its triples) and
their number to found[u]; units run in parallel (prange), each on its own slice.
"""

import numpy as np
from numba import njit, prange

from genotile.backends.cpu.popcount_kernel import _popcount64  # LLVM's ctpop on a uint64
from genotile.util.numba_start import import_numba

import_numba()  # before the first kernel: numba's start without its BLAS probe

# The bound: a value computed with one division and the factors in another order differs from
# the epilogue's by a few roundings (relative 1e-15); a triple is left out only when every value's
# bound is below the threshold by far more than that, so no passing triple is ever lost.
MARGIN = 1e-12
TINY = 1e-290


@njit(inline="always")
def _pc(x):
    return np.int64(_popcount64(x))


@njit(inline="always")
def _tallies(t, s_i, s_j, s_k, s_ij, s_ik, s_jk, s_ijk):
    """r(a, b, c) at 4a + 2b + c: ccc3.tallies' expansion of (2 V - G) for a 0 and G for a 1."""
    return (
        8 * t - 4 * (s_i + s_j + s_k) + 2 * (s_ij + s_ik + s_jk) - s_ijk,
        4 * s_k - 2 * (s_ik + s_jk) + s_ijk,
        4 * s_j - 2 * (s_ij + s_jk) + s_ijk,
        2 * s_jk - s_ijk,
        4 * s_i - 2 * (s_ij + s_ik) + s_ijk,
        2 * s_ik - s_ijk,
        2 * s_ij - s_ijk,
        s_ijk,
    )


@njit(cache=True)
def tallies(counts):
    """`_tallies` of int64 (8, n) counts in ccc3.COUNTS order: int64 (8, n) (for the tests)."""
    out = np.empty_like(counts)
    for n in range(counts.shape[1]):
        c = counts[:, n]
        out[:, n] = _tallies(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
    return out


@njit(parallel=True, cache=True, nogil=True)
def select(
    left, middle, right, words, units, offset, f_i, f_j, f_k, q_i, q_j, q_k,
    ok_i, ok_j, ok_k, m, p, thr, keep_all, out, found,
):  # fmt: skip
    """Every unit's passing triples (rows in blocks I, J, K and 8 values) into `out`.

    left, middle, right: uint64 (rows, >= 3 * words) planes L, H, V; units: int64 (u, 4) rows
    (j, i0, i1, k0); offset: int64 (u,); f_*: float64 (rows, 2) f(0), f(1); q_*: 1 - p f, the
    same shape; ok_*: bool (rows,) c > 0; out: (ti, tj, tk) int64 (cap,) and values float64
    (cap, 8); found: int64 (u,).
    """
    ti, tj, tk, values = out
    w = words
    thr_low = thr - (MARGIN * abs(thr) + TINY)
    for u in prange(units.shape[0]):
        j, i0, i1, k0 = units[u, 0], units[u, 1], units[u, 2], units[u, 3]
        pos = offset[u]
        masked = np.empty((9, w), np.uint64)  # segment 3x + y: X_i & Y_j, X, Y in (L, H, V)
        r = np.empty(8, np.int64)
        mq = np.empty(4, np.float64)
        val = np.empty(8, np.float64)
        for i in range(i0, i1):
            for x in range(3):
                for y in range(3):
                    for q in range(w):
                        masked[3 * x + y, q] = left[i, x * w + q] & middle[j, y * w + q]
            ok_ij = ok_i[i] and ok_j[j]
            for ab in range(4):  # M q_i(a) q_j(b): the bound's factor of (i, j)
                mq[ab] = m * q_i[i, ab >> 1] * q_j[j, ab & 1]
            for k in range(k0, right.shape[0]):
                t = s_i = s_j = s_k = s_ij = s_ik = s_jk = s_ijk = np.int64(0)
                for q in range(w):
                    lk = right[k, q]
                    hk = right[k, w + q]
                    vk = right[k, 2 * w + q]
                    ll, lh, lv = masked[0, q], masked[1, q], masked[2, q]
                    hl, hh, hv = masked[3, q], masked[4, q], masked[5, q]
                    vl, vh, vv = masked[6, q], masked[7, q], masked[8, q]
                    t += _pc(vv & vk)
                    s_i += _pc(lv & vk) + _pc(hv & vk)
                    s_j += _pc(vl & vk) + _pc(vh & vk)
                    s_k += _pc(vv & lk) + _pc(vv & hk)
                    s_ij += _pc(ll & vk) + _pc(lh & vk) + _pc(hl & vk) + _pc(hh & vk)
                    s_ik += _pc(lv & lk) + _pc(lv & hk) + _pc(hv & lk) + _pc(hv & hk)
                    s_jk += _pc(vl & lk) + _pc(vl & hk) + _pc(vh & lk) + _pc(vh & hk)
                    s_ijk += (
                        _pc(ll & lk) + _pc(ll & hk) + _pc(lh & lk) + _pc(lh & hk)
                        + _pc(hl & lk) + _pc(hl & hk) + _pc(hh & lk) + _pc(hh & hk)
                    )  # fmt: skip
                c_ijk = 8 * t
                tallied = _tallies(t, s_i, s_j, s_k, s_ij, s_ik, s_jk, s_ijk)
                for e in range(8):
                    r[e] = tallied[e]
                good = ok_ij and ok_k[k] and c_ijk > 0
                if not good:  # every value 0
                    if not (keep_all or 0.0 >= thr):
                        continue
                    val[:] = 0.0
                else:
                    if not keep_all:  # most triples fail: a bound first, no division, no sort
                        inv = 1.0 / np.float64(c_ijk)
                        near = -np.inf
                        for e in range(8):
                            near = max(near, np.float64(r[e]) * inv * mq[e >> 1] * q_k[k, e & 1])
                        if near + MARGIN * abs(near) < thr_low:  # x + MARGIN |x| grows with x
                            continue
                    for e in range(8):  # e = 4a + 2b + c: ccc3.epilogue's expression, in its order
                        x = f_i[i, e >> 2]
                        y = f_j[j, (e >> 1) & 1]
                        z = f_k[k, e & 1]
                        lo, hi = min(x, y), max(x, y)
                        f_min, f_mid, f_max = min(lo, z), max(lo, min(hi, z)), max(hi, z)
                        v = m * (np.float64(r[e]) / np.float64(c_ijk))
                        val[e] = v * (1 - p * f_min) * (1 - p * f_mid) * (1 - p * f_max)
                passing = keep_all
                for e in range(8):
                    if val[e] >= thr:
                        passing = True
                if passing:
                    ti[pos], tj[pos], tk[pos] = i, j, k
                    for e in range(8):
                        values[pos, e] = val[e]
                    pos += 1
        found[u] = pos - offset[u]
