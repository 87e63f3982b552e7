"""Tiles computed by the store job, for its tile jobs to adopt (config `tiles_in_store`).

A GPU tile job pays a process start, numpy's and CuPy's imports and a CUDA context for what is
often a fraction of a second of GPU work (snp, 40,000 x 20,000: ~0.3 s of counting in a 1.6 s job
on an H100). Where the store job runs beside the GPU (a local run), it computes the plan's tiles
itself once the planes are packed, CuPy having been imported and the CUDA context made on a
thread while the input was read, and leaves each tile beside the store with the settings it was
computed with. The tile job then moves the tile into place when those settings are its own
(the store it reads, threshold, dense block, backend, metric parameters) and computes the tile
itself otherwise. The DAG, the tile files and what a rerun recomputes are the workflow's as
before: an early tile is only ever the file its job would have written.

On a host with several GPUs the store job's tiles are shared out among them (`DevicePool`: a
worker process a GPU, started while the input is read), as tile jobs would be, one a GPU. An
append on one GPU counts its new tiles in one worker, forked first thing in the job
(`one_gpu_worker`), which imports CuPy while the job hashes and reads its input. Where
the job made its store on the GPU and holds it there (store/resident.py: a whole .bed), the store
is copied to every GPU instead and the tiles run on a thread a GPU of the job itself, reading
their blocks from the device (no worker reads planes.npy, which is written behind them).

This module imports only the standard library: a tile job that adopts imports nothing else.
"""

import atexit
import contextlib
import hashlib
import json
import logging
import multiprocessing
import os
import shutil
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

log = logging.getLogger("genotile")

EARLY_DIR = "early"  # under results/<dataset>/store/<encoding>/
# tiles the one GPU holding the store computes at once (a thread each): while one tile's pairs
# are read back and its file written, the next one's are counted. One H100 (Session 15): the tile
# phase of 1M x 20k 24.32 s two at once, ~0.6 s over its kernels' time, where Session 14's one at
# a time took 27.09 (another call: no same-call A/B yet). With several GPUs one at a time each.
TILES_IN_FLIGHT = 2
TILE_BYTES_PER_ROW_BYTE = 6  # a tile's device arrays a byte of both blocks' held rows (planes, operands)
EARLY_TILES_MAX = 16  # `auto`: a store job computes at most this many tiles (else its tile jobs do)
MODES = ("auto", True, False)


def tile_path(store_dir, metric: str, i: int, j: int) -> Path:
    """Where the store job leaves tile (i, j) of `metric`."""
    return Path(store_dir) / EARLY_DIR / metric / f"tile_{i}_{j}.npz"


def left(store_dir, metric: str, i: int, j: int) -> bool:
    """Whether the store job left tile (i, j) of `metric` with its record (`adopt` decides whether
    it is taken): its tile job then needs no GPU (rules/common.smk, tile_gpus)."""
    tile = tile_path(store_dir, metric, i, j)
    return tile.is_file() and tile.with_suffix(".json").is_file()


def store_digest(manifest_path) -> str:
    """The SHA-256 of the store manifest's bytes: its input and options (`sources`), plan, layout,
    IDs, duplicates and genotile version. A store rebuilt in any of these has another."""
    return hashlib.sha256(Path(manifest_path).read_bytes()).hexdigest()


def adoption_record(store: str, **settings) -> dict:
    """What a tile file depends on besides its metric and blocks, as JSON holds it: `store` (the
    manifest's store_digest) and the tile rule's params (rules/tiles.smk), which are stage.tile's
    keyword arguments: threshold, dense, backend, metric_params, and any the rule gains.

    >>> adoption_record("ab12", threshold=20, dense=0, backend="auto", metric_params=None)
    {'store': 'ab12', 'threshold': 20, 'dense': False, 'backend': 'auto', 'metric_params': {}}
    """
    values = {"store": store, **settings}
    if "dense" in values:
        values["dense"] = bool(values["dense"])
    if "metric_params" in values:
        values["metric_params"] = dict(values["metric_params"] or {})
    return json.loads(json.dumps(values))  # a float threshold round-trips exactly (repr)


def clear(store_dir) -> None:
    """Remove the early tiles of a store: those of an earlier store job are never adopted (the
    store job clears them before it computes any, and the workflow's onstart clears every
    dataset's, so that a tile is adopted only in the invocation that computed it)."""
    early = Path(store_dir) / EARLY_DIR
    shutil.rmtree(early, ignore_errors=True)
    if early.exists():
        raise OSError(f"{early}: could not remove the store job's earlier tiles")


def clear_all(results="results") -> None:
    """`clear` for every store under `results` (the Snakefile's onstart)."""
    for early in Path(results).glob(f"*/store/*/{EARLY_DIR}"):
        clear(early.parent)


def adopt(manifest_path, metric: str, i: int, j: int, wanted: dict, tile_out) -> bool:
    """Move the store job's tile (i, j) of `metric` to `tile_out` if it was computed with the
    settings `wanted` (the tile job's params, every one: `adoption_record`) from the store
    `manifest_path` describes; a tile of other settings, or recorded without one of them, is
    removed. True if the tile was adopted."""
    tile = tile_path(Path(manifest_path).parent, metric, i, j)
    record = tile.with_suffix(".json")
    try:
        have = json.loads(record.read_text(encoding="utf-8"))
        store = store_digest(manifest_path)
    except (OSError, ValueError):
        return False
    if have != adoption_record(store, **wanted) or not tile.is_file():
        why = "has other settings" if tile.is_file() else "is missing"
        log.info("tile (%d, %d) of %s: the store job's tile %s; computing it", i, j, metric, why)
        tile.unlink(missing_ok=True)
        record.unlink(missing_ok=True)
        return False
    shutil.move(tile, tile_out)  # a rename where both are on one file system
    record.unlink(missing_ok=True)
    log.info("tile (%d, %d) of %s: computed by the store job, moved to %s", i, j, metric, tile_out)
    return True


def wanted(mode, gpu_granted: bool, n_tiles: int) -> bool:
    """Whether the store job computes its tiles: config `tiles_in_store` true; or auto, when the
    job was granted a GPU (rules/common.smk: a local run whose tile jobs use one) and the plan
    has at most EARLY_TILES_MAX tiles (more: several GPUs may share them out, one tile job each).

    >>> wanted("auto", True, 1), wanted("auto", False, 1), wanted("auto", True, 100), wanted(True, False, 100)
    (True, False, False, True)
    """
    if mode not in MODES:
        raise ValueError(f"tiles_in_store must be auto, true or false, not {mode!r}")
    if mode == "auto":
        return gpu_granted and n_tiles <= EARLY_TILES_MAX
    return bool(mode)


def _warm() -> bool:
    """Import CuPy and make the CUDA context (a warm-up only: the tiles find out for themselves),
    then sort two keys as a tile's passing pairs are sorted (cupy_tile._appended_pairs): the
    sort's first call loads its module, ~0.05 s of a first tile on the H100 machine. Whether the
    context was made (a DevicePool's workers say it: `_started`)."""
    try:
        from genotile.backends.cuda import cupy_common

        if cupy_common.has_gpu():
            cp = cupy_common.cupy_module()
            cp.argsort(cp.zeros(2, dtype=cp.int64))  # its allocation makes the context
            return True
    except Exception:  # noqa: BLE001 -- a warm-up only
        pass
    return False


def warm_gpu() -> threading.Thread:
    """Import CuPy and make the CUDA context on a thread, while the store job reads its input
    (numpy and the readers release the GIL): about half a second of a GPU tile's start. The
    caller joins the thread before it exits."""
    thread = threading.Thread(target=_warm, name="genotile-warm-gpu", daemon=True)
    thread.start()
    return thread


CUDA_DEVICES = "CUDA_VISIBLE_DEVICES"


# a DevicePool worker's barrier of the pool's workers, and whether its GPU's context was made (`_started`)
_ALL_STARTED: list = []


APPENDED_CPU_S = 2.0  # `auto`: a store job computes an append's new tiles where numba would take at most this


def few_appended(store_dir, plan, tiles, metrics: int = 1) -> bool:
    """Whether the store job computes an appended plan's new `tiles` itself (config
    `tiles_in_store` auto, scripts/store.py): at most EARLY_TILES_MAX of them, whose counts numba
    would do in at most APPENDED_CPU_S here for `metrics` metrics (core/rates.py CPU_COUNTS): cheaper than a
    process each; more work is left to the tile jobs, which may run on GPUs or other machines."""
    import numpy as np  # not at the top: a tile job adopting its tile imports no more than the standard library

    from genotile.core import rates

    if len(tiles) > EARLY_TILES_MAX:
        return False
    words = int(np.load(Path(store_dir) / "planes.npy", mmap_mode="r").shape[1])
    sizes = [plan.block(b).stop - plan.block(b).start for b in range(plan.n_blocks)]
    work = sum(sizes[i] * sizes[j] for i, j in tiles) * words
    return work * metrics / rates.CPU_COUNTS["numba"] <= APPENDED_CPU_S


def _warm_numba() -> None:
    try:
        from genotile.backends.cpu import numba_popcount

        numba_popcount.warm()
    except Exception:  # noqa: BLE001 -- a warm-up only: a tile pays numba's start, or takes numpy
        log.debug("numba warm-up failed", exc_info=True)


def may_append(store_dir) -> bool:
    """Whether the all-pairs store in `store_dir` may be appended to: its append record is there
    (store/append.py)."""
    from genotile.store import records

    return (Path(store_dir) / records.APPEND).exists()


def one_gpu_worker(
    store_dir, data, gpus: int, may: bool, query: bool = False, warm: "WarmTile | None" = None
) -> "ForkedWorker | None":
    """The worker an append on one GPU counts its tiles in (a ForkedWorker), started at once,
    so that it imports CuPy and makes the CUDA context on its own interpreter while the store job
    reads the new records (beside CuPy's import on the job's GIL the read of 2,000 new sequences
    took 0.50 s on the H100 machine, alone ~0.2: bench/RESULTS.md "Session 23"). Only where the
    job may compute tiles (`may`) on the one GPU it was granted, for an input of one file (`data`:
    the rule's input, a list, of one file too: rules/common.smk dataset_input) whose all-pairs
    store may be appended to (`may_append`), or for a query's store (`query`: its few cross tiles,
    beside the input's read; its FILE's store often reused, store/against.py); None otherwise, the
    tiles then counted in the job.
    Forked, on the first GPU the job may use (`first_gpu`): nothing but the standard library and
    the store's record names is imported for it, so the job forks first and starts its threads
    (the input's hash) at once after."""
    files = [data] if isinstance(data, str) else list(data)
    if not (may and gpus == 1 and (query or (len(files) == 1 and may_append(store_dir)))):
        return None
    return ForkedWorker(warm)


def first_gpu() -> str:
    """The first GPU this process may use, as CUDA_VISIBLE_DEVICES names it: runtime/gpu_slots
    visible_gpus()[0] for a process granted a GPU (the host's GPU 0 where the variable is unset;
    an IndexError where it lists none): a ForkedWorker's, read in the job before the fork
    (core/cuda_env.py: the standard library only)."""
    from genotile.core.cuda_env import cuda_visible_devices

    listed = cuda_visible_devices()
    return "0" if listed is None else listed[0]


def warm_numba_for_append(store_dir) -> threading.Thread | None:
    """Where the store in `store_dir` may be appended to (store/append.py: its record is there)
    and numba is installed, numba's start (about 0.65 s) on a thread while the input is read: the
    store job then computes the new tiles (scripts/store.py), and `auto` takes numba for them,
    its start paid (backends.resolve), rather than numpy, 5x slower than its rate on their shape
    (a few hundred new vectors against a block: 0.56-0.83 s a tile, numba 0.13-0.16 s)."""
    from genotile.backends.cpu import numba_popcount
    from genotile.store import records

    kept = (records.APPEND, records.QUERY)  # an all-pairs store's, a query's (its FILE may grow)
    if not any((Path(store_dir) / r).exists() for r in kept) or not numba_popcount.is_available():
        return None
    thread = threading.Thread(target=_warm_numba, name="genotile-warm-numba", daemon=True)
    thread.start()
    return thread


def _bind_device(devices, all_started, parent: int) -> None:
    """A DevicePool worker's start: take one GPU of the pool's (CUDA_VISIBLE_DEVICES, before
    anything touches CUDA), then import CuPy and make its context, and import what a tile runs
    (its first tile would otherwise pay for it after the store job's read)."""
    # the job gone before this worker started: its watch below would watch another parent
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_end_with, args=(parent,), name="genotile-parent", daemon=True).start()
    os.environ[CUDA_DEVICES] = devices.get()  # one of the pool's queue of GPUs
    atexit.register(_end_without_teardown)  # before CuPy's: run after them (last in, first out)
    _ALL_STARTED[:] = [all_started, _warm()]
    try:
        import genotile.pairs.stage  # noqa: F401
        from genotile.backends.cuda import cupy_b1, cupy_tile  # noqa: F401
    except Exception:  # noqa: BLE001 -- a warm-up only: the tile imports them itself
        pass


def _end_with(parent: int) -> None:
    """A DevicePool worker's watch on the store job: where the job is gone (killed: SIGKILL, a
    cluster's time limit), the worker ends too. It would otherwise wait for a task for ever,
    holding its CUDA context, for it holds the other ends of the pool's queues it was handed (a
    ForkedWorker sees its pipe's end instead)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _end_without_teardown() -> None:
    """A DevicePool worker's last exit function: the process ends here, its other exit functions
    run (the pool's queues flushed, CuPy's), without the interpreter freeing every module's objects
    one by one, which the store job waits for as it closes the pool (~0.3 s of an append's store
    job on the H100 machine beside the CUDA context's teardown: bench/RESULTS.md "Session 23"), as
    runtime/rule.leave ends a job's process. Its status is 0: the pool reads none."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    os._exit(0)


def _started() -> tuple[str, bool]:
    """A worker's GPU and whether CuPy made its context there, once every worker of the pool has
    started: one of these tasks a worker."""
    _ALL_STARTED[0].wait(timeout=600)
    return os.environ.get(CUDA_DEVICES, ""), bool(_ALL_STARTED[1])


@contextlib.contextmanager
def _main_script_hidden():
    """While workers are spawned: a spawned process runs its parent's main script again (as
    `__mp_main__`, unless it was started with -m), and the store job's main script is the one
    Snakemake wrote for it, which would run the whole store job again in each worker. Hidden, the
    workers start from the modules their tasks name."""
    main = sys.modules.get("__main__")
    saved = {key: getattr(main, key) for key in ("__file__", "__spec__") if hasattr(main, key)}
    try:
        if "__file__" in saved:
            delattr(main, "__file__")
        if "__spec__" in saved:
            main.__spec__ = None
        yield
    finally:
        for key, value in saved.items():
            setattr(main, key, value)


class DevicePool:
    """A worker process per GPU for the store job's tiles, started (CuPy imported, a CUDA context
    made on its own GPU) as soon as the pool is made, so while the store job reads its input.

    Processes, not threads: each tile's host work (reading rows, sorting pairs, writing the tile
    file) then runs beside the others' instead of taking turns for the GIL, and each process has
    one GPU, as a tile job has. Tiles go to whichever worker is free (`compute_tiles`). Spawned:
    no CUDA state inherited from a fork (a store job granted every GPU of the host, whose threads
    have started by then); one GPU's worker forked first thing in the job is a `ForkedWorker`.

    Parameters
    ----------
    devices : list of str
        The GPUs, as CUDA_VISIBLE_DEVICES names them (runtime/gpu_slots.visible_gpus).
    """

    def __init__(self, devices: list[str]):
        self.devices = [str(d) for d in devices]
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        for device in self.devices:
            queue.put(device)
        with _main_script_hidden():
            self.executor = ProcessPoolExecutor(
                len(self.devices),
                mp_context=context,
                initializer=_bind_device,
                initargs=(queue, context.Barrier(len(self.devices)), os.getpid()),
            )
            # a task per worker starts them all now (the pool starts one a task while none is idle,
            # in `submit`; each task waits for all: no worker takes two)
            self.started = [self.executor.submit(_started) for _ in self.devices]

    def submit(self, fn, *args) -> Future:
        """`fn(*args)` in whichever worker is free (`fn` a module's function: it is pickled)."""
        return self.executor.submit(fn, *args)

    def gpus_ready(self) -> bool:
        """Whether CuPy made a context in every worker (waits for them to start): a worker
        without one would count its tiles on the CPU, which `auto` leaves to the tile jobs."""
        return all(ready for _, ready in (future.result() for future in self.started))

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


_READY = -1  # a ForkedWorker's first message: its GPU and whether CuPy made its context there


class ForkedWorker:
    """One GPU's worker for the few tiles of an append or a query (`one_gpu_worker`), forked from the
    store job first thing in it: no interpreter to start, nothing its parent imported to import
    again; it imports CuPy and makes its CUDA context while the job hashes and reads its input.

    The store job does not wait for its end. A process with a CUDA context takes 0.11-0.16 s to
    end (the context's teardown, one H100: bench/RESULTS.md "Session 25"), and a pool's close
    waits for it (concurrent.futures joins its workers, at the latest as the interpreter ends):
    0.17-0.22 s of an append's store job on the H100 machine, after its last tile. So the worker
    is a plain fork with a pipe: `close` tells it to end, and the job goes on; the worker ends on
    its own, as it does where its end of the pipe closes (the job ended or was killed: once the
    task in hand is done) or a reply cannot be sent; a thread of the job collects its exit status
    where the job is still there (else init does, or the nearest subreaper). Only where the job
    has touched no CUDA and runs no other thread yet (a fork inherits neither safely); the worker
    keeps the job's switch interval (scripts/store.py), harmless in a process of one thread.

    The interface `compute_tiles` takes of a DevicePool: `devices`, `started`, `submit`,
    `gpus_ready`, `close`.
    """

    def __init__(self, warm: "WarmTile | None" = None) -> None:
        self.devices = [first_gpu()]
        ours, theirs = multiprocessing.Pipe()
        for stream in (sys.stdout, sys.stderr):  # what the job wrote is not written again by the worker
            if stream is not None:
                stream.flush()
        pid = os.fork()
        if pid == 0:  # the worker: never returns
            try:
                ours.close()
                _serve(theirs, self.devices[0], warm)
            finally:
                os._exit(1)
        theirs.close()
        self.pid = pid
        self._conn = ours
        self._lock = threading.Lock()
        ready: Future = Future()
        self._pending: dict[int, Future] = {_READY: ready}
        self._next = 0
        self._closed = False  # no more tasks taken
        self._told = False  # the worker was told to end
        self.started = [ready]
        threading.Thread(target=self._read, name="genotile-worker-replies", daemon=True).start()

    def submit(self, fn, *args) -> Future:
        """`fn(*args)` in the worker, after what was submitted before (`fn` a module's function:
        it is pickled)."""
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the GPU worker was closed")
            key = self._next
            self._conn.send((key, fn, args))
            self._next, self._pending[key] = key + 1, future
        return future

    def gpus_ready(self) -> bool:
        """Whether CuPy made a context in the worker (waits for it to start)."""
        return bool(self.started[0].result()[1])

    def close(self) -> None:
        """Tell the worker to end once the tasks it was sent are done, without waiting for it; their
        futures are cancelled (the store job closes it with none left: scripts/store.py)."""
        with self._lock:
            self._closed = True
            self._tell_to_end()
            awaited = list(self._pending.values())
        for future in awaited:
            future.cancel()

    def _tell_to_end(self) -> None:
        """The worker's stop message, once (under the lock)."""
        if not self._told:
            self._told = True
            with contextlib.suppress(OSError):
                self._conn.send(None)

    def _read(self) -> None:
        """The worker's replies, each to its future; once the worker has ended (its end of the pipe
        closed) or sent what cannot be read, whatever is still awaited fails, the worker is told to
        end, and its exit status is collected."""
        why = "the GPU worker ended before it replied"
        try:
            while True:
                key, ok, value, trace = self._conn.recv()
                if trace:  # where it failed in the worker, as concurrent.futures shows it
                    value.__cause__ = WorkerTraceback(trace)
                with self._lock:
                    future = self._pending.pop(key, None)
                if future is not None and future.set_running_or_notify_cancel():
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
        except (EOFError, OSError):
            pass
        except Exception as exc:  # noqa: BLE001 -- a reply that cannot be read: the worker is stopped
            why = f"a reply of the GPU worker could not be read ({exc!r})"
        with self._lock:
            self._closed = True
            self._tell_to_end()
            left, self._pending = list(self._pending.values()), {}
        for future in left:
            if future.set_running_or_notify_cancel():
                future.set_exception(RuntimeError(why))
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


class WorkerTraceback(Exception):
    """Where a task failed in a ForkedWorker: its traceback there (the exception's __cause__)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


def _serve(conn, device: str, warm: "WarmTile | None" = None) -> None:
    """A ForkedWorker's life: its GPU taken, CuPy imported and the context made, what a tile runs
    imported, a tile counted to warm its path (`warm`); then each task the job sends, run and
    replied to, until the job says to end or its end of the pipe closes. Ends the process
    (os._exit: no exit function of the job's runs here)."""
    import traceback
    from multiprocessing.reduction import ForkingPickler  # the pipe's own pickling (Connection.send)

    status = 1
    try:
        os.environ[CUDA_DEVICES] = device
        ready = _warm()
        conn.send((_READY, True, (device, ready), None))
        try:
            import genotile.pairs.stage  # noqa: F401
            from genotile.backends.cuda import cupy_b1, cupy_tile  # noqa: F401
        except Exception:  # noqa: BLE001 -- a warm-up only: the tile imports them itself
            pass
        if warm is not None and ready:  # on the GPU only: a CPU's would be seconds, not a warm-up
            warm.run(stop=conn.poll)  # the job's first task, once sent, goes first
        while (task := _next_task(conn)) is not None:
            key, fn, args = task
            reply: tuple[int, bool, object, str | None]
            try:
                reply = (key, True, fn(*args), None)
            except Exception as exc:  # noqa: BLE001 -- handed to the job, which decides
                reply = (key, False, exc, traceback.format_exc())
            try:  # what the job could not read back (an exception that does not unpickle) in words
                ForkingPickler.loads(ForkingPickler.dumps(reply))  # between the job and its own fork only
            except Exception as exc:  # noqa: BLE001
                text = reply[3] or repr(reply[2])
                reply = (key, False, RuntimeError(f"the GPU worker's reply cannot be sent ({exc!r})"), text)
            try:
                conn.send(reply)
            except OSError:  # the job is gone
                break
        status = 0
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        os._exit(status)


class WarmTile:
    """A tile a ForkedWorker counts and drops while it waits for its first task: a fresh process's
    first 200,000 x 2,000 snp tile took 0.155-0.22 s on the H100 machine, its second 0.04-0.05,
    and 0.05-0.07 after one of 50,000 x 2,000 (not after one of 64 x 64: bench/RESULTS.md "Session
    25"). Counted from the earlier store of an append (the links store/extend.py keeps of it beside
    the store in `store_dir`, named by its append record: Snakemake removes the store's own files
    before the job runs), for each 2-way metric of `metrics` on the store's `encoding` that has a
    threshold (without one a tile keeps every pair), with the settings a tile of it would have
    (`settings(metric, plan)`: the job's settings.tile_settings, a floor above this one), no dense
    block; ROWS x COLS vectors, fewer where a vector's planes are wide (at most BYTES read). Nothing
    where nothing was kept (a query's store, a list input's) or anything fails: a warm-up only.
    A plain class: the job imports this module before its fork, and dataclasses costs ~9 ms there.
    """

    ROWS = 50_000
    COLS = 2_000
    BYTES = 256 << 20

    def __init__(self, store_dir, encoding: str, metrics: "tuple[str, ...]", settings: "Callable[[str, Any], dict]"):
        self.store_dir = str(store_dir)
        self.encoding = encoding
        self.metrics = tuple(metrics)
        self.settings = settings

    def run(self, stop: "Callable[[], bool]" = lambda: False) -> None:
        """Count the tile for each metric, until `stop()` says a task is waiting."""
        try:
            self._count(stop)
        except Exception:  # noqa: BLE001 -- a warm-up only
            log.debug("worker warm-up tile failed", exc_info=True)

    def _count(self, stop: "Callable[[], bool]" = lambda: False) -> int:
        """The tiles counted (0 where nothing was kept)."""
        import numpy as np

        from genotile.core.metrics import get_metric
        from genotile.core.plan import Plan
        from genotile.core.registry import REGISTRY
        from genotile.pairs.tile import compute_tile
        from genotile.store import append, extend
        from genotile.store.pack import layout_from_json

        record = append.read_record(self.store_dir)
        linked, _ = extend.earlier_links(Path(self.store_dir), record) if record is not None else (None, "")
        if linked is None:
            return 0
        path, manifest = linked
        planes = np.load(path, mmap_mode="r")
        layout = layout_from_json(manifest["layout"])
        rows = min(self.ROWS + self.COLS, int(planes.shape[0]), self.BYTES // (8 * layout.total_words))
        cols = min(self.COLS, rows // 2)
        if cols < 1:
            return 0
        earlier = Plan.from_json(manifest["plan"])
        plan = Plan(rows, rows - cols, 1)  # tile (0, 1): (rows - cols) x cols vectors
        counted = 0
        for name in self.metrics:
            spec = REGISTRY.get(name)
            if spec is None or spec.encoding != self.encoding or spec.workload != "pairs" or stop():
                continue
            settings = self.settings(name, earlier)
            if settings["threshold"] is None:
                continue
            metric = get_metric(name, **(settings["metric_params"] or {}))
            compute_tile(
                planes, layout, np.arange(rows), plan, metric, 0, 1, settings["threshold"], False, settings["backend"]
            )
            counted += 1
        return counted


def _next_task(conn):
    """The next task a ForkedWorker was sent; None where the job said to end or is gone."""
    try:
        return conn.recv()
    except (EOFError, OSError):
        return None


def on_slot(pool: "DevicePool | ForkedWorker | None", slot: str | None) -> bool:
    """Whether a one-GPU pool's worker runs on the GPU slot the job took (runtime/gpu_slots
    gpu_slot's device; None where it took none, or a CPU backend's): the slot is the first free
    GPU where the job sees several, and the worker took the first one (`first_gpu`) before the
    job's imports. Where they differ the job closes the pool and counts the tiles itself.

    >>> on_slot(None, "1"), on_slot(None, None)
    (True, True)
    """
    if pool is None or slot is None:
        return True
    return pool.devices == [slot.strip()]


def _compute_tile(
    store_dir, metric: str, i: int, j: int, settings: dict, store: str | None, deferred: list | None = None
) -> str:
    """Tile (i, j) of `metric` into the store's early tiles, then its record (a record means a
    whole tile; `store`: the manifest's store_digest, None: taken once the tile is written, the
    manifest then written too); returns the GPU it ran on (CUDA_VISIBLE_DEVICES, "" where unset).
    `deferred`: the tile's writing and record appended there where its store's manifest is still
    being written (pairs/stage.tile), to run once the tiles are counted."""
    from genotile.pairs import stage

    store_dir = Path(store_dir)
    tile = tile_path(store_dir, metric, i, j)
    tile.parent.mkdir(parents=True, exist_ok=True)
    stage.tile(
        store_dir / "planes.npy",
        store_dir / "manifest.json",
        store_dir / "perm.npy",
        metric,
        i,
        j,
        tile_out=tile,
        deferred=deferred,
        **settings,
    )

    def record() -> None:
        digest = store or store_digest(store_dir / "manifest.json")
        tile.with_suffix(".json").write_text(json.dumps(adoption_record(digest, **settings)), encoding="utf-8")

    if tile.exists():
        record()
    else:  # its writing deferred (appended before this, by this thread): its record after it
        assert deferred is not None
        deferred.append(record)
    return os.environ.get(CUDA_DEVICES, "")


def _on_every_device(store_dir, devices: int) -> bool:
    """Whether this process holds the store on its GPU (store/resident.py), now copied to every one
    of its `devices` GPUs: the tiles then run on a thread a GPU here, not in the pool's workers."""
    from genotile.store import resident

    return resident.spread(Path(store_dir) / "planes.npy", devices)


def _held(store_dir) -> bool:
    """Whether this process holds the store on its current GPU (store/resident.py)."""
    from genotile.store import resident

    return resident.lookup(Path(store_dir) / "planes.npy") is not None


def tiles_in_flight(store_dir, block_size: int) -> int:
    """Tiles a GPU holding the store computes at once (`_threads_per_device`): TILES_IN_FLIGHT
    where its free memory (and CuPy's pool's) holds that many tiles' device arrays beside the
    store, at TILE_BYTES_PER_ROW_BYTE bytes a byte of a held row (a block's planes made from its
    bits, then the GEMM's repacked operands, both blocks), else 1."""
    from genotile.backends.cuda import cupy_common
    from genotile.store import resident

    bits = resident.lookup(Path(store_dir) / "planes.npy")
    if bits is None:
        return 1
    cp = cupy_common.cupy_module()
    free = cp.cuda.Device().mem_info[0] + cp.get_default_memory_pool().free_bytes()
    tile = 2 * min(block_size, bits.shape[0]) * bits.shape[1] * bits.itemsize * TILE_BYTES_PER_ROW_BYTE
    return TILES_IN_FLIGHT if free >= TILES_IN_FLIGHT * tile else 1


def shares(todo: list, devices: int) -> list[list]:
    """The tiles `todo` ((metric, i, j) each) shared out among `devices` GPUs at about equal pairs:
    the larger first, each to the GPU with the fewest pairs so far (an off-diagonal tile has twice
    a diagonal one's); each share in that order. With several tiles at once a GPU, taking the
    next tile from one queue gave one of two GPUs 6 of 10 tiles (Session 15).

    >>> shares([("king", 0, 0), ("king", 0, 1), ("king", 1, 1), ("king", 0, 2), ("king", 2, 2)], 2)
    [[('king', 0, 1), ('king', 0, 0), ('king', 2, 2)], [('king', 0, 2), ('king', 1, 1)]]
    """
    loads = [0.0] * devices
    out: list[list] = [[] for _ in range(devices)]
    for tile in sorted(todo, key=lambda t: t[1] == t[2]):  # off-diagonal tiles first, stable
        device = loads.index(min(loads))
        out[device].append(tile)
        loads[device] += 0.5 if tile[1] == tile[2] else 1.0
    return out


def _threads_per_device(devices: int, todo: list, args, store_dir, in_flight: int = 1) -> str:
    """Compute the tiles `todo` ((metric, i, j) each) on `in_flight` threads a GPU of this
    process, each taking the next tile as it is free (while one reads its tile's pairs back and
    writes it, another's are counted: no GPU waits between tiles); "device: tiles, threads'
    seconds in them" of each GPU."""
    from genotile.backends.cuda import cupy_common

    cp = cupy_common.cupy_module()
    queues, lock = shares(todo, devices), threading.Lock()
    done, seconds = {d: 0 for d in range(devices)}, {d: 0.0 for d in range(devices)}

    def run(worker: int) -> None:
        device = worker % devices
        with cp.cuda.Device(device):
            while True:
                with lock:
                    own = queues[device]
                    if not own:  # its share done: the last tile of the longest other share
                        own = max(queues, key=len)
                        if not own:
                            return
                        metric, i, j = own.pop()
                    else:
                        metric, i, j = own.pop(0)
                t0 = time.perf_counter()
                _compute_tile(store_dir, *args(metric, i, j))
                with lock:
                    done[device] += 1
                    seconds[device] += time.perf_counter() - t0

    with ThreadPoolExecutor(devices * in_flight, thread_name_prefix="genotile-gpu") as threads:
        list(threads.map(run, range(devices * in_flight)))  # the first error is raised
    return ", ".join(f"{d}: {n} in {seconds[d]:.2f} thread-s" for d, n in done.items())


def compute_tiles(
    store_dir, plan, metrics: dict, *, gpu_only: bool, pool: "DevicePool | ForkedWorker | None" = None, tiles=None
) -> float:
    """Compute every tile of `plan` (or `tiles` of it) for each metric into the store's early tiles.

    Parameters
    ----------
    store_dir : str or os.PathLike
        The packed store (planes.npy, manifest.json, perm.npy).
    plan : genotile.core.plan.Plan
    metrics : dict of str to dict
        {metric: stage.tile's keyword arguments (the tile rule's params)}: the settings its tile
        jobs will have; each tile is computed with them, and its record holds them.
    gpu_only : bool
        Compute nothing unless the backend resolves to a GPU one here (`auto` mode: a store job
        without CuPy, a conda env of the CPU rules say, leaves the tiles to their jobs).
    pool : DevicePool or ForkedWorker, optional
        Share the tiles out among its GPUs (off-diagonal tiles, twice the pairs, first); None:
        one after another in this process.
    tiles : list of (int, int), optional
        The tiles to compute (an appended plan's new ones, `Plan.appended_tiles`); every tile of
        the plan where None.

    Returns
    -------
    float
        Seconds spent; 0 where nothing was computed. A failure is logged and leaves no early
        tile: the tile jobs then compute their tiles as they would have.
    """
    from genotile.backends import registry, resolve

    store_dir = Path(store_dir)
    started = time.perf_counter()
    try:
        backends = {settings["backend"] for settings in metrics.values()}
        if pool is not None and not _held(store_dir):  # the workers' GPUs count: CuPy not imported here
            on_gpu = all(registry.uses_gpu(b) is not False for b in backends) and pool.gpus_ready()
        else:
            on_gpu = all(registry.uses_gpu(resolve(b)) for b in backends)
        if gpu_only and not on_gpu:
            log.info("tiles in store: no GPU backend here (%s); the tile jobs compute the tiles", sorted(backends))
            return 0.0
        # the manifest's digest is taken after each tile in this process (a store made on the GPU
        # has its manifest written behind the first tiles: store/resident.py)
        todo = [(metric, i, j) for metric in metrics for i, j in (plan.tiles() if tiles is None else tiles)]
        deferred: list = []  # tiles written once the store's manifest is (pairs/stage.tile)
        args = lambda m, i, j: (m, i, j, metrics[m], None, deferred)  # noqa: E731
        if pool is None and on_gpu and len(todo) > 1 and _held(store_dir):  # the store held on this GPU
            in_flight = tiles_in_flight(store_dir, plan.block_size)
            per = _threads_per_device(1, todo, args, store_dir, in_flight)
            log.info("tiles in store: %s (%d at once)", per, in_flight)
        elif pool is None:
            for metric, i, j in todo:
                _compute_tile(store_dir, *args(metric, i, j))
        elif _on_every_device(store_dir, len(pool.devices)):  # the store held on the GPU: a thread a GPU
            # one tile at a time a GPU: two at once counted slower on 2 x H200 (Session 15, same
            # call: the tile phase 13.3 s against 11.95; one at a time left no GPU waiting there)
            per = _threads_per_device(len(pool.devices), todo, args, store_dir)
            log.info("tiles in store: per GPU %s (a thread each, the store copied to each)", per)
        else:
            from genotile.store import resident

            resident.settle()  # the workers read planes.npy: a store made on the GPU is written first
            store = store_digest(store_dir / "manifest.json")
            todo.sort(key=lambda t: t[1] == t[2])  # the larger off-diagonal tiles first
            log.info("tiles in store: %d tile(s) on %d GPUs (%s)", len(todo), len(pool.devices), ",".join(pool.devices))
            done = [pool.submit(_compute_tile, str(store_dir), m, i, j, metrics[m], store) for m, i, j in todo]
            failed = [e for e in (future.exception() for future in done) if e is not None]  # every one ended
            if failed:
                raise failed[0]
            on = [future.result() for future in done]
            log.info("tiles in store: per GPU %s", ", ".join(f"{d}: {on.count(d)}" for d in pool.devices))
        for write in deferred:
            write()
    except Exception:  # noqa: BLE001 -- the tile jobs compute what is missing
        log.warning("tiles in store: failed; the tile jobs compute the tiles", exc_info=True)
        clear(store_dir)
        return 0.0
    return time.perf_counter() - started
