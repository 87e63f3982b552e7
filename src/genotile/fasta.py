"""Streaming FASTA alignment reader (pysam), with the checks a user needs.

Yields one record at a time, so an alignment never has to fit in memory.
IDs are the header up to the first whitespace, as snp-dists and pysam read them.
"""

import gzip
import os
from collections.abc import Iterator

import numpy as np

from .errors import GenotileError


def open_maybe_gzip(path):
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
        with open_maybe_gzip(path) as fh:
            head = fh.read(4096)
    except (OSError, EOFError) as exc:
        raise GenotileError(f"{path}: cannot read: {exc}") from None
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if not text:
        raise GenotileError(f"{path}: empty file, no sequences")
    if not text.startswith(b">"):
        first = text.splitlines()[0][:40].decode("ascii", "replace")
        hint = " (it looks like a VCF)" if first.startswith("##fileformat=VCF") else ""
        raise GenotileError(f"{path}: not a FASTA file: line 1 starts with {first!r}{hint}")


def read_alignment(path) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (id, bytes as uint8 array) per record; check IDs and equal lengths."""
    import pysam

    check_fasta(path)
    seen: dict[str, int] = {}
    length = None
    try:
        with pysam.FastxFile(str(path)) as fx:
            for number, rec in enumerate(fx, start=1):
                name = rec.name or ""
                if not name:
                    raise GenotileError(f"{path}: record {number} has an empty ID")
                if name in seen:
                    raise GenotileError(
                        f"{path}: duplicate sequence ID {name!r} (records {seen[name]} and {number})"
                    )
                seen[name] = number
                seq = rec.sequence or ""
                try:
                    raw = np.frombuffer(seq.encode("ascii"), dtype=np.uint8)
                except UnicodeEncodeError:
                    raise GenotileError(
                        f"{path}: record {number} ({name!r}) has a non-ASCII character in its sequence"
                    ) from None
                if length is None:
                    length = raw.size
                elif raw.size != length:
                    raise GenotileError(
                        f"{path}: sequence {name!r} (record {number}) has length {raw.size}, "
                        f"but the first sequence has length {length}: not an alignment"
                    )
                yield name, raw
    except (OSError, ValueError, EOFError) as exc:
        raise GenotileError(f"{path}: cannot parse as FASTA: {exc}") from None
    if length is None:
        raise GenotileError(f"{path}: no sequences")
