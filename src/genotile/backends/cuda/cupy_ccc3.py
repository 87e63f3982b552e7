"""ccc3 jobs on the GPU (cupy-b1, cupy-int8): masking, counts, epilogue, threshold and compaction
on the device; only the passing triples come back (n^3 values never leave the GPU).

For a batch of middle rows j (about BATCH_ROWS masked rows: batch = BATCH_ROWS // n_i rows of J),
kernels/ccc3_select.cu's `ccc3_mask` writes the masked block (every row i of block I for each j,
9 segments X_i & Y_j), the backend's Engine.count computes the 8 counts against block K (cupy-b1:
its 1-bit tensor-core kernel, int32 out), and `ccc3_select` computes every value exactly as
ccc3.epilogue does, applies the threshold and the triangle masks (i < j when I = J, k > j when
J = K) and appends the passing triples to a buffer (grown and the batch rerun on overflow).
The caller (triples/tile.compute_triples) maps rows to original ids and sorts, so the triple files are
the numpy path's, byte for byte.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from genotile.backends.cuda import cupy_common as cc
from genotile.core import ccc3

BATCH_ROWS = 32768  # masked rows per count launch (a batch of middle rows j)
INITIAL_CAPACITY = 1 << 20  # passing triples buffered on the device per batch
THREADS = 256
OPTIONS = ("--fmad=false",)


@dataclass
class Triples:
    ti: np.ndarray  # rows within block I
    tj: np.ndarray  # within block J
    tk: np.ndarray  # within block K
    values: np.ndarray  # (n, 8) float64, (i, j, k) bit order
    seconds_counts: float


def _grid(total: int) -> int:
    return int(max(1, min(-(-total // THREADS), 65535 * 8)))


def triples_device(engine, blocks, stats, layout, plan, params, block_ids, stage, threshold) -> Triples:
    cp = cc.cupy_module()
    t0 = time.perf_counter()
    bi, bj, bk = block_ids
    words = layout.words
    d_i = cc.to_device(blocks[0])
    d_j = d_i if bj == bi else cc.to_device(blocks[1])
    d_k = d_j if bk == bj else cc.to_device(blocks[2])
    n_i, n_k = d_i.shape[0], d_k.shape[0]
    st = [cp.asarray(np.stack([c, s], axis=1).astype(np.int64)) for c, s in stats]
    terms = ccc3.count_terms(layout)
    mask_kernel = cc.load_kernel("ccc3_select.cu", "ccc3_mask", OPTIONS)
    select_kernel = cc.load_kernel("ccc3_select.cu", "ccc3_select", OPTIONS)
    middle = [j for j in plan.stage_rows(bj, stage) if not (bi == bj and j == 0) and not (bj == bk and j >= n_k - 1)]
    per_batch = max(1, BATCH_ROWS // max(n_i, 1))
    cap = INITIAL_CAPACITY
    out_row, out_k = cp.empty(cap, cp.int32), cp.empty(cap, cp.int32)
    vals = cp.empty((cap, 8), cp.float64)
    counter = cp.zeros(1, cp.uint64)
    found = []
    thr = 0.0 if threshold is None else float(threshold)
    for b0 in range(0, len(middle), per_batch):
        js_host = np.asarray(middle[b0 : b0 + per_batch], dtype=np.int32)
        js = cp.asarray(js_host)
        rows = js_host.size * n_i
        masked = cp.empty((rows, 9 * words), dtype=cp.uint64)
        mask_kernel(
            (_grid(masked.size),),
            (THREADS,),
            (d_i, d_j, js, np.int32(n_i), np.int32(js_host.size), np.int64(words), masked),
        )
        counts = []
        for name in ccc3.COUNTS:
            c = engine.count(masked, d_k, terms[name], int32=engine.fits_int32(terms[name]))
            counts.append(cp.ascontiguousarray(c.astype(cp.int32, copy=False)))  # every count < 8 * fields
        del masked
        while True:
            counter.fill(0)
            select_kernel(
                (_grid(rows * n_k),),
                (THREADS,),
                (
                    *counts,
                    np.int32(rows),
                    np.int32(n_i),
                    np.int32(n_k),
                    js,
                    st[0],
                    st[1],
                    st[2],
                    np.int32(bi == bj),
                    np.int32(bj == bk),
                    np.float64(params.multiplier),
                    np.float64(params.param),
                    np.float64(thr),
                    np.int32(threshold is None),
                    counter,
                    np.int64(cap),
                    out_row,
                    out_k,
                    vals,
                ),
            )
            n = int(counter.get()[0])
            if n <= cap:
                break
            cap = 1 << (n - 1).bit_length()
            out_row, out_k = cp.empty(cap, cp.int32), cp.empty(cap, cp.int32)
            vals = cp.empty((cap, 8), cp.float64)
        if n:
            r, k = out_row[:n].get().astype(np.int64), out_k[:n].get().astype(np.int64)
            found.append((r % n_i, js_host[r // n_i].astype(np.int64), k, vals[:n].get()))
    cp.cuda.get_current_stream().synchronize()
    seconds = time.perf_counter() - t0
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return Triples(empty, empty, empty, np.zeros((0, 8)), seconds)
    ti, tj, tk, values = (np.concatenate([f[x] for f in found]) for x in range(4))
    return Triples(ti, tj, tk, values, seconds)
