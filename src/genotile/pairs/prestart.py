"""A tile worker started while Snakemake parses the workflow, for an append's store job.

An append's store job computes its few new tiles itself with numba (scripts/store.py,
pairs/early.py), and numba's start in a process (its import, then the compiled kernel loaded
for its argument types) is ~0.5 s of CPU, nearly all of it holding the GIL: on 2 cores it took
turns with the job's reading and packing, and the first tile waited for it (the 2-core goal of
issue 27: store job 0.83-0.88 s). Snakemake's own start before that job (~1.1 s: its imports, the
Snakefile, the DAG) keeps one core alone busy. Where an append is pending, the Snakefile starts
this worker as it is read (`prestart`): its own process imports numba and loads the kernel on the
idle core, then computes the store job's tiles when the job asks (`compute`) into the store's
early tiles, with their records, by the same code as the job would (early._compute_tile): the
tile jobs adopt them as before, and their bytes are the ones the job would have written.

Only for a local run that runs jobs (the Snakefile's onstart `confirm`s it, which Snakemake calls
neither for a dry run nor on a cluster; else the worker is stopped) and where the jobs run in
Snakemake's own Python environment (no --sdm conda or apptainer); the worker also refuses a job
of another interpreter or genotile version. The worker ends when Snakemake's process does (its
stdin is a pipe from it), when its socket is removed, or after IDLE_S without a request. Whatever
fails, the store job computes its tiles itself, as before.

This module imports only the standard library: the Snakefile and the store job import it.
"""

import contextlib
import json
import logging
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("genotile")

ENV = "GENOTILE_TILE_WORKER"  # the worker's socket, handed to the local jobs (`confirm`)
IDLE_S = 900.0  # the worker ends after this long without a request
WAIT_S = 1.0  # a job waits at most this long for the worker's socket
SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, the name the socket is made under too
HEAD_BYTES = 4096  # of append.json: its "input" record comes first (store/append.py `_record`)

_worker: subprocess.Popen | None = None
_socket: str | None = None


def pending_append(config: dict, results: str = "results") -> bool:
    """Whether a dataset's input (one file) is larger than the input its store recorded for
    appends (results/<dataset>/store/<encoding>/append.json): records were appended, and the
    store job will most likely compute the new tiles (or find otherwise and recompute)."""
    for dataset, spec in (config.get("datasets") or {}).items():
        data = spec.get("input") if isinstance(spec, dict) else None
        if not isinstance(data, str) or spec.get("against") is not None:
            continue
        try:
            size = os.stat(data).st_size
        except OSError:
            continue
        for record in Path(results, str(dataset), "store").glob("*/append.json"):
            try:
                with open(record, "rb") as fh:
                    head = fh.read(HEAD_BYTES)
            except OSError:
                continue
            found = re.search(rb'"input":\s*\{[^{}]*?"size":\s*(\d+)', head)
            if found and int(found.group(1)) < size:
                return True
    return False


def wanted(config: dict) -> bool:
    """Whether an append's store job would compute its tiles with numba on this host's CPU
    (scripts/store.py: `tiles_in_store` auto, backend auto or numba, no GPU: a host with
    nvidia-smi warms CuPy instead) and one is pending."""
    from importlib.util import find_spec

    return (
        config.get("tiles_in_store", "auto") == "auto"
        and config.get("backend", "auto") in ("auto", "numba")
        and shutil.which("nvidia-smi") is None
        and find_spec("numba") is not None
        and pending_append(config)
    )


def prestart(config: dict) -> None:
    """Start the worker where `wanted` (the Snakefile, as it is read); its socket is handed to
    the jobs only once `confirm`ed."""
    global _worker, _socket
    if _worker is not None or not wanted(config):
        return
    # a short path of this user's, whatever the working directory's (sun_path's bound)
    folder = Path(tempfile.gettempdir()) / f"genotile-{os.getuid()}"
    path = str(folder / f"tile-worker.{os.getpid()}.sock")
    if len(_made_at(path).encode()) > SOCKET_PATH_MAX:
        return
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        _worker = subprocess.Popen(
            [sys.executable, "-m", "genotile.pairs.prestart", path],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        _worker = None
        return
    _socket = path


def confirm(runs_jobs_here: bool) -> None:
    """The Snakefile's onstart: the local jobs get the worker's socket where this run runs its
    jobs here in this environment (`runs_jobs_here`); else the worker is stopped."""
    if _worker is None or _socket is None:
        return
    if runs_jobs_here:
        os.environ[ENV] = _socket
    else:
        stop()


def stop() -> None:
    """End the worker (the Snakefile's onsuccess and onerror; `confirm` on a cluster): its stdin
    closed, its socket no longer handed to jobs."""
    global _worker, _socket
    os.environ.pop(ENV, None)
    if _worker is not None and _worker.stdin is not None:
        try:
            _worker.stdin.close()
        except OSError:
            pass
    _worker, _socket = None, None


def available() -> str | None:
    """The worker's socket, in a job of a run that started one (`compute` waits for it a while)."""
    return os.environ.get(ENV) or None


def worker():
    """In a job of a run that started a worker: early.compute_tiles' `worker` (`compute` at its
    socket); else None."""
    path = available()
    if path is None:
        return None
    return lambda store_dir, todo, metrics: compute(path, store_dir, todo, metrics)


def compute(path: str, store_dir, todo: list, metrics: dict) -> float:
    """Ask the worker at `path` to compute the tiles `todo` ((metric, i, j) each) of the store in
    `store_dir` into its early tiles, each with the settings `metrics[metric]`, as
    early._compute_tile would here; its log lines logged here (prefixed "tile worker: "). Returns
    the worker's seconds; raises OSError or RuntimeError where it did not compute them all (the
    early tiles it left are then cleared by the caller)."""
    from genotile.version import __version__

    request = {
        "python": sys.executable,
        "genotile": __version__,
        "store_dir": str(Path(store_dir).absolute()),
        "todo": [list(t) for t in todo],
        "metrics": metrics,
    }
    for _ in range(int(WAIT_S / 0.01)):  # made as the worker starts: there unless it failed
        if os.path.exists(path):
            break
        time.sleep(0.01)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        with conn.makefile("rw", encoding="utf-8") as fh:
            fh.write(json.dumps(request) + "\n")
            fh.flush()
            reply = json.loads(fh.readline() or "{}")
    for line in reply.get("lines") or []:
        log.info("tile worker: %s", line)
    if not reply.get("ok"):
        raise RuntimeError(f"the tile worker did not compute the tiles: {reply.get('error', 'no reply')}")
    return float(reply["seconds"])


def _serve(request: dict) -> dict:
    from genotile.pairs import early
    from genotile.version import __version__

    if request.get("python") != sys.executable or request.get("genotile") != __version__:
        return {"ok": False, "error": "another Python environment or genotile version"}
    lines: list[str] = []
    handler = _Lines(lines)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    started = time.perf_counter()
    try:
        for metric, i, j in request["todo"]:
            early._compute_tile(request["store_dir"], metric, int(i), int(j), request["metrics"][metric], None)
    except Exception as exc:  # noqa: BLE001 -- said to the job, which computes the tiles itself
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "lines": lines}
    finally:
        log.removeHandler(handler)
    return {"ok": True, "seconds": time.perf_counter() - started, "lines": lines}


class _Lines(logging.Handler):
    """The worker's log records of a request, as text, for the job to log in its own log."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.INFO)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _made_at(path: str) -> str:
    """Where the worker makes its socket, then renamed to `path`: whole, or not there."""
    return f"{path}.tmp"


def main(path: str) -> None:
    """The worker: its socket made first (a job's request waits while numba starts), numba's start,
    then a request at a time until Snakemake's process ends (stdin), the socket is gone, or IDLE_S."""
    tmp = _made_at(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):  # a killed worker's of the same process id
            os.unlink(tmp)
        server.bind(tmp)
        server.listen(8)
        os.replace(tmp, path)  # whole, or not there
        from genotile.pairs import early, stage  # noqa: F401 -- what a tile imports

        early._warm_numba()
        while os.path.exists(path):
            ready, _, _ = select.select([server, sys.stdin], [], [], IDLE_S)
            if not ready or sys.stdin in ready:  # idle, or Snakemake's process ended
                break
            conn, _ = server.accept()
            with conn, conn.makefile("rw", encoding="utf-8") as fh:
                try:
                    reply = _serve(json.loads(fh.readline()))
                except ValueError as exc:
                    reply = {"ok": False, "error": f"a request not understood: {exc}"}
                fh.write(json.dumps(reply) + "\n")
                fh.flush()
    finally:
        server.close()
        for name in (tmp, path):
            try:
                os.unlink(name)
            except OSError:
                pass


if __name__ == "__main__":
    main(sys.argv[1])
