"""The 1-bit GEMM's operands (kernels/b1_mma_core.cuh): its tile shapes, the repacked operands
and their terms (Horner chains along K), shared by cupy-b1's count kernel (cupy_b1.py) and the
select in the GEMM (b1_select.py). Below both: b1_select does not import cupy_b1, whose tile path
imports it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genotile.backends.cuda import cupy_common as cc

KTILE_WORDS = 16  # 1024 bits: one k-tile (kBlockKBits)
ATTR_SMEM_OPTIN = 97  # cudaDevAttrMaxSharedMemoryPerBlockOptin: the shared memory a block may ask for


@dataclass(frozen=True)
class TileConfig:
    """Block tile (block_m x block_n x 1024 bits), warp tile, pipeline depth."""

    block_m: int
    block_n: int
    warp_m: int
    warp_n: int
    stages: int
    min_blocks: int = 1  # __launch_bounds__ min blocks per SM
    group_m: int = 8  # block rows per rasterization group
    double_buffer: bool = False  # fragments of k-step ks+1 loaded before the mmas of ks
    mma_volatile: bool = True  # mma asm volatile (False: the compiler may reorder it)
    load_late: bool = True  # next k-tile's copies issued after the first k-step's mmas

    @property
    def threads(self) -> int:
        return 32 * (self.block_m // self.warp_m) * (self.block_n // self.warp_n)

    @property
    def smem_bytes(self) -> int:
        return self.stages * (self.block_m + self.block_n) * (KTILE_WORDS * 8)

    @property
    def options(self) -> tuple[str, ...]:
        return (
            f"-DGT_BLOCK_M={self.block_m}",
            f"-DGT_BLOCK_N={self.block_n}",
            f"-DGT_WARP_M={self.warp_m}",
            f"-DGT_WARP_N={self.warp_n}",
            f"-DGT_STAGES={self.stages}",
            f"-DGT_MIN_BLOCKS={self.min_blocks}",
            f"-DGT_GROUP_M={self.group_m}",
            f"-DGT_DOUBLE_BUFFER={int(self.double_buffer)}",
            f"-DGT_MMA_VOLATILE={int(self.mma_volatile)}",
            f"-DGT_LOAD_LATE={int(self.load_late)}",
        )


def coefficient_chains(products: list[cc.Product]) -> list[list[cc.Product]]:
    """Group products so that, within a group in order, each |coef| divides the previous."""
    chains: list[list[cc.Product]] = []
    for p in sorted(products, key=lambda p: -abs(p.coef)):
        for chain in chains:
            if abs(chain[-1].coef) % abs(p.coef) == 0:
                chain.append(p)
                break
        else:
            chains.append([p])
    return chains


def horner_multipliers(chain: list[cc.Product]) -> list[int]:
    """Each term's multiplier of a coefficient chain in Horner form (acc = acc * m_t + P_t, the
    result times the last coefficient): 1, then each coefficient over the next.

    >>> horner_multipliers([cc.Product(4, 0, 0, 1), cc.Product(-2, 0, 0, 1), cc.Product(1, 0, 0, 1)])
    [1, -2, -2]
    """
    mult = [1] + [chain[i - 1].coef // chain[i].coef for i in range(1, len(chain))]
    assert all(chain[i - 1].coef == mult[i] * chain[i].coef for i in range(1, len(chain)))
    return mult


def ktile_starts(pieces: list[cc.Product]) -> np.ndarray:
    """int64 (len(pieces) + 1,): each piece's first k-tile along K (each padded to whole k-tiles),
    then the k-tiles of all.

    >>> ktile_starts([cc.Product(1, 0, 0, 16), cc.Product(1, 0, 0, 17)]).tolist()
    [0, 1, 3]
    """
    tiles = [-(-p.width // KTILE_WORDS) for p in pieces]
    return np.concatenate([[0], np.cumsum(tiles, dtype=np.int64)]).astype(np.int64)


def repack(d, pieces: list[cc.Product], side: str, cfg: TileConfig):
    """One operand of a launch: each piece's word range of `d` (left ranges for side "left",
    right ranges for "right") side by side along K, each padded to whole k-tiles, rows padded
    to whole block tiles (block_m rows on the left, block_n on the right)."""
    cp = cc.cupy_module()
    rows = d.shape[0]
    block = cfg.block_m if side == "left" else cfg.block_n
    starts = ktile_starts(pieces)
    out = cp.zeros((-(-rows // block) * block, int(starts[-1]) * KTILE_WORDS), dtype=cp.uint64)
    for p, kt in zip(pieces, starts[:-1].tolist(), strict=True):
        w0, src = kt * KTILE_WORDS, (p.left if side == "left" else p.right)
        out[:rows, w0 : w0 + p.width] = d[:, src : src + p.width]
    return out
