"""Which alignment columns are informative, from raw bytes at numpy speed (one-pass ingest).

`ColumnSpan` is the vectorised counterpart of encode.ColumnScan (which takes one row of codes
at a time, for the streaming reader): it keeps each column's smallest and largest present
symbol over blocks of raw rows; `categorical_codes` is CATEGORICAL.encode by arithmetic.
Both agree with the lookup tables of encode.py (tests/io/test_fasta_mmap.py).

An alignment held in memory for the store job (store/ingest.py HeldAlignment) keeps its bytes
folded in place (`fold_ascii`: one byte value for each code, `code_bytes`), so that its planes
are compares of those bytes with each column's symbols, with no codes matrix made; `ColumnCounts`
counts a nucleotide alignment's symbols while its rows are folded.
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


def fold_ascii(alphabet: Alphabet, raw: np.ndarray) -> None:
    """Fold ASCII bytes (fasta_mmap.clean) in place so that a code is one byte value
    (`code_bytes`): nucleotide upper case (a byte & 0xDF is A, C, G or T only where the byte is
    that base in either case; every other byte is missing), categorical its code."""
    if alphabet is NUCLEOTIDE:
        np.bitwise_and(raw, np.uint8(0xDF), out=raw)
    elif alphabet is CATEGORICAL:
        lower = (raw - np.uint8(ord("a"))) < np.uint8(26)
        np.subtract(raw, lower.view(np.uint8) << np.uint8(5), out=raw)
    else:
        raw[...] = alphabet.encode(raw)


def code_bytes(alphabet: Alphabet) -> np.ndarray:
    """(256,) uint8: the folded byte (`fold_ascii`) of each code; MISSING where none (a folded
    byte is ASCII, never MISSING)."""
    out = np.full(256, MISSING, dtype=np.uint8)
    if alphabet is NUCLEOTIDE:
        out[:4] = np.frombuffer(NUCLEOTIDE_BYTES, dtype=np.uint8)
    else:  # categorical and any other: the folded byte is the code
        out[:MISSING] = np.arange(MISSING, dtype=np.uint8)
    return out


NUCLEOTIDE_BYTES = b"ACGT"  # the folded byte of the codes 0, 1, 2, 3 (NUCLEOTIDE's table)


class ColumnCounts:
    """How often each base (codes 0-3) occurs in each column of a nucleotide alignment, counted
    while its rows are folded (`fold_ascii`), a block at a time.

    A compare and a uint8 sum over 255 rows a base (the sum cannot overflow): whole rows of
    255 at a time, where ColumnSpan's min and max take more operations a byte. The counts give
    the informative columns too (two or more bases), and are `symbol_counts` of the codes.
    """

    ROWS = 255  # rows summed in uint8
    BLOCK_BYTES = 1 << 21  # bytes of a block of ROWS rows at most, a band of columns (2x faster than whole
    # rows of 20,000 columns: the block and its compares stay in cache)

    def __init__(self, n_columns: int):
        self.bases = np.zeros((len(NUCLEOTIDE_BYTES), n_columns), dtype=np.int64)
        self.rows = 0

    def add(self, raw: np.ndarray, canonical: bool = False) -> None:
        """Fold ASCII rows in place (fold_ascii) and count their bases. `canonical`: missing
        bytes set to 0 as well, so that two rows' bytes are equal exactly where their codes are."""
        step = max(1, self.BLOCK_BYTES // self.ROWS)
        for r0 in range(0, raw.shape[0], self.ROWS):
            for c0 in range(0, raw.shape[1], step):
                self._add(raw[r0 : r0 + self.ROWS, c0 : c0 + step], self.bases[:, c0 : c0 + step], canonical)
        self.rows += raw.shape[0]

    @staticmethod
    def _add(block: np.ndarray, bases: np.ndarray, canonical: bool) -> None:
        np.bitwise_and(block, np.uint8(0xDF), out=block)
        present = None
        for k, base in enumerate(NUCLEOTIDE_BYTES):
            equal = block == base
            bases[k] += np.add.reduce(equal.view(np.uint8), axis=0, dtype=np.uint8)
            if canonical:
                present = equal if present is None else np.bitwise_or(present, equal, out=present)
        if present is not None:
            np.bitwise_and(block, np.uint8(0) - present.view(np.uint8), out=block)

    def update(self, other: "ColumnCounts") -> None:
        """Take in the counts of other rows."""
        self.bases += other.bases
        self.rows += other.rows

    @property
    def informative(self) -> np.ndarray:
        return (self.bases > 0).sum(axis=0) >= 2

    @classmethod
    def of_span(cls, span: ColumnSpan, keep: np.ndarray, kept_bases: np.ndarray, rows: int) -> "ColumnCounts":
        """What an append needs of a nucleotide alignment read without being held (store/extend.py),
        from its columns' span and its kept columns' counts (`code_bases` of their codes).

        The kept (informative) columns' counts are exact: their symbols' ranks, hence the planes,
        depend on them. A constant column holds one base, or none where every record misses it:
        its count of that base is 1, the others 0. That is all whether new records keep it
        constant depends on (a column is informative where two bases are counted, whatever their
        numbers), and all its encoding depends on while it is: none, it is not kept.

        Parameters
        ----------
        span : ColumnSpan
            The nucleotide span of every row (its `low` a column's one base where constant).
        keep : numpy.ndarray
            (kept,) int64: the informative columns, `span.informative`'s.
        kept_bases : numpy.ndarray
            (4, kept) int64: the kept columns' counts of A, C, G and T.
        rows : int
            The alignment's records.

        Returns
        -------
        ColumnCounts
        """
        out = cls(span.low.size)
        out.bases[:, keep] = kept_bases
        constant = np.flatnonzero(~span.informative & (span.low != 255))
        base = np.full(256, 0, dtype=np.int64)
        base[np.frombuffer(NUCLEOTIDE_BYTES, dtype=np.uint8)] = np.arange(len(NUCLEOTIDE_BYTES))
        out.bases[base[span.low[constant]], constant] = 1
        out.rows = int(rows)
        return out

    def code_counts(self, columns: np.ndarray) -> np.ndarray:
        """(columns, 256) int64: `symbol_counts` of the columns' codes (MISSING counted too)."""
        bases = self.bases[:, columns]
        counts = np.zeros((columns.size, 256), dtype=np.int64)
        counts[:, : bases.shape[0]] = bases.T
        counts[:, MISSING] = self.rows - bases.sum(axis=0)
        return counts


def code_bases(codes: np.ndarray) -> np.ndarray:
    """(4, columns) int64: each column's count of the nucleotide codes 0-3 (A, C, G, T) in a
    block of codes, summed in uint8 over ColumnCounts.ROWS rows at a time (cannot overflow)."""
    out = np.zeros((len(NUCLEOTIDE_BYTES), codes.shape[1]), dtype=np.int64)
    for r0 in range(0, codes.shape[0], ColumnCounts.ROWS):
        block = codes[r0 : r0 + ColumnCounts.ROWS]
        for k in range(len(NUCLEOTIDE_BYTES)):
            out[k] += np.add.reduce((block == k).view(np.uint8), axis=0, dtype=np.uint8)
    return out
