"""Streaming FASTQ reader (plain or gzip) with the checks a user needs.

Four-line records (`@name [description]`, sequence, `+[name]`, quality), one record at a time.
IDs are the header up to the first whitespace, held to the rules of `ids.check_id` (UTF-8, no
control characters). Qualities are Phred+33: characters '!' .. '~'.
Every problem is one GenotileError naming the file, the line and the record.
"""

import gzip
import os
from collections.abc import Iterator

import numpy as np

from genotile.errors import GenotileError
from genotile.io.fasta import header_id
from genotile.io.gzcheck import check_bgzf_end
from genotile.io.ids import check_id

PHRED_OFFSET = 33
QUAL_MIN, QUAL_MAX = ord("!"), ord("~")


def open_maybe_gzip(path):
    """A binary file handle, gunzipping when the file starts with the gzip magic."""
    if os.path.isdir(path):
        raise GenotileError(f"{path}: is a directory, not a file")
    with open(path, "rb") as fh:
        magic = fh.read(2)
    check_bgzf_end(path)  # a bgzip file cut at a block boundary is otherwise a valid, shorter file
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _lines(path):
    try:
        with open_maybe_gzip(path) as fh:
            for number, raw in enumerate(fh, start=1):
                line = raw.rstrip(b"\r\n")
                if b"\r" in line:
                    raise GenotileError(
                        f"{path}: line {number}: a carriage return inside the line (CR-only line ends?): "
                        "convert them to LF"
                    )
                yield number, line
    except FileNotFoundError:
        raise GenotileError(f"{path}: no such file") from None
    except (OSError, EOFError) as exc:
        raise GenotileError(f"{path}: cannot read: {exc}") from None


def read_fastq(path) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Yield (id, sequence bytes, quality bytes) per record, both uint8 arrays of equal length."""
    seen: dict[str, int] = {}
    lines = _lines(path)
    record = 0
    for number, header in lines:
        if not header.strip():
            continue  # blank lines between records; an empty file is caught below
        record += 1
        if not header.startswith(b"@"):
            shown = header[:40].decode("utf-8", "replace")
            hint = " (it looks like FASTA)" if header.startswith(b">") else ""
            raise GenotileError(f"{path}: line {number}: record {record} should start with '@', found {shown!r}{hint}")
        name = check_id(header_id(header[1:]), path, f"line {number}: record {record}")
        if name in seen:
            raise GenotileError(
                f"{path}: line {number}: duplicate sample ID {name!r} (records {seen[name]} and {record})"
            )
        seen[name] = record
        rest = [item for item in (next(lines, None) for _ in range(3)) if item is not None]
        if len(rest) < 3:
            raise GenotileError(
                f"{path}: line {number}: record {record} ({name!r}) is cut short: a FASTQ record has 4 lines"
            )
        (_, seq), (plus_no, plus), (qual_no, qual) = rest
        if not plus.startswith(b"+"):
            raise GenotileError(
                f"{path}: line {plus_no}: record {record} ({name!r}) should have a '+' line here "
                "(multi-line FASTQ records are not supported)"
            )
        if len(qual) != len(seq):
            raise GenotileError(
                f"{path}: line {qual_no}: record {record} ({name!r}) has {len(qual)} quality characters "
                f"for {len(seq)} bases"
            )
        if not seq:
            raise GenotileError(f"{path}: line {number + 1}: record {record} ({name!r}) has an empty sequence")
        q = np.frombuffer(qual, dtype=np.uint8)
        bad = np.flatnonzero((q < QUAL_MIN) | (q > QUAL_MAX))
        if bad.size:
            raise GenotileError(
                f"{path}: line {qual_no}: record {record} ({name!r}) has quality character "
                f"{chr(q[bad[0]])!r} at position {bad[0] + 1}, outside Phred+33 ('!' .. '~')"
            )
        s = np.frombuffer(seq, dtype=np.uint8)
        if (s > 127).any() or (s <= 32).any():
            pos = int(np.flatnonzero((s > 127) | (s <= 32))[0])
            raise GenotileError(
                f"{path}: line {number + 1}: record {record} ({name!r}) has a non-sequence byte at position {pos + 1}"
            )
        yield name, s, q
    if record == 0:
        raise GenotileError(f"{path}: empty file, no FASTQ records")
