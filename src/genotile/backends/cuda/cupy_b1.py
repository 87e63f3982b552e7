"""GPU backend `cupy-b1`: 1-bit tensor-core tiles (mma.sync m16n8k256 .b1 AND+POPC).

Kernel: kernels/b1_mma_multistage.cu, compiled by NVRTC through CuPy's RawModule for the
GPU at hand (sm_90 on Hopper, sm_80/86/89 on Ampere/Ada: the same source; the tile shape
is chosen from the shared memory the GPU grants a block).

Per count, all its plane products run in one launch: the host copies each product's word
ranges of the left and right planes side by side along K (each padded to whole 1024-bit
k-tiles, rows padded to whole block tiles), and the kernel walks the terms in one pass
over K, rescaling its int32 accumulators between terms (Horner form; the terms are ordered
so that each coefficient divides the previous one -- coefficients that do not form such a
chain go to a second launch). The all-ones-plane terms (row sums) are added in the
kernel's epilogue. The result is exact: a launch whose counts could leave int32 is split
along K and the pieces are summed in int64.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from genotile.backends.cuda import cupy_common as cc
from genotile.backends.cuda.b1_layout import (  # also cupy_b1's names (bench_gpu)
    ATTR_SMEM_OPTIN,
    TileConfig,
    coefficient_chains,
    horner_multipliers,
    ktile_starts,
    repack,
)

MIN_COMPUTE_CAPABILITY = 80  # mma.sync .b1 .and.popc and cp.async


def is_available() -> bool:
    return cc.has_gpu(MIN_COMPUTE_CAPABILITY)


CONFIGS = {
    "b128x256_w64x64_s4": TileConfig(128, 256, 64, 64, 4),
    "b128x256_w64x64_s3": TileConfig(128, 256, 64, 64, 3),
    "b256x128_w64x64_s4": TileConfig(256, 128, 64, 64, 4),
    "b128x128_w64x32_s3_2cta": TileConfig(128, 128, 64, 32, 3, min_blocks=2),
    "b128x128_w64x32_s2": TileConfig(128, 128, 64, 32, 2),
}
# First that fits the GPU's shared memory per block. Measured on an H200 (bench/RESULTS.md):
# the 2-blocks-per-SM 128x128 tile is the fastest (4 warps a scheduler hide more latency than
# 2), the 128x256 tile within 1-2% of it.
PREFERENCE = ("b128x128_w64x32_s3_2cta", "b128x256_w64x64_s4", "b128x256_w64x64_s3", "b128x128_w64x32_s2")


@functools.cache
def _default_config(device_id: int) -> str:
    cp = cc.cupy_module()
    optin = int(cp.cuda.runtime.deviceGetAttribute(ATTR_SMEM_OPTIN, device_id))
    for name in PREFERENCE:
        if CONFIGS[name].smem_bytes <= optin:
            return name
    return PREFERENCE[-1]


def default_config() -> str:
    return _default_config(cc.cupy_module().cuda.Device().id)


def _kernel(cfg: TileConfig):
    return _kernel_on(cfg, cc.cupy_module().cuda.Device().id)


@functools.cache
def _kernel_on(cfg: TileConfig, device_id: int):
    kernel = cc.load_kernel("b1_mma_multistage.cu", "b1_mma_multistage", cfg.options)
    if kernel.max_dynamic_shared_size_bytes < cfg.smem_bytes:
        kernel.max_dynamic_shared_size_bytes = cfg.smem_bytes
    return kernel


def plan_launches(products: list[cc.Product]) -> list[list[cc.Product]]:
    """Products per launch: one coefficient chain, total bound <= 2**31 - 1."""
    launches: list[list[cc.Product]] = []
    for chain in coefficient_chains(products):
        current: list[cc.Product] = []
        bound = 0
        for piece in (q for p in chain for q in cc.split_product(p, cc.INT32_MAX)):
            if current and bound + piece.bound > cc.INT32_MAX:
                launches.append(current)
                current, bound = [], 0
            current.append(piece)
            bound += piece.bound
        if current:
            launches.append(current)
    return launches


@dataclass
class Launch:
    """Repacked operands and the term table of one kernel launch."""

    a: Any  # cupy uint64 (Mp, KW)
    b: Any  # cupy uint64 (Np, KW)
    term_kt: Any  # cupy int32 (n_terms,)
    term_mult: Any  # cupy int32 (n_terms,)
    n_terms: int
    final_mult: int
    rows: int
    cols: int
    bit_macs: int  # sum over products of rows * cols * bits (unpadded)


def prepare_launch(dl, dr, pieces: list[cc.Product], cfg: TileConfig, a=None, b=None, tables=None) -> Launch:
    """Operands and term table of one launch; a / b / tables: already repacked ones (cached)."""
    m, n = dl.shape[0], dr.shape[0]
    if tables is None:
        tables = term_tables(pieces)
    a = repack(dl, pieces, "left", cfg) if a is None else a
    b = repack(dr, pieces, "right", cfg) if b is None else b
    term_kt, term_mult = tables
    return Launch(
        a=a,
        b=b,
        term_kt=term_kt,
        term_mult=term_mult,
        n_terms=len(pieces),
        final_mult=int(pieces[-1].coef),
        rows=m,
        cols=n,
        bit_macs=m * n * cc.WORD_BITS * sum(p.width for p in pieces),
    )


def term_tables(pieces: list[cc.Product]):
    """(term_kt, term_mult) device arrays: each term's first k-tile and Horner multiplier."""
    cp = cc.cupy_module()
    starts = ktile_starts(pieces)[:-1].astype(np.int32)
    return cp.asarray(starts), cp.asarray(np.asarray(horner_multipliers(pieces), dtype=np.int32))


def run_launch(launch: Launch, cfg: TileConfig, out, row_add, col_add) -> None:
    """The kernel alone: out (rows, cols) int32 <- counts of the launch + row_add + col_add."""
    kernel = _kernel(cfg)
    grid = (-(-launch.a.shape[0] // cfg.block_m)) * (-(-launch.b.shape[0] // cfg.block_n))
    kernel(
        (grid,),
        (cfg.threads,),
        (
            launch.a,
            launch.b,
            out,
            np.int32(launch.rows),
            np.int32(launch.cols),
            np.int64(launch.a.shape[1]),
            launch.term_kt,
            launch.term_mult,
            np.int32(launch.n_terms),
            np.int32(launch.final_mult),
            row_add,
            col_add,
        ),
        shared_mem=cfg.smem_bytes,
    )


def fits_int32(terms) -> bool:
    """Whether count_device(..., int32=True) returns this count as int32 (one launch, exact)."""
    products, left_sums, right_sums = cc.split_terms(terms)
    total = sum(p.bound for p in products) + cc.sums_bound(left_sums) + cc.sums_bound(right_sums)
    return len(plan_launches(products)) == 1 and total <= cc.INT32_MAX


def count_device(
    dl, dr, terms, config: str | None = None, int32: bool = False, cache: dict | None = None, keys: tuple | None = None
):
    """Device array (rows_left, rows_right) of one count (see metrics.Term): int64, or the
    kernel's int32 output itself when `int32` and the count fits (`fits_int32`).

    cache / keys: a dict the caller keeps across calls and (left key, right key) naming dl and
    dr; the repacked operands, term tables and row sums are kept there under them, so a block
    cut into sub-tiles is repacked once per chunk, not once per sub-tile."""
    cp = cc.cupy_module()
    cfg = CONFIGS[config or default_config()]
    m, n = dl.shape[0], dr.shape[0]
    if m == 0 or n == 0:
        return cp.zeros((m, n), dtype=cp.int64)
    products, left_sums, right_sums = cc.split_terms(terms)
    launches = plan_launches(products)
    total = sum(p.bound for p in products) + cc.sums_bound(left_sums) + cc.sums_bound(right_sums)

    def cached(key, make):
        if cache is None:
            return make()
        if key not in cache:
            cache[key] = make()
        return cache[key]

    lk, rk = keys if keys is not None else (None, None)

    def launch(i, pieces):
        return prepare_launch(
            dl,
            dr,
            pieces,
            cfg,
            a=cached((lk, "a", i, config), lambda: repack(dl, pieces, "left", cfg)),
            b=cached((rk, "b", i, config), lambda: repack(dr, pieces, "right", cfg)),
            tables=cached(("tables", tuple(pieces)), lambda: term_tables(pieces)),
        )

    def sums(d, key, side_sums):
        return cached((key, "sums", tuple(side_sums)), lambda: cc.row_sums(d, side_sums))

    if len(launches) == 1 and total <= cc.INT32_MAX:  # one launch, sums fused in its epilogue
        row_add = sums(dl, lk, left_sums).astype(cp.int32)
        col_add = sums(dr, rk, right_sums).astype(cp.int32)
        out = cc.new_output((m, n), cp.int32)
        run_launch(launch(0, launches[0]), cfg, out, row_add, col_add)
        return out if int32 else out.astype(cp.int64)
    acc = sums(dl, lk, left_sums)[:, None] + sums(dr, rk, right_sums)[None, :]
    zero_m, zero_n = cp.zeros(m, dtype=cp.int32), cp.zeros(n, dtype=cp.int32)
    for i, pieces in enumerate(launches):
        out = cc.new_output((m, n), cp.int32)
        run_launch(launch(i, pieces), cfg, out, zero_m, zero_n)
        acc += out
    return acc


def count_matrices(left, right, counts: dict, config: str | None = None) -> dict[str, np.ndarray]:
    m, n = left.shape[0], right.shape[0]
    if m == 0 or n == 0:
        return cc.empty_result(counts, m, n)
    dl = cc.to_device(left)
    dr = dl if right is left else cc.to_device(right)
    return {name: count_device(dl, dr, terms, config).get() for name, terms in counts.items()}


def tile_pairs(left, right, metric, layout, threshold=None, diagonal=False, dense=False, **options):
    """A whole tile on the device: counts, epilogue, threshold, compaction (see cupy_tile)."""
    from genotile.backends.cuda import cupy_tile

    return cupy_tile.tile_pairs(ENGINE, left, right, metric, layout, threshold, diagonal, dense, **options)


def triples_device(*args, **kwargs):
    """A ccc3 job's triples on the device, chunk by chunk (a generator; see cupy_ccc3)."""
    from genotile.backends.cuda import cupy_ccc3

    return cupy_ccc3.triples_device(ENGINE, *args, **kwargs)


def _engine():
    from genotile.backends.cuda.cupy_tile import Engine

    return Engine("cupy-b1", count_device, fits_int32)


ENGINE = _engine()
