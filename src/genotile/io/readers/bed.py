"""A PLINK 1 .bed: `BedReader`, and the readers of a whole .bed's 2-bit calls, straight to
codes, to bit planes (numpy) or to bits in the store's rows (numba: bed_kernels.py); the layout
and word operations: bed_words.py.

- codes (`write_sample_rows`, the `genotype` store's samples x variants matrix, MISSING for a
  missing call; `genotile run` keeps them to replan): per sample k of a quad, code = f - 1
  (mod 256) where f is the 2-bit field (not lo) << 1 | not (lo xor hi) (2 -> 2, missing -> 255,
  1 -> 1, 0 -> 0);
- planes (`pack_planes`, packed from the .bed where the codes were kept): lo and hi of each
  sample packed 64 variants a word (np.packbits of the quad bytes masked to one bit), then the
  five planes as word operations on them;
- bits (the store job's form of a whole .bed, `BedReader.held_bits`: a `BedFile`, not read
  yet): lo and hi of each sample packed 64 variants a word, uint64 (2, words) a sample, its lo
  bits then its hi bits, variant v at bit v % 64 of word v // 64, bits past the last variant 0
  (store/bits.py's layout, which makes the planes of the rows read). One pass over the .bed
  writes them straight into the store's row order (`write_streamed`) and counts the calls;
  where identical samples are collapsed (the plan needs their number first) the pass holds them
  in sample order instead (`read_held`: HeldBits, in memory, or spilled to a temporary file past
  the bound), and store/bits.write_bits puts them in the store's order.

The pass (`_stream`) takes the samples a slab at a time, a slab's rows held in memory (at most
STREAM_BYTES, or the store's bound: store/ingest_genotypes.stream_bytes), so its memory does not
grow with the .bed. A slab's tasks, a block of TASK_WORDS words of records (512 variants) by a
strip of at most STRIP_BYTES of their bytes, go to the threads in file order: each reads its
records with pread (whole records with one preadv), then transposes them into the rows of their
samples and counts their calls (bed_kernels.records_to_bits, compiled, no GIL). Then the slab's
rows are written: runs of consecutive rows of the store, a pwrite each (one slab: the file in
order, in pieces of WRITE_BYTES).

These are used where BedReader reads a whole fileset as it is (no `samples`, no `regions`:
`plain`); pgenlib (plink.PlinkReader) reads the rest, with the same results (tests/io/test_bed.py).
"""

import errno
import mmap
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO

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
from genotile.io.readers.bed_words import counts_to_records as numpy_counts_to_records
from genotile.io.readers.bed_words import records_to_bits as numpy_records_to_bits
from genotile.io.readers.plink import PlinkReader
from genotile.io.readers.streamed import COMPILED_BYTES, BedFile, PgenRecords, warm_kernel


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


# --- the store job's reading of a plain .bed: any size, bounded memory ---

# bytes of rows of bits held at a time at most (a pass's): the pass's working memory, with its
# DEPTH buffers of records (BLOCK_BYTES each); the store caps it further by the memory the
# process may use (store/ingest_genotypes.stream_bytes). 6.5 GiB: a .bed of up to ~6.5 GB is
# read once, 1,000,000 x 50,000 (12.5 GB) twice, the store job's peak memory 6.8 GiB all told
STREAM_BYTES = 13 << 29
BLOCK_BYTES = 1 << 27  # bytes of a block of whole records (read, then transposed strip by strip) at most
# words of variants (64 records each) of a block at most: a cache line of a row's lo bits, and of its hi bits
TASK_WORDS = 8
DEPTH = 4  # blocks in flight (read, or being transposed)
READ_BYTES = 1 << 24  # bytes of records one preadv reads at most (a block's are read on several threads)
STRIP_GROUPS = 256  # words of record bytes (32 samples each) of a strip at least, where a block has several
STRIP_UNIT = 64  # strips are whole tiles of the compiled transposer (bed_kernels.LANES words) but the last
STREAM_THREADS = 32  # threads of the pass at most
WRITE_BYTES = 1 << 25  # bytes of held rows written with one pwrite at most
# write_streamed transposes straight into a shared memory map of the store (its pages made in one
# call, MAP_POPULATE), where the file system reserves its blocks (`reserve`) and a run of rows is at
# most MAP_BYTES: no held copy of the rows to allocate and copy (1.2 GB: 3.7-4.5 s against 5.4-6.6
# s, the whole store job on the 2-core VM). Larger runs are held and written with pwrite: under
# gVisor (the GPU machines) a 5 GB map took 10-12 s against 7.7-8.9 (16 cores). 0: never mapped;
# 1: mapped, its pages made as they are written
MAP_OUTPUT = 2
MAP_BYTES = 1 << 31
HASH_ROWS = 4096  # rows hashed at a time for identical samples (a spilled slab's)
# bytes of records made of a .pgen's counts by one task at most: its counts buffer is 4 times
# that, a thread's (pgenlib reads with the GIL held: the threads take turns at it, the making
# and the transposes run side by side)
PGEN_READ_BYTES = 1 << 22


@dataclass(frozen=True)
class HeldBits:
    """A whole .bed's calls as bits in sample order (`read_held`): uint64 (samples, 2, words)
    rows, a sample's lo bits, then its hi bits (variant v at bit v % 64 of word v // 64, bits
    past the last variant 0). Held in memory (`bits`) where they fit the pass's bound, else in an
    unnamed temporary file (`spill`, rows in sample order; `hashes`: duplicates.row_hashes of
    each row, made as the rows were held). store/pack.py writes them in the store's row order."""

    bits: np.ndarray | None
    n_samples: int = 0
    n_words: int = 0
    spill: BinaryIO | None = None
    hashes: np.ndarray | None = None

    @property
    def row_bytes(self) -> int:
        return 16 * self.n_words

    def take_rows(self, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out[: rows.size] = the rows of samples `rows`, uint64 (rows, 2, words)."""
        got = out[: rows.size]
        if self.bits is not None:
            return np.take(self.bits, rows, axis=0, out=got)
        assert self.spill is not None
        fd, size = self.spill.fileno(), self.row_bytes
        for k, r in enumerate(rows.tolist()):
            npy_rows.pread_rows(fd, got[k], r * size, "the spilled bits")
        return got

    def close(self) -> None:
        if self.spill is not None:
            self.spill.close()


def held_rows(rows: int, n_words: int) -> np.ndarray:
    """Room for `rows` rows of bits, uint64 (rows, 2, words): the pass's working memory (numpy asks
    Linux for transparent huge pages for it, so its first writes, by the pass's threads, take a
    page fault per 2 MiB)."""
    return np.empty((rows, 2, n_words), dtype=np.uint64)


def equal_parts(n: int, most: int, unit: int = 1) -> list[tuple[int, int]]:
    """(first, end) of the fewest equal parts of range(n) of at most `most` each (a whole
    number of `unit`, but the last)."""
    most = max(unit, most // unit * unit)
    parts = max(1, -(-n // most))
    step = -(-n // parts // unit) * unit
    return [(k, min(n, k + step)) for k in range(0, n, step)]


@dataclass
class _Part:
    """What a pass makes: the strip of samples it transposes (words g_first:g_stop of each
    record), the held row of each of them (rows[s - 32 g_first], -1: none) and the held rows;
    whether its counts are the pass's result (every sample counted once)."""

    g_first: int
    g_stop: int
    rows: np.ndarray
    held: np.ndarray
    counted: bool


class _Pass:
    """One pass over the .bed's records for a _Part: blocks of whole records (TASK_WORDS words of
    records, BLOCK_BYTES at most) read with preadv (READ_BYTES a task) into DEPTH buffers taken in
    turn, each block then transposed a strip of samples a task (`kernel`), the next block read
    into a buffer as soon as its last strip is done: the threads read and transpose side by
    side, the file in order. With a `sink` (`stream_to`: a GPU's transposer) each block read is
    handed to it whole instead (`sink.block`), into buffers it makes (`sink.buffer`: pinned), and
    its counts are the sink's; `part` is then None."""

    def __init__(
        self, pool, bed: BedFile, fd: int, part: _Part | None, kernel, threads: int, made=None, readers=None, sink=None
    ):
        self.pool, self.bed, self.fd, self.part, self.kernel, self.sink = pool, bed, fd, part, kernel, sink
        self.made = made  # a .pgen's counts made into records (bed_kernels.counts_to_records)
        self.width = record_bytes(bed.n_samples)
        self.span = -(-self.width // 8) * 8  # a record's row in a buffer: whole words
        records = max(WORD, min(WORD * TASK_WORDS, BLOCK_BYTES // self.span // WORD * WORD))
        self.blocks = [(v0, min(bed.n_variants, v0 + records)) for v0 in range(0, bed.n_variants, records)]
        make = np.empty if sink is None else lambda size, dtype: sink.buffer(size)
        self.buffers = [make(records * self.span, dtype=np.uint8) for _ in range(min(DEPTH, len(self.blocks)))]
        self.strips = []
        if part is not None:
            groups = part.g_stop - part.g_first
            # a strip a thread, or fewer
            strips = equal_parts(groups, max(STRIP_GROUPS, -(-groups // threads)), STRIP_UNIT)
            self.strips = [(part.g_first + a, part.g_first + b) for a, b in strips]
        read_bytes = READ_BYTES if bed.pgen is None else PGEN_READ_BYTES
        self.reads = equal_parts(records, max(1, read_bytes // self.span))  # a block's reads, by records
        # a .pgen's: a pgenlib reader and a counts buffer a thread, closed by `_stream` once the pool
        # is shut down (a reader closed under a task still queued crashes the process)
        self.readers: dict[int, tuple] = {} if readers is None else readers
        self.counts: dict[int, tuple[np.ndarray, list[int]]] = {}
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.error: BaseException | None = None
        self.left: dict[int, int] = {}
        self.blocks_left = len(self.blocks)

    def run(self) -> list[tuple[np.ndarray, int]]:
        """Read and transpose every block; the counts of each thread (flags, missing calls)."""
        if self.blocks:
            for i in range(len(self.buffers)):
                self._read(i)
            self.finished.wait()
        if self.error is not None:
            raise self.error
        if self.sink is not None:
            return [self.sink.counts()]
        return [(flags, missing[0]) for flags, missing in self.counts.values()]

    def _read(self, i: int) -> None:
        v0, v1 = self.blocks[i]
        parts = [(v0 + a, v0 + b) for a, b in self.reads if v0 + a < v1]
        with self.lock:
            self.left[i] = len(parts)
        for r0, r1 in parts:
            self._then(self.pool.submit(self._records, i, r0, min(v1, r1)), i, self._transpose)

    def _records(self, i: int, r0: int, r1: int) -> None:
        """Records r0:r1 of block i into their rows of the block's buffer (one preadv)."""
        if self.error is not None:  # the pass stopped: the tasks still queued do nothing
            return
        v0 = self.blocks[i][0]
        rows = self.buffers[i % len(self.buffers)][(r0 - v0) * self.span : (r1 - v0) * self.span]
        if self.bed.pgen is not None:
            reader, counts = self._pgen_reader(r1 - r0)
            self.bed.pgen.read(reader, r0, r1, counts)
            self.made(counts.view(np.uint8), r1 - r0, rows, self.span, self.bed.pgen.columns)
            return
        offset = len(MAGIC) + r0 * self.width
        if self.span == self.width:  # the rows are the file's bytes as they lie
            pieces = [rows.data]
        else:
            pieces = [rows[k * self.span : k * self.span + self.width].data for k in range(r1 - r0)]
        try:
            if os.preadv(self.fd, pieces, offset) != (r1 - r0) * self.width:  # short: again, a record at a time
                for k in range(r1 - r0):
                    row = rows[k * self.span : k * self.span + self.width]
                    npy_rows.pread_rows(self.fd, row, offset + k * self.width, self.bed.path)
        except OSError as exc:  # shorter than open_bed found it: changed while read
            raise GenotileError(f"{self.bed.path}: cannot read its records ({exc}); was it changed?") from None

    def _pgen_reader(self, records: int) -> tuple:
        """This thread's pgenlib reader of the .pgen, and its counts buffer (records, samples)."""
        me = threading.get_ident()
        got = self.readers.get(me)
        if got is None or got[1].shape[0] < records:
            assert self.bed.pgen is not None
            reader = got[0] if got is not None else self.bed.pgen.open()
            got = (reader, np.empty((records, self.bed.n_samples), dtype=np.int8))
            with self.lock:
                self.readers[me] = got
        return got

    def _transpose(self, i: int) -> None:
        """Block i read: its strips to the threads (or the whole block to the sink)."""
        if self.sink is not None:
            v0, v1 = self.blocks[i]
            words = self.buffers[i % len(self.buffers)][: (v1 - v0) * self.span].reshape(v1 - v0, -1).view(np.uint64)
            self.sink.block(words, v1 - v0, v0 // WORD)
            self._block_done(i)
            return
        with self.lock:
            self.left[i] = len(self.strips)
        for g0, g1 in self.strips:
            self._then(self.pool.submit(self._strip, i, g0, g1), i, self._block_done)

    def _strip(self, i: int, g0: int, g1: int) -> None:
        v0, v1 = self.blocks[i]
        words = self.buffers[i % len(self.buffers)][: (v1 - v0) * self.span].reshape(v1 - v0, -1).view(np.uint64)
        part = self.part
        assert part is not None  # (a pass into a sink has no strips)
        flags, missing = self._counts()
        rows = part.rows[32 * (g0 - part.g_first) :]
        missing[0] += int(self.kernel(words, v1 - v0, g0, g1, self.bed.n_samples, rows, part.held, v0 // WORD, flags))

    def _counts(self) -> tuple[np.ndarray, list[int]]:
        """This thread's counts."""
        me = threading.get_ident()
        got = self.counts.get(me)
        if got is None:
            got = (np.zeros((3, -(-self.bed.n_variants // WORD)), dtype=np.uint64), [0])
            with self.lock:
                self.counts[me] = got
        return got

    def _block_done(self, i: int) -> None:
        """Block i transposed: its buffer takes the block DEPTH on."""
        with self.lock:
            self.blocks_left -= 1
            last = self.blocks_left == 0
        if i + len(self.buffers) < len(self.blocks):
            self._read(i + len(self.buffers))
        if last:
            self.finished.set()

    def _then(self, future, i: int, step) -> None:
        """step(i) once the last of block i's tasks (`left[i]`) is done; the first error stops the pass."""

        def done(f) -> None:
            error = f.exception()
            with self.lock:
                if error is not None and self.error is None:
                    self.error = error
                self.left[i] -= 1
                ready = self.left[i] == 0 and self.error is None
                stop = self.error is not None
            if stop:
                self.finished.set()
            elif ready:
                try:
                    step(i)
                except BaseException as exc:  # noqa: BLE001 -- handed to run(), in the caller's thread
                    with self.lock:
                        self.error = self.error or exc
                    self.finished.set()

        future.add_done_callback(done)


def compiled(bed: BedFile) -> bool:
    """Whether the pass over this .bed transposes with numba (bed_kernels.py): from COMPILED_BYTES."""
    return bed.record_bytes >= COMPILED_BYTES


def _stream(bed: BedFile, parts, done, threads: int, sink=None) -> dict:
    """Passes over a .bed (`_Pass`), one a _Part made by `parts` (an iterable: each is made when
    its pass starts; None: the one pass whose blocks go to `sink`); `done(part, pool)` after
    each. Returns the VCF reader's counts of its calls (of the parts counted)."""
    n, m = bed.n_samples, bed.n_variants
    if bed.pgen is None:
        open_bed(bed.path, n, m, bed.what)  # magic and size (pgenlib checked a .pgen's: plink.py)
    kernel, made = numpy_records_to_bits, numpy_counts_to_records
    if compiled(bed) and (sink is None or bed.pgen is not None):  # worth numba's start-up (`warm_kernel`)
        from genotile.io.readers.bed_kernels import counts_to_records as made
        from genotile.io.readers.bed_kernels import records_to_bits as kernel
    counted: list[tuple[np.ndarray, int]] = []
    fd = os.open(bed.path, os.O_RDONLY) if bed.pgen is None else -1
    readers: dict[int, tuple] = {}  # a .pgen's pgenlib readers, a thread's kept from pass to pass
    try:
        with ThreadPoolExecutor(max(1, threads), thread_name_prefix="genotile-bed") as pool:
            for part in parts:
                got = _Pass(pool, bed, fd, part, kernel, max(1, threads), made, readers, sink).run()
                if part is None or part.counted:
                    counted += got
                done(part, pool)
    finally:  # the pool shut down: no task reads any more
        if fd >= 0:
            os.close(fd)
        for reader, _ in readers.values():
            reader.close()
    return word_counts(counted or [(np.zeros((3, -(-m // WORD)), dtype=np.uint64), 0)], m)


def _write_rows(fd: int, offset: int, held: np.ndarray, path, pool) -> None:
    """Write held rows, contiguous in the file from `offset`: WRITE_BYTES a pwrite at most, on
    the pool's threads."""
    if not len(held):
        return
    row_bytes = held[0].nbytes
    step = max(1, WRITE_BYTES // max(1, row_bytes))
    write = lambda r0: npy_rows.pwrite_rows(fd, held[r0 : r0 + step], offset + r0 * row_bytes, path)  # noqa: E731
    list(pool.map(write, range(0, len(held), step)))


def write_streamed(
    path,
    n_samples: int,
    n_variants: int,
    rows_of: np.ndarray,
    out_path,
    threads: int = 2,
    what=None,
    held_bytes: int = STREAM_BYTES,
    pgen: PgenRecords | None = None,
) -> dict:
    """Write the bits of a whole .bed (the store/bits.py layout) in a pass over it: row r of the
    .npy `out_path` holds sample rows_of[r]'s lo words, then its hi words; return the VCF reader's
    counts of its calls, counted in the same pass.

    The rows are made in the file's order, in one pass where they fit `held_bytes`, else in the
    fewest equal runs of rows that do, a pass over the .bed each (the .bed read again, in order,
    rather than each row written by a pwrite of its own at its place: the rows of a slab of samples
    lie all over the store; 250,000 pwrites took 12 s on a GPU machine's gVisor). A run is
    transposed straight into a memory map of the store's file (MAP_OUTPUT, MAP_BYTES), or into
    rows held in memory, then written in order, in large pieces. The calls are counted in the
    first pass, which transposes every sample.

    Parameters
    ----------
    path : str or os.PathLike
        The .bed (checked by `open_bed`).
    n_samples, n_variants : int
        From the .fam and the .bim.
    rows_of : numpy.ndarray of int
        The sample of each row (a permutation of the samples, or of distinct ones).
    out_path : str or os.PathLike
        The .npy to write: uint64 (rows_of.size, 2 * ceil(variants / 64)).
    threads : int
        Threads of the pass.
    what : (str, str), optional
        Names of the .bim and the .fam, for errors.
    held_bytes : int
        Bytes of rows held at a time at most.
    pgen : plink.PgenRecords, optional
        The records are these, read by pgenlib (`path` a .pgen, or a .bed's selected variants).

    Returns
    -------
    dict
        variants, missing_calls, monomorphic, all_missing (as `write_sample_rows`).
    """
    bed = BedFile(str(path), int(n_samples), int(n_variants), what, pgen=pgen)
    n_words = -(-bed.n_variants // WORD)
    row_bytes = 16 * n_words
    place = np.full(bed.n_samples, -1, dtype=np.int64)  # the file row of each sample (-1: none)
    place[rows_of] = np.arange(rows_of.size)
    runs = equal_parts(int(rows_of.size), held_bytes // max(1, row_bytes)) or [(0, 0)]
    groups = -(-record_bytes(bed.n_samples) // 8)
    with open(out_path, "w+b") as fh:
        start = npy_rows.write_header(fh, (int(rows_of.size), 2 * n_words), np.dtype("<u8"))
        small = max(r1 - r0 for r0, r1 in runs) * row_bytes <= MAP_BYTES
        mapped = bool(MAP_OUTPUT) and small and reserve(fh.fileno(), start + int(rows_of.size) * row_bytes)
        memory = None if mapped else held_rows(max(r1 - r0 for r0, r1 in runs), n_words)
        maps: list[mmap.mmap] = []  # the run's map, while it is written

        def parts():
            for k, (r0, r1) in enumerate(runs):
                rows = np.where((place >= r0) & (place < r1), place - r0, -1) if len(runs) > 1 else place
                if mapped:  # the store's own pages, run by run: nothing to copy, no memory but the pages
                    yield _Part(
                        0, groups, rows, map_rows(fh.fileno(), start + r0 * row_bytes, r1 - r0, n_words, maps), k == 0
                    )
                else:
                    yield _Part(0, groups, rows, memory[: r1 - r0], counted=k == 0)

        def done(part: _Part, pool) -> None:
            if mapped:  # unmapped before the next run's map (the process holds one run's pages) and the close
                part.held = part.held[:0].copy()  # (which writes the pages back to an NFS server)
                for mapping in maps:
                    try:
                        mapping.close()
                    except BufferError:  # still seen by an array: written back now, unmapped when let go
                        mapping.flush()
                maps.clear()
            else:
                r0 = runs[0][0] if len(runs) == 1 else next(first)
                _write_rows(fh.fileno(), start + r0 * row_bytes, part.held, out_path, pool)

        first = iter([r0 for r0, _ in runs])
        return _stream(bed, parts(), done, threads)


def stream_to(
    path, n_samples: int, n_variants: int, sink, threads: int = 2, what=None, pgen: PgenRecords | None = None
) -> dict:
    """`write_streamed`'s one pass over a whole .bed (or a .pgen's records, `pgen`), each block of
    whole records handed to `sink` (backends/cuda/bed_device.DeviceBits: the GPU transposes it
    into the store's rows, which it holds) rather than transposed here; the VCF reader's counts
    of the calls, as `write_streamed` returns them (from the sink's). The pass's threads hand
    their blocks over as each is read: `sink.block` may be called by several at once."""
    bed = BedFile(str(path), int(n_samples), int(n_variants), what, pgen=pgen)
    return _stream(bed, [None], lambda part, pool: None, threads, sink)


def map_rows(fd: int, offset: int, rows: int, n_words: int, maps: list) -> np.ndarray:
    """Rows of a file of bits (uint64 (rows, 2, words) from `offset`), mapped shared for writing
    (MAP_POPULATE where MAP_OUTPUT is 2: the pages made in one call); the map appended to `maps`."""
    size = rows * 16 * n_words
    skip = offset % mmap.ALLOCATIONGRANULARITY
    flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if MAP_OUTPUT == 2 else 0)
    if not size:
        return np.zeros((0, 2, n_words), dtype=np.uint64)
    memory = mmap.mmap(fd, size + skip, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=offset - skip)
    maps.append(memory)
    return np.frombuffer(memory, dtype=np.uint64, count=size // 8, offset=skip).reshape(rows, 2, n_words)


def reserve(fd: int, size: int) -> bool:
    """Reserve the blocks of a file's first `size` bytes (Linux fallocate(2), FALLOC_FL_KEEP_SIZE
    off): True where the file system did; False where it cannot (no fallocate there, another
    system). A full disk or a quota is an OSError here, not a SIGBUS of a write to a memory map."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fallocate = libc.fallocate
    except (OSError, AttributeError):
        return False
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if fallocate(fd, 0, 0, size) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(code, os.strerror(code))


def read_held(
    bed: BedFile, threads: int = 2, held_bytes: int = STREAM_BYTES, spill_dir=None, hash_rows=None
) -> tuple[HeldBits, dict]:
    """A whole .bed's bits in sample order (`_stream`), and the counts of its calls: held in memory
    where they fit `held_bytes`, in one pass; else a slab of samples a pass (its strip of each
    record transposed), each slab's rows written to an unnamed temporary file in `spill_dir` and
    hashed by `hash_rows` (rows -> uint64 (rows, 2); the store's duplicates.row_hashes) while
    held (HeldBits.hashes)."""
    n, n_words = bed.n_samples, -(-bed.n_variants // WORD)
    slabs = equal_parts(n, held_bytes // (16 * max(1, n_words)), 32)  # slabs start on a word of record bytes
    groups = -(-record_bytes(n) // 8)
    if len(slabs) <= 1:
        bits = held_rows(max(1, n), n_words)[:n]
        counts = _stream(bed, [_Part(0, groups, np.arange(n), bits, True)], lambda *a: None, threads)
        return HeldBits(bits, n, n_words), counts
    memory = held_rows(slabs[0][1] - slabs[0][0], n_words)
    spill = tempfile.TemporaryFile(dir=spill_dir, prefix=".genotile-bits.")
    hashes = np.zeros((n, 2), dtype=np.uint64)
    try:
        spill.truncate(n * 16 * n_words)
        parts = (_Part(s0 // 32, -(-s1 // 32), np.arange(s1 - s0), memory[: s1 - s0], True) for s0, s1 in slabs)

        def done(part: _Part, pool) -> None:
            s0, held = 32 * part.g_first, part.held
            _write_rows(spill.fileno(), s0 * 16 * n_words, held, spill.name, pool)
            if hash_rows is not None:

                def hashed(r0: int) -> None:
                    hashes[s0 + r0 : s0 + min(len(held), r0 + HASH_ROWS)] = hash_rows(held[r0 : r0 + HASH_ROWS])

                list(pool.map(hashed, range(0, len(held), HASH_ROWS)))

        counts = _stream(bed, parts, done, threads)
    except BaseException:
        spill.close()
        raise
    return HeldBits(None, n, n_words, spill, None if hash_rows is None else hashes), counts


class BedReader(PlinkReader):
    """A PLINK 1 fileset named by its .bed: a selection is read by pgenlib (plink.PlinkReader);
    a whole .bed as it is (`plain`) with numpy, as codes (`write_sample_rows`), or, by the store
    job, in one pass straight to its store (`held_bits`: the .bed to read). The same codes,
    stores and counts either way (tests/io/test_bed.py)."""

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

    def held_bits(self, threads: int = 2, device: bool = False) -> BedFile | None:
        """A `plain` .bed with variants as the store job reads it: not yet, but in the one pass
        that writes its store (`write_streamed`; `read_held` where identical samples are
        collapsed), which counts its calls; None where it is not one (its codes are read)."""
        n_variants = int(self.plan[0].size)
        if not self.plain:  # a selection of variants: pgenlib's counts of them (plink.PlinkReader)
            return super().held_bits(threads, device)
        if not n_variants:
            return None
        if not device:  # its pass's compiled transposer loaded meanwhile (the GPU's takes none)
            warm_kernel(self.path)
        return BedFile(self.path, len(self.samples), n_variants, self._what())
