"""Bit packing: 64 fields per little-endian uint64 word.

Layout: field f of a row lives in word f // 64, bit f % 64 (bit 0 = least
significant). Rows are vectors; a plane of F fields takes ceil(F / 64) words,
padded with zero bits, so products over padded words count nothing.
"""

import numpy as np

WORD_BITS = 64
WORD_DTYPE = np.dtype("<u8")


def n_words(n_fields: int) -> int:
    """Words of one packed plane of `n_fields` fields.

    Parameters
    ----------
    n_fields : int
        Fields (bits) of the plane, >= 0.

    Returns
    -------
    int
        ceil(n_fields / 64).

    Examples
    --------
    >>> n_words(0), n_words(64), n_words(65)
    (0, 1, 2)
    """
    return -(-int(n_fields) // WORD_BITS)


def pack_bits(bits: np.ndarray, words: int | None = None) -> np.ndarray:
    """Pack a boolean array into little-endian uint64 words, 64 fields a word.

    Parameters
    ----------
    bits : array_like of bool, shape (rows, fields)
        One plane of each row.
    words : int, optional
        Words per row in the result (default ``n_words(fields)``); at least that many, the
        rest zero.

    Returns
    -------
    numpy.ndarray of uint64, shape (rows, words)
        Field f of a row in word f // 64, bit f % 64; padding bits are 0.

    Examples
    --------
    >>> pack_bits(np.array([[1, 0, 1], [0, 0, 1]], dtype=bool)).tolist()
    [[5], [4]]
    >>> pack_bits(np.ones((1, 65), dtype=bool)).tolist() == [[2**64 - 1, 1]]
    True
    """
    bits = np.asarray(bits, dtype=bool)
    rows, fields = bits.shape
    words = n_words(fields) if words is None else words
    out = np.zeros((rows, words * 8), dtype=np.uint8)
    packed = np.packbits(bits, axis=1, bitorder="little")
    out[:, : packed.shape[1]] = packed
    return out.view(WORD_DTYPE)


def unpack_bits(words: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Unpack uint64 words into one 0/1 value per bit (the inverse of `pack_bits`).

    Parameters
    ----------
    words : array_like of uint64, shape (rows, words)
        Packed planes.
    dtype : numpy dtype, optional
        Type of the result (float32: the operand of the BLAS backend).

    Returns
    -------
    numpy.ndarray, shape (rows, words * 64)
        Bit f of a row at column f, padding included.

    Examples
    --------
    >>> unpack_bits(np.array([[5]], dtype=np.uint64), dtype=np.int8)[0, :4].tolist()
    [1, 0, 1, 0]
    """
    words = np.ascontiguousarray(words, dtype=WORD_DTYPE)
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
    return bits.astype(dtype, copy=False)


def popcount_rows(words: np.ndarray) -> np.ndarray:
    """Set bits of each row: a product with an all-ones plane (a row sum).

    Parameters
    ----------
    words : numpy.ndarray of uint64, shape (rows, words)
        Packed planes (or a word range of them).

    Returns
    -------
    numpy.ndarray of int64, shape (rows,)
        Number of set bits per row.

    Examples
    --------
    >>> popcount_rows(np.array([[5, 1], [4, 0]], dtype=np.uint64)).tolist()
    [3, 1]
    """
    return np.bitwise_count(words).sum(axis=1, dtype=np.int64)
