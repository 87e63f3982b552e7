"""ccc3 jobs on the GPU (cupy-b1, cupy-int8): masking, counts, epilogue, threshold and compaction
on the device; only the passing triples come back (n^3 values never leave the GPU), a chunk of at
most MAX_CAPACITY at a time, so a job's host memory is bounded whatever the threshold lets through.

For a batch of middle rows j (about BATCH_ROWS masked rows: batch = BATCH_ROWS // n_i rows of J),
kernels/ccc3_select.cu's `ccc3_mask` writes the masked block (every row i of block I for each j,
9 segments X_i & Y_j), the backend's Engine.count computes the 8 counts against block K (cupy-b1:
its 1-bit tensor-core kernel, int32 out), and `ccc3_select` computes every value exactly as
ccc3.epilogue does, applies the threshold and the triangle masks (i < j when I = J, k > j when
J = K) and appends the passing triples to a buffer. It runs over a range of the batch's
(masked row, k) places: when more pass than the buffer holds, the buffer grows up to
MAX_CAPACITY and the range is run again, and past that the range is cut to what the buffer
holds at the density just seen; each range that fits is read back as one chunk.
The caller (triples/tile.iter_triples) maps rows to original ids and triples/runs.py sorts, so
the triple files are the numpy path's, byte for byte.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from genotile.backends.cuda import ccc3_fused
from genotile.backends.cuda import cupy_common as cc
from genotile.core import ccc3

BATCH_ROWS = 32768  # masked rows per count launch (a batch of middle rows j)
INITIAL_CAPACITY = 1 << 18  # passing triples buffered on the device at first
MAX_CAPACITY = 1 << 20  # the most one readback brings to the host (a chunk: 92 MB of triples there)
THREADS = 256
OPTIONS = ("--fmad=false",)


def fused_kernel(engine, layout, threshold, params=None) -> str | None:
    """Which fused kernel a job runs in (ccc3_fused.kernel_for on this GPU: "resident" where the
    planes fit its shared memory, "streamed" wider), or None: the select path. It needs cupy-b1's
    tensor cores, a threshold (a null one keeps every triple: the select path's ranges bound its
    buffers as well), and the multiplier M and parameter P within 2^-20 <= |M| <= 2^20,
    |P| <= 2^20, where its float bound keeps its 1e-5 margin (floats under- and overflow further
    out: the select path's exact values then)."""
    if params is not None and not (2.0**-20 <= abs(params.multiplier) <= 2.0**20 and abs(params.param) <= 2.0**20):
        return None
    if engine.name != "cupy-b1" or threshold is None:
        return None
    return ccc3_fused.kernel_for(layout.words, ccc3_fused.device_smem())


def _grid(total: int) -> int:
    return int(max(1, min(-(-total // THREADS), 65535 * 8)))


def triples_device(
    engine,
    blocks,
    stats,
    layout,
    plan,
    params,
    block_ids,
    stage,
    threshold,
    info: dict | None = None,
    path: str = "auto",
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """A ccc3 job's passing triples computed on the device, one readback a chunk: in the fused
    kernel (`fused_kernel`: cupy-b1, a threshold; the kernel holding the planes where they fit
    its shared memory, else the streamed one, where the GPU grants its stages: sm_90, on Hopper
    `ccc3_fused_wgmma`, else `ccc3_fused_streamed`), else the select path. `path` asks for one:
    "fused" (the resident kernel), "streamed", "select" (the masked block, 8 count matrices and
    the select).

    Parameters
    ----------
    engine : cupy_tile.Engine
        The backend's count engine (cupy-b1 or cupy-int8).
    blocks, stats, layout, plan, params, block_ids, stage, threshold
        As backends/cpu/numba_ccc3.triples_chunks (blocks I, J, K's planes, uint64
        (rows, layout.total_words) each, and their ccc3.vector_stats).
    info : dict, optional
        Gets "seconds_counts" once the last chunk is out: the time spent in here (uploads,
        device work, readbacks), not the caller's between chunks; and "kernel", the fused kernel's
        name (ccc3_fused.launch), where one ran.

    Yields
    ------
    tuple of numpy.ndarray
        As numba_ccc3.triples_chunks: ti, tj, tk (int64 (t,)) and values (float64 (t, 8));
        1 <= t <= MAX_CAPACITY, in no particular order.
    """
    if path not in ("auto", "fused", "streamed", "select"):
        raise ValueError(f"path must be auto, fused, streamed or select, not {path!r}")
    kernel = {"fused": "resident", "streamed": "streamed", "select": None}.get(path)
    if path == "auto":
        kernel = fused_kernel(engine, layout, threshold, params)
    if kernel is not None:
        job = (blocks, stats, layout, plan, params, block_ids, stage, threshold, info)
        capacity = (INITIAL_CAPACITY, MAX_CAPACITY)
        yield from ccc3_fused.triples_fused(*job, capacity=capacity, streamed=kernel == "streamed")
        return
    cp = cc.cupy_module()
    spent, t0 = 0.0, time.perf_counter()
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
    most = max(1, MAX_CAPACITY)
    cap = max(1, min(INITIAL_CAPACITY, most))
    out_row, out_k = cp.empty(cap, cp.int32), cp.empty(cap, cp.int32)
    vals = cp.empty((cap, 8), cp.float64)
    counter = cp.zeros(1, cp.uint64)
    thr = 0.0 if threshold is None else float(threshold)
    span = per_batch * max(n_i, 1) * n_k  # (masked row, k) places a launch covers
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
        places = rows * n_k
        e0, span = 0, min(span, places)  # the last batch's range length: its density is this one's
        while e0 < places:
            e1 = min(places, e0 + span)
            counter.fill(0)
            select_kernel(
                (_grid(e1 - e0),),
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
                    np.int64(e0),
                    np.int64(e1),
                    counter,
                    np.int64(cap),
                    out_row,
                    out_k,
                    vals,
                ),
            )
            n = int(counter.get()[0])
            if n > cap:  # run again: a larger buffer, and past MAX_CAPACITY a shorter range
                if cap < most:
                    cap = min(most, 1 << (n - 1).bit_length())
                    out_row, out_k = cp.empty(cap, cp.int32), cp.empty(cap, cp.int32)
                    vals = cp.empty((cap, 8), cp.float64)
                if n > cap:  # the range at the density just seen, so that it fits (a place passes <= 1)
                    span = max(1, (e1 - e0) * cap // n)
                continue
            if n:
                r, k = out_row[:n].get().astype(np.int64), out_k[:n].get().astype(np.int64)
                chunk = (r % n_i, js_host[r // n_i].astype(np.int64), k, vals[:n].get())
                spent += time.perf_counter() - t0
                yield chunk
                t0 = time.perf_counter()
            if n <= cap // 2:
                span = min(places, 2 * span)  # sparser here: longer ranges again
            e0 = e1
    cp.cuda.get_current_stream().synchronize()
    spent += time.perf_counter() - t0
    if info is not None:
        info["seconds_counts"] = spent
