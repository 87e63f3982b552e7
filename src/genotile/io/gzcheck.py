"""Truncated and damaged compressed inputs: found and said in one line, htslib kept quiet.

- A BGZF file (bgzip, BCF) ends with an empty end-of-file block. One cut at a block
  boundary is still a valid gzip stream, so only that block shows it: its absence is
  refused (`check_bgzf_end`) where htslib merely warns and reads on.
- `diagnose(path)` says why a gzip/BGZF stream cannot be read to its end (truncated, bad
  CRC, not gzip past some offset), for errors that htslib reports as a parse failure.
- `quiet_htslib()` turns off the log of the htslib inside cyvcf2 (its `[E::bgzf_read]`
  lines on stderr): every problem it would print is reported by genotile in one line.
"""

import os
import zlib

from genotile.errors import GenotileError

BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
READ = 1 << 22


def is_bgzf(path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(16)
    return len(head) >= 16 and head[:2] == b"\x1f\x8b" and bool(head[3] & 4) and head[12:14] == b"BC"


def check_bgzf_end(path) -> None:
    """Refuse a BGZF file without its end-of-file block (plain gzip and text pass)."""
    try:
        if not is_bgzf(path):
            return
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - len(BGZF_EOF)))
            tail = fh.read()
    except OSError:
        return  # not readable: the reader says so in its own words
    if tail != BGZF_EOF:
        raise GenotileError(
            f"{path}: BGZF file without its end-of-file block: truncated? "
            "(bgzip always writes one; compress the complete file again)"
        )


def diagnose(path) -> str | None:
    """Why the gzip stream of `path` cannot be read to its end, or None (not gzip, or whole).

    Reads the whole file: for error messages only.
    """
    try:
        with open(path, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return None
            fh.seek(0)
            d, fed, pending = zlib.decompressobj(wbits=31), False, b""
            while True:
                if not pending:
                    pending = fh.read(READ)
                if not pending:
                    return None if not fed or d.eof else "truncated gzip file: the compressed data ends early"
                try:
                    d.decompress(pending, READ)
                except zlib.error as exc:
                    return f"damaged gzip data near byte {fh.tell()}: {exc}"
                fed, pending = True, d.unconsumed_tail
                if d.eof:
                    pending = d.unused_data
                    d, fed = zlib.decompressobj(wbits=31), False
    except OSError:
        return None


_quiet = False


def quiet_htslib() -> None:
    """Set the log level of cyvcf2's htslib to off (once per process)."""
    global _quiet
    if _quiet:
        return
    try:
        import ctypes

        from cyvcf2 import cyvcf2 as ext

        ctypes.CDLL(ext.__file__).hts_set_log_level(0)  # HTS_LOG_OFF
    except (ImportError, OSError, AttributeError):
        return  # an htslib that exports no log level: its messages stay
    _quiet = True
