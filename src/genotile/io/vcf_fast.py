"""Fast path of the VCF reader: text VCF (plain, bgzip or gzip) parsed with numpy from raw bytes.

`FastText(reader).blocks()` yields the same (variant IDs, codes) blocks, and counts the
same `stats`, as the cyvcf2 path of `vcf.GenotypeReader` -- for the records it handles.
It handles the common case: GT the first FORMAT key, every selected call diploid with
one-character allele indices ("0/1", "1|1", "./.", "./1"), records with one ALT (and,
through the reader's own `_codes`, records with none or several, split or skipped).
Everything else -- a GT that is not the first key, haploid or polyploid calls,
allele indices of two digits, a malformed line, a line that is not a record, any
record the rules reject with an error -- makes it stop at the first record of the
text block it is in; `records` then says how many records it handled, and the
reader goes on from there with cyvcf2 (which reports any error in its own words).
A block either is handled whole (stats counted, rows yielded) or not at all.

How: the text is cut into blocks of whole lines, handed to DECODERS worker threads (by
default every CPU the process may use), and their rows are handed out in file order.
Plain text is memory-mapped only to find where each block ends: the first newline about
CHUNK_BYTES past its start (less on smaller files, so that every worker gets several
blocks); a worker reads its block with pread into a buffer of its own and decodes it, so
blocks are scanned and decoded side by side, nothing serial but the cutting. BGZF is cut
by a thread into groups of blocks holding about CHUNK_BYTES of text, which DECODERS
workers inflate side by side (the system's libdeflate through ctypes when there is one,
else zlib; both release the GIL; pysam's BGZF reader holds it); plain gzip is one deflate
stream, inflated by that thread alone. The main thread cuts the inflated text into
blocks of lines, joining the line that straddles two pieces. Blocks of the commonest kind
go whole to a worker (compiled, below); for any other, the main thread splits each
line's first nine columns in Python and finds the calls by byte offsets: a GT-only line
whose calls are all three characters has them at fixed offsets from the line's end (the
common case: one copy per line); otherwise the tab offsets of the block give each call's
start. A worker then decodes the block's calls at once with numpy table lookups on the
two 16-bit halves of each call ((allele, separator), (allele, end)), in cache-sized
batches. Measured on 1,000 samples x 200,000 msprime variants (.vcf.gz, 2 cores): ~2.1 s
of CPU, ~2 s wall, where cyvcf2 takes ~11 s.

Compiled blocks: where numba is installed, variant IDs are not wanted (ibs, king), every
sample is read and the file is at least COMPILED_MIN_BYTES, a worker hands each block to
vcf_kernels.decode_block first, which scans its lines and decodes their calls in one
compiled pass (~1 GB/s of text per thread) when every line is of the commonest kind
(GT-only 3-character calls, one ALT); any other block goes the way above, in the worker.
Plain text of 2,000 samples x 200,000 variants (1.6 GB) comes at ~0.9 GB/s with one worker
and ~5.4 GB/s with 16 on a 16-core machine; 20,000 x 100,000 (8 GB) at ~4.9 GB/s. BGZF stops
scaling at 4-8 workers (~1 GB/s of text with zlib): its block-by-block Python holds the GIL
(bench/RESULTS.md, "Session 6: VCF ingest").
"""

import contextlib
import mmap
import os
import queue
import struct
import threading
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from genotile.core.encode import MISSING
from genotile.util.cpus import usable_cpus

CHUNK_BYTES = 1 << 24  # text per block
BATCH_CALLS = 1 << 16  # calls per table lookup
DECODERS: int | None = None  # worker threads decoding blocks (None: every usable CPU)
MAP_MIN_CHUNK = 1 << 20  # plain text: spans of at least this (or CHUNK_BYTES if smaller), see _mapped_spans
USE_LIBDEFLATE = True  # inflate BGZF with the system's libdeflate when there is one (else zlib)
COMPILED = True  # decode common-case blocks with vcf_kernels (numba) when IDs are not wanted
# ... in files at least this large: numba's start-up (~0.75 s a process) costs more than it
# saves below (on 1,000 samples x 200,000 records, 40 MB of .vcf.gz, it saves ~0.4 s of ~2.8)
COMPILED_MIN_BYTES = 1 << 24
TAB, NL, COLON, SLASH, PIPE, DOT = 9, 10, 58, 47, 124, 46


def decoders() -> int:
    """Worker threads decoding blocks: DECODERS, or the CPUs this process may use."""
    return usable_cpus() if DECODERS is None else max(1, DECODERS)


class _Plain:
    """A plain-text file, memory-mapped to find line ends (`mm`), its spans read with pread.

    A worker reads its span into a buffer of its own, reused from span to span: on the
    machines measured, decoding straight from the map was ~20% slower, its pages faulted in
    one by one in every process (as are a fresh buffer's), where pread copies from the page
    cache into pages already mapped.
    """

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY)
        try:
            self.mm = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ)
        except BaseException:
            os.close(self.fd)
            raise
        self.local = threading.local()

    @staticmethod
    def open(path) -> "_Plain | None":
        """The file when it is plain text; None for gzip or BGZF (or an empty file)."""
        with open(path, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b" or os.fstat(fh.fileno()).st_size == 0:
                return None
        return _Plain(path)

    def read(self, start: int, end: int) -> np.ndarray:
        """(end - start,) uint8: the text of [start, end), in this thread's buffer (valid until
        its next read); _Stop if the file ends early (it shrank)."""
        buf = getattr(self.local, "buf", None)
        if buf is None or len(buf) < end - start:
            buf = self.local.buf = bytearray(end - start + (1 << 20))
        view, got = memoryview(buf), 0
        while got < end - start:
            n = _pread_into(self.fd, view[got : end - start], start + got)
            if n <= 0:
                raise _Stop
            got += n
        return np.frombuffer(buf, dtype=np.uint8, count=end - start)

    def close(self) -> None:
        with contextlib.suppress(BufferError):  # a view still held: the map closes with it
            self.mm.close()
        os.close(self.fd)


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Bytes read into view from offset of fd (fewer at the end of the file); the GIL is
    released during the read."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, len(view), offset)  # (no preadv on this system: one copy more)
    view[: len(data)] = data
    return len(data)


def _own(span: tuple) -> tuple:
    """The span with its text as bytes: a plain file's span or BGZF text copied (the numpy
    path splits, counts and views its buffer whole)."""
    buf, start, end = span
    if isinstance(buf, (_Plain, np.ndarray)):
        buf = buf.mm[start:end] if isinstance(buf, _Plain) else buf[start:end].tobytes()
        return buf, 0, len(buf)
    return span


def compiled_kernels():
    """vcf_kernels (numba) when COMPILED and numba is installed, else None (the numpy path)."""
    if not COMPILED:
        return None
    try:
        from genotile.io import vcf_kernels
    except ImportError:
        return None
    return vcf_kernels


class _Stop(Exception):
    """The block holds something the fast path does not handle: hand over to cyvcf2."""


def _digits_lut() -> np.ndarray:
    """Allele character -> index: '0'-'9' -> 0..9, '.' -> -1 (missing), else -9."""
    lut = np.full(256, -9, dtype=np.int16)
    lut[ord("0") : ord("9") + 1] = np.arange(10)
    lut[DOT] = -1
    return lut


DIGITS = _digits_lut()
IS_SEP = np.zeros(256, dtype=bool)
IS_SEP[[SLASH, PIPE]] = True
IS_END = np.zeros(256, dtype=bool)  # what may follow a GT value
IS_END[[TAB, NL, COLON]] = True


BAD = 0x40  # a call's class at or above this is not the common case


def _class_luts():
    """Class of a call from its two 16-bit halves (allele, separator) and (allele, end).

    half 0: '0' 0, '1' 1, '.' 4 (with '/' or '|'), else 0x80; half 1: '0' 0, '1' 1, '.' 4
    (with a tab, newline or colon; `fixed`: tab or newline only), else 0x40. Their sum:
    0, 1, 2 = the ALT count; 4, 5 = half missing; 8 = missing; >= BAD: something else.
    """
    first = np.full(65536, 0x80, dtype=np.uint8)
    second = np.full(65536, 0x40, dtype=np.uint8)
    second_fixed = np.full(65536, 0x40, dtype=np.uint8)
    for char, value in ((b"0", 0), (b"1", 1), (b".", 4)):
        for sep in (SLASH, PIPE):
            first[char[0] | sep << 8] = value
        for end in (TAB, NL, COLON):
            second[char[0] | end << 8] = value
        for end in (TAB, NL):
            second_fixed[char[0] | end << 8] = value
    return first, second, second_fixed


FIRST, SECOND, SECOND_FIXED = _class_luts()


def _batches(n_rows: int, n_cols: int):
    """Row ranges of about BATCH_CALLS calls: table lookups whose index temporaries stay in cache."""
    step = max(1, BATCH_CALLS // max(1, n_cols))
    return ((r0, min(n_rows, r0 + step)) for r0 in range(0, n_rows, step))


def _classify(pairs: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """(records, samples) uint8 classes of the calls (see _class_luts)."""
    n_rows, n_cols = pairs.shape[:2]
    raw = np.empty((n_rows, n_cols), dtype=np.uint8)
    for r0, r1 in _batches(n_rows, n_cols):
        p, out = pairs[r0:r1], raw[r0:r1]
        np.take(FIRST, p[..., 0], out=out)
        f = fixed[r0:r1]
        if f.all():
            out += np.take(SECOND_FIXED, p[..., 1])
        elif not f.any():
            out += np.take(SECOND, p[..., 1])
        else:
            second = np.take(SECOND, p[..., 1])
            second[f] = np.take(SECOND_FIXED, p[f][..., 1])
            out += second
    return raw


def _clean(raw: np.ndarray, st: dict) -> np.ndarray:
    """ALT counts of common-case calls from their classes (in place), and the stats of vcf.py's _codes."""
    n_rows, n_cols = raw.shape
    n_missing = n_both = monomorphic = all_missing = 0
    for r0, r1 in _batches(n_rows, n_cols):
        rr = raw[r0:r1]
        lowest = rr.min(axis=1)
        has_ref = lowest <= 1  # a 0 or 1 call
        has_alt = (rr - np.uint8(1)).min(axis=1) <= 1  # a 1 or 2 call (0 wraps to 255)
        monomorphic += np.count_nonzero(~(has_ref & has_alt))
        all_missing += np.count_nonzero(lowest >= 4)
        missing = rr >= 4
        n_missing += np.count_nonzero(missing)
        n_both += np.count_nonzero(rr == 8)
        np.putmask(rr, missing, MISSING)  # the class is now the code
    st["variants"] += n_rows
    st["missing_calls"] += int(n_missing)
    st["half_missing_calls"] += int(n_missing - n_both)
    st["monomorphic"] += int(monomorphic)
    st["all_missing"] += int(all_missing)
    return raw


class _Buffer:
    """A bytearray and, for libdeflate, its address (the ctypes view pins it until released)."""

    def __init__(self, buf: bytearray, lib):
        self.buf, self.view, self.addr = buf, None, 0
        if lib is not None and len(buf):
            import ctypes

            self.view = (ctypes.c_char * len(buf)).from_buffer(buf)
            self.addr = ctypes.addressof(self.view)

    def release(self):
        self.view = None


class _Libdeflate:
    """libdeflate through ctypes (the GIL is released during each call): ~2.5x zlib's inflate,
    straight into the output buffer. Used when the system has it (Debian's plink2 depends on it)."""

    def __init__(self, lib):
        import ctypes

        self.ct = ctypes
        lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
        lib.libdeflate_deflate_decompress.restype = ctypes.c_int
        lib.libdeflate_deflate_decompress.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_size_t),
        ]
        lib.libdeflate_crc32.restype = ctypes.c_uint32
        lib.libdeflate_crc32.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        lib.libdeflate_free_decompressor.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.d = lib.libdeflate_alloc_decompressor()
        if not self.d:
            raise OSError("libdeflate_alloc_decompressor failed")
        self.got = ctypes.c_size_t()

    def inflate(self, src: int, n_src: int, dst: int, size: int, crc: int) -> bool:
        """Inflate n_src bytes at address src into the `size` bytes at dst; True when it fills
        exactly those and the CRC32 holds."""
        if size == 0:
            return n_src >= 2 and crc == 0
        rc = self.lib.libdeflate_deflate_decompress(self.d, src, n_src, dst, size, self.ct.byref(self.got))
        return rc == 0 and self.got.value == size and self.lib.libdeflate_crc32(0, dst, size) == crc

    def __del__(self):
        if getattr(self, "d", None):
            self.lib.libdeflate_free_decompressor(self.d)


_LIBDEFLATE: list = []


def _libdeflate() -> "_Libdeflate | None":
    """The system's libdeflate, or None (then zlib)."""
    if not _LIBDEFLATE:
        lib = None
        if USE_LIBDEFLATE:
            try:
                import ctypes
                import ctypes.util

                name = ctypes.util.find_library("deflate")
                lib = _Libdeflate(ctypes.CDLL(name)) if name else None
            except (OSError, AttributeError):
                lib = None
        _LIBDEFLATE.append(lib)
    return _LIBDEFLATE[0]


_INFLATER = threading.local()  # each worker's own libdeflate decompressor (not shareable)


def _inflater() -> "_Libdeflate | None":
    """This thread's libdeflate decompressor, or None (then zlib)."""
    shared = _libdeflate()
    if shared is None:
        return None
    if getattr(_INFLATER, "of", None) is not shared:  # a new library handle (tests switch it)
        _INFLATER.lib, _INFLATER.of = _Libdeflate(shared.lib), shared
    return _INFLATER.lib


def _inflate_group(comp: bytearray, blocks: list, size: int) -> np.ndarray:
    """(size,) uint8: the text of a group of BGZF blocks (_Text._bgzf_groups), inflated in
    this thread; ValueError when a block fails to inflate, or its CRC32 or size is wrong.

    The text goes to a numpy buffer: a bytearray is zero-filled, its pages faulted in, while
    the GIL is held (~5 ms per 16 MiB here, which serialised the workers); numpy's is not
    filled, and takes huge pages where the system gives them."""
    lib = _inflater()
    out = np.empty(size, dtype=np.uint8)
    src = _Buffer(comp, lib)
    try:
        filled = 0
        for start, stop, isize, crc in blocks:
            if lib is not None:
                ok = lib.inflate(src.addr + start, stop - start, out.ctypes.data + filled, isize, crc)
            else:
                data = zlib.decompress(memoryview(comp)[start:stop], -15, max(1, isize))
                ok = len(data) == isize and zlib.crc32(data) == crc
                out[filled : filled + isize] = np.frombuffer(data, dtype=np.uint8)
            if not ok:
                raise ValueError("BGZF block fails to inflate, or its CRC32 or size")
            filled += isize
    finally:
        src.release()
    return out


def _newline(buf, last: bool = False) -> int:
    """Offset of the first (or last) newline of buf, -1 if none. buf: bytes-like, or a uint8
    array (BGZF text: searched a window at a time from its end, lines being short next to it)."""
    if not isinstance(buf, np.ndarray):
        return buf.rfind(b"\n") if last else buf.find(b"\n")
    n, done, width = len(buf), 0, 1 << 16
    while done < n:
        lo, hi = (max(0, n - done - width), n - done) if last else (done, min(n, done + width))
        hits = np.flatnonzero(buf[lo:hi] == NL)
        if hits.size:
            return lo + int(hits[-1] if last else hits[0])
        done, width = done + hi - lo, 2 * width
    return -1


class _Text:
    """Decompressed text in chunks of about CHUNK_BYTES, read ahead by a thread; b"" at the end.

    BGZF: the thread cuts the file into groups of blocks (CHUNK_BYTES of text), which
    `threads` workers inflate side by side (libdeflate or zlib, both release the GIL), each
    block's CRC32 and size checked as htslib does; other gzip files stream through one zlib
    object per member in the thread; plain text is read as is. A read or format error ends
    the fast path (`_Stop`): cyvcf2 then reads on and reports it.
    """

    def __init__(self, path: str, chunk: int | None = None, threads: int = 1):
        self._path, self._chunk, self._threads = path, chunk or CHUNK_BYTES, max(1, threads)
        self._q: queue.Queue = queue.Queue(maxsize=2 * self._threads)  # (BGZF: futures, two a worker)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="genotile-vcf-read", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            with open(self._path, "rb") as fh:
                head = fh.read(18)
                fh.seek(0)
                if head[:4] == b"\x1f\x8b\x08\x04" and head[12:14] == b"BC":
                    self._bgzf(fh)
                elif head[:2] == b"\x1f\x8b":
                    self._gzip(fh)
                else:
                    while data := fh.read(self._chunk):
                        self._put(data)
            self._put(b"")
        except BaseException as exc:
            self._put(exc)

    def _bgzf(self, fh):
        """Groups of BGZF blocks, about CHUNK_BYTES of text each, inflated on `threads` workers;
        their futures are queued in file order."""
        pool = ThreadPoolExecutor(self._threads, thread_name_prefix="genotile-vcf-inflate")
        try:
            for comp, blocks, size in self._bgzf_groups(fh):
                self._put(pool.submit(_inflate_group, comp, blocks, size))
        finally:
            # the queued groups are still to be read, unless the reader stopped
            pool.shutdown(wait=False, cancel_futures=self._stop.is_set())

    def _bgzf_groups(self, fh):
        """(compressed bytes, blocks, text bytes) of consecutive BGZF blocks holding about
        CHUNK_BYTES of text: blocks are (start, stop, isize, crc), the deflate data of each at
        [start, stop) of the compressed bytes. Each block's header is checked here; a
        malformed or truncated one raises ValueError after the groups before it."""
        raw, pos = b"", 0
        comp, blocks, size = bytearray(), [], 0
        unpack = struct.unpack_from
        while not self._stop.is_set():
            if len(raw) - pos < 1 << 17:  # at least one whole block (<= 64 KiB) ahead
                raw = raw[pos:] + fh.read(1 << 22)
                pos = 0
                if not raw:
                    break
            if len(raw) - pos < 18 or raw[pos : pos + 4] != b"\x1f\x8b\x08\x04":
                raise ValueError("not a BGZF block")
            xlen = unpack("<H", raw, pos + 10)[0]
            if xlen == 6 and raw[pos + 12 : pos + 14] == b"BC":  # the usual extra field: BC alone
                bsize = unpack("<H", raw, pos + 16)[0] + 1
            else:
                bsize, k = None, pos + 12
                while k + 4 <= pos + 12 + xlen:
                    slen = unpack("<H", raw, k + 2)[0]
                    if raw[k : k + 2] == b"BC" and slen == 2:
                        bsize = unpack("<H", raw, k + 4)[0] + 1
                    k += 4 + slen
            if bsize is None or pos + bsize > len(raw) or bsize < 20 + xlen:
                raise ValueError("truncated or malformed BGZF block")
            crc, isize = unpack("<II", raw, pos + bsize - 8)
            if blocks and size + isize > self._chunk:
                yield comp, blocks, size
                comp, blocks, size = bytearray(), [], 0
            at = len(comp)
            comp += raw[pos + 12 + xlen : pos + bsize - 8]
            blocks.append((at, len(comp), isize, crc))
            size += isize
            pos += bsize
        if blocks:
            yield comp, blocks, size

    def _gzip(self, fh):
        d = zlib.decompressobj(31)
        out, size = [], 0
        while not self._stop.is_set():
            if d.eof:  # a member ended: the next one starts in its unused data, or in the file
                comp = d.unused_data or fh.read(1 << 22)
                if not comp:
                    break
                d = zlib.decompressobj(31)
            else:
                comp = d.unconsumed_tail or fh.read(1 << 22)
                if not comp:
                    raise ValueError("truncated gzip stream")
            data = d.decompress(comp, self._chunk)
            out.append(data)
            size += len(data)
            if size >= self._chunk:
                self._put(b"".join(out))
                out, size = [], 0
        if out:
            self._put(b"".join(out))

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def get(self):
        """The next piece of text (bytes, or a uint8 array for BGZF); b"" at the end."""
        while True:
            item = self._q.get()
            if isinstance(item, Future):  # a group of BGZF blocks, inflated by a worker
                try:
                    item = item.result()
                except BaseException as exc:
                    raise _Stop from exc
                if not len(item):  # empty blocks only (an EOF marker): no text, not the end
                    continue
            if isinstance(item, BaseException):
                raise _Stop from item
            return item

    def close(self):
        self._stop.set()
        self._thread.join()


class _Lines:
    """Per-record facts of one block, from each line's first nine columns."""

    def __init__(self):
        self.ss, self.le, self.fixed = [], [], []  # calls' start, line end, fixed width? (genotype records)
        self.alts = []  # ALT count of each genotype record
        self.ids = []  # variant IDs, one per output row (several for a split record)
        self.records = 0
        self.stats = dict.fromkeys(
            (
                "records",
                "no_gt_skipped",
                "filter_failed",
                "filter_skipped",
                "multiallelic_skipped",
                "multiallelic_split",
                "split_variants",
            ),
            0,
        )


class FastText:
    def __init__(self, reader):
        self.r = reader
        self.nf = len(reader.file_samples)  # sample columns in the file
        order = {s: k for k, s in enumerate(reader.file_samples)}
        cols = np.array([order[s] for s in reader.samples], dtype=np.int64)
        self.cols = None if np.array_equal(cols, np.arange(self.nf)) else cols
        self.records = 0  # records handled, in file order
        self.finished = False
        self.want_ids = reader.want_ids  # False: IDs are None (callers that drop them)

    # -- header ------------------------------------------------------------------------

    def _header_end(self, buf, pos: int, final: bool) -> tuple[bool, int]:
        """(True, offset of the first record) once buf (bytes or a map) holds the whole header
        from `pos`, its #CHROM line checked; else (False, start of the unfinished line), or
        _Stop when `final` (no more text) or the header is odd."""
        while True:
            end = buf.find(b"\n", pos)
            if end < 0:
                if final:
                    raise _Stop  # a header without records, or no newline: let cyvcf2 decide
                return False, pos
            line = buf[pos:end]
            if not line.startswith(b"#"):
                raise _Stop  # records before the #CHROM line
            if line.startswith(b"#CHROM"):
                names = line.rstrip(b"\r").split(b"\t")[9:]
                if [n.decode("utf-8", "replace") for n in names] != self.r.file_samples:
                    raise _Stop
                return True, end + 1
            pos = end + 1

    def _skip_header(self, text: _Text) -> tuple[bytes, int]:
        """(first chunk of text, offset of the first record) past the header; _Stop if odd."""
        buf, pos = b"", 0
        while True:
            chunk = text.get()
            buf = buf[pos:] + bytes(chunk)
            done, pos = self._header_end(buf, 0, final=not len(chunk))
            if done:
                return buf, pos

    # -- blocks --------------------------------------------------------------------------

    def _texts(self, text: _Text):
        """(buffer, start, end) spans of whole lines, in file order, past the header (the
        buffer bytes, or the uint8 array of BGZF text; the lines across two pieces as bytes)."""
        buf, pos = self._skip_header(text)
        tail = buf[pos:]
        while True:
            chunk = text.get()
            if not len(chunk):
                if tail:  # lines left over, the last perhaps without its newline
                    if not tail.endswith(b"\n"):
                        tail += b"\n"
                    yield tail, 0, len(tail)
                return
            cut = _newline(chunk, last=True)
            if cut < 0:
                tail += bytes(chunk)
                continue
            start = 0
            if tail:  # the line that straddles the chunk boundary
                first = _newline(chunk) + 1
                head = tail + bytes(chunk[:first])
                yield head, 0, len(head)
                start = first
            if start <= cut:
                yield chunk, start, cut + 1
            tail = bytes(chunk[cut + 1 :])

    def _plain_spans(self, plain: _Plain, threads: int):
        """(plain, start, end) spans of whole lines of a plain text, past the header.

        Each span ends at the first newline from about `step` bytes past its start (found in the
        map, touching only the pages around it), so a span is whole lines whatever its size;
        the last line, when it has no newline, is copied with one (a bytes span). `step` is
        CHUNK_BYTES, or less on smaller files so that each of the `threads` gets about four.
        """
        mm = plain.mm
        pos = self._header_end(mm, 0, final=True)[1]
        size = len(mm)
        step = min(CHUNK_BYTES, max(MAP_MIN_CHUNK, (size - pos) // (4 * threads)))
        while pos < size:
            nl = mm.find(b"\n", min(size, pos + step) - 1)
            if nl < 0:
                tail = mm[pos:size] + b"\n"
                yield tail, 0, len(tail)
                return
            yield plain, pos, nl + 1
            pos = nl + 1

    def blocks(self):
        """Yield (ids, codes) per block; stop (finished False) at a block it does not handle.

        Plain text is memory-mapped and cut into spans of whole lines that the workers decode
        side by side; compressed text is inflated by a thread and its lines split here. Lines
        outside the compiled kernel are split in this thread while the workers decode other
        blocks' calls with numpy (which releases the GIL); stats are counted, and records the
        reader could not take handed over, in file order.
        """
        threads = decoders()
        try:
            plain = _Plain.open(self.r.path)
            text = None if plain is not None else _Text(self.r.path, threads=threads)
        except (OSError, ValueError):
            return
        pool = ThreadPoolExecutor(threads, thread_name_prefix="genotile-vcf-decode")
        pending: deque = deque()
        kernels = None
        if not self.want_ids and self.cols is None and os.path.getsize(self.r.path) >= COMPILED_MIN_BYTES:
            kernels = compiled_kernels()
        try:
            spans = self._plain_spans(plain, threads) if plain is not None else self._texts(text)
            while True:
                try:
                    span = next(spans, None)
                    if span is not None and kernels is not None:  # the whole block in a worker
                        pending.append((None, pool.submit(self._decode_compiled, kernels, span)))
                    elif span is not None:
                        span = _own(span)
                        lines = self._scan(*span)
                        pending.append((lines, pool.submit(self._decode, span[0], lines)))
                except _Stop:
                    span = None
                    stopped = True
                else:
                    stopped = False
                # hand out finished blocks in order; keep about two per worker in flight
                while pending and (span is None or len(pending) > 2 * threads):
                    lines, job = pending.popleft()
                    out = self._finish(lines, job)
                    if out is None:
                        return
                    if out[0]:
                        yield out
                if span is None:
                    self.finished = not stopped
                    return
        finally:
            for _, job in pending:
                job.cancel()
            pool.shutdown(wait=True)
            if text is not None:
                text.close()
            if plain is not None:
                plain.close()

    def _finish(self, lines: "_Lines", job):
        """(ids, codes) of a decoded block with its stats counted; None to hand over to cyvcf2."""
        st = self.r.stats
        saved = dict(st)
        try:
            if lines is None:  # _decode_compiled: the block's lines come with its codes
                lines, codes, clean_stats, slow = job.result()
            else:
                codes, clean_stats, slow = job.result()
            for key, k in (*lines.stats.items(), *clean_stats.items()):
                st[key] += k
            if slow is not None:  # records outside the common case: the reader's own rules
                rows, args = slow
                codes[rows] = self._slow(*args)
        except _Stop:
            st.clear()
            st.update(saved)
            return None
        self.records += lines.records
        return lines.ids, codes

    def _decode_compiled(self, kernels, span):
        """(lines, codes, stats, slow) of a block (in a worker thread): vcf_kernels.decode_block
        when it takes the block, else _scan and _decode as for any block (whose _Stop then
        reaches _finish through the job)."""
        buf, start, end = span
        n = len(self.r.samples)
        codes = np.empty(((end - start) // (4 * max(1, self.nf)) + 1, n), dtype=np.uint8)
        counts = np.zeros(6, dtype=np.int64)
        if isinstance(buf, _Plain):  # read into this worker's buffer
            arr, start, end = buf.read(start, end), 0, end - start
        else:
            arr = np.frombuffer(buf, dtype=np.uint8)
        halves = (
            arr[start : start + (end - start) // 2 * 2].view(np.uint16),
            arr[start + 1 : start + 1 + (end - start - 1) // 2 * 2].view(np.uint16),
        )
        records, n_rows = kernels.decode_block(
            arr, halves, FIRST, SECOND_FIXED, start, end, self.nf, self.r.filter_pass, MISSING, codes, counts
        )
        if records < 0:
            buf, start, end = _own(span)
            lines = self._scan(buf, start, end)
            return (lines, *self._decode(buf, lines))
        lines = _Lines()
        lines.records = lines.stats["records"] = records
        lines.stats["filter_failed"] = int(counts[kernels.FILTER_FAILED])
        lines.stats["filter_skipped"] = int(counts[kernels.FILTER_SKIPPED])
        lines.ids = [None] * n_rows
        missing = int(counts[kernels.MISSING_CALLS])
        stats = {
            "variants": n_rows,
            "missing_calls": missing,
            "half_missing_calls": missing - int(counts[kernels.BOTH_MISSING]),
            "monomorphic": int(counts[kernels.MONOMORPHIC]),
            "all_missing": int(counts[kernels.ALL_MISSING]),
        }
        return lines, codes[:n_rows], stats, None

    def _scan(self, buf: bytes, start: int, end: int) -> _Lines:
        """The rules of vcf.py, per record, from the first nine columns (in Python)."""
        lines = _Lines()
        st = lines.stats
        multi_skip, filter_pass, want_ids = self.r.multiallelic == "skip", self.r.filter_pass, self.want_ids
        ss_l, le_l, fixed_l, alts_l, ids = lines.ss, lines.le, lines.fixed, lines.alts, lines.ids
        nf = self.nf
        calls_len = 4 * nf  # a GT-only line of 3-character calls: its calls and the newline
        find, pos, n_rec = buf.find, start, 0
        while pos < end:
            le = find(b"\n", pos, end)
            n_rec += 1
            ss = le - calls_len + 1
            fixed = False
            if ss > pos and buf[ss - 1] == TAB:
                pre = buf[pos : ss - 1].split(b"\t")
                fixed = len(pre) == 9 and pre[8] == b"GT"
            if not fixed:
                pre = buf[pos:le].split(b"\t", 9)
                if len(pre) != 10:
                    raise _Stop
                ss = le - len(pre[9])
                del pre[9]
            chrom, pos_txt, vid, ref, alt, _qual, filt, _info, fmt = pre
            pos = le + 1
            if not pos_txt.isdigit() or not chrom or chrom[0] == 35 or not vid or not ref or not alt:
                raise _Stop  # (htslib reads an empty ID, REF or ALT as '.')
            if not fixed and fmt != b"GT" and not fmt.startswith(b"GT:"):
                if b"GT" in fmt.split(b":"):
                    raise _Stop  # GT not the first key
                st["no_gt_skipped"] += 1
                continue
            if not fixed and buf.count(b":", ss, le) > fmt.count(b":") * nf:
                # more subfields than FORMAT has keys (e.g. `0/1:5` under GT): htslib refuses the
                # record. (Counted per line: one call's extra field offset by another's missing
                # one is not seen here.)
                raise _Stop
            if filt != b"PASS" and filt != b".":
                st["filter_failed"] += 1
                if filter_pass:
                    st["filter_skipped"] += 1
                    continue
            if b"," in alt:
                alts = alt.split(b",")
                if multi_skip:
                    st["multiallelic_skipped"] += 1
                    continue
                st["multiallelic_split"] += 1
                st["split_variants"] += len(alts)
                n_alts = len(alts)
            else:
                n_alts = 0 if alt == b"." else 1
            if want_ids:
                try:
                    if pos_txt[0] == 48:  # '0': a leading zero; the ID has the number
                        pos_txt = str(int(pos_txt)).encode()
                    if n_alts > 1:
                        name = chrom + b":" + pos_txt + b":" + ref + b":"
                        ids.extend((name + a).decode() for a in alts)
                    elif vid != b".":
                        ids.append(vid.decode())
                    else:
                        ids.append((chrom + b":" + pos_txt + b":" + ref + b":" + alt).decode())
                except UnicodeDecodeError:
                    raise _Stop from None
            else:
                ids.extend([None] * max(1, n_alts))
            ss_l.append(ss)
            le_l.append(le)
            fixed_l.append(fixed)
            alts_l.append(n_alts)
        lines.records = n_rec
        st["records"] = n_rec
        return lines

    def _calls(self, buf: bytes, lines: _Lines) -> np.ndarray:
        """(records, file samples, 4) uint8: each call's first four characters.

        A GT-only line whose calls are all 3 characters is copied whole (`fixed`); other
        lines' calls start after the tabs of the block. A fixed line is checked in _codes:
        every 4th character must be a tab (the last the newline), else it is redone here.
        """
        nf, n_rec = self.nf, len(lines.ss)
        mv = memoryview(buf)
        if all(lines.fixed):
            joined = b"".join([mv[ss : le + 1] for ss, le in zip(lines.ss, lines.le, strict=True)])
            return np.frombuffer(joined, dtype=np.uint8).reshape(n_rec, nf, 4)
        calls = np.empty((n_rec, nf, 4), dtype=np.uint8)
        fixed = np.flatnonzero(lines.fixed)
        if fixed.size:
            joined = b"".join([mv[lines.ss[k] : lines.le[k] + 1] for k in fixed.tolist()])
            calls[fixed] = np.frombuffer(joined, dtype=np.uint8).reshape(fixed.size, nf, 4)
        self._gather(buf, lines, np.flatnonzero(~np.array(lines.fixed)), calls)
        return calls

    def _gather(self, buf: bytes, lines: _Lines, rows: np.ndarray, calls: np.ndarray) -> None:
        """calls[rows] from the tab offsets of the block (any call width)."""
        if not rows.size:
            return
        nf = self.nf
        arr = np.frombuffer(buf, dtype=np.uint8)
        tabs = np.flatnonzero(arr == TAB)
        ss, le = np.asarray(lines.ss)[rows], np.asarray(lines.le)[rows]
        first, last = np.searchsorted(tabs, ss), np.searchsorted(tabs, le)
        if np.any(last - first != nf - 1):
            raise _Stop  # not one column per sample
        starts = np.empty((rows.size, nf), dtype=np.int64)
        starts[:, 0] = ss
        if nf > 1:
            starts[:, 1:] = tabs[first[:, None] + np.arange(nf - 1)] + 1
        padded = np.concatenate([arr, np.zeros(4, dtype=np.uint8)])
        for c in range(4):
            calls[rows, :, c] = padded[starts + c]

    def _decode(self, buf: bytes, lines: _Lines):
        """(codes, stats of the common-case rows, slow) of a block (in the worker thread).

        slow: None, or (output rows, arguments of _slow) for the records outside the
        common case, which _finish decodes in file order (they may raise, and _codes
        counts stats as it goes). _Stop if a line is not what it claimed to be.
        """
        n = len(self.r.samples)
        stats = dict.fromkeys(("variants", "missing_calls", "half_missing_calls", "monomorphic", "all_missing"), 0)
        if not lines.ss:
            return np.zeros((0, n), dtype=np.uint8), stats, None
        calls = self._calls(buf, lines)
        fixed = np.array(lines.fixed)
        if self.cols is not None and fixed.any():
            # a fixed line's alignment is checked on every column, selected or not
            ends = np.full(self.nf, TAB, dtype=np.uint8)
            ends[-1] = NL
            bad = fixed.copy()
            bad[fixed] = (calls[fixed, :, 3] != ends).any(axis=1)
            if bad.any():
                calls = np.array(calls)
                fixed &= ~bad
                self._gather(buf, lines, np.flatnonzero(bad), calls)
        pairs = calls.view(np.uint16)  # (records, file samples, 2): (allele, sep), (allele, end)
        if self.cols is not None:
            pairs = pairs[:, self.cols]
        raw = _classify(pairs, fixed)
        redo = fixed & (raw.max(axis=1) >= BAD)
        if redo.any():  # a fixed-width guess that was wrong: find the calls by their tabs
            calls = np.array(calls)
            self._gather(buf, lines, np.flatnonzero(redo), calls)
            sub = calls[redo].view(np.uint16)
            raw[redo] = _classify(sub[:, self.cols] if self.cols is not None else sub, np.zeros(redo.sum(), bool))
        alts = np.array(lines.alts)
        clean = (raw.max(axis=1) < BAD) & (alts == 1)
        if clean.all():
            return _clean(raw, stats), stats, None
        rows = np.repeat(np.arange(alts.size), np.where(alts > 1, alts, 1))  # output row -> record
        out = np.empty((rows.size, n), dtype=np.uint8)
        keep = clean[rows]
        if keep.any():
            out[keep] = _clean(raw[clean], stats)
        slow = np.flatnonzero(~clean)
        sel = calls[slow] if self.cols is None else calls[slow][:, self.cols]
        return out, stats, (~keep, (*(sel[..., c] for c in range(4)), alts[slow]))

    def _slow(self, a, s, b, t, alts) -> np.ndarray:
        """Records the common case does not cover, through the reader's own rules (vcf.py _codes)."""
        sep, end_s, end_t = IS_SEP[s], IS_END[s], IS_END[t]
        a0, a1 = DIGITS[a], DIGITS[b]
        a1[end_s] = -2  # a haploid call: one allele, then the end of the GT value
        valid = (a0 > -9) & ((sep & (a1 > -9) & end_t) | end_s)
        if not valid.all():
            raise _Stop  # two-digit alleles, polyploid calls, other characters
        rows = np.repeat(np.arange(len(alts)), np.where(alts > 1, alts, 1))
        alt_index = np.concatenate([np.arange(1, k + 1) if k > 1 else [1] for k in alts]).astype(np.int16)
        alleles = np.stack([a0[rows], a1[rows]], axis=-1)
        try:
            return self.r._codes(alleles, alt_index, alts[rows].astype(np.int16), _NoWhere())
        except Exception:
            raise _Stop from None  # an error: let cyvcf2 report it, in its own words


class _NoWhere:
    """`where` for _codes: never read, since any error hands the block over to cyvcf2."""

    def __getitem__(self, k):
        return ""
