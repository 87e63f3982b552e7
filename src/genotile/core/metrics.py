"""Metrics as integer plane products plus an elementwise epilogue.

A metric names the packed store it reads (`encoding`), the integer count
matrices it needs -- each a signed sum of plane products over word ranges,
see `Term` -- and an epilogue that turns counts into the value columns
written for each pair. Everything before the epilogue is exact integer work.

Genotype metrics (docs/metrics.md, docs/bitplanes.md; planes in genotype.py), plane
products per pair with missing calls / on complete data (products with the
all-ones V become O(n) row sums): ibs 7 / 2, king 6 / 3, ccc2 9 / 4.
Undefined quotients follow IEEE doubles, as PLINK prints them: dist_1ibs is
nan when n = 0; kinship is -inf when the smaller het count is 0 (nan when its
numerator is 0 too); ccc2 is 0 where c_i, c_j or c_ij is 0 (CoMet's rule).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from genotile.core.encode import PlaneLayout
from genotile.core.genotype import GenotypeLayout
from genotile.errors import GenotileError

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


@dataclass(frozen=True, kw_only=True)
class MetricFacts:
    """What the code around a metric needs to know of it, kept in one place (2-way metrics and
    ccc3 alike; core/registry.py lists them all, config/schema's metric enum is checked against
    it by a test).

    `params_section` names the config section holding the epilogue's parameters (ccc2, ccc3:
    "ccc"); `rate_key` its key in core/rates.py TILES (None: no measured rate); `fused_id` the
    Epilogue<fused_id> of kernels/epilogues/*.cuh that computes it on the GPU (None: no fused
    kernel); `histogram_columns` the columns histogram.tsv holds, `float_bins` their
    (low, high, bins) when they are floats (an integer column is a bincount); `report_files`
    the report pieces of the metric besides report/histogram.png and report/heatmap.png.
    """

    name: str
    workload: str = "pairs"  # "pairs" (2-way tiles, rules/tiles.smk) or "triples" (rules/triples.smk)
    encoding: str  # which packed store it reads
    columns: tuple[str, ...]  # value columns of pairs.tsv.gz (triples.tsv.gz), in order
    params_section: str | None = None
    rate_key: str | None = None
    fused_id: int | None = None
    histogram_columns: tuple[str, ...] = ()
    float_bins: dict[str, tuple[float, float, int]] = field(default_factory=dict)
    report_files: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Metric(MetricFacts):
    """A 2-way metric: the counts it needs and the epilogue that turns them into its columns."""

    dense_column: str  # the column matrix.tsv holds
    keep: str  # "le": distances keep pairs <= threshold; "ge": similarities >= threshold
    # the store's layout (PlaneLayout or GenotypeLayout, as `encoding` says) -> {count: Terms}
    counts: Callable[[Any], dict[str, list[Term]]]
    epilogue: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    params: dict = field(default_factory=dict)  # what the epilogue closes over (ccc2's M, P)
    # column pairs whose values trade places when i and j do (value(j, i) of c1 = value(i, j) of c2);
    # every other column, dense_column included, is symmetric
    transposed: tuple[tuple[str, str], ...] = ()

    def passes(self, values: dict[str, np.ndarray], threshold) -> np.ndarray:
        """Which pairs pass: `keep` is "le", "ge" (on dense_column) or "ge_any" (any column).

        Parameters
        ----------
        values : dict of str to numpy.ndarray, each of one shape (e.g. (rows I, rows J))
            The epilogue's value columns.
        threshold : float or None
            None keeps every pair.

        Returns
        -------
        numpy.ndarray of bool, the shape of the values
            nan never passes a comparison.

        Examples
        --------
        >>> get_metric("king").passes({"kinship": np.array([0.3, 0.01, np.nan])}, 0.0442).tolist()
        [True, False, False]
        """
        if threshold is None:
            return np.ones(values[self.dense_column].shape, dtype=bool)
        if self.keep == "le":
            return values[self.dense_column] <= threshold
        if self.keep == "ge":
            return values[self.dense_column] >= threshold
        return np.logical_or.reduce([values[c] >= threshold for c in self.columns])


def mismatch_terms(layout: PlaneLayout) -> list[Term]:
    """Terms of the categorical mismatch count (see encode's module docstring).

    Parameters
    ----------
    layout : PlaneLayout
        A nucleotide or categorical store's layout.

    Returns
    -------
    list of Term
        V.N' + N.V' - 2 N_B.N_B' - N_M.N_M' - sum_t S_t.S_t' (row sums for V without missing
        data), empty word ranges dropped.
    """
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
    assert r is not None, "a Term has at least one plane side"
    return r[1] - r[0]


def _identity(name: str):
    return lambda counts: {name: counts[name]}


# -- genotype metrics (planes: genotype.py; definitions: docs/metrics.md) -------------


def _gt_term(layout: GenotypeLayout, coef: int, left: str, right: str) -> Term:
    """coef * left.right' of two genotype planes.

    On complete data (no missing entry) V is all ones over the fields, so a
    product with V is the row sum of the other side, O(n) instead of O(n^2):
    X.V' = rowsum(X_i), V.X' = rowsum(X_j), V.V' = rowsum(V_i) = number of fields.
    """
    seg = layout.segments()
    if layout.complete and right == "V":
        return Term(coef, seg[left], None)
    if layout.complete and left == "V":
        return Term(coef, None, seg[right])
    return Term(coef, seg[left], seg[right])


def ibs_counts(layout: GenotypeLayout) -> dict[str, list[Term]]:
    """ibs's counts: `ibs_count` = sum over both-sites of |g_i - g_j|, `n` = #both-sites.

    Parameters
    ----------
    layout : GenotypeLayout
        The `genotype` store's layout (`complete` turns products with V into row sums).

    Returns
    -------
    dict of str to list of Term
        {'ibs_count', 'n'}
        The Terms of each count between a row of block I (left) and of block J (right); a
        backend returns each count as int64 (rows I, rows J).

    Examples
    --------
    >>> from genotile.core.genotype import GenotypeLayout
    >>> planes = ("L", "H", "V", "Het", "Hom0")
    >>> [len(ibs_counts(GenotypeLayout(2, planes, complete))["ibs_count"]) for complete in (False, True)]
    [6, 6]
    >>> ibs_counts(GenotypeLayout(2, planes, complete=True))["n"]
    [Term(coef=1, left=(4, 6), right=None)]
    """
    t = partial(_gt_term, layout)
    return {
        # sum_both |g_i - g_j| = sum_both g_i + sum_both g_j - 2 sum_both min(g_i, g_j),
        # with g = L + H and min(g_i, g_j) = L_i L_j + H_i H_j: 6 products (2 if complete)
        "ibs_count": [t(1, "L", "V"), t(1, "H", "V"), t(1, "V", "L"), t(1, "V", "H"), t(-2, "L", "L"), t(-2, "H", "H")],
        "n": [t(1, "V", "V")],
    }


def ibs_epilogue(c: dict) -> dict:
    """ibs's values: the counts and dist_1ibs = ibs_count / (2 n) (nan where n = 0).

    Parameters
    ----------
    c : dict of str to numpy.ndarray of int64, each shape (rows I, rows J)
        `ibs_count` and `n`.

    Returns
    -------
    dict of str to numpy.ndarray
        `ibs_count`, `n` (int64) and `dist_1ibs` (float64), the same shape.

    Examples
    --------
    >>> ibs_epilogue({"ibs_count": np.array([[3, 0]]), "n": np.array([[6, 0]])})["dist_1ibs"].tolist()
    [[0.25, nan]]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = c["ibs_count"] / (2.0 * c["n"])  # n = 0: 0/0 = nan, as PLINK 1.9 prints
    return {"ibs_count": c["ibs_count"], "n": c["n"], "dist_1ibs": dist}


def king_counts(layout: GenotypeLayout) -> dict[str, list[Term]]:
    """king's counts over both-sites: nsnp, hethet, ibs0, and the hets of each side.

    Parameters
    ----------
    layout : GenotypeLayout
        The `genotype` store's layout (`complete` turns products with V into row sums).

    Returns
    -------
    dict of str to list of Term
        {'nsnp', 'hethet', 'ibs0', 'het_i', 'het_j'}
        The Terms of each count between a row of block I (left) and of block J (right); a
        backend returns each count as int64 (rows I, rows J).
    """
    # the derived planes Het = [g == 1] and Hom0 = [g == 0] make each count one
    # product (from L, H, V alone HETHET takes 4 and IBS0 4): 6 products (3 if complete)
    t = partial(_gt_term, layout)
    return {
        "nsnp": [t(1, "V", "V")],
        "hethet": [t(1, "Het", "Het")],
        "ibs0": [t(1, "Hom0", "H"), t(1, "H", "Hom0")],
        "het_i": [t(1, "Het", "V")],  # hets of i on both-sites
        "het_j": [t(1, "V", "Het")],
    }


def king_epilogue(c: dict) -> dict:
    """KING-robust kinship in IEEE doubles, as PLINK 2 computes it: when the smaller
    het count is 0 the quotient is +inf (kinship -inf), or nan when its numerator is 0 too.

    Parameters
    ----------
    c : dict of str to numpy.ndarray of int64, each shape (rows I, rows J)
        `nsnp`, `hethet`, `ibs0`, `het_i`, `het_j`.

    Returns
    -------
    dict of str to numpy.ndarray
        `nsnp`, `hethet`, `ibs0` (int64) and `kinship` (float64), the same shape.

    Examples
    --------
    >>> c = {"nsnp": np.array([[10, 10]]), "hethet": np.array([[2, 0]]), "ibs0": np.array([[0, 1]]),
    ...      "het_i": np.array([[3, 0]]), "het_j": np.array([[3, 2]])}
    >>> king_epilogue(c)["kinship"].round(6).tolist()
    [[0.333333, -inf]]
    """
    het_i, het_j, hethet, ibs0 = c["het_i"], c["het_j"], c["hethet"], c["ibs0"]
    num = 4 * ibs0 + (het_i - hethet) + (het_j - hethet)
    den = 4 * np.minimum(het_i, het_j)
    with np.errstate(divide="ignore", invalid="ignore"):
        kinship = 0.5 - num / den.astype(np.float64)
    return {"nsnp": c["nsnp"], "hethet": hethet, "ibs0": ibs0, "kinship": kinship}


def ccc2_counts(layout: GenotypeLayout) -> dict[str, list[Term]]:
    """ccc2's counts: r(1,1), the both-sample sums of g of each side, #both, and the
    per-vector totals c and s(1) over all samples (row sums).

    Parameters
    ----------
    layout : GenotypeLayout
        The `genotype_t` store's layout (`complete` turns products with V into row sums).

    Returns
    -------
    dict of str to list of Term
        {'r11', 'sum_i', 'sum_j', 'both', 'c_i', 'c_j', 's_i', 's_j'}
        The Terms of each count between a row of block I (left) and of block J (right); a
        backend returns each count as int64 (rows I, rows J).
    """
    t, seg = partial(_gt_term, layout), layout.segments()
    return {
        # r(1,1) = sum_both g_i g_j, g = L + H: 4 products
        "r11": [t(1, "L", "L"), t(1, "L", "H"), t(1, "H", "L"), t(1, "H", "H")],
        "sum_i": [t(1, "L", "V"), t(1, "H", "V")],  # sum_both g_i: 2 products (row sums if complete)
        "sum_j": [t(1, "V", "L"), t(1, "V", "H")],
        "both": [t(1, "V", "V")],  # #both
        # per-vector totals over all samples: row sums, never products
        "c_i": [Term(1, seg["V"], None)],
        "c_j": [Term(1, None, seg["V"])],
        "s_i": [Term(1, seg["L"], None), Term(1, seg["H"], None)],
        "s_j": [Term(1, None, seg["L"]), Term(1, None, seg["H"])],
    }


def ccc2_epilogue(c: dict, multiplier: float, param: float) -> dict:
    """CoMet's sparse 2-way CCC from exact tallies; 0 where c_i, c_j or c_ij is 0.

    Parameters
    ----------
    c : dict of str to numpy.ndarray of int64
        `r11`, `sum_i`, `sum_j`, `both` of shape (rows I, rows J); `c_i`, `s_i` of shape
        (rows I, k) and `c_j`, `s_j` of shape (k, rows J), k >= 1 (only the first column /
        row is read: they are per-vector totals).
    multiplier, param : float
        CoMet's M and P.

    Returns
    -------
    dict of str to numpy.ndarray of float64, each shape (rows I, rows J)
        `ccc_00`, `ccc_01`, `ccc_10`, `ccc_11` (entry ab: allele a of i, b of j).
    """
    r11, sum_i, sum_j, both = c["r11"], c["sum_i"], c["sum_j"], c["both"]
    # rho(0) = 2 - g, so every other tally follows from r(1,1) and the sums, exactly
    r = {(1, 1): r11, (1, 0): 2 * sum_i - r11, (0, 1): 2 * sum_j - r11, (0, 0): 4 * both - 2 * sum_i - 2 * sum_j + r11}
    c_ij = 4 * both
    # per-vector frequencies: one column / one row is enough, they broadcast
    c_i, s_i = c["c_i"][:, :1], c["s_i"][:, :1]
    c_j, s_j = c["c_j"][:1, :], c["s_j"][:1, :]
    ok = (c_i > 0) & (c_j > 0) & (c_ij > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_i = {1: s_i / (2.0 * c_i), 0: (2 * c_i - s_i) / (2.0 * c_i)}
        f_j = {1: s_j / (2.0 * c_j), 0: (2 * c_j - s_j) / (2.0 * c_j)}
        out = {}
        for a, b in ((0, 0), (0, 1), (1, 0), (1, 1)):
            f_min, f_max = np.minimum(f_i[a], f_j[b]), np.maximum(f_i[a], f_j[b])
            value = multiplier * (r[a, b] / c_ij) * (1 - param * f_min) * (1 - param * f_max)
            out[f"ccc_{a}{b}"] = np.where(ok, value, 0.0)
    return out


def ccc2_metric(multiplier: float = 4.5, param: float = 2 / 3) -> Metric:
    """The ccc2 Metric with CoMet's multiplier M and param P (config `ccc:`).

    Parameters
    ----------
    multiplier, param : float
        Finite numbers (else GenotileError).

    Returns
    -------
    Metric
    """
    for name, value in (("multiplier", multiplier), ("param", param)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise GenotileError(f"ccc2: {name} must be a finite number, not {value!r}")
    multiplier, param = float(multiplier), float(param)
    return Metric(
        name="ccc2",
        encoding="genotype_t",
        columns=("ccc_00", "ccc_01", "ccc_10", "ccc_11"),
        dense_column="ccc_11",
        keep="ge_any",
        counts=ccc2_counts,
        epilogue=partial(ccc2_epilogue, multiplier=multiplier, param=param),
        params={"multiplier": multiplier, "param": param},
        transposed=(("ccc_01", "ccc_10"),),
        params_section="ccc",
        rate_key="ccc2",
        fused_id=3,
        histogram_columns=("ccc_00", "ccc_01", "ccc_10", "ccc_11"),  # every CCC entry
        float_bins={f"ccc_{a}{b}": (0.0, 4.5, 450) for a in "01" for b in "01"},
    )


METRICS = {
    "snp": Metric(
        name="snp",
        encoding="nucleotide",
        columns=("snp",),
        dense_column="snp",
        keep="le",
        counts=lambda layout: {"snp": mismatch_terms(layout)},
        epilogue=_identity("snp"),
        rate_key="snp",
        fused_id=0,
        histogram_columns=("snp",),
        report_files=("clusters.tsv",),
    ),
    "hamming": Metric(
        name="hamming",
        encoding="categorical",
        columns=("hamming",),
        dense_column="hamming",
        keep="le",
        counts=lambda layout: {"hamming": mismatch_terms(layout)},
        epilogue=_identity("hamming"),
        rate_key="hamming",
        fused_id=0,
        histogram_columns=("hamming",),
    ),
    "ibs": Metric(
        name="ibs",
        encoding="genotype",
        columns=("ibs_count", "n", "dist_1ibs"),
        dense_column="dist_1ibs",
        keep="le",
        counts=ibs_counts,
        epilogue=ibs_epilogue,
        rate_key="ibs",
        fused_id=1,
        histogram_columns=("dist_1ibs",),
        float_bins={"dist_1ibs": (0.0, 1.0, 200)},
    ),
    "king": Metric(
        name="king",
        encoding="genotype",
        columns=("nsnp", "hethet", "ibs0", "kinship"),
        dense_column="kinship",
        keep="ge",
        counts=king_counts,
        epilogue=king_epilogue,
        rate_key="king",
        fused_id=2,
        histogram_columns=("kinship",),
        float_bins={"kinship": (-1.0, 0.5, 300)},
        report_files=("kinship_ibs0.png",),
    ),
    "ccc2": ccc2_metric(),  # the defaults; get_metric("ccc2", multiplier=..., param=...) for others
}
FACTORIES = {"ccc2": ccc2_metric}  # metrics with parameters


def get_metric(name: str, **params) -> Metric:
    """The metric `name`; `params` (None values ignored) go to a metric that takes them.

    Parameters
    ----------
    name : str
        snp, hamming, ibs, king or ccc2.
    **params
        The epilogue's parameters (ccc2: multiplier, param).

    Returns
    -------
    Metric

    Raises
    ------
    GenotileError
        An unknown metric or parameter.

    Examples
    --------
    >>> m = get_metric("ccc2", multiplier=3, param=None)
    >>> m.params["multiplier"], m.columns, m.keep
    (3.0, ('ccc_00', 'ccc_01', 'ccc_10', 'ccc_11'), 'ge_any')
    """
    params = {k: v for k, v in params.items() if v is not None}
    if params and name in FACTORIES:
        try:
            return FACTORIES[name](**params)
        except TypeError:
            known = ", ".join(FACTORIES[name].__code__.co_varnames[: FACTORIES[name].__code__.co_argcount])
            raise GenotileError(
                f"metric {name}: unknown parameter(s) {', '.join(sorted(params))}; known: {known}"
            ) from None
    if name not in METRICS:
        known = ", ".join(sorted({*METRICS, *FACTORIES}))  # ccc2 is in both
        raise GenotileError(f"unknown metric {name!r}; known: {known}")
    if params:
        raise GenotileError(f"metric {name} takes no parameters, got {', '.join(sorted(params))}")
    return METRICS[name]
