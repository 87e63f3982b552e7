"""Checksums of files: the SHA-256 that manifests and summaries record (`file_sha256`, what
`sha256sum` prints), and the content digest that input fingerprints compare (`file_digest`:
the pieces of a file hashed on threads, so that parsing the workflow does not wait seconds on
one SHA-256 stream over a multi-GB input)."""

import hashlib
import os

READ = 1 << 22  # bytes read at a time
PIECE = 1 << 26  # bytes of a file hashed as one piece by file_digest; part of its definition


def file_sha256(path) -> str:
    """The SHA-256 of a file's content, as hex (what `sha256sum` prints).

    Parameters
    ----------
    path : str or os.PathLike
        A readable file.

    Returns
    -------
    str
        64 hex digits.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(READ), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_digest(path) -> str:
    """The SHA-256 of the SHA-256s of a file's PIECE-byte pieces (the last one shorter), hex.

    Pieces are read with pread and hashed on threads (hashlib releases the GIL): 8 GB in about a
    second from the page cache on 16 cores, where one SHA-256 stream takes about 5 s. Equal for
    equal content, different for (in practice) any other; not comparable with `file_sha256`.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as fh:
    ...     _ = fh.write(b"abc"); fh.flush()
    ...     file_digest(fh.name) == hashlib.sha256(hashlib.sha256(b"abc").digest()).hexdigest()
    True
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size

        def piece(offset: int) -> bytes:
            h = hashlib.sha256()
            for start in range(offset, min(size, offset + PIECE), READ):
                h.update(os.pread(fh.fileno(), min(READ, offset + PIECE - start, size - start), start))
            return h.digest()

        pieces = piece_digests(size, piece)
    outer = hashlib.sha256()
    for d in pieces:
        outer.update(d)
    return outer.hexdigest()


def piece_digests(size: int, digest_of, piece: int = PIECE) -> list[bytes]:
    """[digest_of(offset) for each piece of `size` bytes], pieces of `piece` bytes hashed on
    threads (`digests_on_threads`): the pieces of `file_digest`."""
    return digests_on_threads(digest_of, range(0, size, piece))


def digests_on_threads(digest_of, items) -> list[bytes]:
    """[digest_of(item) for item in items], on threads where there are several (hashlib releases
    the GIL on large buffers): `piece_digests`, and the pieces of a tile file's arrays
    (io/tilefile.py)."""
    items = list(items)
    if len(items) <= 1:
        return [digest_of(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    with ThreadPoolExecutor(usable_cpus(16), thread_name_prefix="genotile-digest") as pool:
        return list(pool.map(digest_of, items))
