"""Whole tiles on the GPU for the CuPy backends: counts, epilogue, threshold and compaction stay
on the device; only the passing pairs (indices and values) come back to the host.

`tile_pairs(engine, left, right, metric, layout, threshold, diagonal, dense)` is what
`cupy_b1.tile_pairs` / `cupy_int8.tile_pairs` call and `tile.compute_tile` uses when a backend
has it. It returns a `TileResult` whose arrays equal, byte for byte, what compute_tile's numpy
path builds from count_matrices: the same pairs in the same (row-major) order, the same value
columns in the same dtypes, the same dense block.

Two paths:
- fused (snp, hamming, ibs, king, ccc2; `FUSED`): kernels/tile_select.cu reads the counts of a
  sub-tile (int32 straight from cupy-b1's kernel where exact, else int64), computes every value
  column as metrics.py does (IEEE doubles, explicitly rounded, no FMA contraction), applies the
  threshold and the diagonal mask (i < j), and appends the passing pairs (index i * n + j and
  values) to a buffer with one atomicAdd a warp; the host sorts the few passing pairs by index.
  Each metric's kernel is checked once per process against metric.epilogue / metric.passes on
  random counts (`self_check`); a metric whose check fails (metrics.py changed, say) falls back
  to the generic path with a warning.
- generic (any other metric): every count on the device as int64 (row-sum-only counts as
  (rows, 1) / (1, cols) arrays), metric.epilogue on CuPy arrays (numpy's ufuncs and np.where
  dispatch to CuPy), the threshold (`passes`, as Metric.passes) and the diagonal mask on the
  device, cupy.nonzero for the compaction.
nan values are given the bits numpy gives 0/0 on this host (the GPU's nan has other bits).

Histograms (histogram.py, over every unique pair of the tile, before the threshold): counted
in the same kernel (float bins in shared memory; integer bincounts in a shared window around
the sub-tile's mean, the rest in global memory), with ccc2's asymmetric columns read in input
order (`perms`); the generic path calls histogram.tile_histograms on CuPy arrays.

Transfers: the host rows (a slice of the store's np.memmap, or any array) are read by up to
READ_THREADS threads at once, a piece each, into a ring of STAGING_BUFFERS pinned buffers, and
copied to the device on a copy stream; the compute stream waits for each chunk's copy event
only. The fused path computes the tile in sub-tiles of CHUNK_ROWS x CHUNK_ROWS as soon as both
their row chunks are on the device (chunks of I and J interleaved), so reading and copying
later chunks overlaps the compute of earlier ones; on a diagonal tile the sub-tiles below the
diagonal hold no pair i < j and are skipped unless the dense block is asked for. cupy-b1
repacks each chunk's operands once (`count(..., cache=, keys=)`), not once per sub-tile.
"""

from __future__ import annotations

import functools
import logging
import mmap
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from genotile.backends.cuda import cupy_common as cc

log = logging.getLogger("genotile")

CHUNK_ROWS = 4096  # sub-tile edge of the fused path
PIECE_BYTES = 16 << 20  # host -> device copy piece (one pinned staging buffer)
STAGING_BUFFERS = 16
READ_THREADS = min(8, os.cpu_count() or 8)  # pieces read at once (host copies: ~34 GB/s at 4-8 threads)
USE_PREAD = False  # read memmap slices of a file with pread instead of copying from the mapping
SELECT_OPTIONS: tuple = ()  # extra NVRTC options of tile_select (diagnostics)
INITIAL_CAPACITY = 1 << 22  # passing pairs buffered on the device (grown and recomputed on overflow)
SELECT_THREADS = 256
SELECT_BLOCKS_PER_SM = 4  # tile_select's grid: a few blocks an SM looping over rows
HIST_WINDOW = 10240  # bincount values counted in shared memory a block (40 KB), around the sub-tile's mean


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


@dataclass(frozen=True)
class FusedSpec:
    metric_id: int  # GT_METRIC of tile_select.cu
    counts: tuple[str, ...]  # in the kernel's order
    columns: tuple[str, ...]  # in the kernel's order = metric.columns
    keep: str
    kinds: tuple[str, ...]  # per column: "i" int64, "f" float64


FUSED = {
    "snp": FusedSpec(0, ("snp",), ("snp",), "le", ("i",)),
    "hamming": FusedSpec(0, ("hamming",), ("hamming",), "le", ("i",)),
    "ibs": FusedSpec(1, ("ibs_count", "n"), ("ibs_count", "n", "dist_1ibs"), "le", ("i", "i", "f")),
    "king": FusedSpec(
        2,
        ("nsnp", "hethet", "ibs0", "het_i", "het_j"),
        ("nsnp", "hethet", "ibs0", "kinship"),
        "ge",
        ("i", "i", "i", "f"),
    ),
    "ccc2": FusedSpec(
        3,
        ("r11", "sum_i", "sum_j", "both", "c_i", "c_j", "s_i", "s_j"),
        ("ccc_00", "ccc_01", "ccc_10", "ccc_11"),
        "ge_any",
        ("f", "f", "f", "f"),
    ),
}
MAX_COUNTS = 8  # pointer arguments of tile_select


@dataclass(frozen=True)
class CountPlan:
    """How one count reaches the device: "pair" (has plane products: a matrix per sub-tile,
    row sums included), "vec" (row sums only: int64 vectors over the tile's rows / columns),
    "zero" (no term)."""

    name: str
    terms: tuple
    kind: str
    left_sums: tuple
    right_sums: tuple


def plan_counts(counts: dict) -> dict[str, CountPlan]:
    plans = {}
    for name, terms in counts.items():
        products, left_sums, right_sums = cc.split_terms(terms)
        kind = "pair" if products else ("vec" if left_sums or right_sums else "zero")
        plans[name] = CountPlan(name, tuple(terms), kind, tuple(left_sums), tuple(right_sums))
    return plans


def expected_dtypes(metric, counts) -> dict[str, np.dtype]:
    """The dtype of each value column on the numpy path (the epilogue on int64 counts)."""
    dummy = {name: np.zeros((1, 1), dtype=np.int64) for name in counts}
    with np.errstate(all="ignore"):
        values = metric.epilogue(dummy)
    return {c: np.asarray(values[c]).dtype for c in (*metric.columns, metric.dense_column)}


def fused_spec(metric, counts) -> FusedSpec | None:
    """The fused kernel that computes this metric, if one does (names, keep rule and dtypes match)."""
    spec = FUSED.get(metric.name)
    if spec is None or set(counts) != set(spec.counts) or tuple(metric.columns) != spec.columns:
        return None
    if metric.keep != spec.keep or metric.dense_column not in spec.columns:
        return None
    dtypes = expected_dtypes(metric, counts)
    want = {"i": np.dtype(np.int64), "f": np.dtype(np.float64)}
    if any(dtypes[c] != want[k] for c, k in zip(spec.columns, spec.kinds, strict=True)):
        return None
    return spec


def _params(metric) -> tuple[float, float]:
    return float(metric.params.get("multiplier", 0.0)), float(metric.params.get("param", 0.0))


@dataclass(frozen=True)
class HistColumn:
    """One histogram of tile_select: column index k of the fused spec, histogram.py's binning."""

    column: str
    k: int
    kind: int  # 1: integer bincount, 2: float bins
    low: float
    high: float
    scale: float
    bins: int
    size: int  # counters: bound + 1 (bincount) or bins + 3
    offset: int


def hist_plan(metric, spec: FusedSpec, plans: dict, int_size: int | None = None) -> list[HistColumn] | None:
    """The histograms tile.py writes for this metric, as tile_select computes them (None: a
    column the kernel cannot bin: an integer column that is not a count)."""
    from genotile.core import histogram

    out, offset = [], 0
    for col in histogram.histogram_columns(metric):
        k = spec.columns.index(col)
        if col in histogram.FLOAT_BINS:
            low, high, bins = histogram.FLOAT_BINS[col]
            h = HistColumn(col, k, 2, float(low), float(high), bins / (high - low), int(bins), int(bins) + 3, offset)
        else:
            if spec.kinds[k] != "i" or col not in plans:
                return None
            # the count is at most its positive terms' coef x bits
            bound = (
                int_size - 1
                if int_size
                else sum(
                    t.coef * 64 * (r[1] - r[0])
                    for t in plans[col].terms
                    if t.coef > 0
                    for r in [t.left if t.left is not None else t.right]
                )
            )
            h = HistColumn(col, k, 1, 0.0, 0.0, 0.0, 0, bound + 1, offset)
        out.append(h)
        offset += h.size
    return out


class DeviceHist:
    """tile_select's histogram buffers for one tile."""

    def __init__(self, cp, columns: list[HistColumn], ncols: int):
        self.columns = columns
        self.total = sum(h.size for h in columns)
        spec = np.zeros(5 * ncols, dtype=np.float64)
        off = np.zeros(2 * ncols, dtype=np.int64)
        self.mask = 0
        for h in columns:
            spec[5 * h.k : 5 * h.k + 5] = (h.kind, h.low, h.high, h.scale, h.bins)
            off[2 * h.k : 2 * h.k + 2] = (h.offset, h.size)
            self.mask |= 1 << h.k
        self.spec, self.off = cp.asarray(spec), cp.asarray(off)
        self.counts = cp.zeros(self.total + 1, dtype=cp.uint64)  # + the out-of-range counter
        self.base = cp.zeros(ncols, dtype=cp.int64)  # each bincount's shared window starts here
        self.win = HIST_WINDOW if any(h.kind == 1 for h in columns) else 0
        self.shared_bytes = 4 * (
            sum(h.size for h in columns if h.kind == 2) + self.win * sum(h.kind == 1 for h in columns)
        )

    def result(self) -> dict:
        """{'hist_<column>': int64 counts}, as histogram.tile_histograms gives them."""
        got = self.counts.get().view(np.int64)
        if got[self.total]:
            raise ValueError(f"{int(got[self.total])} integer values outside their histogram's range")
        out = {}
        for h in self.columns:
            c = got[h.offset : h.offset + h.size].copy()
            if h.kind == 1:  # a bincount is as long as the largest value + 1
                nz = np.flatnonzero(c)
                c = c[: (int(nz[-1]) + 1 if nz.size else 1)].copy()
            out[f"hist_{h.column}"] = c
        return out


# -- nan bits ---------------------------------------------------------------------------------


@functools.cache
def host_nan_bits() -> np.uint64:
    """The bits of the nan numpy computes for 0/0 here (x86: 0xfff8000000000000)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        nan = np.zeros(1) / np.zeros(1)
    return nan.view(np.uint64)[0]


def canonical_nans(a: np.ndarray) -> np.ndarray:
    """Give every nan of a float64 array the host's bits (in place; returns a)."""
    if a.dtype == np.float64 and a.size:
        bad = np.isnan(a)
        if bad.any():
            a.view(np.uint64)[bad] = host_nan_bits()
    return a


# -- device plumbing --------------------------------------------------------------------------


@functools.cache
def _streams(device_id: int):
    """(compute stream, copy stream) of a device, kept for the process (CuPy's memory pool
    keeps freed blocks per stream: new streams per tile would strand them)."""
    cp = cc.cupy_module()
    return cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)


_RING: list = []
_RING_LOCK = threading.Lock()


def _staging(nbytes: int, count: int) -> list:
    """A ring of pinned host buffers, kept for the process (pinning memory is slow)."""
    global _RING
    with _RING_LOCK:
        if len(_RING) < count or _RING[0].nbytes < nbytes:
            import cupyx

            _RING = [cupyx.empty_pinned((max(nbytes, PIECE_BYTES),), dtype=np.uint8) for _ in range(count)]
        return _RING[:count]


@functools.cache
def _read_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(READ_THREADS, thread_name_prefix="genotile-read")


def _parallel_copy(dst: np.ndarray, src, r0: int, r1: int) -> None:
    """dst[:] = src[r0:r1] (host rows, e.g. of a memmap) with READ_THREADS threads."""
    rows = r1 - r0
    parts = max(1, min(READ_THREADS, rows))
    bounds = np.linspace(0, rows, parts + 1).astype(np.int64)
    futures = [
        _read_pool().submit(np.copyto, dst[lo:hi], src[r0 + lo : r0 + hi])
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
        if hi > lo
    ]
    for f in futures:
        f.result()


def file_range(src) -> tuple[str, int] | None:
    """(path, byte offset) of a C-contiguous slice of a file-backed np.memmap, else None."""
    try:
        if not isinstance(src, np.memmap) or not src.flags.c_contiguous or src.size == 0:
            return None
        filename, mm = getattr(src, "filename", None), getattr(src, "_mmap", None)
        if filename is None or mm is None:
            return None
        base = np.frombuffer(mm, dtype=np.uint8)
        start = src.offset - src.offset % mmap.ALLOCATIONGRANULARITY  # where np.memmap mapped from
        offset = start + (src.ctypes.data - base.ctypes.data)
        del base
        if offset < 0 or offset + src.nbytes > os.path.getsize(filename):
            return None
        with open(filename, "rb") as fh:  # the first bytes must be the slice's
            fh.seek(offset)
            head = fh.read(min(64, src.nbytes))
        if head != src.reshape(-1).view(np.uint8)[: len(head)].tobytes():
            return None
        return str(filename), int(offset)
    except Exception:  # noqa: BLE001 -- any doubt: copy from the mapping instead
        return None


def _pread_all(fd: int, buf: np.ndarray, offset: int) -> None:
    view = memoryview(buf)
    done = 0
    while done < len(view):
        got = os.preadv(fd, [view[done:]], offset + done)
        if got <= 0:
            raise OSError(f"short read at byte {offset + done}")
        done += got


@dataclass(frozen=True)
class Piece:
    side: str  # "L" (block I) or "R" (block J)
    chunk: int
    r0: int
    r1: int
    last: bool  # the chunk's last piece


def _pieces(order, chunks: dict, row_bytes: int) -> list[Piece]:
    rows_per_piece = max(1, PIECE_BYTES // max(1, row_bytes))
    out = []
    for side, a in order:
        c0, c1 = chunks[side][a]
        for p0 in range(c0, c1, rows_per_piece):
            p1 = min(p0 + rows_per_piece, c1)
            out.append(Piece(side, a, p0, p1, p1 == c1))
    return out


def upload(sources: dict, targets: dict, pieces: list[Piece], copy_stream, on_chunk=None) -> dict:
    """Copy host rows to the device, piece by piece through the pinned ring.

    sources / targets: {"L": host array, "R": ...} / {"L": device array, ...} of equal shapes.
    Up to READ_THREADS pieces are read at once (each by one thread: host copies run at a few
    GB/s a thread) into the ring of STAGING_BUFFERS pinned buffers; this thread queues each
    piece's copy to the device on copy_stream in order, and a buffer is read into again once
    its copy is done. on_chunk(side, chunk, event) is called once a chunk's last copy is queued
    (event: recorded after it). Returns timings.
    """
    cp = cc.cupy_module()
    if not pieces:
        return {"read_s": 0.0}
    words = next(iter(targets.values())).shape[1]
    row_bytes = words * 8
    max_rows = max(p.r1 - p.r0 for p in pieces)
    ring = _staging(max_rows * row_bytes, STAGING_BUFFERS)
    nbuf = len(ring)
    device_id = cp.cuda.Device().id
    busy = [0.0]
    lock = threading.Lock()

    def view(b: int, rows: int) -> np.ndarray:
        return ring[b][: rows * row_bytes].view(np.uint64).reshape(rows, words)

    files, fds = {}, {}
    if USE_PREAD:
        for side, src in sources.items():
            rng = file_range(src)
            if rng is not None:
                files[side] = rng
                if rng[0] not in fds:
                    fds[rng[0]] = os.open(rng[0], os.O_RDONLY)

    def read(k: int, b: int, free_event) -> None:
        if free_event is not None:  # the buffer's previous copy to the device must be done
            cp.cuda.Device(device_id).use()
            while not free_event.done:
                time.sleep(2e-5)
        p = pieces[k]
        t0 = time.perf_counter()
        dst = view(b, p.r1 - p.r0)
        if p.side in files:
            path, offset = files[p.side]
            _pread_all(fds[path], dst.reshape(-1).view(np.uint8), offset + p.r0 * row_bytes)
        else:
            np.copyto(dst, sources[p.side][p.r0 : p.r1])
        with lock:
            busy[0] += time.perf_counter() - t0

    pool = _read_pool()
    futures = {k: pool.submit(read, k, k % nbuf, None) for k in range(min(nbuf, len(pieces)))}
    try:
        for k, p in enumerate(pieces):
            futures.pop(k).result()
            b = k % nbuf
            targets[p.side][p.r0 : p.r1].set(view(b, p.r1 - p.r0), stream=copy_stream)
            event = copy_stream.record()
            if k + nbuf < len(pieces):
                futures[k + nbuf] = pool.submit(read, k + nbuf, b, event)
            if p.last and on_chunk is not None:
                on_chunk(p.side, p.chunk, event)
    finally:
        for f in futures.values():  # (only after an error) let the readers finish with the ring
            f.cancel()
        for f in futures.values():
            if not f.cancelled():
                try:
                    f.result()
                except Exception:  # noqa: BLE001, S110 -- the first error is the one raised
                    pass
        for fd in fds.values():
            os.close(fd)
    return {"read_busy_s": busy[0], "pread": sorted(files)}


# -- the select kernel ------------------------------------------------------------------------


def _select_kernel(metric_id: int, count64: bool):
    return cc.load_kernel(
        "tile_select.cu",
        "tile_select",
        (f"-DGT_METRIC={metric_id}", f"-DGT_COUNT64={int(count64)}", "--fmad=false", *SELECT_OPTIONS),
    )


def _launch_select(
    kernel,
    ms,
    ns,
    i0,
    j0,
    n_total,
    diag,
    mode,
    threshold,
    params,
    dense_col,
    counter,
    idx,
    cols,
    cap,
    dense,
    ptrs,
    hist: DeviceHist | None = None,
    perm_l=None,
    perm_r=None,
) -> None:
    if ms == 0 or ns == 0:
        return
    gx = max(1, min(-(-ns // SELECT_THREADS), 1024))
    gy = max(1, min(ms, 65535, -(-SELECT_BLOCKS_PER_SM * _sm_count() // gx)))
    ptr_args = [np.uint64(p) for triple in ptrs for p in triple]
    ptr_args += [np.uint64(0)] * (3 * MAX_COUNTS - len(ptr_args))

    def ptr(a):
        return np.uint64(0) if a is None else np.uint64(a.data.ptr)

    kernel(
        (gx, gy),
        (SELECT_THREADS,),
        (
            np.int32(ms),
            np.int32(ns),
            np.int64(i0),
            np.int64(j0),
            np.int64(n_total),
            np.int32(bool(diag)),
            np.int32(mode),
            np.int32(threshold is not None),
            np.float64(0.0 if threshold is None else threshold),
            np.float64(params[0]),
            np.float64(params[1]),
            np.int32(dense_col),
            ptr(counter),
            ptr(idx),
            ptr(cols),
            np.int64(cap),
            ptr(dense),
            ptr(None if hist is None else hist.counts),
            np.int32(0 if hist is None else hist.mask),
            ptr(None if hist is None else hist.spec),
            ptr(None if hist is None else hist.off),
            np.int64(0 if hist is None else hist.total),
            ptr(None if hist is None else hist.base),
            np.int32(0 if hist is None else hist.win),
            ptr(perm_l),
            ptr(perm_r),
            *ptr_args,
        ),
        shared_mem=0 if hist is None else hist.shared_bytes,
    )


@functools.cache
def _sm_count_on(device_id: int) -> int:
    cp = cc.cupy_module()
    return int(cp.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"])


def _sm_count() -> int:
    return _sm_count_on(cc.cupy_module().cuda.Device().id)


_CHECKED: dict = {}


def self_check(spec: FusedSpec, metric, plans: dict, count64: bool) -> bool:
    """Run the fused kernel on random counts shaped like this layout's (pair counts random,
    row-sum counts constant along rows / columns, 20% zeros: nan / inf cases included) and
    compare every value column's bits, the pass set and the dense column with
    metric.epilogue / metric.passes on the host. Cached per process."""
    key = (
        metric.name,
        tuple(metric.columns),
        metric.keep,
        tuple(sorted(metric.params.items())),
        count64,
        tuple((n, plans[n].kind, bool(plans[n].left_sums), bool(plans[n].right_sums)) for n in spec.counts),
    )
    if key not in _CHECKED:
        try:
            problem = _self_check(spec, metric, plans, count64)
        except Exception as exc:  # noqa: BLE001 -- a kernel that cannot run is a failed check
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            log.warning(
                "fused %s tile kernel disagrees with metrics.py (%s); using the generic device path",
                metric.name,
                problem,
            )
        _CHECKED[key] = not problem
    return _CHECKED[key]


def _self_check(spec: FusedSpec, metric, plans: dict, count64: bool) -> str:
    cp = cc.cupy_module()
    q = 48
    rng = np.random.default_rng(20261122)
    full = {}
    for name in spec.counts:
        pl = plans[name]
        hi = int(rng.choice([3, 40, 5000]))

        def rand(shape, hi=hi):
            v = rng.integers(0, hi, size=shape)
            v[rng.random(shape) < 0.2] = 0
            return v

        if pl.kind == "pair":
            v = rand((q, q))
        elif pl.kind == "vec":
            v = np.zeros((1, 1), dtype=np.int64)
            if pl.left_sums:
                v = v + rand((q, 1))
            if pl.right_sums:
                v = v + rand((1, q))
        else:
            v = np.zeros((1, 1), dtype=np.int64)
        # C order: np.array of a broadcast (1, q) row would keep its strides' order (Fortran)
        full[name] = np.ascontiguousarray(np.broadcast_to(v, (q, q)), dtype=np.int64)
    with np.errstate(all="ignore"):
        want = metric.epilogue({k: v.copy() for k, v in full.items()})
    dc = np.broadcast_to(want[metric.dense_column], (q, q))
    finite = dc[np.isfinite(dc)]
    thr = float(np.median(finite)) if finite.size else 0.0
    want_keep = np.broadcast_to(metric.passes(want, thr), (q, q))

    from genotile.core import histogram

    perm = rng.permutation(2 * q)
    perm_l, perm_r = perm[:q], perm[q:]
    flipped = perm_l[:, None] > perm_r[None, :]
    in_order = histogram.in_input_order(want, metric.transposed, flipped)
    hcols = hist_plan(metric, spec, plans, int_size=5000 * 8 + 1)
    if hcols is None:
        return "no histogram plan"
    want_hist = histogram.tile_histograms(metric, in_order, np.ones((q, q), dtype=bool))
    upper = np.triu(np.ones((q, q), dtype=bool), k=1)
    want_hist_diag = histogram.tile_histograms(metric, in_order, upper)
    dperm_l, dperm_r = cp.asarray(perm_l.astype(np.int64)), cp.asarray(perm_r.astype(np.int64))

    kernel = _select_kernel(spec.metric_id, count64)
    mats = [
        cp.ascontiguousarray(cp.asarray(np.ascontiguousarray(full[name], dtype=np.int64 if count64 else np.int32)))
        for name in spec.counts
    ]
    ptrs = [(m.data.ptr, 0, 0) for m in mats]
    ncols = len(spec.columns)
    dense_col = spec.columns.index(metric.dense_column)
    params = _params(metric)
    # mode 1: every pair, values and dense
    cols = cp.full((ncols, q * q), cc.POISON_VALUE, dtype=cp.int64)
    dense = cp.full((q, q), cc.POISON_VALUE, dtype=cp.int64)
    counter = cp.zeros(1, dtype=cp.uint64)
    hist = DeviceHist(cp, hcols, ncols)
    hist.base.fill(2500)  # bincounts: values below 2500 or past the window go to global memory
    _launch_select(
        kernel,
        q,
        q,
        0,
        0,
        q,
        False,
        1,
        None,
        params,
        dense_col,
        counter,
        None,
        cols,
        q * q,
        dense,
        ptrs,
        hist,
        dperm_l,
        dperm_r,
    )
    got = cols.get()
    for k, (col, kind) in enumerate(zip(spec.columns, spec.kinds, strict=True)):
        w = np.ascontiguousarray(np.broadcast_to(want[col], (q, q))).ravel()
        g = got[k].view(np.float64).copy() if kind == "f" else got[k].copy()
        canonical_nans(g)
        if g.dtype != w.dtype or g.tobytes() != w.tobytes():
            bad = np.flatnonzero(g.view(np.uint64) != w.view(np.uint64)) if g.dtype == w.dtype else [0]
            e = int(bad[0])
            return (
                f"column {col} differs at {len(bad)} of {w.size} pairs, first {e}: got {g[e]!r} want {w[e]!r} "
                f"from counts {[int(full[n].flat[e]) for n in spec.counts]}"
            )
    problem = _hist_problem(hist.result(), want_hist)
    if problem:
        return f"histograms differ: {problem}"
    d = dense.get().view(np.float64 if spec.kinds[dense_col] == "f" else np.int64).copy()
    canonical_nans(d)
    if d.tobytes() != np.ascontiguousarray(dc).tobytes():
        return "dense column differs"
    # mode 0: the pass set at a threshold inside the values' range
    # (as a diagonal tile: pairs i < j only, in the pass set and the histograms)
    idx = cp.full(q * q, cc.POISON_VALUE, dtype=cp.int64)
    hist = DeviceHist(cp, hcols, ncols)
    _launch_select(
        kernel,
        q,
        q,
        0,
        0,
        q,
        True,
        0,
        thr,
        params,
        dense_col,
        counter,
        idx,
        cols,
        q * q,
        None,
        ptrs,
        hist,
        dperm_l,
        dperm_r,
    )
    total = int(counter.get()[0])
    got_idx = np.sort(idx[:total].get())
    if not np.array_equal(got_idx, np.flatnonzero(want_keep & upper)):
        return f"pass set at threshold {thr!r} differs"
    problem = _hist_problem(hist.result(), want_hist_diag)
    if problem:
        return f"histograms of a diagonal tile differ: {problem}"
    return ""


def _hist_problem(got: dict, want: dict) -> str:
    if list(got) != list(want):
        return f"names {list(got)} != {list(want)}"
    for name in want:
        g, w = got[name], np.asarray(want[name], dtype=np.int64)
        if g.shape != w.shape:
            return f"{name}: {g.size} counters, want {w.size}"
        bad = np.flatnonzero(g != w)
        if bad.size:
            return (
                f"{name}: {bad.size} bins differ, (bin, got, want): "
                + ", ".join(f"({int(b)}, {int(g[b])}, {int(w[b])})" for b in bad[:6])
                + f"; totals {int(g.sum())} {int(w.sum())}"
            )
    return ""


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
    compute, copy = _streams(cp.cuda.Device().id)
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


def _device_blocks(cp, left, right, diagonal):
    """Device arrays for the two blocks (poisoned under test: a row never copied shows)."""
    words = left.shape[1]
    blocks = [cp.empty((left.shape[0], words), dtype=cp.uint64)]
    if not diagonal:
        blocks.append(cp.empty((right.shape[0], words), dtype=cp.uint64))
    if cc.POISON:
        for b in blocks:
            b.fill(np.uint64(0xA5A5A5A5A5A5A5A5))
    return blocks[0], blocks[-1]


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
    dl, dr = (left, right) if on_device else _device_blocks(cp, left, right, diagonal)
    row_chunks = _chunks(m, chunk_rows)
    col_chunks = row_chunks if diagonal else _chunks(n, chunk_rows)
    if diagonal:
        order = [("L", a) for a in range(len(row_chunks))]
    else:
        order = []
        for a in range(max(len(row_chunks), len(col_chunks))):
            order += [("L", a)] if a < len(row_chunks) else []
            order += [("R", a)] if a < len(col_chunks) else []
    pieces = _pieces(order, {"L": row_chunks, "R": col_chunks}, left.shape[1] * 8)

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
    dense_col = spec.columns.index(metric.dense_column)
    params = _params(metric)
    kernel = _select_kernel(spec.metric_id, count64)
    counter = cp.zeros(1, dtype=cp.uint64)
    dense_out = cc.new_output((m, n), cp.int64) if dense else None

    def buffers(cap):
        idx = cc.new_output((cap,), cp.int64) if mode == 0 else None
        return idx, cc.new_output((ncols, cap), cp.int64)

    idx, cols = buffers(cap)
    hist = DeviceHist(cp, hist_plan(metric, spec, plans), ncols)
    int_hist = {h.column: h.k for h in hist.columns if h.kind == 1 and h.column in plans}
    perm_l = cp.asarray(np.ascontiguousarray(perms[0], dtype=np.int64))
    perm_r = perm_l if diagonal else cp.asarray(np.ascontiguousarray(perms[1], dtype=np.int64))
    subtiles = [
        (a, b) for a in range(len(row_chunks)) for b in range(len(col_chunks)) if not diagonal or dense or a <= b
    ]
    arrived = {"L": set(), "R": set()}
    done: set = set()
    operands: dict = {}  # the engine's per-chunk repacked operands (cupy-b1), kept for the tile

    def run_subtile(a, b):
        (r0, r1), (c0, c1) = row_chunks[a], col_chunks[b]
        keep_alive, ptrs = [], []
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
                keep_alive.append(mat)
                ptrs.append((mat.data.ptr, 0, 0))
                if name in int_hist:  # the bincount's shared window: centred on the sub-tile's mean
                    hist.base[int_hist[name]] = cp.maximum(cp.rint(mat.mean()) - HIST_WINDOW // 2, 0)
            else:
                lv, rv = lvec.get(name), rvec.get(name)  # both None: a count with no term, 0
                ptrs.append((0, 0 if lv is None else lv.data.ptr, 0 if rv is None else rv.data.ptr))
        if stages == "counts":
            return
        _launch_select(
            kernel,
            r1 - r0,
            c1 - c0,
            r0,
            c0,
            n,
            diagonal,
            mode,
            threshold,
            params,
            dense_col,
            counter,
            idx,
            cols,
            cap,
            dense_out,
            ptrs,
            None if stages == "select" else hist,
            perm_l,
            perm_r,
        )
        del keep_alive  # freed in stream order: CuPy's pool reuses the memory on this stream only

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
        timings = upload({"L": left, "R": right}, {"L": dl, "R": dr}, pieces, copy, on_chunk)
    timings["enqueued_s"] = time.perf_counter() - t0
    if mode == 0:
        total = int(counter.get()[0])  # synchronizes
        if total > cap:  # more pairs passed than the buffer holds: again, with room for all
            cap = total
            idx, cols = buffers(cap)
            counter.fill(0)
            hist.counts.fill(0)  # counted again
            for st in subtiles:
                run_subtile(*st)
            total = int(counter.get()[0])
        keys = idx[:total]
        order_ = cp.argsort(keys)
        keys_h = keys[order_].get()
        cols_h = cols[:, :total][:, order_].get()
        ri, rj = keys_h // n, keys_h % n
    else:
        cols_h = cols.get()
        if diagonal:
            ri, rj = np.nonzero(np.triu(np.ones((m, n), dtype=bool), k=1))
        else:
            ri, rj = np.nonzero(np.ones((m, n), dtype=bool))
    compute.synchronize()
    t_counts = time.perf_counter() - t0
    timings["device_done_s"] = t_counts
    columns = {}
    for k, (col, kind) in enumerate(zip(spec.columns, spec.kinds, strict=True)):
        columns[col] = canonical_nans(np.ascontiguousarray(cols_h[k]).view(np.float64 if kind == "f" else np.int64))
    d = None
    if dense:
        d = canonical_nans(dense_out.get().view(np.float64 if spec.kinds[dense_col] == "f" else np.int64))
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
        dl, dr = _device_blocks(cp, left, right, diagonal)
        order = [("L", 0)] + ([] if diagonal else [("R", 0)])
        pieces = _pieces(order, {"L": [(0, m)], "R": [(0, n)]}, left.shape[1] * 8)
        timings = upload(
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
