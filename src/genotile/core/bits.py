"""Bit packing: 64 fields per little-endian uint64 word.

Layout: field f of a row lives in word f // 64, bit f % 64 (bit 0 = least
significant). Rows are vectors; a plane of F fields takes ceil(F / 64) words,
padded with zero bits, so products over padded words count nothing.
"""

import numpy as np

WORD_BITS = 64
WORD_DTYPE = np.dtype("<u8")


def n_words(n_fields: int) -> int:
    return -(-int(n_fields) // WORD_BITS)


def pack_bits(bits: np.ndarray, words: int | None = None) -> np.ndarray:
    """Pack a boolean (rows, fields) array into uint64 words (rows, words)."""
    bits = np.asarray(bits, dtype=bool)
    rows, fields = bits.shape
    words = n_words(fields) if words is None else words
    out = np.zeros((rows, words * 8), dtype=np.uint8)
    packed = np.packbits(bits, axis=1, bitorder="little")
    out[:, : packed.shape[1]] = packed
    return out.view(WORD_DTYPE)


def unpack_bits(words: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Unpack uint64 words (rows, words) into a 0/1 array (rows, words * 64)."""
    words = np.ascontiguousarray(words, dtype=WORD_DTYPE)
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
    return bits.astype(dtype, copy=False)


def popcount_rows(words: np.ndarray) -> np.ndarray:
    """Number of set bits in each row of a uint64 (rows, words) array."""
    return np.bitwise_count(words).sum(axis=1, dtype=np.int64)
