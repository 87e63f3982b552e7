"""ccc3 jobs in one fused kernel (kernels/ccc3_fused.cu): the 27 plane products of a block triple
on the 1-bit tensor cores, the 8 counts kept in registers, the epilogue, threshold and compaction
where they are; only the passing triples leave the GPU.

The select path (cupy_ccc3) writes a masked block and 8 int32 count matrices a batch of middle
rows and reads them back: 64 bytes of memory traffic a place, which at 2,000 samples outweighs
the 1-bit products. Here a block of the grid holds a 64 x 64 tile of (i, k) and the whole of
their planes in shared memory, and loops over its middle rows j, each j's 27 products masked in
registers (`fits`: the planes of 128 rows, and 16 rows j, within the block's shared memory).

Planes too wide for that (any width, where the GPU grants its stages: sm_90) take the streamed
kernel, the tile's rows through cp.async stages for each middle row: `ccc3_fused_streamed` on
mma.sync, or on Hopper `ccc3_fused_wgmma`, the same block tiles on the warpgroup MMA (the sm_90a
build of the same file, GT_WGMMA; b1_select.uses_wgmma's policy decides, a GPU where it does not
build falls back to mma.sync's with one warning). `launch` holds each kernel's threads and shared
memory, `_grid` their grid.

Launches cover a range of middle rows j (and of i tiles); when more triples pass than the
buffer holds, the range is run again with the buffer grown up to cupy_ccc3.MAX_CAPACITY, then
cut in halves (j, then i, then k), so one readback is at most MAX_CAPACITY triples whatever the
threshold lets through. Same triples, same bits as the select path (tests/backends/test_gpu_ccc3*).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from genotile.backends.cuda import b1_select
from genotile.backends.cuda import cupy_common as cc
from genotile.backends.cuda.b1_layout import ATTR_SMEM_OPTIN
from genotile.core import ccc3
from genotile.errors import GenotileError

BLOCK_I = 64  # kFBlockI
BLOCK_K = 64  # kFBlockK
J_GROUP = 16  # kFJGroup
THREADS = 512  # kFThreads
J_PER_BLOCK = 32  # middle rows a grid block loops over in one launch
J_PER_LAUNCH = 256  # middle rows of one launch
STREAM_CHUNK = 16  # kSChunk: words of a plane a stage of the streamed kernel holds
STREAM_STAGES = 4  # kSStages
WGMMA_THREADS = 256  # kWgThreads: ccc3_fused_wgmma's two warpgroups
WGMMA_STAGES = 4  # kWgStages
SMEM_LIMIT = 227 * 1024  # an sm_90 block's opt-in shared memory (`fits_device` asks the GPU's own)
OPTIONS = ("--fmad=false",)


def padded_words(words: int) -> int:
    """A plane's words in the kernel's operands: whole k-steps of 256 bits.

    >>> padded_words(32), padded_words(33), padded_words(1)
    (32, 36, 4)
    """
    return -(-words // 4) * 4


def _stride(row_bytes: int) -> int:
    """A shared-memory row of `row_bytes`: 16 bytes past a multiple of 128 (the kernels'
    fused_stride: an ldmatrix's 8 rows on distinct banks)."""
    return ((row_bytes + 111) // 128) * 128 + 16


def smem_bytes(words: int) -> int:
    """Shared memory of one grid block: the i and k tiles' rows (each 3 planes, its stride 16 bytes
    past a multiple of 128: fused_stride in the kernel) and J_GROUP rows j.

    >>> smem_bytes(32)
    112640
    """
    row = 3 * padded_words(words) * 8
    return (BLOCK_I + BLOCK_K) * _stride(row) + J_GROUP * row


def fits(words: int, limit: int = SMEM_LIMIT) -> bool:
    """Whether planes of `words` words fit the fused kernel within `limit` bytes of shared memory
    a block (sm_90's 227 KiB: up to 4,096 samples).

    >>> fits(32), fits(70), fits(32, limit=99 * 1024)
    (True, False, False)
    """
    return smem_bytes(words) <= limit


def device_smem() -> int:
    """The shared memory this GPU grants a block (sm_90: 227 KiB; sm_80: 163 KiB; sm_86/89: 99 KiB)."""
    cp = cc.cupy_module()
    return int(cp.cuda.runtime.deviceGetAttribute(ATTR_SMEM_OPTIN, cp.cuda.Device().id))


def fits_device(words: int) -> bool:
    """`fits` on this GPU (sm_86/89: 2,000 samples take the select path)."""
    return fits(words, device_smem())


def kernel_for(words: int, limit: int = SMEM_LIMIT) -> str | None:
    """The fused kernel for planes of `words` words within `limit` bytes of shared memory a block:
    "resident" (the tile's planes held whole: faster where they fit), else "streamed" (any width,
    its fixed stages: sm_90's opt-in only; mma.sync's, the larger of the two streamed kernels', as
    a Hopper that cannot build `ccc3_fused_wgmma` runs them), else None (the select path).

    >>> kernel_for(32), kernel_for(313), kernel_for(313, limit=163 * 1024)
    ('resident', 'streamed', None)
    """
    if fits(words, limit):
        return "resident"
    return "streamed" if streamed_smem_bytes() <= limit else None


def streamed_smem_bytes() -> int:
    """Shared memory of one grid block of the streamed kernel (`ccc3_fused_streamed`): STAGES
    stages of the tile's rows' and row j's STREAM_CHUNK words of each plane.

    >>> streamed_smem_bytes()
    206336
    """
    chunk = 3 * STREAM_CHUNK * 8
    return STREAM_STAGES * ((BLOCK_I + BLOCK_K) * _stride(chunk) + chunk)


def wgmma_smem_bytes() -> int:
    """Shared memory of one grid block of `ccc3_fused_wgmma`: WGMMA_STAGES stages of one k-tile
    (STREAM_CHUNK words) of the tile's rows' 3 planes, i's and k's each a region of 64 rows of 128
    bytes, row j's 3 x 128 bytes in 1 KB (the next stage on a 1024-byte boundary), and the alignment.

    >>> wgmma_smem_bytes()
    201728
    """
    chunk = STREAM_CHUNK * 8  # one 128-byte swizzled row
    return WGMMA_STAGES * (3 * (BLOCK_I + BLOCK_K) * chunk + 1024) + b1_select.WGMMA_ALIGN


@dataclass(frozen=True)
class FusedKernel:
    """One fused kernel's launch: its name in kernels/ccc3_fused.cu, threads a block, dynamic shared
    memory a block, and whether it is the sm_90a build (GT_WGMMA: `ccc3_fused_wgmma`)."""

    name: str
    threads: int
    smem: int
    wgmma: bool = False


def launch(words: int, streamed: bool, wgmma: bool = False) -> FusedKernel:
    """The kernel for planes of `words` words: the resident one, the streamed one, or (`streamed`
    and `wgmma`: Hopper) the streamed one on the warpgroup MMA. Their grid is one (`_grid`).

    >>> launch(32, False).name, launch(313, True).threads, launch(313, True, wgmma=True).threads
    ('ccc3_fused', 512, 256)
    """
    if not streamed:
        return FusedKernel("ccc3_fused", THREADS, smem_bytes(words))
    if wgmma:
        return FusedKernel("ccc3_fused_wgmma", WGMMA_THREADS, wgmma_smem_bytes(), wgmma=True)
    return FusedKernel("ccc3_fused_streamed", THREADS, streamed_smem_bytes())


def _grid(item: tuple[int, ...]) -> tuple[int, int, int]:
    """A launch's grid, every fused kernel's (block_range in the kernels): a block a 64 x 64 tile
    of (i, k) over [i0, i1) x [k0, k1), J_PER_BLOCK middle rows of [j0, j1) a block along z.

    >>> _grid((0, 70, 0, 100, 10, 130))
    (3, 2, 3)
    """
    j0, j1, i0, i1, k0, k1 = item
    tiles_k = -(-k1 // BLOCK_K) - k0 // BLOCK_K
    tiles_i = -(-i1 // BLOCK_I) - i0 // BLOCK_I
    return tiles_k, tiles_i, max(1, -(-(j1 - j0) // J_PER_BLOCK))


@functools.cache
def _kernel(device_id: int, spec: FusedKernel):
    options = (*OPTIONS, "-DGT_WGMMA=1") if spec.wgmma else OPTIONS
    kernel = cc.load_kernel("ccc3_fused.cu", spec.name, options, arch_specific=spec.wgmma)
    if kernel.max_dynamic_shared_size_bytes < spec.smem:
        kernel.max_dynamic_shared_size_bytes = spec.smem
    return kernel


def _fits(spec: FusedKernel, words: int) -> None:
    if spec.smem > device_smem():  # asked for by name (cupy_ccc3's path), where it does not fit
        raise GenotileError(
            f"ccc3: the {spec.name} kernel needs {spec.smem:,} bytes of shared memory a block at "
            f"{words} plane words; this GPU grants {device_smem():,}"
        )


def load(words: int, streamed: bool, wgmma: bool | None = None):
    """(kernel, FusedKernel) of a job on this GPU. The streamed path runs `ccc3_fused_wgmma` where
    b1_select.uses_wgmma says (Hopper, an NVRTC that compiles sm_90a, no failed wgmma build on this
    GPU; `wgmma` False: mma.sync's, as elsewhere); one that does not compile or load leaves this GPU
    to mma.sync's kernels, with one warning (b1_select's policy: the GPU remembered, for the b1
    GEMM's wgmma main loop as well)."""
    device = cc.cupy_module().cuda.Device().id
    if streamed and b1_select.uses_wgmma(wgmma):
        spec = launch(words, True, wgmma=True)
        _fits(spec, words)
        try:
            return _kernel(device, spec), spec
        except Exception as e:  # noqa: BLE001 -- NVRTC, ptxas or the driver: mma.sync's kernel is exact too
            b1_select.refuse_wgmma(device, "ccc3's wgmma kernel", "the streamed mma.sync kernel", e)
    spec = launch(words, streamed)
    _fits(spec, words)
    return _kernel(device, spec), spec


def operand(block, layout, tile: int, wp: int):
    """Block rows as the kernel reads them: uint64 (rows padded to whole `tile`s, 3 * wp), planes
    L, H, V each padded to wp words with zeros; zero rows after the block's."""
    cp = cc.cupy_module()
    d = cc.to_device(block)
    n = d.shape[0]
    out = cp.zeros((max(1, -(-n // tile)) * tile, 3, wp), dtype=cp.uint64)
    segments = layout.segments()
    for x, plane in enumerate(ccc3.PLANES):
        a, b = segments[plane]
        out[:n, x, : b - a] = d[:, a:b]
    return out.reshape(out.shape[0], 3 * wp)


def factors(stat, param: float) -> np.ndarray:
    """float32 (rows, 2): 1 - P f(a) for a = 0, 1 of each row, as the epilogue computes the factor
    in doubles (then rounded to float for the kernel's bound); 0 where the row has no sample.

    >>> factors((np.array([2, 0]), np.array([1, 0])), 2 / 3).tolist()
    [[0.5, 0.8333333134651184], [0.0, 0.0]]
    """
    c, s1 = (np.asarray(x, dtype=np.int64) for x in stat)
    present = c > 0
    den = 2.0 * np.where(present, c, 1).astype(np.float64)
    f = np.stack([(2 * c - s1) / den, s1 / den], axis=1)
    out = 1.0 - param * f
    out[~present] = 0.0
    return out.astype(np.float32)


def _halves(item: tuple[int, ...]) -> list[tuple[int, ...]]:
    """A launch's places (j0, j1, i0, i1, k0, k1: row ranges of blocks J, I, K) cut in two: along
    j, else i, else k (down to one place, one triple at most: any buffer holds it).

    >>> _halves((0, 4, 0, 100, 0, 90))
    [(0, 2, 0, 100, 0, 90), (2, 4, 0, 100, 0, 90)]
    >>> _halves((3, 4, 0, 100, 5, 90))
    [(3, 4, 0, 50, 5, 90), (3, 4, 50, 100, 5, 90)]
    >>> _halves((3, 4, 7, 8, 5, 90))
    [(3, 4, 7, 8, 5, 47), (3, 4, 7, 8, 47, 90)]
    """
    j0, j1, i0, i1, k0, k1 = item
    if j1 - j0 > 1:
        mid = (j0 + j1) // 2
        return [(j0, mid, i0, i1, k0, k1), (mid, j1, i0, i1, k0, k1)]
    if i1 - i0 > 1:
        mid = (i0 + i1) // 2
        return [(j0, j1, i0, mid, k0, k1), (j0, j1, mid, i1, k0, k1)]
    mid = (k0 + k1) // 2
    return [(j0, j1, i0, i1, k0, mid), (j0, j1, i0, i1, mid, k1)]


def triples_fused(
    blocks,
    stats,
    layout,
    plan,
    params,
    block_ids,
    stage,
    threshold,
    info: dict | None = None,
    capacity: tuple[int, int] = (1 << 18, 1 << 20),
    streamed: bool = False,
    wgmma: bool | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """A ccc3 job's passing triples from the fused kernel, one readback a chunk (as
    cupy_ccc3.triples_device: ti, tj, tk int64 (t,), rows of blocks I, J, K; values float64 (t, 8);
    1 <= t <= the most of `capacity`, in no particular order). `capacity`: the passing triples
    buffered on the device at first and at most (cupy_ccc3's INITIAL_CAPACITY, MAX_CAPACITY).
    `streamed`: the kernel for planes of any width (the tile's rows through cp.async stages for
    each middle row: `ccc3_fused_wgmma` on Hopper, else `ccc3_fused_streamed`; `wgmma` False:
    the latter there too, `load`), else the one holding them whole (`fits_device`). `info` gets
    "kernel", the kernel's name, and "seconds_counts" (cupy_ccc3.triples_device)."""
    initial, most = capacity
    cp = cc.cupy_module()
    spent, t0 = 0.0, time.perf_counter()
    bi, bj, bk = block_ids
    n_i, n_k = blocks[0].shape[0], blocks[2].shape[0]
    wp = -(-layout.words // STREAM_CHUNK) * STREAM_CHUNK if streamed else padded_words(layout.words)
    d_i = operand(blocks[0], layout, BLOCK_I, wp)
    d_j = d_i if bj == bi else operand(blocks[1], layout, BLOCK_I, wp)
    d_k = d_j if bk == bj else operand(blocks[2], layout, BLOCK_K, wp)  # BLOCK_K == BLOCK_I: padded alike
    st = [cp.asarray(np.stack([c, s], axis=1).astype(np.int64)) for c, s in stats]
    fs = [cp.asarray(factors(s, params.param)) for s in stats]
    kernel, spec = load(layout.words, streamed, wgmma)
    if info is not None:
        info["kernel"] = spec.name
    rows = plan.stage_rows(bj, stage)
    cap = max(1, min(initial, most))
    out = [cp.empty(cap, cp.int32) for _ in range(3)]
    vals = cp.empty((cap, 8), cp.float64)
    counter = cp.zeros(1, cp.uint64)
    # launches' places (j0, j1, i0, i1, k0, k1), run in order; one that overflows is cut in two
    todo: list[tuple[int, ...]] = [
        (j0, min(rows.stop, j0 + J_PER_LAUNCH), 0, n_i, 0, n_k) for j0 in range(rows.start, rows.stop, J_PER_LAUNCH)
    ]
    todo.reverse()
    while todo:
        item = todo.pop()  # (j0, j1, i0, i1, k0, k1)
        counter.fill(0)
        kernel(
            _grid(item),
            (spec.threads,),
            (
                d_i,
                d_j,
                d_k,
                np.int32(wp),
                *(np.int32(x) for x in item),
                st[0],
                st[1],
                st[2],
                fs[0],
                fs[1],
                fs[2],
                np.int32(bi == bj),
                np.int32(bj == bk),
                np.float64(params.multiplier),
                np.float64(params.param),
                np.float64(0.0 if threshold is None else threshold),
                np.int32(threshold is None),  # every triple kept
                counter,
                np.int64(cap),
                *out,
                vals,
            ),
            shared_mem=spec.smem,
        )
        n = int(counter.get()[0])
        if n > cap:
            if cap < most:  # a larger buffer, the same range again
                cap = min(most, 1 << (n - 1).bit_length())
                out = [cp.empty(cap, cp.int32) for _ in range(3)]
                vals = cp.empty((cap, 8), cp.float64)
                todo.append(item)
            else:
                todo += _halves(item)[::-1]
            continue
        if n:
            chunk = tuple(a[:n].get().astype(np.int64) for a in out) + (vals[:n].get(),)
            spent += time.perf_counter() - t0
            yield chunk
            t0 = time.perf_counter()
    cp.cuda.get_current_stream().synchronize()
    spent += time.perf_counter() - t0
    if info is not None:
        info["seconds_counts"] = spent
