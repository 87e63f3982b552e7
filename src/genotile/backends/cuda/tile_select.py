"""The fused select kernel (kernels/tile_select.cu) of the CuPy device tile path: its specs,
launches, histogram buffers and per-process self-check.

For the metrics with a `fused_id` (snp, hamming, ibs, king, ccc2) the kernel reads the counts of a sub-tile (int32
straight from cupy-b1's kernel where exact, else int64), computes every value column as
metrics.py does with the metric's epilogue (kernels/epilogues/*.cuh, one header a fused_id; IEEE
doubles, explicitly rounded, no FMA contraction), applies the threshold and
the diagonal mask (i < j), and appends the passing pairs (index i * n + j and values) to a buffer
with one atomicAdd a warp. Each metric's kernel is checked once per process against
metric.epilogue / metric.passes on random counts (`self_check`); a metric whose check fails
(metrics.py changed, say) falls back to the generic path with a warning.

Histograms (histogram.py, over every unique pair of the tile, before the threshold) are counted
in the same kernel (`hist_plan`, `DeviceHist`): float bins in shared memory; integer bincounts
in a shared window of HIST_WINDOW values around the sub-tile's mean, the rest in global memory;
ccc2's asymmetric columns read in input order (`perms`).

nan values are given the bits numpy gives 0/0 on this host (`canonical_nans`: the GPU's nan has
other bits).

A launch takes one argument, the sub-tile's SelectParams (select_params.py), passed by value.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, replace

import numpy as np

from genotile.backends.cuda import cupy_common as cc
from genotile.backends.cuda.select_params import MAX_COUNTS, SelectParams

log = logging.getLogger("genotile")

SELECT_OPTIONS: tuple = ()  # extra NVRTC options of tile_select (diagnostics)
SELECT_THREADS = 256
SELECT_BLOCKS_PER_SM = 4  # tile_select's grid: a few blocks an SM looping over rows
SELECT_UNROLL = 4  # columns a thread of tile_select takes per pass (GT_SELECT_UNROLL)
HIST_WINDOW = 10240  # bincount values counted in shared memory a block (40 KB), around the sub-tile's mean
WINDOW_BLOCKS = 512  # grid of hist_window.cu's sum: enough to stream a sub-tile's counts


@dataclass(frozen=True)
class FusedSpec:
    metric_id: int  # GT_METRIC of tile_select.cu: the metric's fused_id, its Epilogue<fused_id>
    counts: tuple[str, ...]  # in the kernel's order = the metric's counts(layout) order
    columns: tuple[str, ...]  # in the kernel's order = metric.columns
    keep: str
    kinds: tuple[str, ...]  # per column: "i" int64, "f" float64


KEEP_IDS = {"le": 0, "ge": 1, "ge_any": 2}  # GT_KEEP: an epilogue's keep rule (epilogue.cuh: KEEP_LE, ...)


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
    """The fused kernel that computes this metric, if one does: its epilogue `metric.fused_id`,
    reading the counts in the metric's order (tile_select.cu refuses to compile when the
    number of counts, of columns or the keep rule are not its epilogue's; `self_check` compares
    the values). None: no fused epilogue, or a column that is neither int64 nor float64."""
    if metric.fused_id is None or metric.keep not in KEEP_IDS or len(counts) > MAX_COUNTS:
        return None
    if metric.dense_column not in metric.columns:
        return None
    dtypes = expected_dtypes(metric, counts)
    kinds = {np.dtype(np.int64): "i", np.dtype(np.float64): "f"}
    if any(dtypes[c] not in kinds for c in metric.columns):
        return None
    return FusedSpec(
        metric.fused_id,
        tuple(counts),
        tuple(metric.columns),
        metric.keep,
        tuple(kinds[dtypes[c]] for c in metric.columns),
    )


def epilogue_params(metric) -> tuple[float, float]:
    """The metric's parameters as the epilogues read them (MetricParams: multiplier, param)."""
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
    out, offset = [], 0
    for col in metric.histogram_columns:
        k = spec.columns.index(col)
        if col in metric.float_bins:
            low, high, bins = metric.float_bins[col]
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
        self.scratch = cp.zeros(2, dtype=cp.uint64)  # kernels/hist_window.cu's sum and blocks done
        self.win = HIST_WINDOW if any(h.kind == 1 for h in columns) else 0
        self.shared_bytes = 4 * (
            sum(h.size for h in columns if h.kind == 2) + self.win * sum(h.kind == 1 for h in columns)
        )

    def select_fields(self) -> dict:
        """The SelectParams fields of these histograms."""
        return {
            "hist": self.counts,
            "hspec": self.spec,
            "hoff": self.off,
            "hist_base": self.base,
            "hist_total": self.total,
            "hist_mask": self.mask,
            "win": self.win,
        }

    def centre_window(self, k: int, counts) -> None:
        """Start bincount `k`'s shared window at the mean of `counts` (a sub-tile's int32 or int64
        counts, C order) less half the window, on the device (kernels/hist_window.cu)."""
        cp = cc.cupy_module()
        name = "window_start_i32" if counts.dtype == cp.int32 else "window_start_i64"
        blocks = max(1, min(WINDOW_BLOCKS, -(-counts.size // SELECT_THREADS)))
        cc.load_kernel("hist_window.cu", name)(
            (blocks,),
            (SELECT_THREADS,),
            (counts, np.int64(counts.size), np.int64(HIST_WINDOW // 2), self.scratch, self.base, np.int32(k)),
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


# -- the select kernel ------------------------------------------------------------------------


def kernel_defines(spec: FusedSpec, count64: bool) -> tuple[str, ...]:
    """The NVRTC defines of one tile_select build: the epilogue (GT_METRIC) and what the metric
    says it reads and writes (GT_N_COUNTS, GT_N_COLS, GT_KEEP), which the kernel checks against
    the epilogue's own (#error on a mismatch)."""
    return (
        f"-DGT_METRIC={spec.metric_id}",
        f"-DGT_N_COUNTS={len(spec.counts)}",
        f"-DGT_N_COLS={len(spec.columns)}",
        f"-DGT_KEEP={KEEP_IDS[spec.keep]}",
        f"-DGT_COUNT64={int(count64)}",
        f"-DGT_SELECT_UNROLL={SELECT_UNROLL}",
    )


def select_kernel(spec: FusedSpec, count64: bool):
    return cc.load_kernel(
        "tile_select.cu", "tile_select", (*kernel_defines(spec, count64), "--fmad=false", *SELECT_OPTIONS)
    )


def launch_select(kernel, params: SelectParams, hist: DeviceHist | None = None) -> None:
    """One tile_select launch over the sub-tile `params` describes, counting `hist` (None: no
    histograms): a few blocks an SM, each looping over rows."""
    if params.ms == 0 or params.ns == 0:
        return
    if hist is not None:
        params = replace(params, **hist.select_fields())
    gx = max(1, min(-(-params.ns // (SELECT_THREADS * SELECT_UNROLL)), 1024))
    gy = max(1, min(params.ms, 65535, -(-SELECT_BLOCKS_PER_SM * _sm_count() // gx)))
    kernel((gx, gy), (SELECT_THREADS,), (params.packed(),), shared_mem=0 if hist is None else hist.shared_bytes)


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

    kernel = select_kernel(spec, count64)
    mats = [
        cp.ascontiguousarray(cp.asarray(np.ascontiguousarray(full[name], dtype=np.int64 if count64 else np.int32)))
        for name in spec.counts
    ]
    ncols = len(spec.columns)
    base = SelectParams(
        ms=q,
        ns=q,
        n_total=q,
        metric=epilogue_params(metric),
        dense_col=spec.columns.index(metric.dense_column),
        perm_l=cp.asarray(perm_l.astype(np.int64)),
        perm_r=cp.asarray(perm_r.astype(np.int64)),
        counts=tuple((m, None, None) for m in mats),
    )
    # mode 1: every pair, values and dense
    cols = cp.full((ncols, q * q), cc.POISON_VALUE, dtype=cp.int64)
    dense = cp.full((q, q), cc.POISON_VALUE, dtype=cp.int64)
    counter = cp.zeros(1, dtype=cp.uint64)
    hist = DeviceHist(cp, hcols, ncols)
    hist.base.fill(2500)  # bincounts: values below 2500 or past the window go to global memory
    launch_select(kernel, replace(base, mode=1, counter=counter, cols=cols, cap=q * q, dense=dense), hist)
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
    d = dense.get().view(np.float64 if spec.kinds[base.dense_col] == "f" else np.int64).copy()
    canonical_nans(d)
    if d.tobytes() != np.ascontiguousarray(dc).tobytes():
        return "dense column differs"
    # mode 0: the pass set at a threshold inside the values' range
    # (as a diagonal tile: pairs i < j only, in the pass set and the histograms)
    idx = cp.full(q * q, cc.POISON_VALUE, dtype=cp.int64)
    hist = DeviceHist(cp, hcols, ncols)
    launch_select(
        kernel,
        replace(base, diag=True, mode=0, has_thr=True, thr=thr, counter=counter, idx=idx, cols=cols, cap=q * q),
        hist,
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
