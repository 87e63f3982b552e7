"""Brute-force definitions, straight from docs/metrics.md, one pair at a time."""

import math

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


# -- genotype metrics: g = number of ALT alleles (0, 1, 2) or MISSING; "both" = both present --

MISSING = 255


def _both_sites(gi, gj) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in zip(gi, gj, strict=True) if a != MISSING and b != MISSING]


def _ieee_div(num: float, den: float) -> float:
    """num / den as IEEE doubles (and numpy) give it: x/0 = +-inf, 0/0 = nan."""
    if den == 0:
        return float("nan") if num == 0 else math.copysign(math.inf, num)
    return num / den


def ibs_pair(gi, gj) -> dict:
    """PLINK 1.9 --distance: ibs_count = sum over both-sites of |g_i - g_j|, n = #both-sites,
    dist_1ibs = ibs_count / (2n) (nan when n = 0)."""
    both = _both_sites(gi, gj)
    count = sum(abs(a - b) for a, b in both)
    return {"ibs_count": count, "n": len(both), "dist_1ibs": _ieee_div(count, 2 * len(both))}


def king_pair(gi, gj) -> dict:
    """KING-robust (PLINK 2 --make-king-table) over both-sites; het_i, het_j counted on both-sites."""
    both = _both_sites(gi, gj)
    hethet = sum(1 for a, b in both if a == 1 and b == 1)
    ibs0 = sum(1 for a, b in both if {a, b} == {0, 2})
    het_i = sum(1 for a, _ in both if a == 1)
    het_j = sum(1 for _, b in both if b == 1)
    num = 4 * ibs0 + (het_i - hethet) + (het_j - hethet)
    kinship = 0.5 - _ieee_div(num, 4 * min(het_i, het_j))
    return {"nsnp": len(both), "hethet": hethet, "ibs0": ibs0, "kinship": kinship}


def ccc2_pair(gi, gj, multiplier: float = 4.5, param: float = 2 / 3) -> dict:
    """CoMet 2-way CCC, sparse (docs/metrics.md), with its tallies."""
    rho = {1: lambda g: g, 0: lambda g: 2 - g}
    both = _both_sites(gi, gj)
    r = {(a, b): sum(rho[a](x) * rho[b](y) for x, y in both) for a in (0, 1) for b in (0, 1)}
    c_ij = sum(r.values())
    present_i = [int(g) for g in gi if g != MISSING]
    present_j = [int(g) for g in gj if g != MISSING]
    c_i, c_j = len(present_i), len(present_j)
    s_i = {1: sum(present_i), 0: 2 * c_i - sum(present_i)}
    s_j = {1: sum(present_j), 0: 2 * c_j - sum(present_j)}
    out = {"r": r, "c_ij": c_ij, "c_i": c_i, "c_j": c_j, "s_i1": s_i[1], "s_j1": s_j[1]}
    for a in (0, 1):
        for b in (0, 1):
            if c_i == 0 or c_j == 0 or c_ij == 0:
                out[f"ccc_{a}{b}"] = 0.0
                continue
            f_i, f_j = s_i[a] / (2 * c_i), s_j[b] / (2 * c_j)
            f_min, f_max = min(f_i, f_j), max(f_i, f_j)
            out[f"ccc_{a}{b}"] = multiplier * (r[a, b] / c_ij) * (1 - param * f_min) * (1 - param * f_max)
    return out


GENOTYPE_REFERENCES = {"ibs": ibs_pair, "king": king_pair, "ccc2": ccc2_pair}


def ccc3_triple(gi, gj, gk, multiplier: float = 4.5, param: float = 2 / 3) -> dict:
    """CoMet 3-way CCC (docs/metrics.md), one triple, in (i, j, k) bit order, with its tallies."""
    rho = {1: lambda g: int(g), 0: lambda g: 2 - int(g)}
    sites = [(x, y, z) for x, y, z in zip(gi, gj, gk, strict=True) if MISSING not in (x, y, z)]
    r = {
        (a, b, c): sum(rho[a](x) * rho[b](y) * rho[c](z) for x, y, z in sites)
        for a in (0, 1)
        for b in (0, 1)
        for c in (0, 1)
    }
    c_ijk = sum(r.values())
    present = [[int(g) for g in v if g != MISSING] for v in (gi, gj, gk)]
    cs = [len(p) for p in present]
    s1 = [sum(p) for p in present]
    out = {"r": r, "c_ijk": c_ijk}
    for a in (0, 1):
        for b in (0, 1):
            for c in (0, 1):
                if 0 in cs or c_ijk == 0:
                    out[f"ccc_{a}{b}{c}"] = 0.0
                    continue
                f = sorted((s1[t] if bit else 2 * cs[t] - s1[t]) / (2 * cs[t]) for t, bit in enumerate((a, b, c)))
                out[f"ccc_{a}{b}{c}"] = (
                    multiplier * (r[a, b, c] / c_ijk) * (1 - param * f[0]) * (1 - param * f[1]) * (1 - param * f[2])
                )
    return out
