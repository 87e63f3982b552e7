"""Relatedness from KING-robust kinship: degrees and types of relationship, and a maximal set of
unrelated samples (`plink2 --king-cutoff`'s own set where it is as large, else a larger one).

Degrees follow KING's published ranges (Manichaikul et al. 2010; the KING manual): kinship
> 0.354 duplicate or MZ twin, [0.177, 0.354] 1st degree, [0.0884, 0.177] 2nd, [0.0442,
0.0884] 3rd, below 0.0442 unrelated (the powers 2^-1.5, 2^-2.5, 2^-3.5, 2^-4.5, rounded). The
published ranges share their ends; a value exactly at one gets the closer relationship
(0.177 is 1st degree, 0.0442 3rd), as genotile's king threshold keeps kinship >= 0.0442 as
"3rd degree or closer". A `nan` kinship (no both-sites, or no het call in either sample) is
`unknown`; `-inf` (no het call in one sample) is below every range: `unrelated`.

Relationship types, as KING's `--related` infers them without IBD segments (its InfType
column): the degree, with the 1st degree split by the proportion of SNPs at which the pair is
IBS0 (opposite homozygotes). A parent and child always share an allele, so their IBS0 is 0 up
to genotyping error; full siblings share none at a quarter of the loci where unrelated samples
are IBS0. Below `IBS0_PO` a 1st-degree pair is `PO`, else `FS`.

The unrelated set: two samples are related when kinship > cutoff (strictly, as PLINK 2).
Each connected group of related samples is solved on its own: exactly (a maximum
independent set, by branch and bound) when it is small enough, else by the better of PLINK
2's greedy (drop the partner of the first sample with one relative, else the first sample
with the most) and a minimum-degree greedy, each made maximal by adding back every dropped
sample with no kept relative. PLINK 2's own greedy is always one of the candidates, so the
set is never smaller than PLINK 2's on the same pairs; its group-by-group result equals the
whole-graph run, because no step in one group changes another group's degrees. Where PLINK 2's
greedy keeps as many samples of a group as the best found, its samples are kept: between sets
of one size PLINK 2's choice is taken (it keeps a parent where a search might keep a sibling),
so the lists equal plink2's wherever plink2's are as large, and differ only by being larger.
"""

import heapq
from collections.abc import Sequence

import numpy as np

# (lower bound, inclusive, label), closest relationship first
DEGREES = (
    (0.354, False, "duplicate/MZ"),
    (0.177, True, "1st"),
    (0.0884, True, "2nd"),
    (0.0442, True, "3rd"),
)
UNRELATED, UNKNOWN = "unrelated", "unknown"
# KING's InfType labels, in its spelling (a .kin0 of `king --related` can be compared as is)
RELATIONSHIPS = ("Dup/MZ", "PO", "FS", "2nd", "3rd", "UN")
# The IBS0 proportion below which a 1st-degree pair is parent-offspring: KING's own default
# (relationship.cpp of KING 2.1, `if(ibs0 < 0.008)` where no --errorrate is given; the KING
# manual, kingrelatedness.com/manual.shtml, gives the kinship ranges above). KING may instead
# estimate it from a gap in the 1st-degree pairs' IBS0 below 0.01 (buildped.cpp) or from
# known pedigrees; genotile, without pedigrees, keeps the fixed default. Full siblings' IBS0
# is a quarter of unrelated pairs' (about 0.015 for common SNPs, so well above it); data of
# mostly rare variants brings it nearer, and a high genotype error rate lifts parent-offspring
# pairs towards it.
IBS0_PO = 0.008
EXACT_MAX = 64  # groups of at most this many related samples are solved exactly
EXACT_STEPS = 200_000  # branch-and-bound calls per group before falling back to the greedies


def degree(kinship: np.ndarray) -> np.ndarray:
    """The KING degree of relationship of each kinship value.

    Parameters
    ----------
    kinship : (pairs,) float64

    Returns
    -------
    (pairs,) object array of "duplicate/MZ", "1st", "2nd", "3rd", "unrelated" or "unknown" (nan)

    >>> degree(np.array([0.5, 0.354, 0.177, 0.1, 0.0442, 0.01, -np.inf, np.nan])).tolist()
    ['duplicate/MZ', '1st', '1st', '2nd', '3rd', 'unrelated', 'unrelated', 'unknown']
    """
    kinship = np.asarray(kinship, dtype=np.float64)
    out = np.full(kinship.shape, UNRELATED, dtype=object)
    for bound, inclusive, label in reversed(DEGREES):  # closer relationships overwrite
        out[(kinship >= bound) if inclusive else (kinship > bound)] = label
    out[np.isnan(kinship)] = UNKNOWN
    return out


def relationship(kinship: np.ndarray, ibs0: np.ndarray, ibs0_po: float = IBS0_PO) -> np.ndarray:
    """KING's inferred relationship type of each pair (`king --related`'s InfType, from kinship
    and IBS0 alone).

    Parameters
    ----------
    kinship : (pairs,) float64
    ibs0 : (pairs,) float64, the IBS0 proportion: opposite-homozygote SNPs / SNPs called in both
    ibs0_po : a 1st-degree pair with IBS0 below this is parent-offspring, else full siblings

    Returns
    -------
    (pairs,) object array of "Dup/MZ", "PO", "FS", "2nd", "3rd", "UN" (the `degree` with the
    1st degree split, `unrelated` as KING's "UN") or "unknown" (nan kinship, or a 1st-degree
    kinship with a nan IBS0)

    >>> relationship(np.array([0.5, 0.25, 0.25, 0.12, 0.06, 0.0, np.nan]),
    ...              np.array([0.0, 0.001, 0.02, 0.03, 0.04, 0.06, np.nan])).tolist()
    ['Dup/MZ', 'PO', 'FS', '2nd', '3rd', 'UN', 'unknown']
    """
    kinship = np.asarray(kinship, dtype=np.float64)
    ibs0 = np.asarray(ibs0, dtype=np.float64)
    deg = degree(kinship)
    out = deg.copy()
    out[deg == "duplicate/MZ"] = "Dup/MZ"
    out[deg == UNRELATED] = "UN"
    first = deg == "1st"
    out[first & (ibs0 < ibs0_po)] = "PO"
    out[first & (ibs0 >= ibs0_po)] = "FS"
    out[first & np.isnan(ibs0)] = UNKNOWN
    return out


def ibs0_proportion(ibs0: np.ndarray, nsnp: np.ndarray) -> np.ndarray:
    """IBS0 counts as proportions of the SNPs called in both (KING's and PLINK 2's IBS0 column;
    `nan` where no SNP is)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(ibs0, dtype=np.float64) / np.asarray(nsnp, dtype=np.float64)


def related_lists(n: int, a: np.ndarray, b: np.ndarray, kinship: np.ndarray, cutoff: float) -> list[set[int]]:
    """Each sample's relatives: the pairs with kinship > cutoff, as n sets of indices."""
    related = np.asarray(kinship, dtype=np.float64) > cutoff
    relatives: list[set[int]] = [set() for _ in range(n)]
    for i, j in zip(np.asarray(a)[related].tolist(), np.asarray(b)[related].tolist(), strict=True):
        if i != j:
            relatives[i].add(j)
            relatives[j].add(i)
    return relatives


def _groups(relatives: list[set[int]]) -> list[list[int]]:
    """Connected groups of related samples (samples with no relative left out), sorted."""
    seen, groups = set(), []
    for start, rel in enumerate(relatives):
        if not rel or start in seen:
            continue
        seen.add(start)
        stack, group = [start], []
        while stack:
            v = stack.pop()
            group.append(v)
            for w in relatives[v]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        groups.append(sorted(group))
    return groups


def plink2_prune(group: Sequence[int], relatives: list[set[int]]) -> set[int]:
    """The samples PLINK 2's `--king-cutoff` keeps of one group (group sorted by index).

    While pairs remain: if some sample has exactly one relative left, drop that relative (of
    the lowest-index such sample), else drop the lowest-index sample with the most relatives.
    """
    degree_left = {v: len(relatives[v]) for v in group}
    dropped, alive = set(), set(group)
    leaves = [v for v in group if degree_left[v] == 1]  # min-heap of indices, stale entries skipped
    heapq.heapify(leaves)
    most = [(-d, v) for v, d in degree_left.items()]  # most relatives first, then lowest index
    heapq.heapify(most)
    while alive:
        victim = None
        while leaves:
            leaf = leaves[0]
            if leaf in alive and degree_left[leaf] == 1:
                victim = next(w for w in relatives[leaf] if w in alive)
                break
            heapq.heappop(leaves)
        if victim is None:
            while True:
                d, v = heapq.heappop(most)
                if v in alive and -d == degree_left[v]:
                    victim = v
                    break
        alive.discard(victim)
        dropped.add(victim)
        for w in relatives[victim]:
            if w in alive:
                degree_left[w] -= 1
                if degree_left[w] == 0:
                    alive.discard(w)  # no relative left: kept
                else:
                    heapq.heappush(most, (-degree_left[w], w))
                    if degree_left[w] == 1:
                        heapq.heappush(leaves, w)
    return set(group) - dropped


def min_degree_greedy(group: Sequence[int], relatives: list[set[int]]) -> set[int]:
    """Keep the sample with the fewest relatives left (lowest index on ties), drop its
    relatives, repeat: a maximal independent set of the group."""
    degree_left = {v: len(relatives[v]) for v in group}
    heap = [(d, v) for v, d in degree_left.items()]
    heapq.heapify(heap)
    alive, kept = set(group), set()
    while heap:
        d, v = heapq.heappop(heap)
        if v not in alive or d != degree_left[v]:
            continue
        kept.add(v)
        alive.discard(v)
        for w in relatives[v]:
            if w in alive:
                alive.discard(w)
                for x in relatives[w]:
                    if x in alive:
                        degree_left[x] -= 1
                        heapq.heappush(heap, (degree_left[x], x))
    return kept


def add_back(group: Sequence[int], kept: set[int], relatives: list[set[int]]) -> set[int]:
    """`kept` made maximal: every dropped sample with no kept relative is kept, lowest index first."""
    kept = set(kept)
    for v in group:
        if v not in kept and not (relatives[v] & kept):
            kept.add(v)
    return kept


def exact_max_unrelated(group: Sequence[int], relatives: list[set[int]], steps: int = EXACT_STEPS) -> set[int] | None:
    """A maximum independent set of one group by branch and bound, or None past `steps` calls.

    Bit i of a mask is group[i]. A sample with at most one relative left is always kept (some
    maximum set holds it); otherwise branch on the sample with the most relatives left: keep
    it (drop its relatives) or drop it. Deterministic: the first maximum set found wins.
    """
    index = {v: i for i, v in enumerate(group)}
    adjacent = [sum(1 << index[w] for w in relatives[v]) for v in group]
    budget = [steps]
    memo: dict[int, int] = {}

    def solve(mask: int) -> int:
        if mask in memo:
            return memo[mask]
        budget[0] -= 1
        if budget[0] < 0:
            raise _OutOfSteps
        taken, rest = 0, mask
        while True:  # keep samples with <= 1 relative left (each such keep is safe)
            free = next((i for i in _bits(rest) if (adjacent[i] & rest).bit_count() <= 1), None)
            if free is None:
                break
            taken |= 1 << free
            rest &= ~((1 << free) | adjacent[free])
        if rest:
            pivot = max(_bits(rest), key=lambda i: ((adjacent[i] & rest).bit_count(), -i))
            with_pivot = (1 << pivot) | solve(rest & ~((1 << pivot) | adjacent[pivot]))
            without = solve(rest & ~(1 << pivot))
            taken |= with_pivot if with_pivot.bit_count() >= without.bit_count() else without
        memo[mask] = taken
        return taken

    try:
        best = solve((1 << len(group)) - 1)
    except _OutOfSteps:
        return None
    return {group[i] for i in _bits(best)}


class _OutOfSteps(Exception):
    pass


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def unrelated_set(n: int, a: np.ndarray, b: np.ndarray, kinship: np.ndarray, cutoff: float) -> np.ndarray:
    """A maximal set of samples no two of which have kinship > cutoff: `plink2 --king-cutoff`'s
    on the same pairs, group by group, where that is as large as the best found, else larger.

    Parameters
    ----------
    n : number of samples
    a, b : (pairs,) int, sample indices of each pair; every pair with kinship > cutoff must be
        among them (pairs computed at a king threshold <= cutoff, or all pairs)
    kinship : (pairs,) float64
    cutoff : pairs with kinship > cutoff are related

    Returns
    -------
    (n,) bool, True for the samples kept
    """
    relatives = related_lists(n, a, b, kinship, cutoff)
    keep = np.ones(n, dtype=bool)
    for group in _groups(relatives):
        plink2 = plink2_prune(group, relatives)
        kept = exact_max_unrelated(group, relatives) if len(group) <= EXACT_MAX else None
        if kept is None:
            candidates = [
                add_back(group, plink2, relatives),
                add_back(group, min_degree_greedy(group, relatives), relatives),
            ]
            kept = max(candidates, key=len)  # the first (PLINK 2's) on a tie
        if len(plink2) >= len(kept):
            # as large (so maximal too): PLINK 2's own samples, its tie-breaking rather than the search's
            kept = plink2
        keep[[v for v in group if v not in kept]] = False
    return keep


def plink2_unrelated_set(n: int, a: np.ndarray, b: np.ndarray, kinship: np.ndarray, cutoff: float) -> np.ndarray:
    """(n,) bool: the samples `plink2 --king-cutoff` keeps, computed from the pairs (a reference)."""
    relatives = related_lists(n, a, b, kinship, cutoff)
    keep = np.ones(n, dtype=bool)
    for group in _groups(relatives):
        kept = plink2_prune(group, relatives)
        keep[[v for v in group if v not in kept]] = False
    return keep
