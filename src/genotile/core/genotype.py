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
from genotile.core.encodings import ENCODINGS
from genotile.errors import GenotileError

PLANE_BITS = {
    "L": lambda g: (g == 1) | (g == 2),
    "H": lambda g: g == 2,
    "V": lambda g: g != MISSING,
    "Het": lambda g: g == 1,
    "Hom0": lambda g: g == 0,
}
# each genotype encoding's planes, in store order (core/encodings.py holds them)
PLANES = {name: e.planes for name, e in ENCODINGS.items() if e.genotypes}
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
    """Check every code is 0, 1, 2 or MISSING, a block of rows at a time.

    Parameters
    ----------
    codes : array_like of uint8, shape (vectors, fields)
        Genotype codes (a memory map is read in blocks of about 64 MiB).

    Returns
    -------
    bool
        True when no code is MISSING (the layout is `complete`).

    Raises
    ------
    GenotileError
        A code other than 0, 1, 2 or MISSING.

    Examples
    --------
    >>> scan_codes(np.array([[0, 1, 2]], dtype=np.uint8)), scan_codes(np.array([[0, MISSING]], dtype=np.uint8))
    (True, False)
    """
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
    """The plane layout of a genotype store.

    Parameters
    ----------
    codes : array_like of uint8, shape (vectors, fields)
        Genotype codes, checked by `scan_codes`.
    encoding : {"genotype", "genotype_t"}
        Store kind: samples x variants with planes L H V Het Hom0 (ibs, king), or variants x
        samples with L H V (ccc2, ccc3).

    Returns
    -------
    GenotypeLayout
        ceil(fields / 64) words per plane, the planes in order, and `complete`.

    Examples
    --------
    >>> g = np.array([[0, 1, 2, MISSING], [2, 2, 0, 1]], dtype=np.uint8)
    >>> lay = genotype_layout(g, "genotype_t")
    >>> lay.planes, lay.complete, lay.segments()["V"], lay.total_words
    (('L', 'H', 'V'), False, (2, 3), 3)
    """
    return GenotypeLayout(n_words(codes.shape[1]), PLANES[encoding], scan_codes(codes))


def genotype_planes(codes: np.ndarray, layout: GenotypeLayout) -> np.ndarray:
    """Pack rows of genotype codes into their bit planes.

    Parameters
    ----------
    codes : array_like of uint8, shape (rows, fields)
        Codes 0, 1, 2 or MISSING.
    layout : GenotypeLayout
        Which planes, and `words` per plane (>= ceil(fields / 64)).

    Returns
    -------
    numpy.ndarray of uint64, shape (rows, layout.total_words)
        The planes of each row one after another (`layout.segments()` gives their words).

    Examples
    --------
    Row [0, 1, 2, missing]: L = 0b0110, H = 0b0100, V = 0b0111.

    >>> g = np.array([[0, 1, 2, MISSING], [2, 2, 0, 1]], dtype=np.uint8)
    >>> genotype_planes(g, genotype_layout(g, "genotype_t")).tolist()
    [[6, 4, 7], [11, 3, 15]]
    """
    g = np.asarray(codes)
    if not layout.planes:
        return np.zeros((g.shape[0], 0), np.uint64)
    return np.concatenate([pack_bits(PLANE_BITS[p](g), layout.words) for p in layout.planes], axis=1)
