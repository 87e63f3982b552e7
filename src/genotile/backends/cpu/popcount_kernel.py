"""Compiled AND + popcount tile kernel (numba; imported only by the `numba` backend).

Data layout: `left` (rows_i, words) and `right` (rows_j, words) are C-contiguous uint64
plane words, rows padded with zero rows to a multiple of BLOCK_ROWS. Product p is
popcount(left[i, lo[p] + w] AND right[j, ro[p] + w]) summed over w < width[p].

Tiling, CUTLASS-style:
  block tile  BLOCK_ROWS x BLOCK_ROWS pairs, one per (bi, bj) of `block_pairs`, one thread each
              (prange over the list, so a triangle of blocks is shared evenly);
  word chunk  CHUNK_WORDS words of each product at a time, so the block's rows stay in L1/L2;
  micro tile  2 x 2 pairs per inner loop: 4 loads feed 4 AND + popcounts, which LLVM
              vectorizes (vpopcntq on AVX-512 VPOPCNTDQ, a nibble table on AVX2).
Each block accumulates the P products in uint64, then writes the counts:
  out[c, i, j] = sum_p coef_upper[p, c] * product_p(i, j),
and with `mirror` (a diagonal tile, only bi <= bj listed) the pair's transposed place too:
  out[c, j, i] = sum_p coef_lower[p, c] * product_p(i, j)
(product (a, b) at (j, i) is product (b, a) at (i, j); the caller builds coef_lower).
"""

import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

from genotile.util.numba_start import import_numba

import_numba()  # before the first kernel: numba's start without its BLAS probe

BLOCK_ROWS = 16  # rows per block tile side (a multiple of MICRO_ROWS)
MICRO_ROWS = 2  # the 2 x 2 micro tile below
CHUNK_WORDS = 256  # words of one product per pass over a block tile


@intrinsic
def _popcount64(typingctx, x):
    """LLVM's ctpop on a uint64: one popcnt (or a vector lane of one)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


@njit(inline="always")
def _micro_tile(a0, a1, b0, b1, n):
    s00 = np.uint64(0)
    s01 = np.uint64(0)
    s10 = np.uint64(0)
    s11 = np.uint64(0)
    for w in range(n):
        x0 = a0[w]
        x1 = a1[w]
        y0 = b0[w]
        y1 = b1[w]
        s00 += _popcount64(x0 & y0)
        s01 += _popcount64(x0 & y1)
        s10 += _popcount64(x1 & y0)
        s11 += _popcount64(x1 & y1)
    return s00, s01, s10, s11


@njit(parallel=True, cache=True, nogil=True)
def tile_counts(left, right, lo, ro, width, block_pairs, coef_upper, coef_lower, mirror, out):
    n_products = lo.shape[0]
    n_counts = out.shape[0]
    for q in prange(block_pairs.shape[0]):
        bi = block_pairs[q, 0]
        bj = block_pairs[q, 1]
        i0 = bi * BLOCK_ROWS
        j0 = bj * BLOCK_ROWS
        acc = np.zeros((n_products, BLOCK_ROWS, BLOCK_ROWS), np.uint64)
        for p in range(n_products):
            lp = lo[p]
            rp = ro[p]
            wp = width[p]
            for w0 in range(0, wp, CHUNK_WORDS):
                n = min(CHUNK_WORDS, wp - w0)
                for i in range(0, BLOCK_ROWS, MICRO_ROWS):
                    a0 = left[i0 + i, lp + w0 : lp + w0 + n]
                    a1 = left[i0 + i + 1, lp + w0 : lp + w0 + n]
                    for j in range(0, BLOCK_ROWS, MICRO_ROWS):
                        b0 = right[j0 + j, rp + w0 : rp + w0 + n]
                        b1 = right[j0 + j + 1, rp + w0 : rp + w0 + n]
                        s00, s01, s10, s11 = _micro_tile(a0, a1, b0, b1, n)
                        acc[p, i, j] += s00
                        acc[p, i, j + 1] += s01
                        acc[p, i + 1, j] += s10
                        acc[p, i + 1, j + 1] += s11
        mirrored = mirror and bi != bj
        for c in range(n_counts):
            for i in range(BLOCK_ROWS):
                for j in range(BLOCK_ROWS):
                    up = np.int64(0)
                    down = np.int64(0)
                    for p in range(n_products):
                        v = np.int64(acc[p, i, j])
                        up += coef_upper[p, c] * v
                        down += coef_lower[p, c] * v
                    out[c, i0 + i, j0 + j] = up
                    if mirrored:
                        out[c, j0 + j, i0 + i] = down
