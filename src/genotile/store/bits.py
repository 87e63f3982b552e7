"""A store of a whole .bed's calls as bits: written in the store's row order (`write_bits`),
read back as the five genotype planes of the rows a tile reads (`BitsPlanes`).

The store job writes a plain .bed's calls as bits, 2 a call (the .bed's size), where the five
planes would take 5: uint64 (2, words) a row, a sample's lo bits then its hi bits, 64 variants a
word; straight from the .bed in one pass (io/readers/bed.py `write_streamed`), or, where
identical samples were collapsed, from the bits held in sample order (`read_held`) by
`write_bits`. The store manifest says so (`stored`: STORED_BITS), and store/pack.open_store
then gives a BitsPlanes in place of the planes.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from genotile.io import npy_rows
from genotile.io.readers.bed_words import PLANE_NAMES, valid_bits

# what planes.npy holds where not the planes: a .bed's calls as bits, 2 a call (`write_bits`),
# the planes made from them as they are read (store/pack.open_store)
STORED_BITS = "bed_bits"

BITS_CHUNK_BYTES = 1 << 21  # bits rows gathered (then written, one pwrite) at a time


def write_bits(bits, rows_of: np.ndarray, out_path, threads: int = 2) -> None:
    """Write bits in sample order in the store's row order as an .npy: row r holds sample
    rows_of[r], its lo words then its hi words. The store's planes are made from them as they are
    read (`BitsPlanes`): 2 bits a call on disk, the .bed's size, where the five planes take 5.

    Chunks of output rows go to `threads` threads, each gathering its samples' bits and writing
    the chunk with one pwrite: the file is written in order, in large pieces.

    Parameters
    ----------
    bits : numpy.ndarray or io.readers.bed.HeldBits
        uint64 (samples, 2, words) (bits past the last variant 0), or the bits a .bed's pass held
        (`take_rows`: in memory, or spilled to a file).
    rows_of : numpy.ndarray of int
        The sample of each row (a permutation of the samples, or of distinct ones).
    out_path : str or os.PathLike
        The .npy to write: uint64 (rows_of.size, 2 * words).
    threads : int
        Threads taking the chunks.
    """
    if isinstance(bits, np.ndarray):
        n_words = bits.shape[2]
        take = lambda rows, out: np.take(bits, rows, axis=0, out=out[: rows.size])  # noqa: E731
    else:
        n_words, take = bits.n_words, bits.take_rows
    row_bytes = 2 * n_words * 8
    step = max(1, BITS_CHUNK_BYTES // max(1, row_bytes))
    starts = list(range(0, int(rows_of.size), step))
    with open(out_path, "wb") as fh:
        start = npy_rows.write_header(fh, (int(rows_of.size), 2 * n_words), np.dtype("<u8"))
        fd = fh.fileno()

        def share(first: int) -> None:
            held = np.empty((step, 2, n_words), dtype=np.uint64)
            for r0 in starts[first::threads]:
                got = take(rows_of[r0 : r0 + step], held)
                npy_rows.pwrite_rows(fd, got, start + r0 * row_bytes, out_path)

        threads = max(1, min(threads, len(starts)))
        with ThreadPoolExecutor(threads, thread_name_prefix="genotile-bits") as pool:
            list(pool.map(share, range(threads)))


class BitsPlanes:
    """The `genotype` store's planes (L H V Het Hom0) of a file of bits (`write_bits`), made as
    rows are read: indexed like the planes array it stands for, uint64 (rows, 5 * words).

    A tile reads two blocks of rows once; making their planes (7 word operations a row,
    `held_planes`) costs less than reading the 2.5 times larger planes would.

    Parameters
    ----------
    bits : numpy.ndarray or cupy.ndarray
        uint64 (rows, 2 * words): each row's lo words then its hi words (a memory map, or the
        rows the store job holds on its GPU: store/resident.py).
    n_variants : int
        Variants of the .bed (the bits past the last are 0).

    Examples
    --------
    >>> bits = np.array([[0b0101, 0b0011]], dtype=np.uint64)  # variants 0-3 (hi lo): 11 10 01 00
    >>> planes = BitsPlanes(bits, 4)
    >>> planes.shape, [bin(int(w)) for w in planes[0]]  # L H V Het Hom0
    ((1, 5), ['0b1010', '0b1000', '0b1011', '0b10', '0b1'])
    """

    dtype = np.dtype(np.uint64)
    ndim = 2

    def __init__(self, bits: np.ndarray, n_variants: int):
        self.bits = bits
        self.n_variants = n_variants
        self.words = bits.shape[1] // 2
        self.valid = valid_bits(n_variants)
        self.shape = (bits.shape[0], len(PLANE_NAMES) * self.words)

    def block(self, rows: slice) -> "BitsPlanes":
        """The planes of a block of rows, made only when read: a tile's block as its GPU path
        copies it (backends/cuda/transfers.py reads `.bits` and makes the planes on the device)."""
        return BitsPlanes(self.bits[rows], self.n_variants)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        if isinstance(rows, tuple):  # planes[rows, words] would index the bits' words
            raise TypeError("BitsPlanes is indexed by rows only: take the rows, then their words")
        if isinstance(rows, (int, np.integer)):
            return self[int(rows) : int(rows) + 1][0] if rows >= 0 else self[len(self) + int(rows)]
        got = self.bits[rows]
        held = np.asarray(got.get() if hasattr(got, "get") else got).reshape(-1, 2, self.words)  # (device rows: copied)
        out = np.empty((held.shape[0], len(PLANE_NAMES), self.words), dtype=np.uint64)
        held_planes(held[:, 0], held[:, 1], self.valid, [out[:, p] for p in range(len(PLANE_NAMES))])
        return out.reshape(held.shape[0], self.shape[1])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)


def held_planes(lo: np.ndarray, hi: np.ndarray, valid: np.ndarray, out: list[np.ndarray]) -> None:
    """L H V Het Hom0 (into out) of packed lo and hi bits (words) that are 0 past the last
    variant, as `_planes` makes them, in 7 word operations: a set of bits within `valid` is
    complemented within it by XOR with `valid`."""
    el, h, v, het, hom0 = out
    np.bitwise_xor(lo, valid, out=el)  # L: 1 or 2 (hi lo 00, 10): not lo
    np.bitwise_or(lo, hi, out=h)  # H: 2 (00): neither
    np.bitwise_xor(h, valid, out=h)
    np.bitwise_and(lo, hi, out=hom0)  # Hom0: 11
    np.bitwise_xor(hi, hom0, out=het)  # Het: 10, hi without lo
    np.bitwise_xor(lo, hom0, out=v)  # missing: 01, lo without hi
    np.bitwise_xor(v, valid, out=v)  # V: not missing
