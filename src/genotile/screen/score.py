"""Exact scores of matches: integer quality sums, printed with two decimals.

score = mean(quality - 33) over the sample's bases in the matched region = S / L, with S the
integer sum and L the signature's length. Printed with two decimals rounded half up on the
exact fraction: hundredths = floor((200 S + L) / (2 L)), so 30.125 prints 30.13 (never the
binary float's guess). `min_score` keeps a pair when its printed score is >= min_score (the
value read as the decimal written in the config).
"""

from fractions import Fraction

import numpy as np

from genotile.io.fastq import PHRED_OFFSET
from genotile.screen.encode import SequenceSet


def qual_sums(samples: SequenceSet, positions: np.ndarray, sig_lens: np.ndarray) -> np.ndarray:
    """(n_samples, n_signatures) int64: sum of (quality - 33) over each match, 0 where none."""
    assert samples.qual is not None, "samples carry their qualities (from_records(..., with_qual=True))"
    out = np.zeros(positions.shape, dtype=np.int64)
    for s in np.flatnonzero((positions >= 0).any(axis=1)):
        q = samples.qual[samples.offsets[s] : samples.offsets[s + 1]]
        prefix = np.zeros(q.size + 1, dtype=np.int64)
        np.cumsum(q, dtype=np.int64, out=prefix[1:])
        g = np.flatnonzero(positions[s] >= 0)
        p = positions[s, g].astype(np.int64)
        out[s, g] = prefix[p + sig_lens[g]] - prefix[p] - PHRED_OFFSET * sig_lens[g]
    return out


def hundredths(qsum: np.ndarray, length: np.ndarray) -> np.ndarray:
    """round-half-up(100 * qsum / length), exactly, as int64."""
    qsum, length = np.asarray(qsum, dtype=np.int64), np.asarray(length, dtype=np.int64)
    return (200 * qsum + length) // (2 * length)


def format_score(h: int) -> str:
    return f"{h // 100}.{h % 100:02d}"


def passes(h: np.ndarray, min_score) -> np.ndarray:
    """Printed score (hundredths h) >= min_score, compared exactly."""
    if min_score is None:
        return np.ones(np.shape(h), dtype=bool)
    m = Fraction(str(min_score))
    return np.asarray(h, dtype=object) * m.denominator >= 100 * m.numerator
