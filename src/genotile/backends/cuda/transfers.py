"""Host -> device transfers of plane rows for the CuPy tile paths (cupy_tile, cupy_pack).

The host rows (a slice of the store's np.memmap, or any array) are read by up to READ_THREADS
threads at once, a piece each, into a ring of STAGING_BUFFERS pinned buffers, and copied to the
device on a copy stream; the compute stream waits for each chunk's copy event only (`upload`,
`on_chunk`). The pinned ring, the reader threads and each device's (compute, copy) streams are
kept for the process.

A source may stand for planes it makes from a smaller form (store/bits.BitsPlanes: a .bed's
calls, 2 bits each, where the five genotype planes take 5): such a source (`bits_source`) is
read and copied in that form, and its planes are made on the device (kernels/bitplane_utils.cu
`bits_planes`, on the copy stream): 2.5x fewer bytes read and copied, and no host CPU time
spent making planes.
"""

from __future__ import annotations

import functools
import mmap
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from genotile.backends.cuda import cupy_common as cc
from genotile.io import npy_rows

PIECE_BYTES = 16 << 20  # host -> device copy piece (one pinned staging buffer)
STAGING_BUFFERS = 16
READ_THREADS = min(8, os.cpu_count() or 8)  # pieces read at once (host copies: ~34 GB/s at 4-8 threads)
USE_PREAD = False  # read memmap slices of a file with pread instead of copying from the mapping


@functools.cache
def streams(device_id: int):
    """(compute stream, copy stream) of a device, kept for the process (CuPy's memory pool
    keeps freed blocks per stream: new streams per tile would strand them)."""
    cp = cc.cupy_module()
    return cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)


_RING: list = []
_RING_LOCK = threading.Lock()


def _staging(nbytes: int, count: int) -> list:
    """A ring of `count` pinned host buffers of at least `nbytes`, kept for the process and
    grown only by the buffers a transfer lacks: pinning memory is slow (~9 ms a 16 MiB buffer on
    the H100 machine: the whole ring of 16 took 0.15 s of an appended store's first tile, which
    needed 4 pieces; bench/RESULTS.md, "Session 20")."""
    global _RING
    with _RING_LOCK:
        if _RING and min(b.nbytes for b in _RING) < nbytes:
            _RING = []
        while len(_RING) < count:
            _RING.append(cc.empty_pinned(max(nbytes, PIECE_BYTES)))
        return _RING[:count]


@functools.cache
def _read_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(READ_THREADS, thread_name_prefix="genotile-read")


def parallel_copy(dst: np.ndarray, src, r0: int, r1: int) -> None:
    """dst[:] = src[r0:r1] (host rows, e.g. of a memmap) with READ_THREADS threads."""
    rows = r1 - r0
    parts = max(1, min(READ_THREADS, rows))
    bounds = np.linspace(0, rows, parts + 1).astype(np.int64)
    futures = [
        _read_pool().submit(np.copyto, dst[lo:hi], src[r0 + lo : r0 + hi])
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
        if hi > lo
    ]
    for f in futures:
        f.result()


def file_range(src) -> tuple[str, int] | None:
    """(path, byte offset) of a C-contiguous slice of a file-backed np.memmap, else None."""
    try:
        if not isinstance(src, np.memmap) or not src.flags.c_contiguous or src.size == 0:
            return None
        filename, mm = getattr(src, "filename", None), getattr(src, "_mmap", None)
        if filename is None or mm is None:
            return None
        base = np.frombuffer(mm, dtype=np.uint8)
        start = src.offset - src.offset % mmap.ALLOCATIONGRANULARITY  # where np.memmap mapped from
        offset = start + (src.ctypes.data - base.ctypes.data)
        del base
        if offset < 0 or offset + src.nbytes > os.path.getsize(filename):
            return None
        with open(filename, "rb") as fh:  # the first bytes must be the slice's
            fh.seek(offset)
            head = fh.read(min(64, src.nbytes))
        if head != src.reshape(-1).view(np.uint8)[: len(head)].tobytes():
            return None
        return str(filename), int(offset)
    except Exception:  # noqa: BLE001 -- any doubt: copy from the mapping instead
        return None


@dataclass(frozen=True)
class Piece:
    side: str  # "L" (block I) or "R" (block J)
    chunk: int
    r0: int
    r1: int
    last: bool  # the chunk's last piece


def bits_source(src) -> bool:
    """Whether `src` stands for genotype planes made from bits rows (store/bits.BitsPlanes:
    `.bits` uint64 (rows, 2 * words) and `.valid` (words,)), which `upload` copies as bits (or,
    held on the device already, `resident_bits`, makes the planes of in place)."""
    bits = getattr(src, "bits", None)
    return (isinstance(bits, np.ndarray) or _on_device(bits)) and isinstance(getattr(src, "valid", None), np.ndarray)


def _on_device(array) -> bool:
    return type(array).__module__.startswith("cupy")


def resident_bits(sources: dict) -> bool:
    """Whether every source is bits rows on this device (store/resident.py: the store job's
    store, made on its GPU): `upload` then copies nothing and makes each piece's planes there."""
    cp = cc.cupy_module()
    return all(
        bits_source(src) and _on_device(src.bits) and src.bits.device.id == cp.cuda.Device().id
        for src in sources.values()
    )


def _expand_bits(cp, staged, valid, target, stream) -> None:
    """target[:] = the five genotype planes of the bits rows `staged` (device arrays), on `stream`."""
    rows, words = staged.shape[0], staged.shape[1] // 2
    if rows == 0:
        return
    kernel = cc.load_kernel("bitplane_utils.cu", "bits_planes")
    threads = 256
    grid = -(-rows * words // threads)
    kernel((grid,), (threads,), (staged, valid, np.int32(rows), np.int64(words), target), stream=stream)


def copy_pieces(order, chunks: dict, row_bytes: int) -> list[Piece]:
    rows_per_piece = max(1, PIECE_BYTES // max(1, row_bytes))
    out = []
    for side, a in order:
        c0, c1 = chunks[side][a]
        for p0 in range(c0, c1, rows_per_piece):
            p1 = min(p0 + rows_per_piece, c1)
            out.append(Piece(side, a, p0, p1, p1 == c1))
    return out


def upload(sources: dict, targets: dict, pieces: list[Piece], copy_stream, on_chunk=None) -> dict:
    """Copy host rows to the device, piece by piece through the pinned ring.

    sources / targets: {"L": host array, "R": ...} / {"L": device array, ...} of equal shapes.
    Up to READ_THREADS pieces are read at once (each by one thread: host copies run at a few
    GB/s a thread) into the ring of STAGING_BUFFERS pinned buffers; this thread queues each
    piece's copy to the device on copy_stream in order, and a buffer is read into again once
    its copy is done. on_chunk(side, chunk, event) is called once a chunk's last copy is queued
    (event: recorded after it). Returns timings.
    """
    cp = cc.cupy_module()
    if not pieces:
        return {"read_s": 0.0}
    if resident_bits(sources):  # the store's rows on the device already: their planes made in place
        valid = {side: cp.asarray(src.valid) for side, src in sources.items()}
        for p in pieces:
            src = sources[p.side]
            _expand_bits(cp, src.bits[p.r0 : p.r1], valid[p.side], targets[p.side][p.r0 : p.r1], copy_stream)
            if p.last and on_chunk is not None:
                on_chunk(p.side, p.chunk, copy_stream.record())
        return {"read_busy_s": 0.0, "resident": True}
    # what each side's rows are read as: the planes, or the bits they are made from (on the device)
    bits = {side: bits_source(src) for side, src in sources.items()}
    hosts = {side: src.bits if bits[side] else src for side, src in sources.items()}
    words = {side: hosts[side].shape[1] for side in sources}
    max_rows = max(p.r1 - p.r0 for p in pieces)
    ring = _staging(max_rows * max(words.values()) * 8, min(STAGING_BUFFERS, len(pieces)))
    nbuf = len(ring)
    device_id = cp.cuda.Device().id
    busy = [0.0]
    lock = threading.Lock()
    staged, valid = [], {}
    if any(bits.values()):  # the bits of a piece on the device, until its planes are made
        staged = [cp.empty((max_rows, max(words.values())), dtype=cp.uint64) for _ in range(nbuf)]
        valid = {side: cp.asarray(src.valid) for side, src in sources.items() if bits[side]}

    def view(b: int, side: str, rows: int) -> np.ndarray:
        return ring[b][: rows * words[side] * 8].view(np.uint64).reshape(rows, words[side])

    files, fds = {}, {}
    if USE_PREAD:
        for side, src in hosts.items():
            rng = file_range(src)
            if rng is not None:
                files[side] = rng
                if rng[0] not in fds:
                    fds[rng[0]] = os.open(rng[0], os.O_RDONLY)

    def read(k: int, b: int, free_event) -> None:
        if free_event is not None:  # the buffer's previous copy to the device must be done
            cp.cuda.Device(device_id).use()
            while not free_event.done:
                time.sleep(2e-5)
        p = pieces[k]
        t0 = time.perf_counter()
        dst = view(b, p.side, p.r1 - p.r0)
        if p.side in files:
            path, offset = files[p.side]
            npy_rows.pread_rows(fds[path], dst, offset + p.r0 * words[p.side] * 8, path)
        else:
            np.copyto(dst, hosts[p.side][p.r0 : p.r1])
        with lock:
            busy[0] += time.perf_counter() - t0

    pool = _read_pool()
    futures = {k: pool.submit(read, k, k % nbuf, None) for k in range(min(nbuf, len(pieces)))}
    try:
        for k, p in enumerate(pieces):
            futures.pop(k).result()
            b = k % nbuf
            rows = p.r1 - p.r0
            if bits[p.side]:
                held = staged[b].reshape(-1)[: rows * words[p.side]].reshape(rows, words[p.side])
                held.set(view(b, p.side, rows), stream=copy_stream)
                _expand_bits(cp, held, valid[p.side], targets[p.side][p.r0 : p.r1], copy_stream)
            else:
                targets[p.side][p.r0 : p.r1].set(view(b, p.side, rows), stream=copy_stream)
            event = copy_stream.record()
            if k + nbuf < len(pieces):
                futures[k + nbuf] = pool.submit(read, k + nbuf, b, event)
            if p.last and on_chunk is not None:
                on_chunk(p.side, p.chunk, event)
    finally:
        for f in futures.values():  # (only after an error) let the readers finish with the ring
            f.cancel()
        for f in futures.values():
            if not f.cancelled():
                try:
                    f.result()
                except Exception:  # noqa: BLE001, S110 -- the first error is the one raised
                    pass
        for fd in fds.values():
            os.close(fd)
    return {"read_busy_s": busy[0], "pread": sorted(files)}


def device_blocks(cp, left, right, diagonal):
    """Device arrays for the two blocks (poisoned under test: a row never copied shows)."""
    words = left.shape[1]
    blocks = [cp.empty((left.shape[0], words), dtype=cp.uint64)]
    if not diagonal:
        blocks.append(cp.empty((right.shape[0], words), dtype=cp.uint64))
    if cc.POISON:
        for b in blocks:
            b.fill(np.uint64(0xA5A5A5A5A5A5A5A5))
    return blocks[0], blocks[-1]
