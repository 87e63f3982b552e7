"""Signature FASTA reader (plain or gzip), streamed, with one-line errors.

IDs are the header up to the first whitespace, held to the rules of `ids.check_id` (UTF-8, no
control characters); sequence lines may be wrapped. Signatures need not have equal lengths;
they hold A, C, G, T, N (any case) only (`encode.check_signature`).
"""

from collections.abc import Iterator

import numpy as np

from genotile.errors import GenotileError
from genotile.io.fasta import header_id
from genotile.io.fastq import open_maybe_gzip
from genotile.io.ids import check_id
from genotile.screen.encode import check_signature


def read_signatures(path) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (id, sequence bytes as uint8 array) per FASTA record."""
    seen: dict[str, int] = {}
    name, number = None, 0
    chunks: list[bytes] = []

    def finish():
        seq = np.frombuffer(b"".join(chunks), dtype=np.uint8)
        check_signature(path, number, name, seq)
        return name, seq

    try:
        with open_maybe_gzip(path) as fh:
            for line_no, raw in enumerate(fh, start=1):
                line = raw.strip()
                if b"\r" in line:
                    raise GenotileError(
                        f"{path}: line {line_no}: a carriage return inside the line (CR-only line ends?): "
                        "convert them to LF"
                    )
                if name is None and line and not line.startswith(b">"):
                    shown = line[:40].decode("utf-8", "replace")
                    raise GenotileError(f"{path}: line {line_no}: not a FASTA file: it starts with {shown!r}")
                if line.startswith(b">"):
                    if name is not None:
                        yield finish()
                    number += 1
                    name = check_id(header_id(line[1:]), path, f"line {line_no}: record {number}")
                    if name in seen:
                        raise GenotileError(
                            f"{path}: line {line_no}: duplicate signature ID {name!r} "
                            f"(records {seen[name]} and {number})"
                        )
                    seen[name] = number
                    chunks = []
                elif line:
                    chunks.append(line)
    except FileNotFoundError:
        raise GenotileError(f"{path}: no such file") from None
    except (OSError, EOFError) as exc:
        raise GenotileError(f"{path}: cannot read: {exc}") from None
    if name is None:
        raise GenotileError(f"{path}: empty file, no signatures")
    yield finish()
