"""gzip compressed by several threads: one gzip member whose deflate stream is made of blocks.

Each block of text is deflated on its own (zlib releases the GIL while it compresses) and
ends with a sync flush, which closes it on a byte boundary, so the blocks' streams concatenate
into one valid deflate stream (as pigz does, without the previous block as a dictionary); an
empty final block ends it, then the CRC-32 and size of the whole text. The bytes depend on the
blocks and the level alone, not on the number of threads. The header is Python's gzip module's
with no name and mtime 0: equal texts cut into equal blocks give equal files.
"""

import hashlib
import os
import struct
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

MAX_THREADS = 16


def default_threads() -> int:
    """The CPUs this process may use, at most MAX_THREADS."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, usable))


def header(level: int) -> bytes:
    """gzip.GzipFile's header for filename "" and mtime 0 (XFL 2 at level 9, 4 at level 1)."""
    xfl = b"\x02" if level == 9 else b"\x04" if level == 1 else b"\x00"
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + xfl + b"\xff"


def deflate(data: bytes, level: int) -> bytes:
    """One block's deflate stream, ended by a sync flush (on a byte boundary)."""
    z = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)


def inflate(packed: bytes) -> bytes:
    """The text of one block `deflate` made (a raw deflate stream that ends in a sync flush,
    with no final block: zlib.decompress would call it truncated)."""
    return zlib.decompressobj(-zlib.MAX_WBITS).decompress(packed)


def trailer(level: int, crc: int, size: int) -> bytes:
    """What follows the last block: an empty final deflate block, the CRC-32 and the size."""
    last = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return last.flush(zlib.Z_FINISH) + struct.pack("<II", crc, size & 0xFFFFFFFF)


def _deflate(make: Callable[[], bytes], level: int, digest: bool) -> tuple[bytes, bytes, str]:
    data = make()
    packed = deflate(data, level)
    return data, packed, hashlib.sha256(packed).hexdigest() if digest else ""


def write_gzip(
    fh, blocks: Iterable[Callable[[], bytes]], level: int, threads: int | None = None, index: list | None = None
) -> int:
    """Write to binary file `fh` the gzip of the concatenated blocks; return the text's size.

    Parameters
    ----------
    fh : binary file
    blocks : iterable of callables
        Each returns one block's text; called (and the block compressed) on a worker thread,
        a few blocks ahead of the one being written.
    level : int
        zlib compression level.
    threads : int, optional
        Worker threads (default: `default_threads()`); 1 compresses in this thread.
    index : list, optional
        Where each block's (text bytes, compressed bytes, SHA-256 of the compressed bytes) is
        appended in order: what a reader needs to check and inflate blocks on their own
        (pairs/splice.py).

    Returns
    -------
    int
        Bytes of text (before compression).
    """
    threads = default_threads() if threads is None else max(1, threads)
    crc, size = 0, 0
    fh.write(header(level))

    def put(data: bytes, packed: bytes, digest: str) -> None:
        nonlocal crc, size
        crc = zlib.crc32(data, crc)
        size += len(data)
        fh.write(packed)
        if index is not None:
            index.append((len(data), len(packed), digest))

    digest = index is not None
    if threads == 1:
        for make in blocks:
            put(*_deflate(make, level, digest))
    else:
        with ThreadPoolExecutor(threads) as pool:
            pending: deque = deque()
            for make in blocks:
                pending.append(pool.submit(_deflate, make, level, digest))
                if len(pending) >= 2 * threads:
                    put(*pending.popleft().result())
            while pending:
                put(*pending.popleft().result())
    fh.write(trailer(level, crc, size))
    return size
