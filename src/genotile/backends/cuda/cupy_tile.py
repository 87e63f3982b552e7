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

tile_pairs builds once what a tile asks for (`TileProblem`: blocks, metric, threshold, diagonal,
dense, perms) and how it runs (`Execution`: engine, count plans, fused spec, sub-tile edge,
streams, clock); both paths take these two. The fused path's steps are `_FusedTile`'s: set-up
(device blocks, row-sum vectors, the launch every sub-tile shares, histograms), `upload` (copies
in chunk order), `run_subtile` (counts and one select launch), `pairs` and `result` (readback).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from genotile.backends.cuda import b1_select, transfers
from genotile.backends.cuda import cupy_common as cc
from genotile.backends.cuda.select_params import SelectParams
from genotile.backends.cuda.tile_select import (
    CountPlan,
    DeviceHist,
    FusedSpec,
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
    path: str  # "fused", "gemm" (the fused path, its select in the GEMM) or "generic"
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


@dataclass(frozen=True)
class TileProblem:
    """What one tile asks for, whichever path computes it.

    left / right: block I's / J's plane words, (m, words) / (n, words) uint64, host arrays,
    memmap slices or (benchmark) device arrays; on a diagonal tile right is left.
    perms: (input index of each row of I, of J), (m,) / (n,) int.
    """

    left: Any
    right: Any
    metric: Any
    threshold: float | None  # None: every pair
    diagonal: bool  # block J is block I: only the pairs i < j
    dense: bool  # also the dense column over the whole (m, n) tile
    perms: tuple

    @property
    def shape(self) -> tuple[int, int]:
        return self.left.shape[0], self.right.shape[0]


@dataclass(frozen=True)
class Execution:
    """How a tile runs on the device: the backend's counts, how each count reaches the device,
    the fused kernel, the sub-tile edge, the streams, and the clock its timings read."""

    engine: Engine
    plans: dict[str, CountPlan]  # count name -> CountPlan, in the metric's order
    spec: FusedSpec | None  # the fused select kernel; None: the generic path
    count64: bool  # the fused kernel reads int64 counts (int32 would not hold them all)
    chunk_rows: int  # sub-tile edge of the fused path
    stages: str  # "counts", "select" or "all" (benchmark breakdown, fused path)
    compute: Any  # stream the counts and launches are queued on
    copy: Any  # stream the host -> device copies are queued on
    t0: float  # time.perf_counter() when the tile started
    gemm: b1_select.GemmPlan | None = None  # the select fused into the GEMM (cupy-b1, b1_select.py)


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
    in input order). path: None (fused where possible, its select in the GEMM where b1_select
    applies), "fused" (never in the GEMM), "gemm" (in the GEMM: an error where it does not apply)
    or "generic" (tests); chunk_rows: sub-tile edge (default CHUNK_ROWS). stages (benchmark breakdown, fused path):
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
    problem = TileProblem(left, right, metric, threshold, diagonal, dense, perms)
    plans = plan_counts(counts)
    spec, count64 = _fused_kernel(engine, metric, counts, plans, path)
    compute, copy = transfers.streams(cp.cuda.Device().id)
    gemm = _gemm_plan(engine, problem, spec, plans, path, stages)
    edge = chunk_rows or (CHUNK_ROWS if gemm is None else CHUNK_ROWS * b1_select.SUBTILE_SCALE)
    run = Execution(engine, plans, spec, count64, edge, stages, compute, copy, t0, gemm)
    with compute:
        copy.wait_event(compute.record())  # memory the pool hands out may still be in use on `compute`
        if spec is not None:
            return _fused(problem, run)
        return _generic(problem, run, counts)


def _fused_kernel(engine: Engine, metric, counts, plans: dict, path: str | None) -> tuple[FusedSpec | None, bool]:
    """(the fused kernel's spec, whether it reads int64 counts), or (None, False): the generic
    path (asked for, no fused kernel or histogram plan, or a failed self-check)."""
    spec = None if path == "generic" else fused_spec(metric, counts)
    if spec is not None and hist_plan(metric, spec, plans) is None:
        spec = None
    if spec is None:
        if path == "fused":
            raise ValueError(f"no fused device kernel for metric {metric.name}")
        return None, False
    count64 = not all(engine.fits_int32(list(plans[c].terms)) for c in spec.counts if plans[c].kind == "pair")
    if path != "fused" and not self_check(spec, metric, plans, count64):
        return None, False
    return spec, count64


def _gemm_plan(engine: Engine, problem: TileProblem, spec, plans: dict, path: str | None, stages: str):
    """b1_select's plan for this tile where it applies and `path` allows it (None: the select path)."""
    plan = None
    if engine.name == "cupy-b1" and path in (None, "gemm") and spec is not None and stages == "all":
        hist_columns = hist_plan(problem.metric, spec, plans)
        plan = b1_select.gemm_plan(problem.metric, spec, plans, hist_columns, problem.threshold, problem.dense)
        if plan is not None and not b1_select.fits_device(plan):
            plan = None
    if plan is None and path == "gemm":
        raise ValueError(f"no fused GEMM for metric {problem.metric.name} on this tile")
    return plan


# -- the fused path ---------------------------------------------------------------------------


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


def _pair_buffers(mode: int, ncols: int, cap: int) -> tuple[Any, Any]:
    """The select kernel's outputs for `cap` pairs: (idx (cap,) int64 row-major index of each
    appended pair, None in mode 1; cols (ncols, cap) int64 bits of each value column)."""
    cp = cc.cupy_module()
    idx = cc.new_output((cap,), cp.int64) if mode == 0 else None
    return idx, cc.new_output((ncols, cap), cp.int64)


def _tile_params(problem: TileProblem, spec: FusedSpec) -> SelectParams:
    """What every sub-tile's launch of the tile shares (run_subtile adds the sub-tile and its
    counts, DeviceHist the histograms): mode 1 (no threshold) writes every pair at its rank,
    mode 0 appends the passing pairs to a buffer of INITIAL_CAPACITY (grown on overflow)."""
    cp = cc.cupy_module()
    m, n = problem.shape
    mode = 1 if problem.threshold is None else 0
    n_pairs = m * (m - 1) // 2 if problem.diagonal else m * n
    cap = n_pairs if mode == 1 else max(1, min(INITIAL_CAPACITY, n_pairs))
    idx, cols = _pair_buffers(mode, len(spec.columns), cap)
    perm_l = cp.asarray(np.ascontiguousarray(problem.perms[0], dtype=np.int64))
    return SelectParams(
        n_total=n,
        diag=problem.diagonal,
        mode=mode,
        has_thr=problem.threshold is not None,
        thr=0.0 if problem.threshold is None else problem.threshold,
        metric=epilogue_params(problem.metric),
        dense_col=spec.columns.index(problem.metric.dense_column),
        counter=cp.zeros(1, dtype=cp.uint64),
        idx=idx,
        cols=cols,
        cap=cap,
        dense=cc.new_output((m, n), cp.int64) if problem.dense else None,
        perm_l=perm_l,
        perm_r=perm_l if problem.diagonal else cp.asarray(np.ascontiguousarray(problem.perms[1], dtype=np.int64)),
    )


def _row_sum_vectors(spec: FusedSpec, plans: dict, m: int, n: int) -> tuple[dict, dict]:
    """The row-sum-only counts' int64 vectors over the tile's rows (m,) and columns (n,), by
    count name, filled chunk by chunk as the chunks arrive."""
    cp = cc.cupy_module()
    lvec, rvec = {}, {}
    for name in spec.counts:
        pl = plans[name]
        if pl.kind == "vec":
            if pl.left_sums:
                lvec[name] = cp.zeros(m, dtype=cp.int64)
            if pl.right_sums:
                rvec[name] = cp.zeros(n, dtype=cp.int64)
    return lvec, rvec


class _FusedTile:
    """One tile on the fused path, while it runs: its device blocks and row chunks, the
    row-sum-only counts' vectors, the select kernel and the launch every sub-tile shares
    (`params`), the histograms, and which sub-tiles ran. Sub-tiles run as soon as both their
    row chunks are on the device (`on_chunk`)."""

    def __init__(self, problem: TileProblem, run: Execution):
        cp = cc.cupy_module()
        assert run.spec is not None
        self.problem, self.run = problem, run
        self.spec = spec = run.spec
        (m, n), left, diagonal = problem.shape, problem.left, problem.diagonal
        self.on_device = isinstance(left, cp.ndarray)  # device-resident blocks (benchmark): no copies
        self.dl, self.dr = (
            (left, problem.right) if self.on_device else transfers.device_blocks(cp, left, problem.right, diagonal)
        )
        rows = _chunks(m, run.chunk_rows)
        self.chunks = {"L": rows, "R": rows if diagonal else _chunks(n, run.chunk_rows)}
        self.lvec, self.rvec = _row_sum_vectors(spec, run.plans, m, n)
        self.kernel = select_kernel(spec, run.count64)
        self.params = _tile_params(problem, spec)
        hist_columns = hist_plan(problem.metric, spec, run.plans)
        assert hist_columns is not None  # tile_pairs takes the fused path only where there is a plan
        self.hist = DeviceHist(cp, hist_columns, len(spec.columns))
        self.int_hist = {h.column: h.k for h in self.hist.columns if h.kind == 1 and h.column in run.plans}
        self.subtiles = [
            (a, b)
            for a in range(len(self.chunks["L"]))
            for b in range(len(self.chunks["R"]))
            if not diagonal or problem.dense or a <= b
        ]
        self.arrived: dict[str, set] = {"L": set(), "R": set()}
        self.done: set = set()
        self.operands: dict = {}  # the engine's per-chunk repacked operands (cupy-b1), kept for the tile
        self.gemm = None if run.gemm is None else b1_select.GemmSelect(run.gemm, spec.metric_id)

    def upload(self) -> dict:
        """Copy the blocks' row chunks to the device in `_chunk_order` (none when they are
        there), queuing each sub-tile once both its chunks are in; the copies' timings."""
        problem = self.problem
        order = _chunk_order(len(self.chunks["L"]), len(self.chunks["R"]), problem.diagonal)
        if self.on_device:
            for side, a in order:
                self.on_chunk(side, a, None)
            return {}
        pieces = transfers.copy_pieces(order, self.chunks, problem.left.shape[1] * 8)
        sources, targets = {"L": problem.left, "R": problem.right}, {"L": self.dl, "R": self.dr}
        return transfers.upload(sources, targets, pieces, self.run.copy, self.on_chunk)

    def on_chunk(self, side: str, a: int, event) -> None:
        """Chunk `a` of block I ("L") or J ("R") is copied (after `event`): its row sums, then
        every sub-tile whose two chunks are now in."""
        if event is not None:
            self.run.compute.wait_event(event)
        r0, r1 = self.chunks[side][a]
        plans, diagonal = self.run.plans, self.problem.diagonal
        if side == "L":
            for name, lv in self.lvec.items():
                lv[r0:r1] = cc.row_sums(self.dl[r0:r1], list(plans[name].left_sums))
        if side == "R" or diagonal:  # on a diagonal tile block J is block I
            for name, rv in self.rvec.items():
                rv[r0:r1] = cc.row_sums(self.dr[r0:r1], list(plans[name].right_sums))
        self.arrived[side].add(a)
        if diagonal:
            self.arrived["R"].add(a)
        for st in self.subtiles:
            if st not in self.done and st[0] in self.arrived["L"] and st[1] in self.arrived["R"]:
                self.done.add(st)
                self.run_subtile(*st)

    def run_subtile(self, a: int, b: int) -> None:
        """Sub-tile (row chunk a, column chunk b): the engine's count matrices, then one select
        launch (none for stages "counts"; no histograms for "select")."""
        cp = cc.cupy_module()
        run = self.run
        (r0, r1), (c0, c1) = self.chunks["L"][a], self.chunks["R"][b]
        if self.gemm is not None:  # one launch: counts, epilogue, histogram and compaction
            ops, gemm = self.operands, self.gemm
            if ("L", a) not in ops:
                ops[("L", a)] = gemm.operands(self.dl[r0:r1], "left"), gemm.row_adds(self.dl[r0:r1], "left")
            if ("R", b) not in ops:
                ops[("R", b)] = gemm.operands(self.dr[c0:c1], "right"), gemm.row_adds(self.dr[c0:c1], "right")
            gemm.launch(ops[("L", a)], ops[("R", b)], (r0, r1, c0, c1), self.params, self.hist)
            return
        sources = []  # (mat, lvec, rvec) of each count; the matrices live until the launch is queued
        for name in self.spec.counts:
            pl = run.plans[name]
            if pl.kind == "pair":
                mat = run.engine.count(
                    self.dl[r0:r1],
                    self.dr[c0:c1],
                    list(pl.terms),
                    int32=not run.count64,
                    cache=self.operands,
                    keys=(("L", a, name), ("R", b, name)),
                )
                want = cp.int64 if run.count64 else cp.int32
                if mat.dtype != want or not mat.flags.c_contiguous:  # the kernel reads it row-major
                    mat = cp.ascontiguousarray(mat, dtype=want)
                sources.append((mat, None, None))
                if name in self.int_hist:  # the bincount's shared window: centred on the sub-tile's mean
                    self.hist.centre_window(self.int_hist[name], mat)
            else:
                sources.append((None, self.lvec.get(name), self.rvec.get(name)))  # both None: a count with no term, 0
        if run.stages == "counts":
            return
        subtile = replace(self.params, i0=r0, j0=c0, ms=r1 - r0, ns=c1 - c0, counts=tuple(sources))
        launch_select(self.kernel, subtile, None if run.stages == "select" else self.hist)
        del sources, subtile  # freed in stream order: CuPy's pool reuses the memory on this stream only

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ri, rj, value columns (ncols, pairs) int64 bits) of the tile's pairs on the host, in
        row-major order. Mode 0: the appended pairs; when more passed than the buffer holds, the
        sub-tiles run again into a buffer with room for all (synchronizes)."""
        params = self.params
        if params.mode == 0:
            total = int(params.counter.get()[0])  # synchronizes
            if total > params.cap:  # more pairs passed than the buffer holds: again, with room for all
                idx, cols = _pair_buffers(params.mode, len(self.spec.columns), total)
                self.params = params = replace(params, idx=idx, cols=cols, cap=total)
                params.counter.fill(0)
                self.hist.counts.fill(0)  # counted again
                for st in self.subtiles:
                    self.run_subtile(*st)
                total = int(params.counter.get()[0])
            if self.gemm is not None:  # the passing pairs' other columns
                self.gemm.recount(self.dl, self.dr, params, total, self.run.plans)
            return _appended_pairs(params, total)
        m, n = self.problem.shape
        cols_h = params.cols.get()
        every = np.triu(np.ones((m, n), dtype=bool), k=1) if self.problem.diagonal else np.ones((m, n), dtype=bool)
        ri, rj = np.nonzero(every)
        return ri, rj, cols_h

    def result(self, pairs: tuple, seconds_counts: float, timings: dict) -> TileResult:
        """The TileResult of `pairs` (ri, rj, value columns' bits): the columns in their dtypes
        and canonical nans, the dense block and the histograms read back."""
        spec, (ri, rj, cols_h) = self.spec, pairs
        columns = {}
        for k, (col, kind) in enumerate(zip(spec.columns, spec.kinds, strict=True)):
            columns[col] = canonical_nans(np.ascontiguousarray(cols_h[k]).view(np.float64 if kind == "f" else np.int64))
        d = None
        if self.problem.dense:
            kind = spec.kinds[self.params.dense_col]
            d = canonical_nans(self.params.dense.get().view(np.float64 if kind == "f" else np.int64))
        return TileResult(
            ri.astype(np.int64, copy=False),
            rj.astype(np.int64, copy=False),
            columns,
            d,
            self.problem.shape,
            seconds_counts,
            "fused" if self.gemm is None else "gemm",
            self.hist.result(),
            timings,
        )


def _appended_pairs(tile: SelectParams, total: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ri, rj, value columns) of the `total` pairs the select kernel appended (mode 0), on the
    host, in row-major order."""
    cp = cc.cupy_module()
    keys = tile.idx[:total]
    order = cp.argsort(keys)
    keys_h = keys[order].get()
    return keys_h // tile.n_total, keys_h % tile.n_total, tile.cols[:, :total][:, order].get()


def _fused(problem: TileProblem, run: Execution) -> TileResult:
    """The tile on the fused path: the copies and the sub-tiles' launches queued, then the
    pairs, dense block and histograms read back."""
    tile = _FusedTile(problem, run)
    timings = tile.upload()
    timings["enqueued_s"] = time.perf_counter() - run.t0
    pairs = tile.pairs()
    run.compute.synchronize()
    t_counts = time.perf_counter() - run.t0
    timings["device_done_s"] = t_counts
    return tile.result(pairs, t_counts, timings)


# -- the generic path -------------------------------------------------------------------------


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


def _whole_blocks(problem: TileProblem, run: Execution) -> tuple[Any, Any, dict]:
    """(block I, block J, the copies' timings) on the device, each block copied whole (the
    generic path has no sub-tiles); device-resident blocks (benchmark) as they are."""
    cp = cc.cupy_module()
    left, right, diagonal = problem.left, problem.right, problem.diagonal
    if isinstance(left, cp.ndarray):
        return left, right, {}
    m, n = problem.shape
    dl, dr = transfers.device_blocks(cp, left, right, diagonal)
    order = [("L", 0)] + ([] if diagonal else [("R", 0)])
    pieces = transfers.copy_pieces(order, {"L": [(0, m)], "R": [(0, n)]}, left.shape[1] * 8)
    timings = transfers.upload(
        {"L": left, "R": right},
        {"L": dl, "R": dr},
        pieces,
        run.copy,
        lambda side, a, event: run.compute.wait_event(event),
    )
    return dl, dr, timings


def _device_counts(run: Execution, counts: dict, dl, dr) -> dict:
    """Every count of the tile on the device as int64: (m, n) for a count with plane products,
    (m, 1) / (1, n) / their sum for row sums only, (1, 1) zeros for none."""
    cp = cc.cupy_module()
    dev = {}
    for name, terms in counts.items():
        pl = run.plans[name]
        if pl.kind == "pair":
            dev[name] = run.engine.count(dl, dr, list(terms), int32=False).astype(cp.int64, copy=False)
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
    return dev


def _generic(problem: TileProblem, run: Execution, counts: dict) -> TileResult:
    """The tile on the generic path: metric.epilogue on the device counts, the threshold and
    diagonal mask, the histograms and cupy.nonzero's compaction, read back."""
    cp = cc.cupy_module()
    metric, diagonal, perms = problem.metric, problem.diagonal, problem.perms
    m, n = problem.shape
    dl, dr, timings = _whole_blocks(problem, run)
    dev = _device_counts(run, counts, dl, dr)
    with np.errstate(all="ignore"):  # numpy's; CuPy ignores it
        values = metric.epilogue(dev)
    values = {c: cp.broadcast_to(values[c], (m, n)) for c in (*metric.columns, metric.dense_column)}
    keep = passes(metric, values, problem.threshold)
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
    if problem.dense:
        d = canonical_nans(
            np.ascontiguousarray(
                cp.ascontiguousarray(values[metric.dense_column]).get(), dtype=dtypes[metric.dense_column]
            )
        )
    ri, rj = ri_d.get().astype(np.int64), rj_d.get().astype(np.int64)
    run.compute.synchronize()
    return TileResult(ri, rj, columns, d, (m, n), time.perf_counter() - run.t0, "generic", hist, timings)
