"""Whole tiles on the GPU for the CuPy backends: counts, epilogue, threshold and compaction stay
on the device; only the passing pairs (indices and values) come back to the host.

`tile_pairs(engine, left, right, metric, layout, threshold, diagonal, dense)` is what
`cupy_b1.tile_pairs` / `cupy_int8.tile_pairs` call and `tile.compute_tile` uses when a backend
has it. It returns a `TileResult` whose arrays equal, byte for byte, what compute_tile's numpy
path builds from count_matrices: the same pairs in the same (row-major) order, the same value
columns in the same dtypes, the same dense block.

Two paths:
- fused (metrics with a fused_id: snp, hamming, ibs, king, ccc2): the select kernel (tile_select.py)
  computes, thresholds and compacts each sub-tile's values and histograms on the device; the
  host sorts the few passing pairs by index.
- generic (any other metric): every count on the device as int64 (row-sum-only counts as
  (rows, 1) / (1, cols) arrays), metric.epilogue on CuPy arrays (numpy's ufuncs and np.where
  dispatch to CuPy), the threshold (`passes`, as Metric.passes) and the diagonal mask on the
  device, cupy.nonzero for the compaction; histogram.tile_histograms on CuPy arrays.

Transfers (transfers.py): the rows are copied to the device through a ring of pinned buffers on
a copy stream. The fused path computes the tile in sub-tiles of CHUNK_ROWS x CHUNK_ROWS as soon
as both their row chunks are on the device (chunks of I and J interleaved), so reading and
copying later chunks overlaps the compute of earlier ones; on a diagonal tile the sub-tiles
below the diagonal hold no pair i < j and are skipped unless the dense block is asked for.
cupy-b1 repacks each chunk's operands once (`count(..., cache=, keys=)`), not once per sub-tile.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from genotile.backends.cuda import cupy_common as cc
from genotile.backends.cuda import transfers
from genotile.backends.cuda.select_params import SelectParams
from genotile.backends.cuda.tile_select import (
    DeviceHist,
    canonical_nans,
    epilogue_params,
    expected_dtypes,
    fused_spec,
    hist_plan,
    launch_select,
    plan_counts,
    select_kernel,
    self_check,
)

CHUNK_ROWS = 4096  # sub-tile edge of the fused path
INITIAL_CAPACITY = 1 << 22  # passing pairs buffered on the device (grown and recomputed on overflow)


@dataclass(frozen=True)
class Engine:
    """A backend's device counts: count(dl, dr, terms, int32=False, cache=None, keys=None) ->
    (rows_l, rows_r) device array, row sums included (int32 only when asked and
    fits_int32(terms)); cache / keys let it keep per-chunk work (repacked operands) across
    the sub-tiles of a tile."""

    name: str
    count: Callable
    fits_int32: Callable


@dataclass
class TileResult:
    ri: np.ndarray  # int64 row of each passing pair within block I
    rj: np.ndarray  # int64 column within block J
    columns: dict  # metric column -> values of the passing pairs (numpy dtypes as the epilogue's)
    dense: np.ndarray | None  # the dense column over the whole tile, when asked
    shape: tuple[int, int]
    seconds_counts: float  # until the device work was done
    path: str  # "fused" or "generic"
    histograms: dict = field(default_factory=dict)  # histogram.tile_histograms over every unique pair
    timings: dict = field(default_factory=dict)


# -- tile_pairs -------------------------------------------------------------------------------


def _chunks(rows: int, size: int) -> list[tuple[int, int]]:
    return [(r, min(r + size, rows)) for r in range(0, rows, size)] or [(0, 0)]


def _empty_result(metric, counts, m, n, dense) -> TileResult:
    dtypes = expected_dtypes(metric, counts)
    cols = {c: np.zeros(0, dtype=dtypes[c]) for c in metric.columns}
    d = np.zeros((m, n), dtype=dtypes[metric.dense_column]) if dense else None
    from genotile.core import histogram

    values = {c: np.zeros((m, n), dtype=dtypes[c]) for c in dtypes}
    hist = histogram.tile_histograms(metric, values, np.zeros((m, n), dtype=bool))
    return TileResult(np.zeros(0, np.int64), np.zeros(0, np.int64), cols, d, (m, n), 0.0, "empty", hist)


def tile_pairs(
    engine: Engine,
    left,
    right,
    metric,
    layout,
    threshold=None,
    diagonal=False,
    dense=False,
    *,
    perms=None,
    path: str | None = None,
    chunk_rows: int | None = None,
    stages: str = "all",
) -> TileResult:
    """One tile on the device. left: block I's plane words (rows, words), a host array or a
    memmap slice; right: block J's, or None on a diagonal tile (then it is left). Pairs (ri, rj)
    in row-major order; on a diagonal tile only ri < rj. perms: (input index of each row of I,
    of J) -- the histograms of asymmetric columns read each pair in input order (None: rows
    in input order). path: None (fused where possible), "fused" or "generic" (tests);
    chunk_rows: sub-tile edge (default CHUNK_ROWS). stages (benchmark breakdown, fused path):
    "counts" (the sub-tiles' counts only), "select" (no histograms), "all"."""
    cp = cc.cupy_module()
    t0 = time.perf_counter()
    if right is None:
        right = left
    if diagonal and right is not left and right.shape != left.shape:
        raise ValueError("a diagonal tile needs right = left")
    m, n = left.shape[0], right.shape[0]
    counts = metric.counts(layout)
    if m == 0 or n == 0:
        return _empty_result(metric, counts, m, n, dense)
    if perms is None:
        perms = (np.arange(m), np.arange(m, m + n) if not diagonal else np.arange(m))
    plans = plan_counts(counts)
    spec = None if path == "generic" else fused_spec(metric, counts)
    if spec is not None and hist_plan(metric, spec, plans) is None:
        spec = None
    if spec is not None:
        count64 = not all(engine.fits_int32(list(plans[c].terms)) for c in spec.counts if plans[c].kind == "pair")
        if path != "fused" and not self_check(spec, metric, plans, count64):
            spec = None
    elif path == "fused":
        raise ValueError(f"no fused device kernel for metric {metric.name}")
    compute, copy = transfers.streams(cp.cuda.Device().id)
    with compute:
        copy.wait_event(compute.record())  # memory the pool hands out may still be in use on `compute`
        if spec is not None:
            result = _fused(
                engine,
                spec,
                count64,
                left,
                right,
                metric,
                plans,
                threshold,
                diagonal,
                dense,
                chunk_rows or CHUNK_ROWS,
                compute,
                copy,
                t0,
                perms,
                stages,
            )
        else:
            result = _generic(
                engine, left, right, metric, counts, plans, threshold, diagonal, dense, compute, copy, t0, perms
            )
    return result


def _chunk_order(row_chunks: int, col_chunks: int, diagonal: bool) -> list[tuple[str, int]]:
    """The order the row chunks of block I ("L") and J ("R") are copied in: interleaved, so
    that the sub-tiles of the first chunks can start while later chunks are copied."""
    if diagonal:
        return [("L", a) for a in range(row_chunks)]
    order = []
    for a in range(max(row_chunks, col_chunks)):
        order += [("L", a)] if a < row_chunks else []
        order += [("R", a)] if a < col_chunks else []
    return order


def _appended_pairs(tile: SelectParams, total: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ri, rj, value columns) of the `total` pairs the select kernel appended (mode 0), on the
    host, in row-major order."""
    cp = cc.cupy_module()
    keys = tile.idx[:total]
    order = cp.argsort(keys)
    keys_h = keys[order].get()
    return keys_h // tile.n_total, keys_h % tile.n_total, tile.cols[:, :total][:, order].get()


def _fused(
    engine,
    spec,
    count64,
    left,
    right,
    metric,
    plans,
    threshold,
    diagonal,
    dense,
    chunk_rows,
    compute,
    copy,
    t0,
    perms,
    stages="all",
) -> TileResult:
    cp = cc.cupy_module()
    m, n = left.shape[0], right.shape[0]
    on_device = isinstance(left, cp.ndarray)  # device-resident blocks (benchmark): no copies
    dl, dr = (left, right) if on_device else transfers.device_blocks(cp, left, right, diagonal)
    row_chunks = _chunks(m, chunk_rows)
    col_chunks = row_chunks if diagonal else _chunks(n, chunk_rows)
    order = _chunk_order(len(row_chunks), len(col_chunks), diagonal)
    pieces = transfers.copy_pieces(order, {"L": row_chunks, "R": col_chunks}, left.shape[1] * 8)

    # row-sum-only counts: int64 vectors over the whole tile, filled chunk by chunk
    lvec, rvec = {}, {}
    for name in spec.counts:
        pl = plans[name]
        if pl.kind == "vec":
            if pl.left_sums:
                lvec[name] = cp.zeros(m, dtype=cp.int64)
            if pl.right_sums:
                rvec[name] = cp.zeros(n, dtype=cp.int64)

    mode = 1 if threshold is None else 0
    n_pairs = m * (m - 1) // 2 if diagonal else m * n
    cap = n_pairs if mode == 1 else max(1, min(INITIAL_CAPACITY, n_pairs))
    ncols = len(spec.columns)
    kernel = select_kernel(spec, count64)

    def buffers(cap):
        idx = cc.new_output((cap,), cp.int64) if mode == 0 else None
        return idx, cc.new_output((ncols, cap), cp.int64)

    idx, cols = buffers(cap)
    perm_l = cp.asarray(np.ascontiguousarray(perms[0], dtype=np.int64))
    # what every sub-tile's launch shares; run_subtile adds the sub-tile and its counts
    tile = SelectParams(
        n_total=n,
        diag=diagonal,
        mode=mode,
        has_thr=threshold is not None,
        thr=0.0 if threshold is None else threshold,
        metric=epilogue_params(metric),
        dense_col=spec.columns.index(metric.dense_column),
        counter=cp.zeros(1, dtype=cp.uint64),
        idx=idx,
        cols=cols,
        cap=cap,
        dense=cc.new_output((m, n), cp.int64) if dense else None,
        perm_l=perm_l,
        perm_r=perm_l if diagonal else cp.asarray(np.ascontiguousarray(perms[1], dtype=np.int64)),
    )
    hist_columns = hist_plan(metric, spec, plans)
    assert hist_columns is not None  # tile_pairs takes the fused path only where there is a plan
    hist = DeviceHist(cp, hist_columns, ncols)
    int_hist = {h.column: h.k for h in hist.columns if h.kind == 1 and h.column in plans}
    subtiles = [
        (a, b) for a in range(len(row_chunks)) for b in range(len(col_chunks)) if not diagonal or dense or a <= b
    ]
    arrived: dict[str, set] = {"L": set(), "R": set()}
    done: set = set()
    operands: dict = {}  # the engine's per-chunk repacked operands (cupy-b1), kept for the tile

    def run_subtile(a, b):
        (r0, r1), (c0, c1) = row_chunks[a], col_chunks[b]
        sources = []  # (mat, lvec, rvec) of each count; the matrices live until the launch is queued
        for name in spec.counts:
            pl = plans[name]
            if pl.kind == "pair":
                mat = engine.count(
                    dl[r0:r1],
                    dr[c0:c1],
                    list(pl.terms),
                    int32=not count64,
                    cache=operands,
                    keys=(("L", a, name), ("R", b, name)),
                )
                want = cp.int64 if count64 else cp.int32
                if mat.dtype != want or not mat.flags.c_contiguous:  # the kernel reads it row-major
                    mat = cp.ascontiguousarray(mat, dtype=want)
                sources.append((mat, None, None))
                if name in int_hist:  # the bincount's shared window: centred on the sub-tile's mean
                    hist.centre_window(int_hist[name], mat)
            else:
                sources.append((None, lvec.get(name), rvec.get(name)))  # both None: a count with no term, 0
        if stages == "counts":
            return
        subtile = replace(tile, i0=r0, j0=c0, ms=r1 - r0, ns=c1 - c0, counts=tuple(sources))
        launch_select(kernel, subtile, None if stages == "select" else hist)
        del sources, subtile  # freed in stream order: CuPy's pool reuses the memory on this stream only

    def on_chunk(side, a, event):
        if event is not None:
            compute.wait_event(event)
        r0, r1 = (row_chunks if side == "L" else col_chunks)[a]
        if side == "L":
            for name, lv in lvec.items():
                lv[r0:r1] = cc.row_sums(dl[r0:r1], list(plans[name].left_sums))
        if side == "R" or diagonal:  # on a diagonal tile block J is block I
            for name, rv in rvec.items():
                rv[r0:r1] = cc.row_sums(dr[r0:r1], list(plans[name].right_sums))
        arrived[side].add(a)
        if diagonal:
            arrived["R"].add(a)
        for st in subtiles:
            if st not in done and st[0] in arrived["L"] and st[1] in arrived["R"]:
                done.add(st)
                run_subtile(*st)

    if on_device:
        timings = {}
        for side, a in order:
            on_chunk(side, a, None)
    else:
        timings = transfers.upload({"L": left, "R": right}, {"L": dl, "R": dr}, pieces, copy, on_chunk)
    timings["enqueued_s"] = time.perf_counter() - t0
    if mode == 0:
        total = int(tile.counter.get()[0])  # synchronizes
        if total > tile.cap:  # more pairs passed than the buffer holds: again, with room for all
            idx, cols = buffers(total)
            tile = replace(tile, idx=idx, cols=cols, cap=total)
            tile.counter.fill(0)
            hist.counts.fill(0)  # counted again
            for st in subtiles:
                run_subtile(*st)
            total = int(tile.counter.get()[0])
        ri, rj, cols_h = _appended_pairs(tile, total)
    else:
        cols_h = tile.cols.get()
        ri, rj = np.nonzero(np.triu(np.ones((m, n), dtype=bool), k=1) if diagonal else np.ones((m, n), dtype=bool))
    compute.synchronize()
    t_counts = time.perf_counter() - t0
    timings["device_done_s"] = t_counts
    columns = {}
    for k, (col, kind) in enumerate(zip(spec.columns, spec.kinds, strict=True)):
        columns[col] = canonical_nans(np.ascontiguousarray(cols_h[k]).view(np.float64 if kind == "f" else np.int64))
    d = None
    if dense:
        kind = spec.kinds[tile.dense_col]
        d = canonical_nans(tile.dense.get().view(np.float64 if kind == "f" else np.int64))
    return TileResult(
        ri.astype(np.int64, copy=False),
        rj.astype(np.int64, copy=False),
        columns,
        d,
        (m, n),
        t_counts,
        "fused",
        hist.result(),
        timings,
    )


def passes(metric, values: dict, threshold):
    """Metric.passes on CuPy arrays (numpy's logical_or.reduce cannot take a list of them)."""
    cp = cc.cupy_module()
    if threshold is None:
        return None
    if metric.keep == "le":
        return values[metric.dense_column] <= threshold
    if metric.keep == "ge":
        return values[metric.dense_column] >= threshold
    return functools.reduce(cp.logical_or, [values[c] >= threshold for c in metric.columns])


def _generic(engine, left, right, metric, counts, plans, threshold, diagonal, dense, compute, copy, t0, perms):
    cp = cc.cupy_module()
    m, n = left.shape[0], right.shape[0]
    if isinstance(left, cp.ndarray):
        dl, dr, timings = left, right, {}
    else:
        dl, dr = transfers.device_blocks(cp, left, right, diagonal)
        order = [("L", 0)] + ([] if diagonal else [("R", 0)])
        pieces = transfers.copy_pieces(order, {"L": [(0, m)], "R": [(0, n)]}, left.shape[1] * 8)
        timings = transfers.upload(
            {"L": left, "R": right}, {"L": dl, "R": dr}, pieces, copy, lambda side, a, event: compute.wait_event(event)
        )
    dev = {}
    for name, terms in counts.items():
        pl = plans[name]
        if pl.kind == "pair":
            dev[name] = engine.count(dl, dr, list(terms), int32=False).astype(cp.int64, copy=False)
        elif pl.kind == "vec":
            v = None
            if pl.left_sums:
                v = cc.row_sums(dl, list(pl.left_sums))[:, None]
            if pl.right_sums:
                r = cc.row_sums(dr, list(pl.right_sums))[None, :]
                v = r if v is None else v + r
            dev[name] = v
        else:
            dev[name] = cp.zeros((1, 1), dtype=cp.int64)
    with np.errstate(all="ignore"):  # numpy's; CuPy ignores it
        values = metric.epilogue(dev)
    values = {c: cp.broadcast_to(values[c], (m, n)) for c in (*metric.columns, metric.dense_column)}
    keep = passes(metric, values, threshold)
    upper = cp.arange(m)[:, None] < cp.arange(n)[None, :] if diagonal else None
    if diagonal:
        keep = upper if keep is None else keep & upper
    from genotile.core import histogram

    unique = upper if diagonal else cp.ones((m, n), dtype=bool)
    flipped = cp.asarray(np.asarray(perms[0]))[:, None] > cp.asarray(np.asarray(perms[1]))[None, :]
    hist = histogram.tile_histograms(
        metric, histogram.in_input_order(values, metric.transposed, flipped, cp), unique, cp
    )
    hist = {k: np.asarray(v.get(), dtype=np.int64) for k, v in hist.items()}
    if keep is None:
        keep = cp.ones((m, n), dtype=bool)
    ri_d, rj_d = cp.nonzero(cp.broadcast_to(keep, (m, n)))
    dtypes = expected_dtypes(metric, counts)
    columns = {
        c: canonical_nans(np.ascontiguousarray(values[c][ri_d, rj_d].get(), dtype=dtypes[c])) for c in metric.columns
    }
    d = None
    if dense:
        d = canonical_nans(
            np.ascontiguousarray(
                cp.ascontiguousarray(values[metric.dense_column]).get(), dtype=dtypes[metric.dense_column]
            )
        )
    ri, rj = ri_d.get().astype(np.int64), rj_d.get().astype(np.int64)
    compute.synchronize()
    return TileResult(ri, rj, columns, d, (m, n), time.perf_counter() - t0, "generic", hist, timings)
