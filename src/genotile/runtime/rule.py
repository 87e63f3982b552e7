"""Glue for Snakemake `script:` rules: logging to the rule's log, clear errors."""

import atexit
import logging
import os
import sys
import threading

from genotile.errors import GenotileError
from genotile.util.atomic import DISK_ERRORS, disk_error

log = logging.getLogger("genotile")


def run_rule(snakemake, step) -> None:
    """Run `step(snakemake)`, logging to the rule's log file.

    A GenotileError (bad input, bad config) ends the job with its one-line
    message on stderr and in the log, and so does a write the storage refused (disk full,
    quota, read-only: util/atomic.DISK_ERRORS, naming the file); anything else is a bug,
    logged with its traceback and re-raised.
    """
    handler = logging.FileHandler(snakemake.log[0], mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        try:
            step(snakemake)
        except OSError as exc:
            if exc.errno in DISK_ERRORS:
                raise disk_error(exc) from None
            raise
    except GenotileError as exc:
        log.error("%s", exc)
        print(f"genotile error: {exc}", file=sys.stderr)
        sys.exit(1)
    except Exception:
        log.exception("unexpected error in rule %s", snakemake.rule)
        raise
    finally:
        handler.close()
    if getattr(sys.modules.get("__main__"), "snakemake", None) is snakemake:
        leave()


def leave() -> None:
    """End a job's process that has done its work, skipping the interpreter's teardown.

    Once a rule's script has run, Python would free every object of every module before the
    process ends: about 0.25 s of the 2-core VM where numba has loaded a compiled kernel (a store
    job computing an append's tiles, a numba tile), 0.03 s otherwise, in which Snakemake waits
    to start the next job. What an ending interpreter does besides is done here, in its order:
    the threads joined (threading's own exit hooks first: thread pools finish their work), the
    atexit functions run (logging's flush), the standard streams flushed; then the process ends
    with status 0. Only in a Snakemake script job (the `snakemake` object of `__main__`, which
    run_rule was given), never in a process that called run_rule for a test; where this Python
    lacks threading's hook, the interpreter ends as usual."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:
        return
    shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    os._exit(0)


def cancel_scheduler_timers():
    """Cancel the threading.Timer threads still waiting once the workflow is done.

    Snakemake's scheduler (9.x) arms a one-second `threading.Timer` on every scheduling pass
    (its --max-jobs-per-timespan limiter, default 100/1s, at least one second), and Python
    waits for every such non-daemon thread at exit: about a second of every run's wall time,
    a fifth of a small one. Once the run has succeeded nothing is left to schedule, so the
    timers, whose only action is to wake the scheduler, are cancelled."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


def exit_without_teardown() -> None:
    """Snakemake's own process, its run done (the Snakefile's onsuccess): its exit with status 0
    ends the process as `leave` ends a job's, without the interpreter's teardown, which took
    ~0.38 s of every run on the 2-core VM (pandas, SQLAlchemy, numpy and the rest freed object by
    object) after the run had written everything. Only in Snakemake's command line (`snakemake`,
    `python -m snakemake`), which exits through sys.exit once its workflow is done; another
    status, or a process that embeds Snakemake, exits as usual."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if not (getattr(spec, "name", None) == "snakemake.__main__" or os.path.basename(sys.argv[0]) == "snakemake"):
        return
    exit = sys.exit

    def quick(status=None):
        if status in (0, None):
            leave()
        exit(status)

    sys.exit = quick


# data-frame libraries Snakemake imports in its own process only to look for their objects among
# a job's params (`skip_frame_imports`)
FRAME_MODULES = ("pandas", "polars")


class _FramesAbsent:
    """An import finder that refuses the frame libraries to the threads in `threads` alone (each
    while in Snakemake's `_safely_store_params`), where they are not imported yet: any other
    thread imports them as usual (a sys.modules entry of None would refuse them to every thread).

    A meta path finder needs only `find_spec`: not importlib.abc.MetaPathFinder's subclass, whose
    import (importlib.resources with it, six modules) every job's process paid for run_rule."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]  # (an imported library's own submodules load as usual)
        if top in FRAME_MODULES and top not in sys.modules and threading.get_ident() in self.threads:
            raise ModuleNotFoundError(f"No module named {name!r} (genotile: not looked for)", name=name)
        return None


_FRAMES_ABSENT = _FramesAbsent()


def skip_frame_imports() -> None:
    """Keep Snakemake's own process from importing pandas (and polars) to look for their data
    frames among the jobs' params, where no such object can be there: none was ever made in it.

    Snakemake (9.x) imports them, where installed, in two places of every run: the `snakemake`
    object of each `script:` job (`iocontainers.Snakemake._safely_store_params`, which takes a
    module it cannot import as absent: pandas' frames are then not looked for), and its record of
    a job's params and their comparison with the last run's as the DAG is built
    (`persistence.PersistenceBase._serialize_param_pandas`: a run with nothing to do imported
    pandas for it, 0.2-0.3 s of its ~1.2 s on the 2-core VM). Called as the workflow is parsed
    (rules/common.smk), in every process that parses it. Without the SLURM
    executor plugin, which imports pandas anyway, the store job then started only once pandas was
    imported: ~0.3 s after Snakemake called it on the H100 machine and on the 2-core VM, against
    0.04-0.07 s for the jobs after it. Here, while a frame library is not imported in the process
    (so no param can be its object), the first runs with it taken as absent (an import finder
    refuses it to the calling thread alone, for the call: `_FramesAbsent`) and the second records
    params as without pandas; once it is
    imported (by anything), both run as Snakemake wrote them. Snakemake's records and the jobs'
    params are the same either way. Where Snakemake lacks either method, nothing is changed."""
    try:
        from snakemake import persistence
        from snakemake.iocontainers import Snakemake
    except ImportError:
        return
    # the class that defines it (PersistenceBase in 9.x)
    Persistence = next(
        (c for c in vars(persistence).values() if isinstance(c, type) and "_serialize_param_pandas" in vars(c)), None
    )
    store = getattr(Snakemake, "_safely_store_params", None)
    with_pandas = getattr(Persistence, "_serialize_param_pandas", None)
    builtin = getattr(Persistence, "_serialize_param_builtin", None)
    if not all(callable(f) for f in (store, with_pandas, builtin)) or getattr(store, "genotile", False):
        return

    def store_params(self, params):
        me = threading.get_ident()
        _FRAMES_ABSENT.threads.add(me)  # `import pandas` fails in this thread alone: not looked for
        try:
            return store(self, params)
        finally:
            _FRAMES_ABSENT.threads.discard(me)

    def serialize_param(self, value):
        return with_pandas(self, value) if "pandas" in sys.modules else builtin(self, value)

    if _FRAMES_ABSENT not in sys.meta_path:
        sys.meta_path.insert(0, _FRAMES_ABSENT)
    store_params.genotile = True  # type: ignore[attr-defined]
    Snakemake._safely_store_params = store_params
    Persistence._serialize_param_pandas = serialize_param  # type: ignore[union-attr]
