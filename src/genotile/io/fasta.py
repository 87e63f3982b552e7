"""Streaming FASTA alignment reader, with the checks a user needs.

Yields one record at a time, so an alignment never has to fit in memory: the file
(plain, gzip or BGZF) is read CHUNK bytes at a time, and memory holds one record's
sequence plus one chunk, whatever the file expands to.
IDs are the header up to the first whitespace, as snp-dists and pysam read them;
the rest of the header is ignored. Line ends may be LF or CRLF, blank lines are
skipped, a UTF-8 byte-order mark at the start is ignored, and every other byte of a
sequence line is a symbol (as pysam's kseq reads them).

What is refused, in one line naming the file and the record: an ID that is not UTF-8
text or holds control characters (see ids.py), a non-ASCII byte in a sequence, a gzip
stream that ends before its end marker or fails its CRC (truncated or damaged), a BGZF
file without its end-of-file block (truncated at a block boundary, which gzip itself
cannot notice), unequal lengths, duplicate IDs.
"""

import gzip
import os
import re
import zlib
from collections.abc import Iterator

import numpy as np

from genotile.errors import GenotileError
from genotile.io.gzcheck import check_bgzf_end
from genotile.io.ids import check_id

CHUNK = 1 << 22  # bytes read at a time
MAX_HEADER = 1 << 20  # a header line longer than this is refused (it is held in memory)
BOM = b"\xef\xbb\xbf"
_WHITESPACE = re.compile(rb"[ \t\n\r\v\f]")


def header_id(header: bytes) -> bytes:
    """The ID of a header line (without its '>' or '@'): the bytes up to the first whitespace."""
    return _WHITESPACE.split(header, maxsplit=1)[0]


def open_maybe_gzip(path):
    """A binary file object of `path`, decompressed when it is gzip or BGZF."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def check_fasta(path) -> None:
    """Fail clearly on a missing, empty or non-FASTA file before parsing it."""
    if not os.path.exists(path):
        raise GenotileError(f"{path}: no such file")
    if os.path.isdir(path):
        raise GenotileError(f"{path}: is a directory, not a FASTA file")
    try:
        head = b""
        for chunk in _chunks(path):
            head += chunk
            if len(head) >= 4096:
                break
    except OSError as exc:
        raise GenotileError(f"{path}: cannot read: {exc}") from None
    text = head.removeprefix(BOM).lstrip()
    if not text:
        raise GenotileError(f"{path}: empty file, no sequences")
    if b"\r" in head and b"\n" not in head:
        raise GenotileError(
            f"{path}: CR-only line ends (classic Mac OS text): convert them to LF, e.g. `tr '\\r' '\\n'`"
        )
    if not text.startswith(b">"):
        first = text.splitlines()[0][:40].decode("ascii", "replace")
        hint = " (it looks like a VCF)" if first.startswith("##fileformat=VCF") else ""
        raise GenotileError(f"{path}: not a FASTA file: line 1 starts with {first!r}{hint}")
    check_bgzf_end(path)


def _inflate(fh, path) -> Iterator[bytes]:
    """Decompressed chunks (at most CHUNK bytes each) of a gzip stream of one or more members
    (BGZF is many); zlib checks each member's CRC and size. Memory stays bounded whatever the
    stream expands to."""
    d, fed = zlib.decompressobj(wbits=31), False
    pending = b""  # compressed bytes not yet given to `d`
    while True:
        if not pending:
            pending = fh.read(max(1, CHUNK // 4))
        try:
            if not pending:  # end of the file
                out = d.flush() if fed else b""
                if out:
                    yield out
                if fed and not d.eof:
                    raise GenotileError(f"{path}: truncated gzip file: the compressed data ends before its end marker")
                return
            out = d.decompress(pending, CHUNK)
        except zlib.error as exc:
            raise GenotileError(f"{path}: damaged gzip data near byte {fh.tell()}: {exc}") from None
        fed = True
        pending = d.unconsumed_tail
        if out:
            yield out
        if d.eof:  # the member ended; another may follow
            pending = d.unused_data
            d, fed = zlib.decompressobj(wbits=31), False
            if pending[:1] == b"\0" or (not pending and fh.peek(1)[:1] == b"\0"):
                # zero padding after the last member (tape blocks; GNU gzip ignores it): a member
                # starts with 0x1f, so only zeros may follow to the end
                while pending:
                    if pending.strip(b"\0"):
                        raise GenotileError(
                            f"{path}: damaged gzip data near byte {fh.tell()}: "
                            "bytes after the zero padding that ends the last member"
                        )
                    pending = fh.read(CHUNK)
                return


def _chunks(path) -> Iterator[bytes]:
    """The file's (decompressed) bytes, about CHUNK at a time; a damaged gzip stream is an error."""
    with open(path, "rb") as fh:
        if fh.peek(2)[:2] != b"\x1f\x8b":
            yield from iter(lambda: fh.read(CHUNK), b"")
            return
        yield from _inflate(fh, path)


def count_records(path) -> int:
    """The records of a FASTA file (plain, gzip or BGZF): its lines that start with '>', as
    `raw_records` splits them, counted in one pass over its bytes (none held)."""
    chunks = _chunks(path)
    head = b""
    for chunk in chunks:  # a byte-order mark and blank lines before the first record, as raw_records skips them
        head += chunk
        if len(head) >= len(BOM) and head.removeprefix(BOM).strip():
            break
    first = head.removeprefix(BOM).lstrip()
    n, last = int(first[:1] == b">") + first.count(b"\n>"), first[-1:] or b"\n"
    for chunk in chunks:
        if chunk:
            n += chunk.count(b"\n>") + (last == b"\n" and chunk[:1] == b">")
            last = chunk[-1:]
    return n


def raw_records(path) -> Iterator[tuple[bytes, bytes]]:
    """(header line without '>' and line end, sequence bytes without line ends) per record.

    A record ends at a '>' that starts a line. '>' is rare in sequence text, so it is found
    by a byte search and its line start checked; the sequence pieces are views of the chunks,
    joined once per record.
    """
    chunks = _chunks(path)
    buf, pos = b"", 0
    line_start = True  # whether buf[0] starts a line

    def advance() -> bool:
        nonlocal buf, pos, line_start
        chunk = next(chunks, None)
        if chunk is None:
            return False
        line_start = buf[-1:] == b"\n" if buf else True
        buf, pos = chunk, 0
        return True

    if not advance():
        return
    while len(buf) < len(BOM) and (chunk := next(chunks, None)) is not None:  # a BOM across chunks
        buf += chunk
    if buf.startswith(BOM):
        pos = len(BOM)
    while True:  # blank lines before the first record (check_fasta found a '>' after them)
        pos = len(buf) - len(buf[pos:].lstrip())
        if pos < len(buf):
            break
        if not advance():
            return
    number = 0
    while pos < len(buf) or advance():
        number += 1  # buf[pos] is the '>' of a header
        parts = []
        while True:
            nl = buf.find(b"\n", pos)
            parts.append(buf[pos : nl if nl >= 0 else len(buf)])
            if nl >= 0:
                pos = nl + 1
                break
            if sum(map(len, parts)) > MAX_HEADER:
                raise GenotileError(f"{path}: record {number}: header line longer than {MAX_HEADER} bytes")
            pos = len(buf)
            if not advance():
                break
        header = b"".join(parts)[1:].rstrip(b"\r")
        pieces = []
        while pos < len(buf) or advance():
            gt = buf.find(b">", pos)
            while gt >= 0 and not (buf[gt - 1] == 10 if gt > 0 else line_start):
                gt = buf.find(b">", gt + 1)
            view = memoryview(buf)
            if gt >= 0:
                pieces.append(view[pos:gt])
                pos = gt
                break
            pieces.append(view[pos:])
            pos = len(buf)
        yield header, b"".join(pieces).translate(None, b"\r\n")


def record_id(header: bytes, path, number: int, seen: dict[str, int]) -> str:
    """The ID of record `number` (header without '>' and line end): the header up to the first
    whitespace, checked (ids.py) and refused when `seen` (ID -> record number) holds it already.
    `> a` has an empty ID (as pysam's kseq and snp-dists read it), refused by check_id."""
    if b"\r" in header:  # a CR that ends no line: the file's lines end in CR alone
        raise GenotileError(
            f"{path}: record {number}: a carriage return inside the header line (CR-only line ends?): "
            "convert them to LF"
        )
    name = check_id(header_id(header), path, f"record {number}")
    if name in seen:
        raise GenotileError(f"{path}: duplicate sequence ID {name!r} (records {seen[name]} and {number})")
    seen[name] = number
    return name


def read_alignment(path) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (id, bytes as uint8 array) per record; check IDs and equal lengths."""
    check_fasta(path)
    seen: dict[str, int] = {}
    length = None
    for number, (header, seq) in enumerate(raw_records(path), start=1):
        name = record_id(header, path, number, seen)
        raw = np.frombuffer(seq, dtype=np.uint8)
        high = np.flatnonzero(raw >= 0x80)
        if high.size:
            raise GenotileError(
                f"{path}: record {number} ({name!r}) has a non-ASCII character in its sequence "
                f"(byte 0x{raw[high[0]]:02x} at position {high[0] + 1})"
            )
        if length is None:
            length = raw.size
        elif raw.size != length:
            raise GenotileError(
                f"{path}: sequence {name!r} (record {number}) has length {raw.size}, "
                f"but the first sequence has length {length}: not an alignment"
            )
        yield name, raw
    if length is None:
        raise GenotileError(f"{path}: no sequences")
