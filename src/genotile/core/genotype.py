"""Genotype codes (0, 1, 2 ALT alleles or MISSING) and their bit planes (numpy only).

Planes, one bit per field (docs/bitplanes.md):
  L = [g >= 1], H = [g == 2], V = [non-missing]   (g = L + H),
and two derived planes that save products (see metrics.py):
  Het = [g == 1] = L and not H,   Hom0 = [g == 0] = V and not L.
The `genotype` store (samples x variants; ibs, king) holds L H V Het Hom0, the
`genotype_t` store (variants x samples; ccc2) only L H V, which is all ccc2 uses.
Each plane is `words` uint64 words per row, planes one after another.
`complete` records that no entry is missing: V is then all ones over the
fields, so a product with V is a row sum of the other side.
"""

from dataclasses import dataclass

import numpy as np

from genotile.core.bits import n_words, pack_bits
from genotile.core.encode import MISSING
from genotile.errors import GenotileError

PLANE_BITS = {
    "L": lambda g: (g == 1) | (g == 2),
    "H": lambda g: g == 2,
    "V": lambda g: g != MISSING,
    "Het": lambda g: g == 1,
    "Hom0": lambda g: g == 0,
}
PLANES = {
    "genotype": ("L", "H", "V", "Het", "Hom0"),
    "genotype_t": ("L", "H", "V"),
}
SCAN_BYTES = 1 << 26


@dataclass(frozen=True)
class GenotypeLayout:
    """Where each genotype plane lives in a packed row (word offsets)."""

    words: int  # words per plane: ceil(fields / 64)
    planes: tuple[str, ...]
    complete: bool  # no missing entry anywhere

    def segments(self) -> dict[str, tuple[int, int]]:
        return {p: (k * self.words, (k + 1) * self.words) for k, p in enumerate(self.planes)}

    @property
    def total_words(self) -> int:
        return self.words * len(self.planes)

    def to_json(self) -> dict:
        return {"kind": "genotype", "words": self.words, "planes": list(self.planes), "complete": self.complete}

    @classmethod
    def from_json(cls, d: dict) -> "GenotypeLayout":
        return cls(d["words"], tuple(d["planes"]), d["complete"])


def scan_codes(codes: np.ndarray) -> bool:
    """Check every code is 0, 1, 2 or MISSING; True when none is MISSING."""
    n, m = codes.shape
    step = max(1, SCAN_BYTES // max(1, m))
    complete = True
    for r0 in range(0, n, step):
        # byte compares, not np.bincount (which widens every byte to an intp: ~3x slower)
        block = np.asarray(codes[r0 : r0 + step])
        high = block > 2
        if high.any():
            bad = high & (block != MISSING)
            if bad.any():
                raise GenotileError(
                    f"genotype code {int(block[bad].min())} in the codes matrix is not 0, 1, 2 or missing"
                )
            complete = False
    return bool(complete)


def genotype_layout(codes: np.ndarray, encoding: str) -> GenotypeLayout:
    return GenotypeLayout(n_words(codes.shape[1]), PLANES[encoding], scan_codes(codes))


def genotype_planes(codes: np.ndarray, layout: GenotypeLayout) -> np.ndarray:
    """Pack rows of codes (rows, fields) into plane words (rows, layout.total_words)."""
    g = np.asarray(codes)
    if not layout.planes:
        return np.zeros((g.shape[0], 0), np.uint64)
    return np.concatenate([pack_bits(PLANE_BITS[p](g), layout.words) for p in layout.planes], axis=1)
