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


def warm_scheduler_imports() -> None:
    """Import pandas on a thread of Snakemake's own process as the first jobs start.

    Snakemake's persistence layer imports pandas, where it is installed (the report's plots need
    it), the first time it records or compares a job's params: as the store checkpoint finishes,
    in the scheduler's thread, about half a second (one H100 machine) in which no tile job is
    started. Imported here it overlaps the store job, which runs in a process of its own. Not a
    daemon thread: an import cut short at exit could leave the interpreter in a bad state, and a
    run shorter than the import pays it anyway when its first job is recorded."""
    import importlib
    import importlib.util

    if importlib.util.find_spec("pandas") is not None:
        threading.Thread(target=importlib.import_module, args=("pandas",), name="genotile-warm-imports").start()
