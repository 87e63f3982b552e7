"""Atomic writes: write to a temporary name in the same folder, then rename.

A reader (or a rerun) never sees a half-written file: either the old state or
the complete new file exists under the final name. A full disk, an exceeded quota or a
read-only file system while writing ends in one GenotileError naming the file that could
not be written (`DISK_ERRORS`), its temporary file removed.
"""

import contextlib
import errno
import fcntl
import os
import tempfile
from pathlib import Path

from genotile.errors import GenotileError

# write failures that are the storage's, not the program's: said in one line, no traceback
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


def disk_error(exc: OSError, path=None) -> GenotileError:
    """One line for a write that the storage refused: the file and the system's reason."""
    where = path if path is not None else (exc.filename or "a file")
    why = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    return GenotileError(f"{where}: could not be written: {why}")


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it onto `path` on success.

    The temporary file is flocked while it is written: a writer of the same file in another
    process (two runs parsing the workflow together both bring a fingerprint up to date)
    removes the temporary files that a killed writer left, never a live writer's.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(f".{path.name}.*.tmp"):
            _remove_if_abandoned(stale)
        fd, tmp = _locked_temporary(path)
    except OSError as exc:
        if exc.errno in DISK_ERRORS:
            raise disk_error(exc, path) from None
        raise
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
            raise disk_error(exc, path) from None
        raise
    finally:
        os.close(fd)  # the lock goes with it


def _locked_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file beside `path`, its descriptor holding an exclusive flock."""
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):  # another writer's cleaner has it: a new one
                os.close(fd)
                continue
            # a file system without locks: the cleaners cannot tell either, and remove nothing
        if os.fstat(fd).st_nlink:  # not taken for a killed writer's between mkstemp and flock
            return fd, tmp
        os.close(fd)


def _remove_if_abandoned(tmp: Path) -> None:
    """Remove a temporary file that no live writer holds locked."""
    try:
        fd = os.open(tmp, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a writer holds it (or locks are not available): left alone
        os.close(fd)
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_record(path, record: dict) -> None:
    """A record that programs read (ingest and store manifests), as one line of compact JSON,
    written atomically. Not indented: Python's json indents in pure Python, ~20x slower than
    its C encoder (0.8 s of a 40,000-sequence store job, whose manifests list every ID)."""
    import json

    write_text(path, json.dumps(record, separators=(",", ":")) + "\n")
