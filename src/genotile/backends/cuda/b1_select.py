"""cupy-b1's sub-tiles with the epilogue fused into the GEMM (kernels/b1_select.cu).

On the fused path (cupy_tile) a king sub-tile otherwise takes five b1 GEMM launches, each writing
an int32 count matrix, and tile_select reads the five back: 40 bytes of memory traffic a pair
beside the products. Here one launch keeps king's counts in two int32 accumulator sets
(epilogues/king.cuh, GemmCounts<2>):

    acc 0 = 2 ibs0 - hethet           acc 1 = het_i * 2**16 + het_j

computes each pair's kinship with king's own epilogue (Epilogue<2>::values, from the same integers
num and den), counts its histogram bin and appends the passing pairs (index and kinship). The
integer columns of the passing pairs (nsnp, hethet, ibs0) are then counted again, pair by pair,
from the planes (`pair_counts`): with a threshold few pairs pass. The tile's outputs are the
select path's, byte for byte (tests/backends/test_gpu_tile.py compares both with numpy's).

Where it applies (`gemm_plan`): cupy-b1, a metric with accumulators here (king), a threshold, no
dense block, one float histogram of the thresholded column, and at most 65,535 sites (het_i and
het_j share an accumulator). Anything else takes the select path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from genotile.backends.cuda import cupy_b1
from genotile.backends.cuda import cupy_common as cc

# Block tile 64 x 128, warp tiles 32 x 32 (two accumulator sets: 64 registers), 4 stages, two blocks
# an SM. Measured on an H200 (bench/RESULTS.md, session 12: one 32,768 x 32,768 x 20,000 king tile,
# ms): this 51-53; 64 x 64 blocks 53-56; 128 x 128 blocks of 32 x 32 warps 52-54; cupy-b1's
# 128 x 128 of 64 x 32 warps (two blocks an SM: 128 registers, spilled) 91, one block an SM 82.
GEMM_TILE = cupy_b1.TileConfig(64, 128, 32, 32, 4, min_blocks=2, group_m=16)
SUBTILE_SCALE = 4  # its sub-tiles are 4x the select path's edge: no count matrices to hold
PACK_SHIFT = 16  # acc 1 holds het_i above het_j
PACKED_MAX = (1 << PACK_SHIFT) - 1
# fused_id -> each accumulator's counts and their factors (epilogues/*.cuh: GemmCounts<fused_id>)
ACCUMULATORS: dict[int, tuple[dict[str, int], dict[str, int]]] = {
    2: ({"ibs0": 2, "hethet": -1}, {"het_i": 1 << PACK_SHIFT, "het_j": 1}),
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
    left_sums: tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]  # (count, factor) of row sums
    right_sums: tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]
    recount: tuple[tuple[int, str], ...]  # (column index, count name) of the integer columns
    value_col: int  # the thresholded column: appended, binned
    hist_offset: int  # its histogram's first counter in DeviceHist.counts
    hist: tuple[float, float, float, int]  # low, high, scale, bins


def _chain(products: list[cc.Product]) -> tuple[list[cc.Product], list[int], int] | None:
    """(products in Horner order, multipliers, final multiplier), or None: coefficients that do not
    divide one another."""
    if not products:
        return [], [], 1
    order = sorted(products, key=lambda p: -abs(p.coef))
    mult = [1] + [order[k - 1].coef // order[k].coef for k in range(1, len(order))]
    if any(order[k - 1].coef != mult[k] * order[k].coef for k in range(1, len(order))):
        return None
    return order, mult, order[-1].coef


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
    if any(plans[c].kind == "pair" and (plans[c].left_sums or plans[c].right_sums) for _, c in recount):
        return None  # pair_counts counts products only; a count of both kinds is not recounted here
    pieces: list[cc.Product] = []
    term_mult: list[int] = []
    finals, lefts, rights, starts, bounds = [], [], [], [], []
    for group in groups:
        products, left, right = [], [], []
        for name, factor in group.items():
            pl = plans[name]
            if pl.kind == "pair" and (pl.left_sums or pl.right_sums):
                return None
            prods, lsums, rsums = cc.split_terms(pl.terms)
            products += [cc.Product(p.coef * factor, p.left, p.right, p.width) for p in prods]
            left += [(name, factor)] if lsums else []
            right += [(name, factor)] if rsums else []
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


@functools.cache
def _kernels(fused_id: int, device_id: int, hist_bytes: int):
    cfg = GEMM_TILE
    options = (*cfg.options, f"-DGT_METRIC={fused_id}", "--fmad=false")
    gemm = cc.load_kernel("b1_select.cu", "b1_select", options)
    smem = cfg.smem_bytes + hist_bytes
    if gemm.max_dynamic_shared_size_bytes < smem:
        gemm.max_dynamic_shared_size_bytes = smem
    return gemm, cc.load_kernel("b1_select.cu", "pair_counts", options), smem


def fits_device(plan: GemmPlan) -> bool:
    """Whether this GPU grants a block the kernel's shared memory (its stages and the histogram)."""
    cp = cc.cupy_module()
    optin = int(cp.cuda.runtime.deviceGetAttribute(97, cp.cuda.Device().id))  # MaxSharedMemoryPerBlockOptin
    return GEMM_TILE.smem_bytes + 4 * (plan.hist[3] + 3) <= optin


class GemmSelect:
    """The fused GEMM of one tile: its term tables, its launch a sub-tile, the recount."""

    def __init__(self, plan: GemmPlan, metric_id: int):
        cp = cc.cupy_module()
        self.plan, self.cfg = plan, GEMM_TILE
        tiles = [-(-p.width // cupy_b1.KTILE_WORDS) for p in plan.pieces]
        starts = np.concatenate([[0], np.cumsum(tiles)]).astype(np.int64)
        self.term_kt = cp.asarray(starts[:-1].astype(np.int32))
        self.term_mult = cp.asarray(np.asarray(plan.term_mult, dtype=np.int64).astype(np.int32))
        self.group_kt = int(starts[plan.group_start])
        self.gemm, self.recount_kernel, self.smem = _kernels(metric_id, cp.cuda.Device().id, 4 * (plan.hist[3] + 3))

    def operands(self, d, side: str):
        """One row chunk's operand: the pieces' word ranges side by side along K."""
        return cupy_b1.repack(d, list(self.plan.pieces), side, self.cfg)

    def _adds(self, sums, vecs: dict, r0: int, r1: int):
        """uint32 (r1 - r0,) = sum of factor x a row-sum count over rows r0..r1, modulo 2**32, or None."""
        cp = cc.cupy_module()
        if not sums:
            return None
        total = cp.zeros(r1 - r0, dtype=cp.int64)
        for name, factor in sums:
            total += factor * vecs[name][r0:r1]
        return (total & 0xFFFFFFFF).astype(cp.uint32)

    def launch(self, a, b, sub: tuple[int, int, int, int], params, hist, lvec: dict, rvec: dict) -> None:
        """Sub-tile rows r0..r1 x columns c0..c1 (a, b: their operands) into params' pair buffers
        (SelectParams: counter, idx, cols, cap, n_total, diag, thr) and `hist` (DeviceHist)."""
        r0, r1, c0, c1 = sub
        ms, ns = r1 - r0, c1 - c0
        if ms == 0 or ns == 0:
            return
        plan, cfg = self.plan, self.cfg
        adds = []
        for g in range(2):
            ra, ca = self._adds(plan.left_sums[g], lvec, r0, r1), self._adds(plan.right_sums[g], rvec, c0, c1)
            adds.append((ra, ca))
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
                np.int32(plan.value_col),
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

    def recount(self, dl, dr, params, total: int, plans: dict, lvec: dict, rvec: dict) -> None:
        """The integer columns of the `total` appended pairs, from the planes dl / dr (the tile's
        blocks on the device) and the row-sum vectors, into params.cols."""
        cp = cc.cupy_module()
        if total == 0:
            return
        idx = params.idx[:total]
        t_col, t_lw, t_rw, t_width, t_coef = [], [], [], [], []
        for k, name in self.plan.recount:
            pl = plans[name]
            if pl.kind == "pair":
                for p in cc.split_terms(pl.terms)[0]:
                    t_col.append(k)
                    t_lw.append(p.left)
                    t_rw.append(p.right)
                    t_width.append(p.width)
                    t_coef.append(p.coef)
            else:  # row sums only (or no term): gathered at the pairs' rows and columns
                v = cp.zeros(total, dtype=cp.int64)
                if name in lvec:
                    v += lvec[name][idx // params.n_total]
                if name in rvec:
                    v += rvec[name][idx % params.n_total]
                params.cols[k, :total] = v.view(cp.int64)
        if not t_col:
            return
        as64 = functools.partial(np.asarray, dtype=np.int64)
        self.recount_kernel(
            (-(-total // RECOUNT_WARPS),),
            (32 * RECOUNT_WARPS,),
            (
                dl,
                dr,
                np.int64(dl.shape[1]),
                idx,
                np.int64(params.n_total),
                np.int64(total),
                np.int32(len(t_col)),
                cp.asarray(np.asarray(t_col, dtype=np.int32)),
                cp.asarray(as64(t_lw)),
                cp.asarray(as64(t_rw)),
                cp.asarray(as64(t_width)),
                cp.asarray(as64(t_coef)),
                params.cols,
                np.int64(params.cap),
            ),
        )
