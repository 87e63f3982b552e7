"""GPU packing for the `pack` step: bit planes built on the device from uint8 codes.

kernels/pack_planes.cu packs with warp ballots (32 fields -> one 32-bit word per instruction,
two make a uint64 word) in pack.py's bit layout (field f of a plane in word f // 64, bit f % 64),
so the planes equal genotype.genotype_planes / encode.categorical_planes bit for bit. A plane
is cut into segments (the categorical base planes have a two-symbol and a multi-symbol
section, each padded to whole words); one launch a segment.

`genotype_packer(layout)` / `categorical_packer(enc)` return a callable rows -> planes (numpy in,
numpy out) for store/pack.py; `Packer.device` packs device-resident codes (benchmark).
CuPy is imported lazily (cupy_common): without it `is_available()` is False.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from genotile.backends.cuda import cupy_common as cc

# pack_planes.cu's `kind`: 0 present (x != 255), 1 present and not the major symbol (x >= 1),
# 2 x == t, 3 x in (1, 2) (genotype L)
PRESENT, NONMAJOR, EQUALS, ALT = 0, 1, 2, 3
GENOTYPE_KINDS = {"L": (ALT, 0), "H": (EQUALS, 2), "V": (PRESENT, 0), "Het": (EQUALS, 1), "Hom0": (EQUALS, 0)}
THREADS = 256
SUB_BYTES = 16 << 20  # codes per pipelined piece of Packer.__call__


def is_available() -> bool:
    return cc.has_gpu()


@dataclass(frozen=True)
class Segment:
    dst0: int  # first output word in the row
    n_words: int
    src0: int  # first kept column
    n_fields: int
    kind: int
    t: int = 0


def genotype_segments(layout, n_fields: int) -> list[Segment]:
    seg = layout.segments()
    return [Segment(seg[p][0], layout.words, 0, int(n_fields), *GENOTYPE_KINDS[p]) for p in layout.planes]


def categorical_segments(enc) -> list[Segment]:
    lay, n_b, n_kept = enc.layout, int(enc.n_b), int(enc.order.size)
    seg = lay.segments()
    out = []
    for name, kind in ([("V", PRESENT)] if lay.has_valid else []) + [("N", NONMAJOR)]:
        lo = seg[name][0]
        out.append(Segment(lo, lay.words_b, 0, n_b, kind))
        out.append(Segment(lo + lay.words_b, lay.words_m, n_b, n_kept - n_b, kind))
    for t, (length, width) in enumerate(zip(enc.s_lengths, lay.s_words, strict=True), start=1):
        out.append(Segment(seg[f"S{t}"][0], int(width), n_b, int(length), EQUALS, t))
    return out


class Packer:
    """Codes (rows, columns) uint8 -> planes (rows, total_words) uint64 on the GPU."""

    def __init__(self, segments: list[Segment], total_words: int, order=None, ranks=None):
        cp = cc.cupy_module()
        self.segments = [s for s in segments if s.n_words > 0]
        self.total_words = int(total_words)
        self.order = None if order is None else cp.asarray(np.ascontiguousarray(order, dtype=np.int64))
        self.ranks = None if ranks is None else cp.asarray(np.ascontiguousarray(ranks, dtype=np.uint8))
        cp.cuda.get_current_stream().synchronize()  # the tables are read from other streams

    def device(self, dcodes):
        """Planes of device codes (a CuPy uint8 array), as a CuPy uint64 array."""
        cp = cc.cupy_module()
        rows = dcodes.shape[0]
        out = cc.new_output((rows, self.total_words), cp.int64).view(cp.uint64)
        if rows == 0:
            return out
        kernel = cc.load_kernel("pack_planes.cu", "pack_planes")
        null = np.uint64(0)
        for s in self.segments:
            warps = rows * s.n_words
            blocks = max(1, min(-(-warps // (THREADS // 32)), 1 << 16))
            kernel(
                (blocks,),
                (THREADS,),
                (
                    dcodes,
                    np.int64(dcodes.shape[1]),
                    np.int32(rows),
                    null if self.order is None else self.order,
                    null if self.ranks is None else self.ranks,
                    np.int32(s.kind),
                    np.int32(s.t),
                    np.int64(s.src0),
                    np.int64(s.n_fields),
                    out,
                    np.int64(self.total_words),
                    np.int64(s.dst0),
                    np.int64(s.n_words),
                ),
            )
        return out

    def __call__(self, codes) -> np.ndarray:
        """Planes of host codes, as a numpy array. Pipelined in pieces of about SUB_BYTES over two
        streams: the host copies of one piece (into / out of pinned buffers, several threads)
        overlap the other piece's transfers and kernels."""
        from genotile.backends.cuda import transfers

        cp = cc.cupy_module()
        codes = np.asarray(codes)
        if codes.dtype != np.uint8:
            codes = codes.astype(np.uint8)
        rows, cols = codes.shape
        tw = self.total_words
        out = np.empty((rows, tw), dtype=np.uint64)
        if rows == 0 or tw == 0:
            return out
        step = max(1, SUB_BYTES // max(1, cols, 8 * tw))
        streams = transfers.streams(cp.cuda.Device().id)
        pin_in = [_pinned(("in", s), step * cols) for s in range(2)]
        pin_out = [_pinned(("out", s), step * tw * 8) for s in range(2)]
        pending: list = [None, None]

        def finish(s):
            r0, r1 = pending[s]
            streams[s].synchronize()
            done = pin_out[s][: (r1 - r0) * tw * 8].view(np.uint64).reshape(r1 - r0, tw)
            transfers.parallel_copy(out[r0:r1], done, 0, r1 - r0)
            pending[s] = None

        for k, r0 in enumerate(range(0, rows, step)):
            s, r1 = k % 2, min(rows, r0 + step)
            n = r1 - r0
            if pending[s] is not None:
                finish(s)
            vin = pin_in[s][: n * cols].reshape(n, cols)
            transfers.parallel_copy(vin, codes, r0, r1)
            with streams[s]:
                d = cp.empty((n, cols), dtype=cp.uint8)
                d.set(vin, stream=streams[s])
                planes = self.device(d)
                planes.data.copy_to_host_async(ctypes.c_void_p(pin_out[s].ctypes.data), n * tw * 8, streams[s])
            pending[s] = (r0, r1)
        for s in range(2):
            if pending[s] is not None:
                finish(s)
        return out


_PINNED: dict = {}


def _pinned(key, nbytes: int) -> np.ndarray:
    """A pinned host buffer of at least nbytes, kept for the process (grown as needed)."""
    buf = _PINNED.get(key)
    if buf is None or buf.nbytes < nbytes:
        buf = _PINNED[key] = cc.empty_pinned(nbytes)
    return buf


def genotype_packer(layout, n_fields: int) -> Packer:
    return Packer(genotype_segments(layout, n_fields), layout.total_words)


def categorical_packer(enc) -> Packer:
    return Packer(categorical_segments(enc), enc.layout.total_words, order=enc.order, ranks=enc.ranks)


def genotype_planes(codes: np.ndarray, layout) -> np.ndarray:
    """genotype.genotype_planes on the GPU."""
    return genotype_packer(layout, np.shape(codes)[1])(codes)


def categorical_planes(codes: np.ndarray, enc) -> np.ndarray:
    """encode.categorical_planes on the GPU."""
    return categorical_packer(enc)(codes)
