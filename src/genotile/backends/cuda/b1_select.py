"""cupy-b1's sub-tiles with the epilogue fused into the GEMM (kernels/b1_select.cu).

On the fused path (cupy_tile) a king sub-tile otherwise takes five b1 GEMM launches, each writing
an int32 count matrix, and tile_select reads the five back: 40 bytes of memory traffic a pair
beside the products (ibs: two launches, 16 bytes). Here one launch keeps the metric's counts in two
int32 accumulator sets (epilogues/*.cuh, GemmCounts<fused_id>):

    king: acc 0 = 2 ibs0 - hethet,  acc 1 = het_i * 2**16 + het_j
    ibs:  acc 0 = ibs_count,        acc 1 = n

computes each pair's value with the metric's own epilogue (Epilogue<fused_id>::values, from the same
integers), counts its histogram bin and appends the passing pairs (index and value). The integer
columns of the passing pairs are then counted again, pair by pair, from the planes (`pair_counts`):
with a threshold few pairs pass. The tile's outputs are the select path's, byte for byte
(tests/backends/test_gpu_tile.py compares both with numpy's).

Where it applies (`gemm_plan`): cupy-b1, a metric with accumulators here (king, ibs), a threshold,
no dense block, one float histogram of the thresholded column, each accumulator exact in int32 (king:
het_i and het_j share one, so at most 65,535 bits of a plane: 65,472 sites, 1,023 words). Anything
else takes the select path.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

import numpy as np

from genotile.backends.cuda import b1_layout
from genotile.backends.cuda import cupy_common as cc

log = logging.getLogger("genotile")

# Block tile 64 x 128, warp tiles 32 x 32 (two accumulator sets: 64 registers), 4 stages, two blocks
# an SM. Measured on an H200 (bench/RESULTS.md, session 12: one 32,768 x 32,768 x 20,000 king tile,
# ms): this 51-53; 64 x 64 blocks 53-56; 128 x 128 blocks of 32 x 32 warps 52-54; cupy-b1's
# 128 x 128 of 64 x 32 warps (two blocks an SM: 128 registers, spilled) 91, one block an SM 82.
GEMM_TILE = b1_layout.TileConfig(64, 128, 32, 32, 4, min_blocks=2, group_m=16)
# On Hopper (sm_90a) the main loop is the warpgroup MMA (kernels/b1_wgmma.cuh): two warpgroups of
# 64 x 128, five stages of 32 KB (three k-tiles in flight), one block an SM (166 registers), the
# epilogue through shared memory in a rolled loop. Measured on an H100 (bench/RESULTS.md, session
# 17: one 32,768^2 x 20,000 king tile, ms, whole kernel / main loop alone): this 40.8 / 24.6;
# six stages 42.0 / 26.5; the epilogue unrolled from registers 68.0 / 26.2 (its code outgrows
# the instruction caches); 128 x 64 blocks, two an SM, 45.1 / 40.9; mma.sync's tiles 51.3 / 42.4.
# The epilogue as straight-line code (session 18): 34.4 ms (with the epilogue before it, 64 x 128
# blocks two or three an SM, one block's epilogue beside another's main loop: 43.5-46.0 against 40.3).
WGMMA_TILE = b1_layout.TileConfig(128, 128, 16, 128, 5, min_blocks=1, group_m=16)
WGMMA_ALIGN = 1024  # shared memory a wgmma kernel may skip to put its stages on a 1024-byte boundary (ccc3_fused's too)
SUBTILE_SCALE = 4  # its sub-tiles are 4x the select path's edge: no count matrices to hold
PACK_SHIFT = 16  # acc 1 holds het_i above het_j
PACKED_MAX = (1 << PACK_SHIFT) - 1
# fused_id -> each accumulator's counts and their factors (epilogues/*.cuh: GemmCounts<fused_id>)
ACCUMULATORS: dict[int, tuple[dict[str, int], dict[str, int]]] = {
    1: ({"ibs_count": 1}, {"n": 1}),  # ibs
    2: ({"ibs0": 2, "hethet": -1}, {"het_i": 1 << PACK_SHIFT, "het_j": 1}),  # king
}
PACKED = {2: (1, ("het_i", "het_j"))}  # the accumulator whose counts share its bits, each <= PACKED_MAX
RECOUNT_WARPS = 8  # pairs a block of pair_counts


@dataclass(frozen=True)
class GemmPlan:
    """One metric's fused GEMM: the products of both accumulators along K (accumulator 0's, then
    1's, each in Horner order), their multipliers, where accumulator 1 starts, each accumulator's
    final multiplier and row sums, and the integer columns counted again for the passing pairs."""

    pieces: tuple[cc.Product, ...]
    term_mult: tuple[int, ...]
    group_start: int  # index in pieces of accumulator 1's first product
    final: tuple[int, int]
    left_sums: tuple[tuple[cc.RowSum, ...], tuple[cc.RowSum, ...]]  # each accumulator's, scaled
    right_sums: tuple[tuple[cc.RowSum, ...], tuple[cc.RowSum, ...]]
    recount: tuple[tuple[int, str], ...]  # (column index, count name) of the integer columns
    value_col: int  # the thresholded column: appended, binned
    hist_offset: int  # its histogram's first counter in DeviceHist.counts
    hist: tuple[float, float, float, int]  # low, high, scale, bins


def _chain(products: list[cc.Product]) -> tuple[list[cc.Product], list[int], int] | None:
    """(products in Horner order, multipliers, final multiplier), or None: coefficients that do not
    divide one another."""
    if not products:
        return [], [], 1
    chains = b1_layout.coefficient_chains(products)
    if len(chains) != 1:
        return None
    return chains[0], b1_layout.horner_multipliers(chains[0]), chains[0][-1].coef


def _bits(plan) -> int:
    """The largest value a count of nonnegative terms takes (its terms' bits x coefficients)."""
    products, lsums, rsums = cc.split_terms(plan.terms)
    return sum(p.bound for p in products) + cc.sums_bound(lsums) + cc.sums_bound(rsums)


def gemm_plan(metric, spec, plans: dict, hist_columns, threshold, dense: bool) -> GemmPlan | None:
    """The fused GEMM of this tile, or None: the select path (see the module's docstring)."""
    groups = ACCUMULATORS.get(metric.fused_id)
    if groups is None or threshold is None or dense or spec is None:
        return None
    value_col = spec.columns.index(metric.dense_column)
    if spec.kinds[value_col] != "f" or len(hist_columns) != 1 or hist_columns[0].k != value_col:
        return None
    h = hist_columns[0]
    if h.kind != 2:
        return None
    recount = tuple((k, c) for k, c in enumerate(spec.columns) if k != value_col)
    if any(spec.kinds[k] != "i" or c not in plans for k, c in recount):
        return None
    pieces: list[cc.Product] = []
    term_mult: list[int] = []
    finals, lefts, rights, starts, bounds = [], [], [], [], []
    for group in groups:
        products: list[cc.Product] = []
        left: list[cc.RowSum] = []
        right: list[cc.RowSum] = []
        for name, factor in group.items():
            prods, lsums, rsums = cc.split_terms(plans[name].terms)
            products += [cc.Product(p.coef * factor, p.left, p.right, p.width) for p in prods]
            left += [cc.RowSum(r.coef * factor, r.start, r.width) for r in lsums]
            right += [cc.RowSum(r.coef * factor, r.start, r.width) for r in rsums]
        chain = _chain(products)
        if chain is None:
            return None
        order, mult, final = chain
        starts.append(len(pieces))
        pieces += order
        term_mult += mult
        finals.append(final)
        lefts.append(tuple(left))
        rights.append(tuple(right))
        bounds.append(sum(abs(f) * _bits(plans[n]) for n, f in group.items()))
    if not pieces:  # no plane product (no site): nothing for the GEMM (its kernel assumes a main loop)
        return None
    packed_group, packed_counts = PACKED.get(metric.fused_id, (None, ()))
    for g, bound in enumerate(bounds):
        if g == packed_group:
            if any(_bits(plans[c]) > PACKED_MAX for c in packed_counts):
                return None
        elif bound > cc.INT32_MAX:
            return None
    return GemmPlan(
        tuple(pieces),
        tuple(term_mult),
        starts[1],
        (int(finals[0]), int(finals[1])),
        (lefts[0], lefts[1]),
        (rights[0], rights[1]),
        recount,
        value_col,
        h.offset,
        (h.low, h.high, h.scale, h.bins),
    )


def uses_wgmma(wgmma: bool | None = None) -> bool:
    """Whether the fused GEMM runs wgmma's main loop here: on a compute capability 9.0 GPU
    (Hopper) with an NVRTC that compiles for sm_90a (CUDA 12.0 on), unless `wgmma` says otherwise
    (False: mma.sync's, as on every other GPU; tests compare both)."""
    cp = cc.cupy_module()
    device = cp.cuda.Device()
    able = device.compute_capability == "90" and _nvrtc_version() >= (12, 0) and device.id not in _WGMMA_FAILED
    return able if wgmma is None else bool(wgmma) and able


_WGMMA_FAILED: set[int] = set()  # devices where wgmma's kernels did not compile or load: mma.sync's there


def refuse_wgmma(device: int, what: str, instead: str, error: Exception) -> None:
    """A wgmma kernel that did not compile or load on GPU `device` (NVRTC, ptxas or the driver):
    one warning, and that GPU left to mma.sync's kernels from now on (`uses_wgmma`), this module's
    and ccc3_fused's."""
    log.warning("GPU %d: %s could not be built (%s); %s instead", device, what, error, instead)
    _WGMMA_FAILED.add(device)


@functools.cache
def _nvrtc_version() -> tuple[int, int]:
    from cupy_backends.cuda.libs import nvrtc

    major, minor = nvrtc.getVersion()
    return int(major), int(minor)


def tile_config(wgmma: bool) -> b1_layout.TileConfig:
    return WGMMA_TILE if wgmma else GEMM_TILE


def _smem_bytes(wgmma: bool, bins: int) -> int:
    """A block's shared memory: its stages (and their alignment), then the histogram's counters."""
    return tile_config(wgmma).smem_bytes + (WGMMA_ALIGN if wgmma else 0) + 4 * (bins + 3)


def _adds(plan: GemmPlan) -> int:
    """Which row sums the kernel adds (GT_ADDS): 1 row_add0, 2 col_add0, 4 row_add1, 8 col_add1."""
    sums = (plan.left_sums[0], plan.right_sums[0], plan.left_sums[1], plan.right_sums[1])
    return sum(1 << k for k, s in enumerate(sums) if s)


@functools.cache
def _kernels(fused_id: int, device_id: int, bins: int, wgmma: bool, value_col: int, adds: int):
    cfg = tile_config(wgmma)
    defines = (
        f"-DGT_METRIC={fused_id}",
        f"-DGT_WGMMA={int(wgmma)}",
        f"-DGT_EPILOGUE_SMEM={int(wgmma)}",
        f"-DGT_VALUE_COL={value_col}",
        f"-DGT_ADDS={adds}",
    )
    options = (*cfg.options, *defines, "--fmad=false")
    gemm = cc.load_kernel("b1_select.cu", "b1_select", options, arch_specific=wgmma)
    smem = _smem_bytes(wgmma, bins)
    if gemm.max_dynamic_shared_size_bytes < smem:
        gemm.max_dynamic_shared_size_bytes = smem
    return gemm, cc.load_kernel("b1_select.cu", "pair_counts", options, arch_specific=wgmma), smem


def fits_device(plan: GemmPlan, wgmma: bool | None = None) -> bool:
    """Whether this GPU grants a block the kernel's shared memory (its stages and the histogram)."""
    cp = cc.cupy_module()
    optin = int(cp.cuda.runtime.deviceGetAttribute(b1_layout.ATTR_SMEM_OPTIN, cp.cuda.Device().id))
    return _smem_bytes(uses_wgmma(wgmma), plan.hist[3]) <= optin


class GemmSelect:
    """The fused GEMM of one tile: its term tables, its launch a sub-tile, the recount."""

    def __init__(self, plan: GemmPlan, metric_id: int, wgmma: bool | None = None):
        cp = cc.cupy_module()
        device = cp.cuda.Device().id
        self.wgmma = uses_wgmma(wgmma)
        if self.wgmma:
            try:
                kernels = _kernels(metric_id, device, plan.hist[3], True, plan.value_col, _adds(plan))
            except Exception as e:  # noqa: BLE001 -- NVRTC, ptxas or the driver: the other main loop is exact too
                refuse_wgmma(device, "the wgmma GEMM", "mma.sync's", e)
                self.wgmma = False
        if not self.wgmma:
            kernels = _kernels(metric_id, device, plan.hist[3], False, plan.value_col, _adds(plan))
        self.gemm, self.recount_kernel, self.smem = kernels
        self.plan, self.cfg = plan, tile_config(self.wgmma)  # the operands' row padding follows the kernel's tiles
        starts = b1_layout.ktile_starts(list(plan.pieces))
        self.term_kt = cp.asarray(starts[:-1].astype(np.int32))
        self.term_mult = cp.asarray(np.asarray(plan.term_mult, dtype=np.int64).astype(np.int32))
        self.group_kt = int(starts[plan.group_start])

    def operands(self, d, side: str):
        """One row chunk's operand: the pieces' word ranges side by side along K."""
        return b1_layout.repack(d, list(self.plan.pieces), side, self.cfg)

    def row_adds(self, d, side: str):
        """One row chunk's row sums of each accumulator: uint32 (rows,) modulo 2**32, or None."""
        cp = cc.cupy_module()
        sums = self.plan.left_sums if side == "left" else self.plan.right_sums
        return tuple(None if not s else (cc.row_sums(d, list(s)) & 0xFFFFFFFF).astype(cp.uint32) for s in sums)

    def launch(self, left: tuple, right: tuple, sub: tuple[int, int, int, int], params, hist) -> None:
        """Sub-tile rows r0..r1 x columns c0..c1 into params' pair buffers (SelectParams: counter,
        idx, cols, cap, n_total, diag, thr) and `hist` (DeviceHist). left / right: (operand,
        row adds) of its row chunks (`operands`, `row_adds`)."""
        r0, r1, c0, c1 = sub
        ms, ns = r1 - r0, c1 - c0
        if ms == 0 or ns == 0:
            return
        plan, cfg = self.plan, self.cfg
        (a, row_add), (b, col_add) = left, right
        adds = [(row_add[g], col_add[g]) for g in range(2)]
        grid = (-(-a.shape[0] // cfg.block_m)) * (-(-b.shape[0] // cfg.block_n))
        low, high, scale, bins = plan.hist
        value = params.cols[plan.value_col]
        null = 0
        self.gemm(
            (grid,),
            (cfg.threads,),
            (
                a,
                b,
                np.int32(ms),
                np.int32(ns),
                np.int64(a.shape[1]),
                self.term_kt,
                self.term_mult,
                np.int32(len(plan.pieces)),
                np.int32(self.group_kt),
                np.int32(plan.final[0]),
                np.int32(plan.final[1]),
                *(x if x is not None else np.uint64(null) for pair in adds for x in pair),
                np.int64(r0),
                np.int64(c0),
                np.int64(params.n_total),
                np.int32(bool(params.diag)),
                np.float64(params.thr),
                params.counter,
                params.idx,
                value,
                np.int64(params.cap),
                np.uint64(hist.counts.data.ptr + 8 * plan.hist_offset) if hist is not None else np.uint64(null),
                np.float64(low),
                np.float64(high),
                np.float64(scale),
                np.int32(bins),
            ),
            shared_mem=self.smem,
        )

    def recount(self, dl, dr, params, total: int, plans: dict) -> None:
        """The integer columns of the `total` appended pairs, counted from the planes dl / dr (the
        tile's blocks on the device), into params.cols."""
        cp = cc.cupy_module()
        if total == 0:
            return
        terms = []  # (column, left word or -1, right word or -1, words, coef): -1 an all-ones side
        for k, name in self.plan.recount:
            products, lsums, rsums = cc.split_terms(plans[name].terms)
            terms += [(k, p.left, p.right, p.width, p.coef) for p in products]
            terms += [(k, r.start, -1, r.width, r.coef) for r in lsums]
            terms += [(k, -1, r.start, r.width, r.coef) for r in rsums]
            if not (products or lsums or rsums):
                terms.append((k, -1, -1, 0, 0))  # a count with no term: 0
        table = np.asarray(terms, dtype=np.int64).T
        self.recount_kernel(
            (-(-total // RECOUNT_WARPS),),
            (32 * RECOUNT_WARPS,),
            (
                dl,
                dr,
                np.int64(dl.shape[1]),
                params.idx,
                np.int64(params.n_total),
                np.int64(total),
                np.int32(len(terms)),
                cp.asarray(table[0].astype(np.int32)),
                *(cp.asarray(np.ascontiguousarray(row)) for row in table[1:]),
                params.cols,
                np.int64(params.cap),
            ),
        )
