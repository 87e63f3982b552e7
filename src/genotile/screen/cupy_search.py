"""First matches on the GPU (backends/cuda/kernels/screen_search.cu, compiled by cupy_common) and
the matches' quality sums.

Host arrays in, host arrays out: the samples' bytes are copied as they are and encoded on the
device (ballots, then the run and every-other-base masks by doubling, in chunks of samples
when the masks would not fit), the search runs one block per (sample, chunk of signatures), positions come
back as one int32 matrix. Quality sums are taken on the device from a prefix sum over the
qualities of the samples that have a match (all of them copied when more than half do).
"""

import time

import numpy as np

from genotile.backends.cuda import cupy_common
from genotile.io.fastq import PHRED_OFFSET
from genotile.screen import probes
from genotile.screen.encode import CODE, WORD_BITS, SequenceSet, n_planes, plane_index

KERNELS = "screen_search.cu"
WARPS = 16  # matches WARPS in the kernel
SIGS_PER_BLOCK = 256
ENCODE_THREADS = 256
RUN_THREADS = 256  # matches RUN_THREADS in the kernel
MASK_BYTES = 8 << 30  # device memory for one chunk of samples' masks
MAX_GRID_Z = 65535


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
    """encode.all_probes on the device (probes.plan with CuPy: radix sorts instead of a host
    pass): (probes, probe_start) as device arrays in the same order, and the mask levels."""
    cp = cupy_common.cupy_module()
    code = cp.asarray(CODE)[cp.asarray(sigs.seq)]
    return probes.plan(cp, code, cp.asarray(np.asarray(sigs.offsets, dtype=np.int64)), plane_index)


def sample_chunk(n_s: int, per_sample: int) -> int:
    """Samples whose masks go to the device at once (mask memory <= MASK_BYTES or half the free memory)."""
    cp = cupy_common.cupy_module()
    budget = min(MASK_BYTES, cp.cuda.Device().mem_info[0] // 2)
    return max(1, min(n_s, MAX_GRID_Z, budget // per_sample))


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
    d_len = cp.asarray(samples.lengths.astype(np.int64))
    clock("upload samples")
    d_prb, d_starts, levels = device_probes(sigs)
    if d_prb.size == 0:  # signatures of N only: nothing to probe, the kernel never reads it
        d_prb = cp.zeros(1, dtype=cp.uint32)
    d_siglen = cp.asarray(sigs.lengths.astype(np.int64))
    clock("probes")
    planes = n_planes(levels)
    chunk = sample_chunk(n_s, planes * words * 8)
    masks = cp.empty((chunk, planes, words), dtype=cp.uint64)
    encode = cupy_common.load_kernel(KERNELS, "screen_encode")
    run_masks = cupy_common.load_kernel(KERNELS, "screen_run_masks")
    smem = 4 * words * 8
    use_smem = not force_global and smem + 64 <= smem_limit()  # 64: the static next_sig
    kernel = cupy_common.load_kernel(KERNELS, "screen_search_smem" if use_smem else "screen_search_global")
    if use_smem:
        kernel.max_dynamic_shared_size_bytes = smem
    d_out = cupy_common.new_output((n_s, n_g), cp.int32)
    for s0 in range(0, n_s, chunk):
        n = min(chunk, n_s - s0)
        grid_x = -(-words * WORD_BITS // ENCODE_THREADS)
        encode((grid_x, n), (ENCODE_THREADS,), (d_seq, d_off[s0:], np.int32(words), np.int32(planes), masks))
        for m in range(1, levels + 1):
            run_masks(
                (-(-words // RUN_THREADS), 8, n),
                (RUN_THREADS,),
                (masks, np.int32(words), np.int32(planes), np.int32(m)),
            )
        clock("encode")
        kernel(
            (n, -(-n_g // SIGS_PER_BLOCK)),
            (WARPS * 32,),
            (
                masks,
                np.int32(words),
                np.int32(planes),
                d_len[s0:],
                d_prb,
                d_starts,
                d_siglen,
                np.int32(n_g),
                np.int32(SIGS_PER_BLOCK),
                d_out[s0:],
            ),
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
    assert samples.qual is not None, "samples carry their qualities (from_records(..., with_qual=True))"
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
