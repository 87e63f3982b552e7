"""Samples and signatures as flat byte arrays, and the bit masks and probes the backends search.

Matching (case-insensitive): A, C, G, T match themselves; N in the sample or the signature
matches anything. In a sample every other character (IUPAC codes, '-', '.') is a base that
no signature base matches (only a signature N covers it); signatures may hold ACGTN only.

Sample masks, per sample: 4 planes (A, C, G, T), bit i of plane b set when base i is b or N,
64 positions per little-endian uint64 word, `words = ceil(len / 64) + 2` (two zero words of
padding, so a funnel shift may always read word q + 1).

Signature probes: the signature's non-N positions as uint32 `(offset << 2) | base`, rarest
base of the signature first (ties: A < C < G < T), then by offset. Any order gives the same
answer (the candidates are an AND over all probes); rarest-first kills the candidates of
low-complexity pairs early (poly-A against poly-A ending in C: the C is the first probe).
"""

from dataclasses import dataclass

import numpy as np

from ..errors import GenotileError

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


def sample_masks(seq: np.ndarray, words: int | None = None) -> np.ndarray:
    """(4, words) uint64: bit i of row b set when seq[i] is base b or N."""
    words = words_for(seq.size) if words is None else words
    code = CODE[seq]
    bits = np.zeros((4, words * WORD_BITS), dtype=bool)
    for b in range(4):
        bits[b, : seq.size] = (code == b) | (code == N_CODE)
    return np.packbits(bits, axis=1, bitorder="little").view("<u8")


def probes(sig: np.ndarray) -> np.ndarray:
    """The non-N positions of one signature as (offset << 2) | base, rarest base first."""
    code = CODE[sig].astype(np.int64)
    counts = np.bincount(code, minlength=5)[:4]
    offsets = np.flatnonzero(code < N_CODE)
    order = np.lexsort((offsets, code[offsets], counts[code[offsets]]))
    picked = offsets[order]
    return ((picked << 2) | code[picked]).astype(np.uint32)


def all_probes(sigs: SequenceSet) -> tuple[np.ndarray, np.ndarray]:
    """Every signature's probes back to back, and their offsets (len(sigs) + 1)."""
    parts = [probes(sigs.record(k)) for k in range(len(sigs))]
    starts = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.size for p in parts], out=starts[1:])
    flat = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    return flat.astype(np.uint32), starts
