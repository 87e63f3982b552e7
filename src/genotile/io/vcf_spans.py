"""A text VCF's records as spans of whole lines, in file order, past its header.

Plain text is memory-mapped only to find where each span ends (`plain_spans`: the first
newline about CHUNK_BYTES past its start, less on smaller files so that every worker gets
several); a worker reads its span with pread into a buffer of its own (`PlainText.read`).
Compressed text is inflated ahead by a thread (`InflatedText`: BGZF in groups on workers,
bgzf.py; plain gzip, one deflate stream, by that thread alone) and cut here into spans of
lines, joining the line that straddles two pieces (`inflated_spans`). A span is
(buffer, start, end): the buffer a PlainText, bytes, or the uint8 array of BGZF text.
Anything odd (a header that is not VCF's, a read or format error) raises HandOver: the
reader goes on with cyvcf2, which reports it in its own words.
"""

import contextlib
import mmap
import os
import queue
import threading
import zlib
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from genotile.io import bgzf

CHUNK_BYTES = 1 << 24  # text per block
MAP_MIN_CHUNK = 1 << 20  # plain text: spans of at least this (or CHUNK_BYTES if smaller), see plain_spans
TAB, NL = 9, 10


class HandOver(Exception):
    """The block holds something the fast path does not handle: hand over to cyvcf2."""


class PlainText:
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
    def open(path) -> "PlainText | None":
        """The file when it is plain text; None for gzip or BGZF (or an empty file)."""
        with open(path, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b" or os.fstat(fh.fileno()).st_size == 0:
                return None
        return PlainText(path)

    def read(self, start: int, end: int) -> np.ndarray:
        """(end - start,) uint8: the text of [start, end), in this thread's buffer (valid until
        its next read); HandOver if the file ends early (it shrank)."""
        buf = getattr(self.local, "buf", None)
        if buf is None or len(buf) < end - start:
            buf = self.local.buf = bytearray(end - start + (1 << 20))
        view, got = memoryview(buf), 0
        while got < end - start:
            n = _pread_into(self.fd, view[got : end - start], start + got)
            if n <= 0:
                raise HandOver
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


def own_span(span: tuple) -> tuple:
    """The span with its text as bytes: a plain file's span or BGZF text copied (the numpy
    path splits, counts and views its buffer whole)."""
    buf, start, end = span
    if isinstance(buf, (PlainText, np.ndarray)):
        buf = buf.mm[start:end] if isinstance(buf, PlainText) else buf[start:end].tobytes()
        return buf, 0, len(buf)
    return span


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


class InflatedText:
    """Decompressed text in chunks of about CHUNK_BYTES, read ahead by a thread; b"" at the end.

    BGZF: the thread cuts the file into groups of blocks (CHUNK_BYTES of text), which
    `threads` workers inflate side by side (bgzf.py: libdeflate or zlib, both release the GIL),
    each block's CRC32 and size checked as htslib does; other gzip files stream through one zlib
    object per member in the thread; plain text is read as is. A read or format error ends
    the fast path (`HandOver`): cyvcf2 then reads on and reports it.
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
            for comp, blocks, size in bgzf.groups(fh, self._chunk, self._stop):
                self._put(pool.submit(bgzf.inflate_group, comp, blocks, size))
        finally:
            # the queued groups are still to be read, unless the reader stopped
            pool.shutdown(wait=False, cancel_futures=self._stop.is_set())

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
                    raise HandOver from exc
                if not len(item):  # empty blocks only (an EOF marker): no text, not the end
                    continue
            if isinstance(item, BaseException):
                raise HandOver from item
            return item

    def close(self):
        self._stop.set()
        self._thread.join()


def header_end(buf, pos: int, final: bool, file_samples: list[str]) -> tuple[bool, int]:
    """(True, offset of the first record) once buf (bytes or a map) holds the whole header
    from `pos`, its #CHROM line checked; else (False, start of the unfinished line), or
    HandOver when `final` (no more text) or the header is odd; the #CHROM line must name
    `file_samples`."""
    while True:
        end = buf.find(b"\n", pos)
        if end < 0:
            if final:
                raise HandOver  # a header without records, or no newline: let cyvcf2 decide
            return False, pos
        line = buf[pos:end]
        if not line.startswith(b"#"):
            raise HandOver  # records before the #CHROM line
        if line.startswith(b"#CHROM"):
            names = line.rstrip(b"\r").split(b"\t")[9:]
            if [n.decode("utf-8", "replace") for n in names] != file_samples:
                raise HandOver
            return True, end + 1
        pos = end + 1


def skip_header(text: InflatedText, file_samples: list[str]) -> tuple[bytes, int]:
    """(first chunk of text, offset of the first record) past the header; HandOver if odd."""
    buf, pos = b"", 0
    while True:
        chunk = text.get()
        buf = buf[pos:] + bytes(chunk)
        done, pos = header_end(buf, 0, not len(chunk), file_samples)
        if done:
            return buf, pos


def inflated_spans(text: InflatedText, file_samples: list[str]):
    """(buffer, start, end) spans of whole lines, in file order, past the header (the
    buffer bytes, or the uint8 array of BGZF text; the lines across two pieces as bytes)."""
    buf, pos = skip_header(text, file_samples)
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


def plain_spans(plain: PlainText, threads: int, file_samples: list[str]):
    """(plain, start, end) spans of whole lines of a plain text, past the header.

    Each span ends at the first newline from about `step` bytes past its start (found in the
    map, touching only the pages around it), so a span is whole lines whatever its size;
    the last line, when it has no newline, is copied with one (a bytes span). `step` is
    CHUNK_BYTES, or less on smaller files so that each of the `threads` gets about four.
    """
    mm = plain.mm
    pos = header_end(mm, 0, True, file_samples)[1]
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
