"""Samples and signatures as flat byte arrays, and the bit masks and probes the backends search.

Matching (case-insensitive): A, C, G, T match themselves; N in the sample or the signature
matches anything. In a sample every other character (IUPAC codes, '-', '.') is a base that
no signature base matches (only a signature N covers it); signatures may hold ACGTN only.

Sample masks, per sample: planes of bits over the sample's positions, 64 positions per
little-endian uint64 word, `words = ceil(len / 64) + 2` (two zero words of padding, so a funnel
shift may always read word q + 1). Planes 0..3 (A, C, G, T): bit i set when base i is b or N.
With `levels` = M > 0, planes 4 + 8 (m - 1) + 4 (d - 1) + b for m = 1..M, d = 1, 2: bit q set
when bases q, q + d, ..., q + (2^m - 1) d are all b or N (runs, d = 1, and every other base,
d = 2), built by doubling: plane (b, d, m) = plane (b, d, m - 1) AND itself shifted by 2^(m-1) d.

Signature probes (`probes.plan`): uint32 `(offset << 8) | plane`; runs and alternations of the
signature read one plane of a high level instead of one base mask per position.
"""

from dataclasses import dataclass

import numpy as np

from genotile.errors import GenotileError
from genotile.screen import probes

BASES = b"ACGT"
N_CODE = 4
WORD_BITS = 64
# byte -> 0..3 for ACGT (any case), 4 for N/n, 5 for anything else
CODE = np.full(256, 5, dtype=np.uint8)
for _k, _c in enumerate(b"ACGTN"):
    CODE[_c] = CODE[_c + 32] = _k


@dataclass(frozen=True)
class SequenceSet:
    """Sequences back to back: record k is `seq[offsets[k]:offsets[k + 1]]`."""

    names: list
    seq: np.ndarray  # uint8
    offsets: np.ndarray  # int64, len(names) + 1
    qual: np.ndarray | None = None  # uint8 Phred+33, same layout as seq (samples only)

    def __len__(self):
        return len(self.names)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def record(self, k: int) -> np.ndarray:
        return self.seq[self.offsets[k] : self.offsets[k + 1]]

    def subset(self, start: int, stop: int) -> "SequenceSet":
        """Records start .. stop - 1, copied out (a block of a tile)."""
        a, b = int(self.offsets[start]), int(self.offsets[stop])
        return SequenceSet(
            list(self.names[start:stop]),
            np.ascontiguousarray(self.seq[a:b]),
            np.asarray(self.offsets[start : stop + 1], dtype=np.int64) - a,
            None if self.qual is None else np.ascontiguousarray(self.qual[a:b]),
        )


def from_records(records, with_qual: bool) -> SequenceSet:
    """A SequenceSet from (name, seq[, qual]) tuples of uint8 arrays."""
    names, seqs, quals = [], [], []
    for rec in records:
        names.append(rec[0])
        seqs.append(rec[1])
        if with_qual:
            quals.append(rec[2])
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([s.size for s in seqs], out=offsets[1:])
    cat = np.concatenate(seqs).astype(np.uint8) if seqs else np.zeros(0, np.uint8)
    qual = (np.concatenate(quals).astype(np.uint8) if quals else np.zeros(0, np.uint8)) if with_qual else None
    return SequenceSet(names, cat, offsets, qual)


def check_signature(path, number: int, name: str, seq: np.ndarray) -> None:
    """Signatures hold A, C, G, T, N (any case) only, and at least one base."""
    if seq.size == 0:
        raise GenotileError(f"{path}: signature {name!r} (record {number}) is empty")
    bad = np.flatnonzero(CODE[seq] > N_CODE)
    if bad.size:
        k = int(bad[0])
        raise GenotileError(
            f"{path}: signature {name!r} (record {number}) has {chr(seq[k])!r} at position {k + 1}: "
            "signatures may hold A, C, G, T and N only"
        )


def words_for(length: int) -> int:
    return -(-int(length) // WORD_BITS) + 2


def plane_index(base, stride, level):
    """Index of plane (base b, stride d, level m) in a sample's masks (level 0: the base mask)."""
    return base + (level > 0) * (4 + 8 * (level - 1) + 4 * (stride - 1))


def n_planes(levels: int) -> int:
    return 4 + 8 * int(levels)


def shift_down(planes: np.ndarray, bits: int) -> np.ndarray:
    """Bit q of each row becomes bit q + bits of the input (zeros shifted in at the top)."""
    out = np.zeros_like(planes)
    q, r = divmod(int(bits), WORD_BITS)
    words = planes.shape[-1]
    if q >= words:
        return out
    out[..., : words - q] = planes[..., q:] >> np.uint64(r)
    if r and q + 1 < words:
        out[..., : words - q - 1] |= planes[..., q + 1 :] << np.uint64(WORD_BITS - r)
    return out


def sample_masks(seq: np.ndarray, words: int | None = None, levels: int = 0) -> np.ndarray:
    """(n_planes(levels), words) uint64: base masks, then run and every-other-base masks."""
    words = words_for(seq.size) if words is None else words
    code = CODE[seq]
    bits = np.zeros((4, words * WORD_BITS), dtype=bool)
    for b in range(4):
        bits[b, : seq.size] = (code == b) | (code == N_CODE)
    masks = np.zeros((n_planes(levels), words), dtype=np.uint64)
    masks[:4] = np.packbits(bits, axis=1, bitorder="little").view("<u8")
    for m in range(1, levels + 1):
        for d in (1, 2):
            prev = masks[plane_index(np.arange(4), d, m - 1)]
            masks[plane_index(np.arange(4), d, m)] = prev & shift_down(prev, (1 << (m - 1)) * d)
    return masks


def all_probes(sigs: SequenceSet) -> tuple[np.ndarray, np.ndarray, int]:
    """Every signature's probes back to back, their offsets (len(sigs) + 1) and mask levels."""
    return probes.plan(np, CODE[sigs.seq], np.asarray(sigs.offsets, dtype=np.int64), plane_index)
