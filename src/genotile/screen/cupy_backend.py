"""First matches on the GPU (kernels/screen_search.cu) and the matches' quality sums.

Host arrays in, host arrays out: the samples' bytes are copied as they are and encoded on the
device (ballots), the search runs one block per (sample, chunk of signatures), positions come
back as one int32 matrix. Quality sums are taken on the device from a prefix sum over the
qualities of the samples that have a match (all of them copied when more than half do).
"""

import time

import numpy as np

from ..backends import cupy_common
from ..fastq import PHRED_OFFSET
from .encode import CODE, N_CODE, WORD_BITS, SequenceSet

KERNELS = "screen_search.cu"
WARPS = 16  # matches WARPS in the kernel
SIGS_PER_BLOCK = 256
ENCODE_THREADS = 256


def smem_limit() -> int:
    return cupy_common.device_attr("MaxSharedMemoryPerBlockOptin")


class _Clock:
    """Stage times for benchmarks; does nothing (no synchronisation) without a dict."""

    def __init__(self, cp, timings):
        self.cp, self.timings = cp, timings
        self.last = time.perf_counter()

    def __call__(self, stage):
        if self.timings is None:
            return
        self.cp.cuda.Device().synchronize()
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + now - self.last
        self.last = now


def device_probes(sigs: SequenceSet):
    """encode.all_probes on the device (one radix sort instead of a sort per signature):
    (probes, probe_start) as device arrays, the same order (rarest base first, then offset)."""
    cp = cupy_common.cupy_module()
    n_g = len(sigs)
    code = cp.asarray(CODE)[cp.asarray(sigs.seq)].astype(cp.int64)
    offsets = cp.asarray(sigs.offsets)
    at = cp.arange(code.size, dtype=cp.int64)
    sig = cp.searchsorted(offsets, at, side="right") - 1
    counts = cp.bincount(sig * 5 + code, minlength=n_g * 5).reshape(n_g, 5)[:, :4]
    order = cp.argsort(counts * 4 + cp.arange(4), axis=1)  # bases, rarest first (ties: A < C < G < T)
    rank = cp.argsort(order, axis=1)
    keep = code < N_CODE
    sig, code, at = sig[keep], code[keep], at[keep]
    key = cp.sort((sig << 34) | (rank[sig, code] << 32) | (at - offsets[sig]))
    sig = key >> 34
    base = order[sig, (key >> 32) & 3]
    probes = (((key & 0xFFFFFFFF) << 2) | base).astype(cp.uint32)
    start = cp.zeros(n_g + 1, dtype=cp.int64)
    cp.cumsum(counts.sum(axis=1), out=start[1:])
    return probes, start


def first_matches(samples: SequenceSet, sigs: SequenceSet, force_global: bool = False, timings: dict | None = None):
    """(n_samples, n_signatures) int32 on the host: 0-based first start, -1 for none.

    `timings` (benchmarks): a dict that gets the seconds of each stage (synchronising after each)."""
    cp = cupy_common.cupy_module()
    clock = _Clock(cp, timings)
    n_s, n_g = len(samples), len(sigs)
    out = np.full((n_s, n_g), -1, dtype=np.int32)
    if n_s == 0 or n_g == 0:
        return out
    words = int(-(-samples.lengths.max() // WORD_BITS)) + 2
    d_seq = cp.asarray(samples.seq)
    d_off = cp.asarray(samples.offsets)
    clock("upload samples")
    masks = cp.empty((n_s, 4, words), dtype=cp.uint64)
    encode = cupy_common.load_kernel(KERNELS, "screen_encode")
    grid_x = -(-words * WORD_BITS // ENCODE_THREADS)
    encode((grid_x, n_s), (ENCODE_THREADS,), (d_seq, d_off, np.int32(words), masks))
    del d_seq
    clock("encode")
    d_len = cp.asarray(samples.lengths.astype(np.int64))
    d_prb, d_starts = device_probes(sigs)
    if d_prb.size == 0:  # signatures of N only: nothing to probe, the kernel never reads it
        d_prb = cp.zeros(1, dtype=cp.uint32)
    d_siglen = cp.asarray(sigs.lengths.astype(np.int64))
    clock("probes")
    d_out = cupy_common.new_output((n_s, n_g), cp.int32)
    smem = 4 * words * 8
    use_smem = not force_global and smem + 64 <= smem_limit()  # 64: the static next_sig
    kernel = cupy_common.load_kernel(KERNELS, "screen_search_smem" if use_smem else "screen_search_global")
    if use_smem:
        kernel.max_dynamic_shared_size_bytes = smem
    grid = (n_s, -(-n_g // SIGS_PER_BLOCK))
    kernel(
        grid,
        (WARPS * 32,),
        (masks, np.int32(words), d_len, d_prb, d_starts, d_siglen, np.int32(n_g), np.int32(SIGS_PER_BLOCK), d_out),
        shared_mem=smem if use_smem else 0,
    )
    clock("search")
    out = d_out.get()
    clock("download")
    return out


def qual_sums(samples: SequenceSet, positions: np.ndarray, sig_lens: np.ndarray) -> np.ndarray:
    """(n_samples, n_signatures) int64: sum of (quality - 33) over each match, 0 where none."""
    cp = cupy_common.cupy_module()
    out = np.zeros(positions.shape, dtype=np.int64)
    rows, cols = np.nonzero(positions >= 0)
    if rows.size == 0:
        return out
    matched = np.unique(rows)
    if 2 * matched.size > len(samples):
        qual, base = samples.qual, samples.offsets[:-1]
    else:  # only the samples with a match travel
        lens = samples.lengths[matched]
        qual = np.concatenate([samples.qual[samples.offsets[s] : samples.offsets[s + 1]] for s in matched])
        base = np.zeros(len(samples), dtype=np.int64)
        base[matched] = np.concatenate(([0], np.cumsum(lens)[:-1]))
    d_q = cp.asarray(qual)
    prefix = cp.zeros(qual.size + 1, dtype=cp.int64)
    cp.cumsum(d_q, dtype=cp.int64, out=prefix[1:])
    length = sig_lens[cols].astype(np.int64)
    start = base[rows] + positions[rows, cols]
    d_start, d_length = cp.asarray(start), cp.asarray(length)
    sums = prefix[d_start + d_length] - prefix[d_start] - PHRED_OFFSET * d_length
    out[rows, cols] = sums.get()
    return out
