"""A .bed's store of bits made on the GPU: the pass's blocks of records uploaded and transposed
there (kernels/bed_bits.cu), the store's rows then held on the device for the store job's own
tiles, and written to planes.npy from there.

The host's pass (io/readers/bed.py `stream_to`) reads blocks of whole records on every core, as
for the compiled transposer; `DeviceBits.block` takes each block in turn: one copy to the device
and one kernel, a few milliseconds a 128 MiB block on an H100, where the host's transposer took
9.4 s for a 5 GB .bed on 16 cores. The rows come out byte for byte the host's (tests/backends/
test_gpu_bed.py), and so do the counts.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from genotile.backends.cuda import cupy_common as cc
from genotile.io import npy_rows

WORD = 64  # variants a word
THREADS = 128  # a thread block of the transposer (its __launch_bounds__)
WRITE_CHUNK_BYTES = 1 << 26  # rows copied back and written with one pwrite
WRITE_THREADS = 4
DEVICE_SHARE = 0.4  # the store held on the device takes at most this share of its free memory


def fits(n_rows: int, n_variants: int) -> bool:
    """Whether a store of `n_rows` rows of bits fits the current GPU beside its tiles (at most
    DEVICE_SHARE of its free memory)."""
    cp = cc.cupy_module()
    free, _ = cp.cuda.runtime.memGetInfo()
    return store_bytes(n_rows, n_variants) <= DEVICE_SHARE * free


def store_bytes(n_rows: int, n_variants: int) -> int:
    """Bytes of a store of bits: 16 a row a word of variants.

    >>> store_bytes(1_000_000, 20_000)
    5008000000
    """
    return 16 * n_rows * -(-n_variants // WORD)


class DeviceBits:
    """The store's rows of bits, made on the current GPU from a .bed's blocks of records.

    Parameters
    ----------
    rows_of : numpy.ndarray of int
        The sample of each store row (a permutation of the samples).
    n_samples, n_variants : int
        Of the .bed (or of the records a .pgen's pass makes).

    Attributes
    ----------
    bits : cupy.ndarray
        uint64 (rows, 2 * words): row r sample rows_of[r]'s lo words, then its hi words.
    """

    def __init__(self, rows_of: np.ndarray, n_samples: int, n_variants: int):
        cp = cc.cupy_module()
        self.device = cp.cuda.Device().id
        self.n_samples, self.n_variants = int(n_samples), int(n_variants)
        self.n_words = -(-self.n_variants // WORD)
        place = np.full(self.n_samples, -1, dtype=np.int32)
        place[np.asarray(rows_of)] = np.arange(len(rows_of), dtype=np.int32)
        self.rows = cp.asarray(place)
        self.bits = cp.zeros((len(rows_of), 2 * self.n_words), dtype=cp.uint64)
        self.flags = cp.zeros((3, self.n_words), dtype=cp.uint64)
        self.missing = cp.zeros(1, dtype=cp.uint64)
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.staged: Any = None  # the device's copy of a block of records
        self.lock = threading.Lock()
        self.kernel = cc.load_kernel("bed_bits.cu", "records_to_bits")

    def buffer(self, nbytes: int) -> np.ndarray:
        """A pinned host buffer for a block of records (its copy to the device is then one DMA)."""
        return cc.empty_pinned(nbytes)

    def block(self, words: np.ndarray, n_records: int, first_word: int) -> None:
        """Transpose a block of records into the rows; returns once `words` may be read into again.

        words: uint64 (at least n_records, groups): record k's bytes as little-endian words;
        first_word: the word of the rows the block's first record goes to (its variant // 64)."""
        cp = cc.cupy_module()
        records = np.ascontiguousarray(words[:n_records])
        with self.lock, cp.cuda.Device(self.device):
            if self.staged is None or self.staged.size < records.size:
                self.staged = cp.empty(records.size, dtype=cp.uint64)
            held = self.staged[: records.size].reshape(records.shape)
            held.set(records, stream=self.stream)
            grid = (-(-records.shape[1] // THREADS), -(-n_records // WORD))
            args = (
                held,
                np.int64(records.shape[1]),
                np.int32(n_records),
                np.int64(self.n_samples),
                self.rows,
                self.bits,
                np.int64(self.n_words),
                np.int64(first_word),
                self.flags,
                self.missing,
            )
            self.kernel(grid, (THREADS,), args, stream=self.stream)
            self.stream.synchronize()

    def counts(self) -> tuple[np.ndarray, int]:
        """(flags uint64 (3, words), missing calls), as the host pass's threads count them."""
        with self.lock:
            self.stream.synchronize()
            return self.flags.get(), int(self.missing.get()[0])

    def write(self, out_path) -> None:
        """planes.npy of the rows: the .npy header, then the rows copied back and written a chunk
        at a time (WRITE_CHUNK_BYTES, a pwrite each) on WRITE_THREADS threads."""
        cp = cc.cupy_module()
        rows, width = self.bits.shape
        row_bytes = width * 8
        step = max(1, WRITE_CHUNK_BYTES // max(1, row_bytes))
        starts = list(range(0, rows, step))
        threads = max(1, min(WRITE_THREADS, len(starts)))
        with open(out_path, "wb") as fh:
            start = npy_rows.write_header(fh, (rows, width), np.dtype("<u8"))
            fd = fh.fileno()

            def share(first: int) -> None:
                with cp.cuda.Device(self.device):
                    host = cc.empty_pinned(step * row_bytes).view(np.uint64)
                    stream = cp.cuda.Stream(non_blocking=True)
                    for r0 in starts[first::threads]:
                        r1 = min(rows, r0 + step)
                        got = host[: (r1 - r0) * width].reshape(r1 - r0, width)
                        self.bits[r0:r1].get(stream=stream, out=got)
                        stream.synchronize()
                        npy_rows.pwrite_rows(fd, got, start + r0 * row_bytes, out_path)

            with ThreadPoolExecutor(threads, thread_name_prefix="genotile-store-write") as pool:
                list(pool.map(share, range(threads)))
