"""The Snakemake workflow's own process: its user errors said in one line, one run per directory.

A GenotileError raised while Snakemake parses the workflow (the config's checks in
rules/common.smk) or builds its DAG (an input function: a peer format past dense_max, a ccc3 plan
refused) would reach Snakemake, which prints it with the file, line and traceback of the
Snakefile (or as an InputFunctionException report). Here it is printed as the one
`genotile error: ...` line a job's error is (runtime/rule.py) and the process exits 1: SystemExit
passes Snakemake's handlers, which catch Exception, so nothing else is printed.

Snakemake's own lock (.snakemake/locks) is taken after the DAG is built, checked and written in
two steps: two runs started together can both find no lock and both write theirs, and then run
the same jobs over each other's files. `hold_run_lock` takes an exclusive flock at the start of
the run's execution (the Snakefile's onstart, before any hook or job touches a file); the kernel
releases it when the process ends, however it ends, so it never goes stale.
"""

import errno
import fcntl
import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn, TypeVar

from genotile.errors import GenotileError

RUN_LOCK = Path(".snakemake/genotile/run.lock")
_held: int | None = None  # the descriptor holding RUN_LOCK, for the life of the process

F = TypeVar("F", bound=Callable)


def refuse(message) -> NoReturn:
    """Print `genotile error: <message>` on stderr and end the process with status 1."""
    print(f"genotile error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """A GenotileError inside is `refuse`d: one line, status 1."""
    try:
        yield
    except GenotileError as exc:
        refuse(exc)


def one_line(func: F) -> F:
    """`func` (an input, params or resources function of a rule) with its GenotileError said in
    one line instead of Snakemake's InputFunctionException report."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with one_line_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def schema_error(exc: BaseException) -> GenotileError:
    """The config schema's refusal (Snakemake's WorkflowError around a jsonschema
    ValidationError) as one line: the key's path in the config and what is wrong with it."""
    cause: BaseException | None = exc
    while cause is not None:  # Snakemake raises its WorkflowError while handling jsonschema's
        path = getattr(cause, "absolute_path", None)
        message = getattr(cause, "message", None)
        if path is not None and message is not None:
            key = ".".join(str(k) for k in path) or "(the whole config)"
            return GenotileError(f"config: {key}: {message}")
        cause = cause.__cause__ or cause.__context__
    return GenotileError(f"config: {exc}")


def hold_run_lock(enabled: bool = True, path: Path = RUN_LOCK) -> None:
    """Take the directory's run lock for this process, or refuse the run in one line.

    Called by the Snakefile's onstart, which Snakemake runs once the DAG is built and before
    any job starts (not for a dry run, nor in a cluster job, which runs with --no-hooks); a
    second call in the process does nothing. `enabled` False (`snakemake --nolock`) takes none.
    """
    global _held
    if not enabled or _held is not None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            refuse(
                f"another Snakemake run is working in {Path.cwd()} (it holds {path}): this one "
                "started nothing; run it again once the other has finished"
            )
        refuse(f"{path}: cannot lock it ({exc.strerror}); a file system without locks needs --nolock")
    _held = fd
