"""First match of every (sample, signature) pair with numpy uint64 word operations.

Candidates: bit t of window w stands for the start p = 64 w + t. For each probe (offset j,
mask plane b: a base, run or every-other-base mask, see encode/probes) the 64 bits of plane b
from bit 64 w + j on are read with a funnel shift of words w + j // 64 and w + j // 64 + 1 and
ANDed in; a window whose word becomes 0 is dropped.
Windows are taken left to right in chunks (16, 32, ... windows), probes in batches
(2, 4, ... 256), and the first chunk with a survivor gives the leftmost start.
"""

import numpy as np

from genotile.screen.encode import WORD_BITS, SequenceSet, all_probes, sample_masks

ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def _first_start(masks: np.ndarray, length: int, sig_len: int, prb: np.ndarray) -> int:
    last = length - sig_len  # last valid start
    if last < 0:
        return -1
    n_windows = last // WORD_BITS + 1
    tail_bits = last - WORD_BITS * (n_windows - 1) + 1  # 1 .. 64 valid starts in the last window
    j_all = (prb >> 8).astype(np.int64)
    b_all = (prb & 255).astype(np.int64)
    flat = masks.reshape(-1)
    stride = masks.shape[1]
    chunk, w0 = 16, 0
    while w0 < n_windows:
        w1 = min(n_windows, w0 + chunk)
        live = np.arange(w0, w1, dtype=np.int64)
        cand = np.full(live.size, ONES, dtype=np.uint64)
        if w1 == n_windows and tail_bits < WORD_BITS:
            cand[-1] = np.uint64((1 << tail_bits) - 1)
        p, batch = 0, 2
        while p < prb.size and live.size:
            j, b = j_all[p : p + batch], b_all[p : p + batch]
            r = (j & 63).astype(np.uint64)
            base = b * stride + (j >> 6)  # word index of window 0 in plane b
            idx = live[:, None] + base[None, :]
            lo = flat[idx] >> r
            hi = np.where(r > 0, flat[idx + 1] << ((np.uint64(64) - r) & np.uint64(63)), np.uint64(0))
            cand &= np.bitwise_and.reduce(lo | hi, axis=1)
            keep = cand != 0
            if not keep.all():
                live, cand = live[keep], cand[keep]
            p += batch
            batch = min(batch * 2, 256)
        if live.size:
            c = int(cand[0])
            return int(live[0]) * WORD_BITS + ((c & -c).bit_length() - 1)
        w0, chunk = w1, min(chunk * 2, 4096)
    return -1


def first_matches(samples: SequenceSet, sigs: SequenceSet) -> np.ndarray:
    """(n_samples, n_signatures) int32: 0-based start of the first match, -1 for none."""
    prb, starts, levels = all_probes(sigs)
    sig_lens = sigs.lengths
    out = np.full((len(samples), len(sigs)), -1, dtype=np.int32)
    for s in range(len(samples)):
        seq = samples.record(s)
        masks = sample_masks(seq, levels=levels)
        for g in range(len(sigs)):
            out[s, g] = _first_start(masks, seq.size, int(sig_lens[g]), prb[starts[g] : starts[g + 1]])
    return out
