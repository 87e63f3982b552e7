"""Checksums of files: the SHA-256 that manifests and summaries record (`file_sha256`, what
`sha256sum` prints; `file_sha256_resumable` keeps the state after the last byte, so that the
SHA-256 of the file grown at its end is resumed over the new bytes alone: store/append.py), and
the content digest that input fingerprints compare (`file_digest`: the pieces of a file hashed
on threads, so that parsing the workflow does not wait seconds on one SHA-256 stream over a
multi-GB input; an append checks its earlier bytes against the earlier file's pieces,
`file_pieces`)."""

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
    return pieces_digest(file_pieces(path))


def pieces_digest(digests: list[bytes]) -> str:
    """`file_digest` of a file whose pieces' digests (`file_pieces`) are `digests`."""
    outer = hashlib.sha256()
    for d in digests:
        outer.update(d)
    return outer.hexdigest()


def file_pieces(path, size: int | None = None) -> list[bytes]:
    """The SHA-256s of the PIECE-byte pieces of a file's first `size` bytes (None: all of it),
    the last one shorter, hashed on threads: `file_digest`'s pieces; where `size` ends inside a
    piece, the last is of the bytes up to `size` (an append's earlier file: store/append.py).

    A whole file of a PIECE or more is hashed once a process while its stat (device, inode,
    size, mtime, ctime) stays the one it had before and after its hashing: `genotile run` checks,
    grows and records an input (a query's FILE, a list's files) in several steps, each of which
    would read the whole file again (a few GB: a second or more each)."""
    if size is not None:
        return range_digests(path, pieces(size))
    before = file_stat(path)
    size = before[2]
    if size < PIECE:
        return range_digests(path, pieces(size))
    key = _hashed_key(path, before)
    if key not in _HASHED:
        got = range_digests(path, pieces(size))
        if file_stat(path) != before:  # written to while hashed: not kept
            return got
        if len(_HASHED) >= HASHED_FILES:
            _HASHED.pop(next(iter(_HASHED)))
        _HASHED[key] = got
    return list(_HASHED[key])


HASHED_FILES = 8  # whole files whose pieces `file_pieces` keeps (the oldest dropped first)
_HASHED: dict[tuple, list[bytes]] = {}


def _hashed_key(path, stat: list[int]) -> tuple:
    """What `_HASHED` keeps a whole file's pieces by: its real path and its stat (`file_stat`)."""
    return (os.path.realpath(path), *stat)


def hashed_pieces(path) -> tuple[list[bytes], list[int]] | None:
    """The pieces `file_pieces` hashed of the whole file at `path` in this process, and the stat
    (`file_stat`) they were hashed at, where it is the file's stat still; None otherwise (never
    hashed whole here, or changed). `genotile run` hashes its input to find its store current
    (store/append.py `_kept`), then checks an append's earlier bytes against the same pieces
    (`check_earlier`, which takes the stat again once it has read the file)."""
    try:
        stat = file_stat(path)
    except OSError:
        return None
    got = _HASHED.get(_hashed_key(path, stat))
    return None if got is None else (list(got), stat)


def file_stat(path) -> list[int]:
    """A file's device, inode, size, mtime and ctime (ns): while all of them stay the same, its
    content is taken as unchanged (ctime moves on every write, and on `cp -p` or `touch -d`,
    which set mtime back). What `file_pieces` keeps its hashes by, and the input fingerprints
    record (store/sources.py)."""
    st = os.stat(path)
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def pieces(size: int) -> list[tuple[int, int]]:
    """The (start, end) byte ranges of a `size`-byte file's PIECE-byte pieces, in order."""
    return [(start, min(size, start + PIECE)) for start in range(0, size, PIECE)]


def range_digests(path, ranges) -> list[bytes]:
    """The SHA-256 of each (start, end) byte range of a file, read with pread, on threads
    (`digests_on_threads`)."""
    with open(path, "rb") as fh:

        def digest_of(span: tuple[int, int]) -> bytes:
            h = hashlib.sha256()
            for at in range(span[0], span[1], READ):
                h.update(os.pread(fh.fileno(), min(READ, span[1] - at), at))
            return h.digest()

        return digests_on_threads(digest_of, ranges)


def file_sha256_resumable(
    path, start: int = 0, state: str | None = None, read: int = READ, end: int | None = None
) -> tuple[str, str]:
    """The SHA-256 of a file (hex, what `sha256sum` prints) and the state after its last byte
    (util/sha256_state.Sha256), in one stream: from `state` (the state after the file's first
    `start` bytes, kept earlier) over the bytes from `start` on alone, or from its beginning.
    Where libcrypto is not `sha256_state.available()`, RuntimeError.

    Parameters
    ----------
    path : str or os.PathLike
        A readable file.
    start : int
        Where to read from: the length of `state` (0 without one).
    state : str, optional
        A `Sha256.state()` after the file's first `start` bytes.
    read : int
        Bytes read at a time, into one buffer.
    end : int, optional
        The file's size as it was taken (bytes after it, written since, are not read); None: to
        its end.

    Returns
    -------
    tuple of (str, str)
        The SHA-256, hex, and the state after the file's last byte.
    """
    from genotile.util.sha256_state import Sha256

    digest = Sha256(state)
    if digest.length != start:
        raise ValueError(f"a SHA-256 state after {digest.length} bytes, not {start}")
    buffer = bytearray(read)
    view = memoryview(buffer)
    at = start
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        while end is None or at < end:
            got = fh.readinto(view if end is None else view[: min(read, end - at)])
            if not got:
                break
            digest.update(view[:got])
            at += got
    return digest.hexdigest(), digest.state()


def digests_on_threads(digest_of, items) -> list[bytes]:
    """[digest_of(item) for item in items], on threads where there are several (hashlib releases
    the GIL on large buffers): `range_digests`, and the pieces of a tile file's arrays
    (io/tilefile.py)."""
    items = list(items)
    if len(items) <= 1:
        return [digest_of(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    with ThreadPoolExecutor(usable_cpus(16), thread_name_prefix="genotile-digest") as pool:
        return list(pool.map(digest_of, items))
