"""Brute-force definitions, straight from DESIGN.md section 2, one pair at a time."""

import numpy as np

ACGT = set("ACGT")


def snp_distance(x: str, y: str) -> int:
    """snp-dists default: case-insensitive, count columns where both are ACGT and differ."""
    return sum(1 for a, b in zip(x.upper(), y.upper(), strict=True) if a in ACGT and b in ACGT and a != b)


def hamming_distance(x: str, y: str) -> int:
    return sum(1 for a, b in zip(x.upper(), y.upper(), strict=True) if a != b)


REFERENCES = {"snp": snp_distance, "hamming": hamming_distance}


def pair_matrix(seqs: list[str], metric: str) -> np.ndarray:
    f = REFERENCES[metric]
    n = len(seqs)
    out = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = out[j, i] = f(seqs[i], seqs[j])
    return out
