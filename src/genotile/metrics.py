"""Metrics as integer plane products plus an elementwise epilogue.

A metric names the packed store it reads (`encoding`), the integer count
matrices it needs -- each a signed sum of plane products over word ranges,
see `Term` -- and an epilogue that turns counts into the value columns
written for each pair. Everything before the epilogue is exact integer work.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .encode import PlaneLayout

Range = tuple[int, int]


@dataclass(frozen=True)
class Term:
    """coef * popcount(left AND right) summed over a word range.

    `left` / `right` are word ranges of the left (block I) and right (block J)
    rows, of equal length; None stands for an all-ones plane, so the term is
    the row sum of the other side.
    """

    coef: int
    left: Range | None
    right: Range | None


@dataclass(frozen=True)
class Metric:
    name: str
    encoding: str  # which packed store it reads
    columns: tuple[str, ...]  # value columns of pairs.tsv.gz, in order
    dense_column: str  # the column matrix.tsv holds
    keep: str  # "le": distances keep pairs <= threshold; "ge": similarities >= threshold
    counts: Callable[[PlaneLayout], dict[str, list[Term]]]
    epilogue: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]

    def passes(self, values: dict[str, np.ndarray], threshold) -> np.ndarray:
        """Which pairs pass: `keep` is "le", "ge" (on dense_column) or "ge_any" (any column)."""
        if threshold is None:
            return np.ones(values[self.dense_column].shape, dtype=bool)
        if self.keep == "le":
            return values[self.dense_column] <= threshold
        if self.keep == "ge":
            return values[self.dense_column] >= threshold
        return np.logical_or.reduce([values[c] >= threshold for c in self.columns])


def mismatch_terms(layout: PlaneLayout) -> list[Term]:
    """Terms of the categorical mismatch count (see encode's module docstring)."""
    seg = layout.segments()
    n_all = seg["N"]
    if layout.has_valid:
        terms = [Term(1, seg["V"], n_all), Term(1, n_all, seg["V"])]
    else:  # every entry present: V is all ones, so V.N' is a row sum
        terms = [Term(1, None, n_all), Term(1, n_all, None)]
    n_b, n_m = layout.section("N", "B"), layout.section("N", "M")
    terms += [Term(-2, n_b, n_b), Term(-1, n_m, n_m)]
    terms += [Term(-1, seg[f"S{t}"], seg[f"S{t}"]) for t in range(1, len(layout.s_words) + 1)]
    return [t for t in terms if _width(t) > 0]


def _width(term: Term) -> int:
    r = term.left if term.left is not None else term.right
    return r[1] - r[0]


def _identity(name: str):
    return lambda counts: {name: counts[name]}


METRICS = {
    "snp": Metric(
        name="snp",
        encoding="nucleotide",
        columns=("snp",),
        dense_column="snp",
        keep="le",
        counts=lambda layout: {"snp": mismatch_terms(layout)},
        epilogue=_identity("snp"),
    ),
    "hamming": Metric(
        name="hamming",
        encoding="categorical",
        columns=("hamming",),
        dense_column="hamming",
        keep="le",
        counts=lambda layout: {"hamming": mismatch_terms(layout)},
        epilogue=_identity("hamming"),
    ),
}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        from .errors import GenotileError

        raise GenotileError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}") from None
