"""Atomic writes: write to a temporary name in the same folder, then rename.

A reader (or a rerun) never sees a half-written file: either the old state or
the complete new file exists under the final name. A full disk, an exceeded quota or a
read-only file system while writing ends in one GenotileError naming the file that could
not be written (`DISK_ERRORS`), its temporary file removed.

`renamed_together` holds back the renames of one folder's files: a run's results of one metric
land together or not at all (`genotile run`, pipeline.py).
"""

import contextlib
import errno
import fcntl
import os
import tempfile
from contextvars import ContextVar
from dataclasses import dataclass, field
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
    together = _held_back(path)
    try:
        yield Path(tmp)
        if together is None:
            os.replace(tmp, path)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
            raise disk_error(exc, path) from None
        raise
    if together is None:
        os.close(fd)  # the lock goes with it
    else:  # renamed, and its lock let go, as the block ends
        together.actions.append(_Rename(together.folder / path.name, Path(tmp), fd))


@dataclass
class _Rename:
    """A file written under its temporary name (`tmp`, locked by `fd`), renamed onto `path` later."""

    path: Path
    tmp: Path
    fd: int


@dataclass
class _Together:
    """`renamed_together`'s block: its folder, the file renamed last, what is held back, in order."""

    folder: Path
    last: str | None
    actions: list[_Rename | Path] = field(default_factory=list)  # a Path: one to remove (`remove`)


_TOGETHER: ContextVar[_Together | None] = ContextVar("genotile_renamed_together", default=None)


def _held_back(path: Path) -> _Together | None:
    """The `renamed_together` block that holds back `path`'s rename, if any: one of its folder."""
    together = _TOGETHER.get()
    if together is None or path.parent.resolve() != together.folder:
        return None
    return together


@contextlib.contextmanager
def renamed_together(folder, last: str | None = None):
    """Within the block, files written directly in `folder` (atomic_path) stay under their
    temporary names and files removed there (`remove`) stay: once the block ends without an
    error, they are renamed onto their names (and removed) in the order written, the file
    named `last` after the rest, one rename after the other; on an error the temporary files
    are removed and the folder is as it was. A kill between two of the renames (microseconds,
    where the block took seconds) still leaves some new files beside earlier ones: `last` is
    the file that names the others (summary.json, with their digests). Read a file of the
    folder written in the block through `written`."""
    together = _Together(Path(folder).resolve(), last)
    token = _TOGETHER.set(together)
    try:
        yield
    except BaseException:
        _discard(together.actions)
        raise
    finally:
        _TOGETHER.reset(token)
    actions = sorted(together.actions, key=lambda a: _path_of(a).name == last)  # stable: `last` to the end
    for k, action in enumerate(actions):
        try:
            if isinstance(action, _Rename):
                os.replace(action.tmp, action.path)
                os.close(action.fd)
            else:
                with contextlib.suppress(FileNotFoundError):
                    action.unlink()
        except BaseException as exc:  # an interrupt too: no temporary left, no lock held
            _discard(actions[k:])
            if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
                raise disk_error(exc, _path_of(action)) from None
            raise


def _discard(actions) -> None:
    """The temporary files of held-back renames removed, their locks let go."""
    for action in actions:
        if isinstance(action, _Rename):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(action.tmp)
            os.close(action.fd)


def _path_of(action) -> Path:
    return action.path if isinstance(action, _Rename) else action


def written(path) -> Path:
    """Where `path`'s newest content is: its temporary file while a `renamed_together` block
    holds back its rename (the last written, where it was written twice), else `path`."""
    path = Path(path)
    together = _held_back(path)
    if together is not None:
        held = together.folder / path.name
        for action in reversed(together.actions):
            if _path_of(action) == held:
                return action.tmp if isinstance(action, _Rename) else path
    return path


def remove(path) -> bool:
    """Remove `path`, saying whether it was there; within a `renamed_together` block of its
    folder, as the block ends, in its place among the renames."""
    path = Path(path)
    together = _held_back(path)
    if together is None:
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True
    if not written(path).exists():
        return False
    together.actions.append(together.folder / path.name)
    return True


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
