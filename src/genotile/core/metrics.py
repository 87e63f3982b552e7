"""Metrics as integer plane products plus an elementwise epilogue.

A metric names the packed store it reads (`encoding`), the integer count
matrices it needs -- each a signed sum of plane products over word ranges,
see `Term` -- and an epilogue that turns counts into the value columns
written for each pair. Everything before the epilogue is exact integer work.

Genotype metrics (DESIGN.md sections 2-3; planes in genotype.py), plane
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
    "ccc"); `rate_key` its key in data/rates.json (None: no measured rate); `fused_id` the
    GT_METRIC epilogue of kernels/tile_select.cu that computes it on the GPU (None: no fused
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
    counts: Callable[[PlaneLayout | GenotypeLayout], dict[str, list[Term]]]
    epilogue: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    params: dict = field(default_factory=dict)  # what the epilogue closes over (ccc2's M, P)
    # column pairs whose values trade places when i and j do (value(j, i) of c1 = value(i, j) of c2);
    # every other column, dense_column included, is symmetric
    transposed: tuple[tuple[str, str], ...] = ()

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


# -- genotype metrics (planes: genotype.py; definitions: DESIGN.md section 2) ---------


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
    t = partial(_gt_term, layout)
    return {
        # sum_both |g_i - g_j| = sum_both g_i + sum_both g_j - 2 sum_both min(g_i, g_j),
        # with g = L + H and min(g_i, g_j) = L_i L_j + H_i H_j: 6 products (2 if complete)
        "ibs_count": [t(1, "L", "V"), t(1, "H", "V"), t(1, "V", "L"), t(1, "V", "H"), t(-2, "L", "L"), t(-2, "H", "H")],
        "n": [t(1, "V", "V")],
    }


def ibs_epilogue(c: dict) -> dict:
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = c["ibs_count"] / (2.0 * c["n"])  # n = 0: 0/0 = nan, as PLINK 1.9 prints
    return {"ibs_count": c["ibs_count"], "n": c["n"], "dist_1ibs": dist}


def king_counts(layout: GenotypeLayout) -> dict[str, list[Term]]:
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
    het count is 0 the quotient is +inf (kinship -inf), or nan when its numerator is 0 too."""
    het_i, het_j, hethet, ibs0 = c["het_i"], c["het_j"], c["hethet"], c["ibs0"]
    num = 4 * ibs0 + (het_i - hethet) + (het_j - hethet)
    den = 4 * np.minimum(het_i, het_j)
    with np.errstate(divide="ignore", invalid="ignore"):
        kinship = 0.5 - num / den.astype(np.float64)
    return {"nsnp": c["nsnp"], "hethet": hethet, "ibs0": ibs0, "kinship": kinship}


def ccc2_counts(layout: GenotypeLayout) -> dict[str, list[Term]]:
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
    """CoMet's sparse 2-way CCC from exact tallies; 0 where c_i, c_j or c_ij is 0."""
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
    """The metric `name`; `params` (None values ignored) go to a metric that takes them."""
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
        known = ", ".join(sorted([*METRICS, *FACTORIES]))
        raise GenotileError(f"unknown metric {name!r}; known: {known}")
    if params:
        raise GenotileError(f"metric {name} takes no parameters, got {', '.join(sorted(params))}")
    return METRICS[name]
