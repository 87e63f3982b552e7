"""A PLINK 1 .bed's layout and the word operations its numpy readers (bed.py) share.

A variant-major .bed (magic 0x6c 0x1b 0x01) holds, after its 3 magic bytes, one record of
ceil(samples / 4) bytes per variant; sample s of a record sits in byte s // 4, bits
2 (s % 4) and 2 (s % 4) + 1 (low bit `lo`, high bit `hi`), padding bits past the last sample
unused. A1 (the .bim's 5th column, genotile's ALT) is counted:

    hi lo   00: A1/A1 (2)   01: missing   10: A1/A2 (1)   11: A2/A2 (0)

so the genotype planes (core/genotype.py) are bitwise functions of the two bits of each call:
L = not lo, H = not (lo or hi), V = not (lo and not hi), Het = hi and not lo, Hom0 = lo and hi.

The readers take slabs of samples (up to QUADS record bytes, about SLAB_BYTES of output), a slab
on one of the threads; a slab's .bed bytes a block of about BLOCK_BYTES at a time, transposed
(numpy's copy of the transposed view: a block's source fits in cache) into `quads` (record bytes
x variants): row q holds samples 4q .. 4q + 3 of each variant. From there every step is a
whole-array bitwise operation on uint64 words (numpy releases the GIL in them), no table
lookups, into buffers each thread reuses (`Scratch`): a block's codes (`decode_codes`), which
values each variant has (`call_flags`), its lo and hi bits packed 8 variants a byte (`pack_block`).
"""

import os

import numpy as np

from genotile.errors import GenotileError

MAGIC = b"\x6c\x1b\x01"
QUADS = 256  # record bytes (4 samples each) of a slab at most
SLAB_BYTES = 1 << 24  # output bytes of a slab of samples (codes, or planes)
BLOCK_BYTES = 1 << 18  # .bed bytes of a block (a transposed copy of it stays in cache)
WORD = 64  # variants of a plane word: blocks of planes start on a word
LOW64 = np.uint64(0x5555555555555555)  # the low bit of every call (2-bit field) of 8 bytes
FIELD64 = np.uint64(0x0303030303030303)  # the lowest field of each of 8 bytes
PLANE_NAMES = ("L", "H", "V", "Het", "Hom0")  # the `genotype` store's planes, in order


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


def largest_block(slabs: list[tuple[int, int]], n_variants: int) -> int:
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


def thread_shares(todo: list, threads: int) -> list[list]:
    """The slabs of each thread: every `threads`-th, so each thread's buffers are made once."""
    threads = max(1, min(threads, len(todo)))
    return [todo[k::threads] for k in range(threads)]


def flag_counts(parts: list[tuple[np.ndarray, int]], n_variants: int) -> dict:
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


def valid_bits(n_variants: int) -> np.ndarray:
    """uint64 (ceil(variants / 64),): the bits of each word that are variants."""
    valid = np.full(-(-n_variants // WORD), ~np.uint64(0))
    if n_variants % WORD:
        valid[-1] = np.uint64((1 << (n_variants % WORD)) - 1)
    return valid


def word_counts(parts: list[tuple[np.ndarray, int]], n_variants: int) -> dict:
    """The counts of `_flag_counts` from each thread's (uint64 (3, words) any 0 / 1 / 2 bits,
    missing calls)."""
    words = np.bitwise_or.reduce(np.stack([a for a, _ in parts]), axis=0)
    flags = np.unpackbits(words.view(np.uint8), axis=1, count=n_variants, bitorder="little")
    return flag_counts([(flags, sum(missing for _, missing in parts))], n_variants)


def records_to_bits(words, n_records, g_first, g_stop, stop_sample, rows, out, first_word, flags) -> int:
    """bed_kernels.records_to_bits in numpy: the same rows of bits, flags and missing calls (the
    store job's pass over a .bed too small to repay numba's start-up, bed.COMPILED_BYTES).

    A run of RECORD_RUN record bytes at a time: transposed (numpy's copy), each sample's fields
    shifted down (4 a byte), then its lo and hi bits packed 8 variants a byte (np.packbits) and
    counted as words."""
    n_words = -(-n_records // WORD)
    records = words.view(np.uint8)
    shifts = (2 * np.arange(4, dtype=np.uint8))[None, :, None]
    first = 32 * g_first
    stop = min(stop_sample, 32 * g_stop)
    cut = slice(first_word, first_word + n_words)
    missing = 0
    for b0 in range(first // 4, -(-stop // 4), RECORD_RUN):
        b1 = min(-(-stop // 4), b0 + RECORD_RUN)
        quads = np.zeros((b1 - b0, WORD * n_words), dtype=np.uint8)
        quads[:, :n_records] = records[:n_records, b0:b1].T
        k = min(stop, 4 * b1) - 4 * b0  # the samples of these bytes (not the padding)
        fields = (quads[:, None, :] >> shifts).reshape(-1, WORD * n_words)[:k]
        lo = np.packbits(fields & 1, axis=1, bitorder="little").view("<u8")
        hi = np.packbits((fields >> 1) & 1, axis=1, bitorder="little").view("<u8")
        both = lo & hi
        flags[0, cut] |= np.bitwise_or.reduce(both, axis=0)  # 11: 0
        flags[1, cut] |= np.bitwise_or.reduce(hi ^ both, axis=0)  # 10: 1
        flags[2, cut] |= np.bitwise_or.reduce(~(lo | hi), axis=0)  # 00: 2
        missing += int(np.bitwise_count(lo ^ both).sum(dtype=np.int64))  # 01: missing
        row = rows[4 * b0 - first : 4 * b0 - first + k]
        kept = row >= 0
        out[row[kept], 0, cut] = lo[kept]
        out[row[kept], 1, cut] = hi[kept]
    return missing


RECORD_RUN = 256  # record bytes (1,024 samples) transposed at a time by the numpy records_to_bits


# the .bed field of each pgenlib allele count, read as uint8: 0 -> 11, 1 -> 10, 2 -> 00, -9 -> 01
COUNT_FIELD = np.zeros(256, dtype=np.uint8)
COUNT_FIELD[[0, 1, 2, 247]] = [3, 2, 0, 1]


def counts_to_records(counts: np.ndarray, n_records: int, out: np.ndarray, span: int, columns: np.ndarray) -> None:
    """pgenlib's int8 allele counts of whole records as .bed records, numpy: bed_kernels.counts_to_records.

    counts: uint8 (at least n_records, samples); out: uint8, flat, record k's bytes from
    out[k * span] (ceil(samples / 4) of them, the padding fields 0); columns: int64, sample j is
    column columns[j] of `counts` (empty: column j).
    """
    n = counts.shape[1]
    width = record_bytes(n)
    fields = np.zeros((n_records, 4 * width), dtype=np.uint8)
    given = counts[:n_records] if not columns.size else counts[:n_records][:, columns]
    np.take(COUNT_FIELD, given, out=fields[:, :n])
    quads = fields.reshape(n_records, width, 4)
    rows = out[: n_records * span].reshape(n_records, span)
    rows[:, :width] = quads[:, :, 0] | (quads[:, :, 1] << 2) | (quads[:, :, 2] << 4) | (quads[:, :, 3] << 6)
