"""A PLINK 1 .bed: `BedReader`, and the numpy readers of a whole .bed's 2-bit calls, straight to
codes, to bit planes or to bits held in memory (the layout and word operations: bed_words.py).

- codes (`write_sample_rows`, the `genotype` store's samples x variants matrix, MISSING for a
  missing call): per sample k of a quad, code = f - 1 (mod 256) where f is the 2-bit field
  (not lo) << 1 | not (lo xor hi) (2 -> 2, missing -> 255, 1 -> 1, 0 -> 0);
- planes (`pack_planes`): lo and hi of each sample packed 64 variants a word (np.packbits of
  the quad bytes masked to one bit), then the five planes as word operations on them;
- bits (`read_bits`, the store job's form of a whole .bed, `BedReader.held_bits`): lo and hi of
  each sample packed as for the planes, straight into rows of an array held in memory, uint64
  (samples, 2, words): [s, 0] the lo bits of sample s, [s, 1] its hi bits, variant v at bit
  v % 64 of word v // 64, bits past the last variant 0; with the ingest counts. Blocks of whole
  records go to the threads, READ_BYTES read at a time and RUN_BYTES of them transposed at a
  time. store/bits.py writes them in the store's row order and makes the planes of the rows
  read from that file.

These are used where BedReader reads a whole fileset as it is (no `samples`, no `regions`:
`plain`); pgenlib (plink.PlinkReader) reads the rest, with the same results (tests/io/test_bed.py).
"""

import mmap
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from genotile.errors import GenotileError
from genotile.io import npy_rows
from genotile.io.readers.bed_words import (
    MAGIC,
    PLANE_NAMES,
    WORD,
    Scratch,
    call_flags,
    decode_codes,
    flag_counts,
    largest_block,
    open_bed,
    pack_block,
    record_bytes,
    slabs,
    thread_shares,
    valid_bits,
    variant_blocks,
    word_counts,
)
from genotile.io.readers.plink import PlinkReader

HOLD_BYTES = 1 << 30  # .bed bytes held as bits in memory at most (`held_bits`; then the codes)


def write_sample_rows(path, n_samples: int, n_variants: int, out_path, threads: int = 2, what=None) -> dict:
    """Write the (samples, variants) codes matrix of a whole .bed as an .npy; return its counts.

    Slabs of samples go to `threads` threads; a slab's codes are made in memory (a buffer each
    thread reuses: fresh pages cost the kernel more than the decoding), a block of variants at a
    time, then written with one pwrite (its rows are contiguous in the file).

    Parameters
    ----------
    path : str or os.PathLike
        The .bed (checked by `open_bed`).
    n_samples, n_variants : int
        From the .fam and the .bim.
    out_path : str or os.PathLike
        The .npy to write: uint8 (samples, variants), 0 / 1 / 2 ALT (A1) alleles, 255 missing.
    threads : int
        Threads taking the slabs.
    what : (str, str), optional
        Names of the .bim and the .fam, for errors.

    Returns
    -------
    dict
        The VCF reader's counts: variants, missing_calls, monomorphic, all_missing.
    """
    bed = open_bed(path, n_samples, n_variants, what)
    todo = slabs(n_samples, n_variants, threads)
    with open(out_path, "wb") as fh:
        start = npy_rows.write_header(fh, (n_samples, n_variants), np.uint8)
        fd = fh.fileno()

        def share(mine: list[tuple[int, int]]) -> tuple[np.ndarray, int]:
            most = max(q1 - q0 for q0, q1 in mine)
            codes = np.empty((4 * most, n_variants), dtype=np.uint8)
            scratch = Scratch(largest_block(mine, n_variants))
            any_of = np.zeros((3, n_variants), dtype=np.uint8)  # any 0, any 1, any 2 of each variant
            missing = 0
            for q0, q1 in mine:
                s0, s1 = 4 * q0, min(n_samples, 4 * q1)
                for v0, v1 in variant_blocks(q1 - q0, n_variants):
                    scratch.load(bed, q0, q1, v0, v1, n_samples)
                    decode_codes(scratch, [codes[k : 4 * (q1 - q0) : 4, v0:v1] for k in range(4)])
                    block_any, block_missing = call_flags(scratch)
                    for k in range(3):
                        np.bitwise_or(any_of[k, v0:v1], block_any[k], out=any_of[k, v0:v1])
                    missing += block_missing - (4 * q1 - s1) * (v1 - v0)  # padding reads missing
                npy_rows.pwrite_rows(fd, codes[: s1 - s0], start + s0 * n_variants, out_path)
            return any_of, missing

        shares = thread_shares(todo, threads)
        with ThreadPoolExecutor(len(shares), thread_name_prefix="genotile-bed") as pool:
            parts = list(pool.map(share, shares))
    return flag_counts(parts, n_variants)


PLANE_ROWS = 16  # samples whose planes are made at a time (then written, a pwrite each)


def pack_planes(path, n_samples: int, n_variants: int, rows_of: np.ndarray, out_path, threads: int = 2) -> bool:
    """Write the `genotype` store's planes (L H V Het Hom0) of a whole .bed as an .npy: row r
    holds sample rows_of[r]; return `complete` (no missing call in the file).

    Slabs of samples go to `threads` threads; a slab's lo and hi bits are packed a block of
    variants at a time, its planes made as word operations (in buffers each thread reuses), and
    each of its rows written with one pwrite at its row of the output.

    Parameters
    ----------
    path : str or os.PathLike
        The .bed.
    n_samples, n_variants : int
        From the .fam and the .bim.
    rows_of : numpy.ndarray of int
        The sample of each planes row (a permutation of the samples, or of distinct ones).
    out_path : str or os.PathLike
        The .npy to write: uint64 (rows_of.size, 5 * ceil(variants / 64)), planes one after
        another in each row, padding bits 0 (core/genotype.py's layout).
    threads : int
        Threads taking the slabs.
    """
    bed = open_bed(path, n_samples, n_variants)
    n_words = -(-n_variants // WORD)
    row_bytes = len(PLANE_NAMES) * n_words * 8
    row = np.full(n_samples, -1, dtype=np.int64)  # the planes row of each sample (-1: none)
    row[rows_of] = np.arange(rows_of.size)
    valid = valid_bits(n_variants)
    todo = slabs(n_samples, row_bytes, threads)
    with open(out_path, "wb") as fh:
        start = npy_rows.write_header(fh, (int(rows_of.size), len(PLANE_NAMES) * n_words), np.dtype("<u8"))
        fd = fh.fileno()

        def share(mine: list[tuple[int, int]]) -> bool:
            most = max(q1 - q0 for q0, q1 in mine)
            lo = np.zeros((most, 4, n_words * 8), dtype=np.uint8)  # the bits of each sample, packed
            hi = np.zeros_like(lo)
            planes = np.empty((PLANE_ROWS, len(PLANE_NAMES), n_words), dtype=np.uint64)  # a few rows at a time
            scratch = Scratch(largest_block(mine, n_variants))
            complete = True
            for q0, q1 in mine:
                s0, s1 = 4 * q0, min(n_samples, 4 * q1)
                for v0, v1 in variant_blocks(q1 - q0, n_variants):
                    scratch.load(bed, q0, q1, v0, v1, n_samples)
                    b0, b1 = v0 // 8, -(-v1 // 8)
                    pack_block(scratch, [(lo[: q1 - q0, k, b0:b1], hi[: q1 - q0, k, b0:b1]) for k in range(4)])
                lo64 = lo.reshape(-1, n_words * 8).view(np.uint64)
                hi64 = hi.reshape(-1, n_words * 8).view(np.uint64)
                for r0 in range(s0, s1, PLANE_ROWS):
                    r1 = min(s1, r0 + PLANE_ROWS)
                    out = planes[: r1 - r0]
                    pick = slice(r0 - s0, r1 - s0)
                    complete &= not _planes(lo64[pick], hi64[pick], valid, [out[:, p] for p in range(len(PLANE_NAMES))])
                    for s in np.flatnonzero(row[r0:r1] >= 0).tolist():
                        npy_rows.pwrite_rows(fd, out[s], start + int(row[r0 + s]) * row_bytes, out_path)
            return complete

        shares = thread_shares(todo, threads)
        with ThreadPoolExecutor(len(shares), thread_name_prefix="genotile-bed") as pool:
            return all(list(pool.map(share, shares)))


def _planes(lo: np.ndarray, hi: np.ndarray, valid: np.ndarray, out: list[np.ndarray]) -> bool:
    """L H V Het Hom0 (into out) of packed lo and hi bits (words); True where a call is missing.

    `valid` clears the bits past the last variant, where lo = hi = 0 would read A1/A1."""
    el, h, v, het, hom0 = out
    np.invert(lo, out=el)  # L: 1 or 2 (hi lo 00, 10)
    np.bitwise_and(el, valid, out=el)
    np.bitwise_or(lo, hi, out=h)  # H: 2 (00)
    np.invert(h, out=h)
    np.bitwise_and(h, valid, out=h)
    np.invert(hi, out=v)  # V: not missing (not 01)
    np.bitwise_and(v, lo, out=v)
    missing = bool(v.any())
    np.invert(v, out=v)
    np.bitwise_and(v, valid, out=v)
    np.invert(lo, out=het)  # Het: 10
    np.bitwise_and(het, hi, out=het)
    np.bitwise_and(lo, hi, out=hom0)  # Hom0: 11
    return missing


READ_BYTES = 1 << 22  # .bed bytes a thread reads (one pread) at a time: whole records, in file order
# .bed bytes of a read transposed and packed at a time: as fast a byte as BLOCK_BYTES' on one thread
# (the transposed copy's source is then in the read buffer), in 4x fewer numpy calls for the GIL
RUN_BYTES = 1 << 20


def read_bits(path, n_samples: int, n_variants: int, threads: int = 2, what=None) -> tuple[np.ndarray, dict]:
    """The lo and hi bits of every call of a whole .bed, sample-major, held in memory; and the
    VCF reader's counts of its calls.

    Blocks of whole records (about READ_BYTES, a whole number of plane words of variants) go to
    `threads` threads. Each reads its block with pread into a buffer it reuses (the file in
    order, in large pieces: no page faults on a map of it, which threads take in turn), then
    transposes and packs it a run of record bytes at a time straight into the samples' rows
    (`pack_block`). Then the threads count the calls of runs of samples' rows (`bit_counts`:
    word operations on the packed bits cost less than on the records' bytes).

    Parameters
    ----------
    path : str or os.PathLike
        The .bed (checked by `open_bed`).
    n_samples, n_variants : int
        From the .fam and the .bim.
    threads : int
        Threads taking the blocks.
    what : (str, str), optional
        Names of the .bim and the .fam, for errors.

    Returns
    -------
    bits : numpy.ndarray
        uint64 (samples, 2, ceil(variants / 64)): [s, 0] the lo bits of sample s, [s, 1] its hi
        bits, variant v at bit v % 64 of word v // 64; bits past the last variant 0. Two rows
        are equal exactly where the two samples' calls are.
    counts : dict
        variants, missing_calls, monomorphic, all_missing (as `write_sample_rows`).
    """
    open_bed(path, n_samples, n_variants, what)  # magic and size
    n_words = -(-n_variants // WORD)
    width = record_bytes(n_samples)
    # rows of the padding samples of the last quad too: every quad's 4 rows are there to pack into
    bits = zeros_populated((4 * width, 2, n_words))
    packed = bits.view(np.uint8)  # (rows, 2, bytes): 8 variants a byte
    step = max(WORD, READ_BYTES // max(1, width) // WORD * WORD)  # variants a read
    quads = max(1, RUN_BYTES // step)  # record bytes transposed at a time
    runs = [(q0, min(width, q0 + quads)) for q0 in range(0, width, quads)]

    def share(starts: list[int]) -> None:
        buffer = np.empty(step * width, dtype=np.uint8)
        scratch = Scratch(quads * step)
        with open(path, "rb") as fh:
            for v0 in starts:
                v1 = min(n_variants, v0 + step)
                records = buffer[: (v1 - v0) * width].reshape(v1 - v0, width)
                try:
                    npy_rows.pread_rows(fh.fileno(), records, len(MAGIC) + v0 * width, path)
                except OSError as exc:  # shorter than open_bed found it: changed while read
                    raise GenotileError(f"{path}: cannot read its records ({exc}); was it changed?") from None
                b0, b1 = v0 // 8, -(-v1 // 8)
                for q0, q1 in runs:
                    scratch.load(records, q0, q1, 0, v1 - v0, n_samples)
                    rows = [packed[4 * q0 + k : 4 * q1 : 4, :, b0:b1] for k in range(4)]
                    pack_block(scratch, [(r[:, 0], r[:, 1]) for r in rows])

    def count(r0: int) -> tuple[np.ndarray, int]:
        any_of = np.zeros((3, n_words), dtype=np.uint64)
        return any_of, bit_counts(bits[r0 : min(n_samples, r0 + count_rows)], any_of)

    if not (n_words and width):
        return bits[:n_samples], word_counts([(np.zeros((3, n_words), dtype=np.uint64), 0)], n_variants)
    shares = thread_shares(list(range(0, n_variants, step)), threads)
    count_rows = max(COUNT_ROWS, -(-n_samples // max(1, len(shares))))
    with ThreadPoolExecutor(len(shares), thread_name_prefix="genotile-bed") as pool:
        list(pool.map(share, shares))
        parts = list(pool.map(count, range(0, n_samples, count_rows)))
    return bits[:n_samples], word_counts(parts, n_variants)


POPULATE_BYTES = 1 << 27  # arrays from this size on are mapped with their pages made at once


def zeros_populated(shape: tuple[int, ...]) -> np.ndarray:
    """A uint64 array of zeros; from POPULATE_BYTES on, anonymous memory mapped with MAP_POPULATE
    (Linux): the kernel makes its pages in one call, where a page fault each, taken by the
    threads writing them, costs several times more (250 MB: ~0.25 s against ~0.6 s here)."""
    size = int(np.prod(shape)) * 8
    populate = getattr(mmap, "MAP_POPULATE", None)
    if size < POPULATE_BYTES or populate is None:
        return np.zeros(shape, dtype=np.uint64)
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return np.frombuffer(memory, dtype=np.uint64).reshape(shape)  # the array keeps the mapping


COUNT_ROWS = 64  # sample rows counted at a time (their temporaries stay in cache)


def bit_counts(bits: np.ndarray, any_of: np.ndarray) -> int:
    """OR into any_of (uint64 (3, words)) which variants have a call 0, 1, 2 among the samples
    of `bits` (uint64 (samples, 2, words), `read_bits`); return their missing calls (01)."""
    missing = 0
    for r0 in range(0, bits.shape[0], COUNT_ROWS):
        lo, hi = bits[r0 : r0 + COUNT_ROWS, 0], bits[r0 : r0 + COUNT_ROWS, 1]
        x = np.bitwise_and(lo, hi)  # 11: 0
        any_of[0] |= np.bitwise_or.reduce(x, axis=0)
        np.invert(lo, out=x)  # 10: 1
        np.bitwise_and(x, hi, out=x)
        any_of[1] |= np.bitwise_or.reduce(x, axis=0)
        np.bitwise_or(lo, hi, out=x)  # 00: 2 (past the last variant too: `_counts` masks it)
        np.invert(x, out=x)
        any_of[2] |= np.bitwise_or.reduce(x, axis=0)
        np.invert(hi, out=x)  # 01: missing
        np.bitwise_and(x, lo, out=x)
        missing += int(np.bitwise_count(x).sum(dtype=np.int64))
    return missing


READ_THREADS = 4  # threads of read_bits at most (more were no faster on the 16-core H100 machine: the GIL)


@dataclass(frozen=True)
class HeldBits:
    """A whole .bed's calls held in memory as bits (`read_bits`): the form the store job packs a
    plain .bed from (store/pack.py), in place of a codes matrix 4x the .bed's bytes."""

    bits: np.ndarray  # uint64 (samples, 2, words): a sample's lo bits, then its hi bits


class BedReader(PlinkReader):
    """A PLINK 1 fileset named by its .bed: a selection is read by pgenlib (plink.PlinkReader);
    a whole .bed as it is (`plain`) with numpy, as codes (`write_sample_rows`) or as bits held in
    memory (`held_bits`). The same codes and counts either way (tests/io/test_bed.py)."""

    kind = "plink1"
    suffixes = (".bed",)
    numpy_bed = True  # False: a plain .bed is read by pgenlib too (tests compare the two)

    def _check_genotypes(self, n_var: int) -> dict:
        """Magic bytes and size: all that pgenlib checks of a .bed (and the numpy readers need no pgenlib)."""
        open_bed(self.path, len(self.file_samples), n_var, self._what())
        return {"raw_sample_ct": len(self.file_samples), "variant_ct": n_var}

    def _what(self) -> tuple[str, str]:
        """Names of the .bim and the .fam, for errors."""
        return (self.files[1].name, self.files[2].name)

    @property
    def plain(self) -> bool:
        """A whole .bed as it is (no `samples`, no `regions`): read with numpy, no pgenlib.

        (`filter_pass` and `multiallelic` change nothing in a .bed: no FILTER column, one ALT.)"""
        return self._subset is None and self.regions is None and self.numpy_bed

    def write_sample_rows(self, out_path, threads: int = 2) -> int | None:
        """plink.PlinkReader.write_sample_rows; a `plain` .bed decoded by numpy (slabs of samples
        on `threads` threads): the same codes and counts."""
        n_var = int(self.plan[0].size)
        if not (self.plain and n_var):
            return super().write_sample_rows(out_path, threads)
        counts = write_sample_rows(self.path, len(self.samples), n_var, out_path, threads=threads, what=self._what())
        for key, value in counts.items():
            self.stats[key] += value
        return n_var

    def held_bits(self, threads: int = READ_THREADS) -> HeldBits | None:
        """A `plain` .bed of at most HOLD_BYTES read whole into memory as bits (`read_bits`, on
        `threads` threads), its calls counted; None where it is not one."""
        if not self.plain or os.path.getsize(self.path) > HOLD_BYTES:
            return None
        n_variants = int(self.plan[0].size)
        bits, counts = read_bits(self.path, len(self.samples), n_variants, threads=threads, what=self._what())
        for key, value in counts.items():
            self.stats[key] += value
        return HeldBits(bits)
