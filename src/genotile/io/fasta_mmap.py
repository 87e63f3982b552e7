"""One-pass reading of a regular, uncompressed FASTA alignment over a memory map.

Most alignments are written by a program: every record has its sequence on the same number
of lines, every line but the last of a record has the same width, and so does every last
line. Then the line structure is found once with numpy (the newlines and the '>' that start
lines), the sequence bytes of any rows are gathered from the map by strided copies, and the
file is never parsed record by record.

`open_regular(path)` returns a `RegularFasta`, or None whenever the file is anything else:
compressed, a byte-order mark, blank lines, mixed LF / CRLF line ends, records wrapped
differently, unequal lengths, empty sequences, a header longer than fasta.MAX_HEADER. The
caller then reads it with the streaming reader (fasta.read_alignment), which stays the
reference: it handles every layout and gives every error its one-line message. IDs are
checked here with the same rules and messages (fasta.record_id); `rows` returns raw bytes,
and the caller must hand the file to the streaming reader when a row holds a byte the fast
path does not take (`clean`: a control character such as a stray CR, or a non-ASCII byte).
"""

import mmap
import os
from dataclasses import dataclass

import numpy as np

from genotile.io.fasta import MAX_HEADER, record_id

GT, LF, CR = ord(">"), ord("\n"), ord("\r")
LOWEST, HIGHEST = 14, 127  # sequence bytes the fast path takes (CR = 13 and below, and >= 128, are not)


@dataclass
class RegularFasta:
    """The layout of a regular alignment; `rows(r0, r1)` gathers sequences r0..r1-1."""

    buf: np.ndarray  # the file's bytes (a read-only memory map)
    ids: list[str]
    starts: np.ndarray  # (n,) int64: offset of each sequence's first byte
    lines: int  # sequence lines per record
    width: int  # bytes of every sequence line but the last of a record
    last: int  # bytes of the last sequence line of a record
    stride: int  # width + line end (1 or 2 bytes)

    @property
    def n(self) -> int:
        return self.starts.size

    @property
    def length(self) -> int:
        return (self.lines - 1) * self.width + self.last

    def rows(self, r0: int, r1: int, out: np.ndarray | None = None) -> np.ndarray:
        """Sequences r0..r1-1 as a (r1 - r0, length) uint8 array of their bytes."""
        count = r1 - r0
        if out is None:
            out = np.empty((count, self.length), dtype=np.uint8)
        body = (self.lines - 1) * self.width
        starts = self.starts[r0:r1]
        spacing = np.diff(starts)
        if count > 1 and (spacing == spacing[0]).all():  # equally spaced records: one strided view
            step = int(spacing[0])
            if body:
                full = np.lib.stride_tricks.as_strided(
                    self.buf[int(starts[0]) :],
                    shape=(count, self.lines - 1, self.width),
                    strides=(step, self.stride, 1),
                )
                out[:, :body].reshape(count, self.lines - 1, self.width)[:] = full
            last = np.lib.stride_tricks.as_strided(
                self.buf[int(starts[0]) + (self.lines - 1) * self.stride :],
                shape=(count, self.last),
                strides=(step, 1),
            )
            out[:, body:] = last
            return out
        for k, s in enumerate(starts.tolist()):
            if body:
                lines = self.buf[s : s + (self.lines - 1) * self.stride].reshape(self.lines - 1, self.stride)
                out[k, :body].reshape(self.lines - 1, self.width)[:] = lines[:, : self.width]
            tail = s + (self.lines - 1) * self.stride
            out[k, body:] = self.buf[tail : tail + self.last]
        return out


def clean(rows: np.ndarray) -> bool:
    """Whether every byte is one the fast path takes: printable ASCII (no CR, no byte >= 128)."""
    return rows.size == 0 or (int(rows.min()) >= LOWEST and int(rows.max()) <= HIGHEST)


def _map(path) -> np.ndarray:
    """The file's bytes, memory-mapped read-only; its pages faulted in by one call where the
    system can (MAP_POPULATE, Linux): one page fault at a time costs more than the reading."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return np.zeros(0, dtype=np.uint8)
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        return np.frombuffer(mmap.mmap(fh.fileno(), size, flags=flags, prot=mmap.PROT_READ), dtype=np.uint8)


NEWLINE_CHUNK = 1 << 26  # bytes a thread scans for newlines
NEWLINE_BLOCK = 1 << 20  # bytes compared at a time (the compare's booleans stay in cache)


def _newlines(buf: np.ndarray) -> np.ndarray:
    """Offsets of every LF in `buf`, found on several threads (numpy releases the GIL), in order."""

    def scan(start: int) -> np.ndarray:
        stop = min(buf.size, start + NEWLINE_CHUNK)
        equal = np.empty(min(NEWLINE_BLOCK, stop - start), dtype=bool)
        found = [np.zeros(0, dtype=np.int64)]
        for b0 in range(start, stop, NEWLINE_BLOCK):
            block = equal[: min(NEWLINE_BLOCK, stop - b0)]
            np.equal(buf[b0 : b0 + block.size], LF, out=block)
            found.append(np.flatnonzero(block) + b0)
        return np.concatenate(found)

    if buf.size <= NEWLINE_CHUNK:
        return scan(0)
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    with ThreadPoolExecutor(usable_cpus(8), thread_name_prefix="genotile-lines") as pool:
        return np.concatenate(list(pool.map(scan, range(0, buf.size, NEWLINE_CHUNK))))


def open_regular(path, start: int = 0) -> RegularFasta | None:
    """The layout of `path` when it is a regular uncompressed alignment, else None (see above).

    `start`: of the records from that byte on only (a record starts there), read into memory
    (records appended to an alignment: store/extend.py); their offsets are from `start`, their
    record numbers in errors from the first of them.

    Raises fasta.record_id's errors (bad or duplicate IDs) as the streaming reader would.
    """
    with open(path, "rb") as fh:
        if fh.read(2) == b"\x1f\x8b":
            return None
    buf = _map(path) if not start else np.fromfile(path, dtype=np.uint8, offset=start)
    size = buf.size
    if size == 0 or buf[0] != GT:  # empty, a byte-order mark, blank lines first: the streaming reader
        return None
    newlines = _newlines(buf)
    ends = newlines if buf[-1] == LF else np.append(newlines, size)  # a last line without its newline
    starts = np.concatenate(([0], ends[:-1] + 1))
    if ends.size == 0 or (ends <= starts).any():  # blank lines
        return None
    cr = buf[ends - 1] == CR
    if cr.all():
        eol = 2
    elif not cr.any():
        eol = 1
    else:  # mixed line ends
        return None
    content_end = ends - (eol - 1)
    widths = content_end - starts
    if (widths <= 0).any():
        return None
    header = buf[starts] == GT
    heads = np.flatnonzero(header)
    n = heads.size
    lines = starts.size // n - 1
    if lines < 1 or starts.size != n * (lines + 1) or (heads != np.arange(n) * (lines + 1)).any():
        return None
    seq_widths = widths[~header].reshape(n, lines)
    width, last = int(seq_widths[0, 0]), int(seq_widths[0, -1])
    if (seq_widths[:, -1] != last).any() or (lines > 1 and ((seq_widths[:, :-1] != width).any() or last > width)):
        return None  # wrapped differently, or unequal lengths: the streaming reader says which
    if lines == 1:
        width = last
    head_start, head_end = starts[heads] + 1, content_end[heads]
    if ((head_end - head_start) > MAX_HEADER).any():
        return None
    ids = _plain_ids(buf, head_start, head_end)
    if ids is None:  # record by record: every rule, and the first bad record named
        seen: dict[str, int] = {}
        ids = [
            record_id(buf[a:b].tobytes(), path, number, seen)
            for number, (a, b) in enumerate(zip(head_start.tolist(), head_end.tolist(), strict=True), start=1)
        ]
    return RegularFasta(buf, ids, starts[heads + 1].astype(np.int64), lines, width, last, width + eol)


def _plain_ids(buf: np.ndarray, head_start: np.ndarray, head_end: np.ndarray) -> list[str] | None:
    """The IDs of headers that need no check record by record (fasta.record_id would take them
    all): printable ASCII, no whitespace but spaces (an ID ends at the first), no empty ID, no ID
    twice. Gathered in one copy and split at C speed, where record_id takes ~10 us a record (0.2 s
    for 20,000 on a 2-core VM); None where any header is otherwise, for record_id to say which."""
    lengths = head_end - head_start
    n = lengths.size
    if n == 0 or (lengths <= 0).any():
        return None
    ends = np.cumsum(lengths + 1)  # `out`: each header, then a LF (none inside: they are lines)
    firsts = ends - lengths - 1
    body = np.ones(int(ends[-1]), dtype=bool)
    body[ends - 1] = False
    places = np.flatnonzero(body)
    out = np.full(body.size, LF, dtype=np.uint8)
    out[places] = text = buf[places + np.repeat(head_start - firsts, lengths)]
    if (text < ord(" ")).any() or (text >= 0x7F).any() or (out[firsts] == ord(" ")).any():
        return None
    heads = out.tobytes().decode("ascii").split("\n")[:-1]
    ids = [h.partition(" ")[0] for h in heads] if (text == ord(" ")).any() else heads
    return ids if len(set(ids)) == n else None
