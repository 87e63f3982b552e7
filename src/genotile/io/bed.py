"""A plain PLINK 1 .bed read with numpy: its 2-bit calls straight to codes or to bit planes.

A variant-major .bed (magic 0x6c 0x1b 0x01) holds, after its 3 magic bytes, one record of
ceil(samples / 4) bytes per variant; sample s of a record sits in byte s // 4, bits
2 (s % 4) and 2 (s % 4) + 1 (low bit `lo`, high bit `hi`), padding bits past the last sample
unused. A1 (the .bim's 5th column, genotile's ALT) is counted:

    hi lo   00: A1/A1 (2)   01: missing   10: A1/A2 (1)   11: A2/A2 (0)

so the genotype planes (core/genotype.py) are bitwise functions of the two bits of each call:
L = not lo, H = not (lo or hi), V = not (lo and not hi), Het = hi and not lo, Hom0 = lo and hi.

The codes and planes writers take slabs of samples (up to QUADS record bytes, about SLAB_BYTES
of output), a slab on one of the threads; a slab's .bed bytes a block of about BLOCK_BYTES at a
time (`read_bits` instead gives each thread blocks of whole records, READ_BYTES read at a time
and RUN_BYTES of them transposed at a time), transposed (numpy's copy of the transposed view:
a block's source fits in cache) into `quads` (record bytes x variants): row q holds samples
4q .. 4q + 3 of each variant. From there every step is a whole-array bitwise operation on uint64
words (numpy releases the GIL in them), no table lookups, into buffers each thread reuses
(`Scratch`):

- codes (`write_sample_rows`, the `genotype` store's samples x variants matrix, MISSING for a
  missing call): per sample k of a quad, code = f - 1 (mod 256) where f is the 2-bit field
  (not lo) << 1 | not (lo xor hi) (2 -> 2, missing -> 255, 1 -> 1, 0 -> 0);
- planes (`pack_planes`): lo and hi of each sample packed 64 variants a word (np.packbits of
  the quad bytes masked to one bit), then the five planes as word operations on them;
- bits (`read_bits`, for the store job: store/ingest_bed.py): lo and hi of each sample packed as
  for the planes, straight into rows of an array held in memory, uint64 (samples, 2, words):
  [s, 0] the lo bits of sample s, [s, 1] its hi bits, variant v at bit v % 64 of word v // 64,
  bits past the last variant 0; with the ingest counts. `write_bits` writes its rows in the
  store's row order, and `BitsPlanes` makes the planes of the rows read from that file (word
  operations, 7 a word).

These are used where PlinkReader reads a whole fileset as it is (no `samples`, no `regions`:
`plain`); pgenlib reads the rest, with the same results (tests/io/test_bed.py).
"""

import mmap
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from genotile.errors import GenotileError
from genotile.io import npy_rows

MAGIC = b"\x6c\x1b\x01"
QUADS = 256  # record bytes (4 samples each) of a slab at most
SLAB_BYTES = 1 << 24  # output bytes of a slab of samples (codes, or planes)
BLOCK_BYTES = 1 << 18  # .bed bytes of a block (a transposed copy of it stays in cache)
WORD = 64  # variants of a plane word: blocks of planes start on a word
LOW64 = np.uint64(0x5555555555555555)  # the low bit of every call (2-bit field) of 8 bytes
FIELD64 = np.uint64(0x0303030303030303)  # the lowest field of each of 8 bytes


def record_bytes(n_samples: int) -> int:
    """Bytes of one variant's record: ceil(samples / 4)."""
    return -(-int(n_samples) // 4)


def open_bed(path, n_samples: int, n_variants: int, what: tuple[str, str] | None = None) -> np.ndarray:
    """The records of a variant-major .bed, memory-mapped: uint8 (variants, record bytes).

    Parameters
    ----------
    path : str or os.PathLike
        The .bed.
    n_samples, n_variants : int
        From the .fam and the .bim.
    what : (str, str), optional
        Names of the .bim and the .fam, for the error when the size does not match.

    Raises
    ------
    GenotileError
        Not a variant-major .bed (magic bytes), or a size other than 3 + variants x record bytes.
    """
    width = record_bytes(n_samples)
    expected = len(MAGIC) + n_variants * width
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            magic = fh.read(len(MAGIC))
    except OSError as exc:
        raise GenotileError(f"{path}: cannot read: {exc.strerror}") from None
    if magic != MAGIC:
        raise GenotileError(f"{path}: not a variant-major PLINK 1 .bed (magic bytes {magic.hex()})")
    if size != expected:
        bim, fam = what or ("the .bim", "the .fam")
        raise GenotileError(
            f"{path}: {size} bytes, but {n_variants} variants ({bim}) x {n_samples} samples ({fam}) need {expected}"
        )
    if n_variants == 0 or width == 0:
        return np.zeros((n_variants, width), dtype=np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r", offset=len(MAGIC), shape=(n_variants, width))


def slabs(n_samples: int, row_bytes: int, threads: int) -> list[tuple[int, int]]:
    """(first quad, end quad) of each slab of samples: output rows of about SLAB_BYTES, at least
    two slabs a thread where there are samples enough."""
    width = record_bytes(n_samples)
    quads = max(1, min(QUADS, SLAB_BYTES // max(1, 4 * row_bytes), -(-width // (2 * max(1, threads)))))
    return [(q0, min(width, q0 + quads)) for q0 in range(0, width, quads)]


def block_variants(n_quads: int) -> int:
    """Variants of a block of a slab of n_quads record bytes: about BLOCK_BYTES .bed bytes, a
    whole number of plane words."""
    return max(WORD, BLOCK_BYTES // max(1, n_quads) // WORD * WORD)


def variant_blocks(n_quads: int, n_variants: int) -> list[tuple[int, int]]:
    """(first, end) variant of each block of a slab of n_quads record bytes (`block_variants`)."""
    step = block_variants(n_quads)
    return [(v0, min(n_variants, v0 + step)) for v0 in range(0, n_variants, step)]


class Scratch:
    """One thread's buffers for the blocks of its slabs of samples, reused block after
    block: pages touched the first time cost the kernel more than the bitwise work on them.

    `load` fills `quads` with a block; the other buffers are uint64 words over the same bytes
    (numpy shifts uint64 several times faster than uint8)."""

    def __init__(self, most: int):
        """Buffers for blocks of up to `most` calls' bytes (record bytes x variants)."""
        n_words = -(-most // 8)
        self.raw = np.zeros(n_words * 8, dtype=np.uint8)
        self.lo, self.hi, self.f, self.part = (np.empty(n_words, dtype=np.uint64) for _ in range(4))
        self.size = self.n_words = 0
        self.shape = (0, 0)

    def load(self, bed: np.ndarray, q0: int, q1: int, v0: int, v1: int, n_samples: int) -> np.ndarray:
        """Record bytes q0:q1 of variants v0:v1 as (quads, variants), padding calls set missing (01).

        Missing padding counts in no plane and no flag, and is cut from the codes (its count
        taken off the missing calls): so the padding bits of a file (PLINK writes 0s, which
        would read A1/A1) never read as calls."""
        self.shape = (q1 - q0, v1 - v0)
        self.size = self.shape[0] * self.shape[1]
        self.n_words = -(-self.size // 8)
        self.raw[self.size : self.n_words * 8] = 0  # the last word's bytes past the block count nothing
        quads = self.raw[: self.size].reshape(self.shape)
        np.copyto(quads, bed[v0:v1, q0:q1].T)  # the block's source stays in cache: a plain copy is enough
        tail = n_samples % 4
        if tail and q1 == record_bytes(n_samples):
            last = quads[-1]
            np.bitwise_and(last, np.uint8((1 << (2 * tail)) - 1), out=last)
            np.bitwise_or(last, np.uint8((0x55 << (2 * tail)) & 0xFF), out=last)  # 01 past the last sample
        return quads

    def words(self, buf: np.ndarray | None = None) -> np.ndarray:
        """The block's words: of `quads`, or of one of the word buffers."""
        return self.raw[: self.n_words * 8].view(np.uint64) if buf is None else buf[: self.n_words]

    def as_quads(self, words: np.ndarray) -> np.ndarray:
        """Words of a buffer seen as the block's (quads, variants) bytes."""
        return words.view(np.uint8)[: self.size].reshape(self.shape)

    def lo_hi(self) -> tuple[np.ndarray, np.ndarray]:
        """The low and the high bit of every call of the block, each at the low bit of its field."""
        q, lo, hi = self.words(), self.words(self.lo), self.words(self.hi)
        np.bitwise_and(q, LOW64, out=lo)
        np.right_shift(q, np.uint64(1), out=hi)
        np.bitwise_and(hi, LOW64, out=hi)
        return lo, hi


def _most(slabs: list[tuple[int, int]], n_variants: int) -> int:
    """Bytes of the largest block of a thread's slabs of samples (`Scratch`)."""
    return max((q1 - q0) * min(n_variants, block_variants(q1 - q0)) for q0, q1 in slabs)


def decode_codes(scratch: Scratch, targets: list[np.ndarray]) -> None:
    """Codes of the samples of the loaded block: sample k of each quad into targets[k] (uint8
    (quads, variants), e.g. every 4th row of the codes matrix).

    A call's code is f - 1 (mod 256) for its 2-bit field f = (not lo) << 1 | not (lo xor hi):
    A1/A1 (00) -> 3 -> 2, A1/A2 (10) -> 2 -> 1, A2/A2 (11) -> 1 -> 0, missing (01) -> 0 -> 255."""
    lo, hi = scratch.lo_hi()
    f, part = scratch.words(scratch.f), scratch.words(scratch.part)
    np.bitwise_xor(lo, hi, out=f)
    np.left_shift(lo, np.uint64(1), out=lo)
    np.bitwise_or(f, lo, out=f)
    np.invert(f, out=f)
    for k, target in enumerate(targets):  # the field of sample k of every quad, at the bottom of its byte
        np.right_shift(f, np.uint64(2 * k), out=part)
        np.bitwise_and(part, FIELD64, out=part)
        np.subtract(scratch.as_quads(part), np.uint8(1), out=target)


def call_flags(scratch: Scratch) -> tuple[list[np.ndarray], int]:
    """Per variant of the loaded block: [any 0, any 1, any 2] (uint8, nonzero for yes); and the
    missing calls (padding included)."""
    lo, hi = scratch.lo_hi()
    hom0, het = scratch.words(scratch.f), scratch.words(scratch.part)
    np.bitwise_and(lo, hi, out=hom0)  # 11
    np.bitwise_xor(hi, hom0, out=het)  # 10
    missing = np.bitwise_xor(lo, hom0, out=lo)  # 01
    n_missing = int(np.bitwise_count(missing).sum(dtype=np.int64))  # bytes past the block are 0
    hom2 = np.bitwise_or(missing, hi, out=hi)  # 00: neither bit, in any field (01, 10, 11 have one)
    np.bitwise_or(hom2, hom0, out=hom2)
    np.bitwise_xor(hom2, LOW64, out=hom2)
    return [np.bitwise_or.reduce(scratch.as_quads(x), axis=0) for x in (hom0, het, hom2)], n_missing


def pack_block(scratch: Scratch, targets: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """The lo and hi bits of the samples of the loaded block, packed 8 variants a byte (the
    first in bit 0): sample k of each quad into targets[k] = (lo, hi), uint8 (quads, bytes of
    the block's variants) each."""
    quads = scratch.as_quads(scratch.words())
    bit = scratch.as_quads(scratch.words(scratch.f))
    for k, pair in enumerate(targets):
        for packed, mask in zip(pair, (1 << (2 * k), 2 << (2 * k)), strict=True):
            np.bitwise_and(quads, np.uint8(mask), out=bit)
            packed[...] = np.packbits(bit, axis=1, bitorder="little")


def _shares(todo: list, threads: int) -> list[list]:
    """The slabs of each thread: every `threads`-th, so each thread's buffers are made once."""
    threads = max(1, min(threads, len(todo)))
    return [todo[k::threads] for k in range(threads)]


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
            scratch = Scratch(_most(mine, n_variants))
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

        shares = _shares(todo, threads)
        with ThreadPoolExecutor(len(shares), thread_name_prefix="genotile-bed") as pool:
            parts = list(pool.map(share, shares))
    return _flag_counts(parts, n_variants)


PLANE_NAMES = ("L", "H", "V", "Het", "Hom0")
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
            scratch = Scratch(_most(mine, n_variants))
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

        shares = _shares(todo, threads)
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
        return bits[:n_samples], _counts([(np.zeros((3, n_words), dtype=np.uint64), 0)], n_variants)
    shares = _shares(list(range(0, n_variants, step)), threads)
    count_rows = max(COUNT_ROWS, -(-n_samples // max(1, len(shares))))
    with ThreadPoolExecutor(len(shares), thread_name_prefix="genotile-bed") as pool:
        list(pool.map(share, shares))
        parts = list(pool.map(count, range(0, n_samples, count_rows)))
    return bits[:n_samples], _counts(parts, n_variants)


def _flag_counts(parts: list[tuple[np.ndarray, int]], n_variants: int) -> dict:
    """The VCF reader's counts from each thread's (uint8 (3, variants) any 0 / 1 / 2 flags,
    missing calls)."""
    flags = parts[0][0]
    for any_of, _ in parts[1:]:
        np.bitwise_or(flags, any_of, out=flags)
    hom0, het, hom2 = flags != 0
    return {
        "variants": n_variants,
        "missing_calls": sum(missing for _, missing in parts),
        "monomorphic": int(np.count_nonzero(~((hom0 | het) & (het | hom2)))),
        "all_missing": int(np.count_nonzero(~(hom0 | het | hom2))),
    }


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


def valid_bits(n_variants: int) -> np.ndarray:
    """uint64 (ceil(variants / 64),): the bits of each word that are variants."""
    valid = np.full(-(-n_variants // WORD), ~np.uint64(0))
    if n_variants % WORD:
        valid[-1] = np.uint64((1 << (n_variants % WORD)) - 1)
    return valid


def _counts(parts: list[tuple[np.ndarray, int]], n_variants: int) -> dict:
    """The counts of `_flag_counts` from each thread's (uint64 (3, words) any 0 / 1 / 2 bits,
    missing calls)."""
    words = np.bitwise_or.reduce(np.stack([a for a, _ in parts]), axis=0)
    flags = np.unpackbits(words.view(np.uint8), axis=1, count=n_variants, bitorder="little")
    return _flag_counts([(flags, sum(missing for _, missing in parts))], n_variants)


BITS_CHUNK_BYTES = 1 << 21  # bits rows gathered (then written, one pwrite) at a time


def write_bits(bits: np.ndarray, rows_of: np.ndarray, out_path, threads: int = 2) -> None:
    """Write held bits (`read_bits`) in the store's row order as an .npy: row r holds sample
    rows_of[r], its lo words then its hi words. The store's planes are made from them as they are
    read (`BitsPlanes`): 2 bits a call on disk, the .bed's size, where the five planes take 5.

    Chunks of output rows go to `threads` threads, each gathering its samples' bits and writing
    the chunk with one pwrite: the file is written in order, in large pieces.

    Parameters
    ----------
    bits : numpy.ndarray
        uint64 (samples, 2, words), `read_bits` (bits past the last variant 0).
    rows_of : numpy.ndarray of int
        The sample of each row (a permutation of the samples, or of distinct ones).
    out_path : str or os.PathLike
        The .npy to write: uint64 (rows_of.size, 2 * words).
    threads : int
        Threads taking the chunks.
    """
    n_words = bits.shape[2]
    row_bytes = 2 * n_words * 8
    step = max(1, BITS_CHUNK_BYTES // max(1, row_bytes))
    starts = list(range(0, int(rows_of.size), step))
    with open(out_path, "wb") as fh:
        start = npy_rows.write_header(fh, (int(rows_of.size), 2 * n_words), np.dtype("<u8"))
        fd = fh.fileno()

        def share(first: int) -> None:
            held = np.empty((step, 2, n_words), dtype=np.uint64)
            for r0 in starts[first::threads]:
                rows = rows_of[r0 : r0 + step]
                got = held[: rows.size]
                np.take(bits, rows, axis=0, out=got)
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
    bits : numpy.ndarray
        uint64 (rows, 2 * words): each row's lo words then its hi words (a memory map).
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
        self.words = bits.shape[1] // 2
        self.valid = valid_bits(n_variants)
        self.shape = (bits.shape[0], len(PLANE_NAMES) * self.words)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        if isinstance(rows, tuple):  # planes[rows, words] would index the bits' words
            raise TypeError("BitsPlanes is indexed by rows only: take the rows, then their words")
        if isinstance(rows, (int, np.integer)):
            return self[int(rows) : int(rows) + 1][0] if rows >= 0 else self[len(self) + int(rows)]
        held = np.asarray(self.bits[rows]).reshape(-1, 2, self.words)
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
