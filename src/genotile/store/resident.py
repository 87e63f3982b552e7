"""A store held on the GPU by the store job that made it, for its own tiles.

Where the store job computes its tiles on its one GPU (scripts/store.py, pairs/early.py), a
whole .bed's store of bits is made on that GPU (backends/cuda/bed_device.py: the pass's blocks
of records transposed there) and kept there: the job's tiles read their blocks from it
(`store/pack.open_store` gives them a BitsPlanes over the device's rows, whose planes the tile
makes on the device) rather than copying them from planes.npy, and planes.npy is written from
the device on threads of its own meanwhile (`write_behind`), renamed into place once whole.
The job waits for it before it ends (`settle`, store/stage.store): the tile jobs, the merge and
any later run read the file, which is byte for byte the host's pass's. The manifests wait for the
input's SHA-256 (one stream, ~1 GB/s: most of the store's time once the GPU transposes), so they
too are written behind the tiles (`manifests_behind`), which take the store's shape from a
provisional manifest and the written one before they write their files (pairs/stage.tile).

Asked for with `on_device()` around the store stage; elsewhere (a CPU store job, SLURM, `genotile
run`, a store that does not fit the device) nothing is held and the host's pass writes the file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("genotile")


@dataclass
class Held:
    """A store's rows of bits on a GPU (`bits`: cupy uint64 (rows, 2 * words)) and the thread
    writing them to its planes.npy."""

    bits: Any
    device: int
    n_variants: int
    writer: threading.Thread | None = None
    error: list = field(default_factory=list)
    seconds: float = 0.0
    copies: dict = field(default_factory=dict)  # {device: the rows copied there (`spread`)}
    manifest: dict | None = None  # the store manifest but its checksum, while `manifests_behind` writes it
    manifest_path: str | None = None
    manifests: threading.Thread | None = None
    written: dict | None = None  # the manifest as written (`final_manifest`)


_WANTED = threading.local()
_HELD: dict[str, Held] = {}
_LOCK = threading.Lock()


@contextlib.contextmanager
def on_device(wanted: bool = True):
    """While in it, a whole .bed's store is made on the current GPU and held there
    (`store/pack._pack_streamed`); on leaving, every held store is written (`settle`) and let go."""
    before = getattr(_WANTED, "on", False)
    _WANTED.on = bool(wanted)
    try:
        yield
    finally:
        _WANTED.on = before
        try:
            settle()
        finally:
            release()


def wanted() -> bool:
    """Whether a store made now is to be made and held on the GPU (`on_device`)."""
    return getattr(_WANTED, "on", False)


def _key(planes_path) -> str:
    return str(Path(planes_path).resolve())


def hold(planes_path, bits, device: int, n_variants: int) -> Held:
    """Record `bits` (a device array) as the store whose file is `planes_path`."""
    held = Held(bits, device, int(n_variants))
    _HELD[_key(planes_path)] = held
    return held


def write_behind(planes_path, held: Held, write) -> None:
    """Write the held store to `planes_path` on a thread: `write(tmp)` into a temporary file
    beside it (util/atomic.atomic_path), renamed into place once whole; `settle` waits."""
    from genotile.util.atomic import atomic_path

    def run() -> None:
        t0 = time.perf_counter()
        try:
            with atomic_path(planes_path) as tmp:
                write(tmp)
        except BaseException as exc:  # noqa: BLE001 -- raised by `settle`, in the job's thread
            held.error.append(exc)
        held.seconds = time.perf_counter() - t0

    held.writer = threading.Thread(target=run, name="genotile-store-behind", daemon=True)
    held.writer.start()


def manifests_behind(planes_path, manifest_path, provisional: dict, write) -> None:
    """Write the store's manifests on a thread (`write()`: the ingest manifest and the store
    manifest, once the input's SHA-256, one stream at ~1 GB/s, is in): the job's tiles, which
    need only the store's shape, run meanwhile from `provisional` (the store manifest but its
    checksum: `manifest_of`) and take the manifest as written before they write (`final_manifest`)."""
    held = _HELD[_key(planes_path)]
    held.manifest = json.loads(json.dumps(provisional))  # as a reader of the file would have it
    held.manifest_path = _key(manifest_path)

    def run() -> None:
        try:
            write()
        except BaseException as exc:  # noqa: BLE001 -- raised by `settle`, in the job's thread
            held.error.append(exc)

    held.manifests = threading.Thread(target=run, name="genotile-manifests-behind", daemon=True)
    held.manifests.start()


def _of_manifest(manifest_path) -> Held | None:
    """The held store whose manifest `manifests_behind` writes (or wrote) at `manifest_path`."""
    if not _HELD:
        return None
    key = _key(manifest_path)
    return next((h for h in _HELD.values() if h.manifest_path == key), None)


def manifest_of(manifest_path) -> dict | None:
    """The provisional store manifest (`manifests_behind`) of a held store whose manifest is being
    written, else None (read the file)."""
    held = _of_manifest(manifest_path)
    return None if held is None or held.manifests is None else held.manifest


def final_manifest(manifest_path) -> dict | None:
    """The store manifest at `manifest_path` as written, where `manifests_behind` writes (or
    wrote) it: waited for (its writer's error raised), read once; None where it was never
    written behind."""
    held = _of_manifest(manifest_path)
    if held is None:
        return None
    _join_manifests(held)
    with _LOCK:  # (a thread a GPU may ask at once)
        if held.written is None:
            from genotile.store.manifest import STORE_KEYS
            from genotile.util.readback import load_json

            held.written = load_json(manifest_path, "manifest", STORE_KEYS)
    return held.written


def writing_manifests() -> bool:
    """Whether a held store's manifests are being written (`manifests_behind`)."""
    return any(held.manifests is not None for held in _HELD.values())


def _join_manifests(held: Held) -> None:
    if held.manifests is not None:
        held.manifests.join()
        held.manifests = None
    if held.error:
        raise held.error[0]


def lookup(planes_path):
    """The rows of bits (a device array) of the held store of `planes_path` on the current GPU
    (where it was made, or a copy `spread` made), else None."""
    if not _HELD:
        return None
    held = _HELD.get(_key(planes_path))
    if held is None:
        return None
    from genotile.backends.cuda import cupy_common

    device = cupy_common.cupy_module().cuda.Device().id
    return held.bits if device == held.device else held.copies.get(device)


def spread(planes_path, devices: int) -> bool:
    """Copy the held store of `planes_path` to GPUs 0 .. devices - 1 of this process (device to
    device: NVLink or PCIe, no file read), so that each computes tiles from its own copy
    (pairs/early.py); False where no store is held."""
    held = _HELD.get(_key(planes_path)) if _HELD else None
    if held is None:
        return False
    from genotile.backends.cuda import cupy_common

    cp = cupy_common.cupy_module()
    t0 = time.perf_counter()
    for device in range(devices):
        if device != held.device and device not in held.copies:
            with cp.cuda.Device(device):
                copy = cp.empty_like(held.bits)
                copy.data.copy_from_device(held.bits.data, held.bits.nbytes)
                cp.cuda.Device(device).synchronize()
            held.copies[device] = copy
    log.info("store copied to %d more GPU(s) in %.3f s", len(held.copies), time.perf_counter() - t0)
    return True


def settle_manifests() -> None:
    """Wait for every held store's manifests (`manifests_behind`); the first error is raised."""
    for held in list(_HELD.values()):
        _join_manifests(held)


def settle() -> None:
    """Wait for every held store's manifests and file; the first writer's error is raised."""
    settle_manifests()
    for path, held in list(_HELD.items()):
        if held.writer is not None:
            held.writer.join()
            held.writer = None
            log.info("store written from the device: %s in %.3f s", path, held.seconds)
        if held.error:
            raise held.error[0]


def release() -> None:
    """Let every held store go (its device memory back to the pool)."""
    _HELD.clear()
