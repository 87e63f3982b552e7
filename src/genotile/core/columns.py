"""Which alignment columns are informative, from raw bytes at numpy speed (one-pass ingest).

`ColumnSpan` is the vectorised counterpart of encode.ColumnScan (which takes one row of codes
at a time, for the streaming reader): it keeps each column's smallest and largest present
symbol over blocks of raw rows; `categorical_codes` is CATEGORICAL.encode by arithmetic.
Both agree with the lookup tables of encode.py (tests/io/test_fasta_mmap.py).
"""

import numpy as np

from genotile.core.encode import CATEGORICAL, MISSING, NUCLEOTIDE, Alphabet


class ColumnSpan:
    """Which columns hold two or more symbols, from raw bytes a block of rows at a time.

    The vectorised ColumnScan of the one-pass FASTA ingest: per column, the smallest and
    largest present symbol (case folded) are kept with whole-array operations, no lookup
    table per byte, a few rows at a time so that the temporaries stay in the CPU cache.
    `raw` must hold printable ASCII only (fasta_mmap.clean).
    """

    BLOCK_BYTES = 1 << 18

    def __init__(self, alphabet: Alphabet, n_columns: int):
        self.alphabet = alphabet
        self.low = np.full(n_columns, 255, dtype=np.uint8)  # 255: no present symbol yet
        self.high = np.zeros(n_columns, dtype=np.uint8)

    def add(self, raw: np.ndarray) -> None:
        rows = max(1, self.BLOCK_BYTES // max(1, raw.shape[1]))
        for r0 in range(0, raw.shape[0], rows):
            self._add(raw[r0 : r0 + rows])

    def _add(self, raw: np.ndarray) -> None:
        if self.alphabet is NUCLEOTIDE:  # A C G T of either case; everything else is missing
            folded = raw & np.uint8(0xDF)
            present = folded == ord("A")
            for base in b"CGT":
                present |= folded == base
            missing = present.view(np.uint8) - np.uint8(1)  # 0 where present, 255 where missing
            low, high = (folded | missing).min(axis=0), (folded & ~missing).max(axis=0)
        elif self.alphabet is CATEGORICAL:  # every byte a symbol (its code), lower case folded
            folded = categorical_codes(raw)
            low, high = folded.min(axis=0), folded.max(axis=0)
        else:
            codes = self.alphabet.encode(raw)
            low = codes.min(axis=0)
            high = np.where(codes == MISSING, np.uint8(0), codes).max(axis=0)
        np.minimum(self.low, low, out=self.low)
        np.maximum(self.high, high, out=self.high)

    def update(self, other: "ColumnSpan") -> None:
        """Take in the ranges another span found over other rows."""
        np.minimum(self.low, other.low, out=self.low)
        np.maximum(self.high, other.high, out=self.high)

    @property
    def informative(self) -> np.ndarray:
        return (self.low != 255) & (self.low != self.high)


def nucleotide_codes(raw: np.ndarray) -> np.ndarray:
    """NUCLEOTIDE.encode of ASCII bytes by arithmetic: with x = ((byte & 0xDF) >> 1) & 3, A C T G
    give 0 1 2 3, and x ^ (x >> 1) puts them in the table's order A C G T; other bytes MISSING."""
    folded = raw & np.uint8(0xDF)
    present = folded == ord("A")
    for base in b"CGT":
        present |= folded == base
    x = (folded >> np.uint8(1)) & np.uint8(3)
    x ^= x >> np.uint8(1)
    return x | (present.view(np.uint8) - np.uint8(1))


def encode_ascii(alphabet: Alphabet, raw: np.ndarray) -> np.ndarray:
    """alphabet.encode of ASCII bytes (fasta_mmap.clean), by arithmetic where the alphabet has it."""
    if alphabet is NUCLEOTIDE:
        return nucleotide_codes(raw)
    if alphabet is CATEGORICAL:
        return categorical_codes(raw)
    return alphabet.encode(raw)


def categorical_codes(raw: np.ndarray) -> np.ndarray:
    """CATEGORICAL.encode of ASCII bytes (< 128) by arithmetic: lower case letters less 32."""
    lower = (raw - np.uint8(ord("a"))) < np.uint8(26)
    return raw - (lower.view(np.uint8) << np.uint8(5))
