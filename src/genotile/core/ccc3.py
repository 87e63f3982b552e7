"""CoMet's 3-way Custom Correlation Coefficient (ccc3) as masked plane products (numpy only).

Definition (docs/metrics.md): SNP vectors i, j, k over samples q; rho(1) = g, rho(0) = 2 - g;
r_ijk(a,b,c) = sum over samples where all three are present of rho_i(a) rho_j(b) rho_k(c);
c_ijk = sum of the 8 tallies; f_i(a) = s_i(a) / (2 c_i) over all samples of i (as ccc2);
ccc_abc = M * r/c_ijk * (1 - P f_min)(1 - P f_mid)(1 - P f_max), the three f_i(a), f_j(b), f_k(c)
sorted; 0 where c_i, c_j, c_k or c_ijk is 0.

Counts. With G = L + H (= g) and V the present plane, each factor is rho(a) = alpha_a V + beta_a G
(alpha = 2, beta = -1 for a = 0; alpha = 0, beta = 1 for a = 1), so every tally is a signed sum of
eight counts over the sites where all three are present:
  t = VVV, s_i = GVV, s_j = VGV, s_k = VVG, s_ij = GGV, s_ik = GVG, s_jk = VGG, s_ijk = GGG,
27 plane products P[X,Y,Z] = popcount(X_i & Y_j & Z_k), X, Y, Z in {L, H, V}; c_ijk = 8 t.
On complete data V is all ones: products with V of k become row sums of the masked plane, and
VV.Z of k a row sum of block K (19 products, 8 of them 2-way in fact).

Masked two-step (docs/bitplanes.md, CoMet's 3-way method): for a vector j of the middle block,
the *masked block* has one row per vector i of block I and 9 segments of `words` words, segment
"XY" = X_i & Y_j; the counts are then 2-way Terms (metrics.Term) between the masked block and
block K, so every 2-way backend's `count_matrices` / `count_device` computes them unchanged.
"""

import math
from dataclasses import asdict, dataclass
from itertools import product
from typing import Any

import numpy as np

from genotile.core.bits import popcount_rows
from genotile.core.genotype import GenotypeLayout
from genotile.core.metrics import MetricFacts, Term
from genotile.core.plan import Plan
from genotile.errors import GenotileError

NAME = "ccc3"
PLANES = ("L", "H", "V")
MASKED = tuple(x + y for x in PLANES for y in PLANES)  # segments of a masked row: "LL", "LH", ..., "VV"
COUNTS = ("t", "s_i", "s_j", "s_k", "s_ij", "s_ik", "s_jk", "s_ijk")
# which of (i, j, k) carry G in each count (the others carry V)
COUNT_G = {
    "t": (0, 0, 0),
    "s_i": (1, 0, 0),
    "s_j": (0, 1, 0),
    "s_k": (0, 0, 1),
    "s_ij": (1, 1, 0),
    "s_ik": (1, 0, 1),
    "s_jk": (0, 1, 1),
    "s_ijk": (1, 1, 1),
}
ALPHA, BETA = {0: 2, 1: 0}, {0: -1, 1: 1}  # rho(a) = ALPHA[a] V + BETA[a] G
COLUMNS = tuple(f"ccc_{a}{b}{c}" for a, b, c in product((0, 1), repeat=3))  # bit order (id1, id2, id3)
NULL_THRESHOLD_MAX = 2000  # vectors a null ccc3 threshold is allowed up to
CPU_BLOCK_SIZE = 4096  # ccc3's blocks where `block_size: auto` (it sizes 2-way tiles only), jobs on the CPU
# ... and jobs on a GPU whose planes the fused kernel holds (triples/stage.ccc3_block_size): one
# block up to this many SNPs (the fused kernel skips the tiles below the
# diagonal of a diagonal block triple, so one block costs no more than several, and a job's start
# (process, CuPy, the store read: about a second) is paid once, not once per block triple: 35 jobs
# at 20,000 SNPs in blocks of 4,096); its middle block in a stage a GPU (settings.ccc3_plan_settings)
GPU_BLOCK_SIZE = 32768
# Bytes a kept triple takes: in the jobs' files, as text, in triples.tsv.gz (the bundled example's
# 941 SNPs, null threshold, 138,430,510 triples: 11.9 GB of job files, a 7.15 GB triples.tsv.gz;
# `genotile run --metric ccc3`, 2026-11-27)
TRIPLE_FILE_BYTES = 88
TRIPLE_TEXT_BYTES = 120
TRIPLE_GZ_BYTES = 52
# what the workflow knows of ccc3 (core/registry.py): no fused 2-way kernel, measured rate,
# histogram or report plot of its own
FACTS = MetricFacts(name=NAME, workload="triples", encoding="genotype_t", columns=COLUMNS, params_section="ccc")


@dataclass(frozen=True)
class Params:
    multiplier: float = 4.5
    param: float = 2 / 3

    @classmethod
    def make(cls, multiplier=None, param=None) -> "Params":
        values = {"multiplier": 4.5 if multiplier is None else multiplier, "param": 2 / 3 if param is None else param}
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise GenotileError(f"ccc3: {name} must be a finite number, not {value!r}")
        return cls(float(values["multiplier"]), float(values["param"]))


def check_layout(layout) -> GenotypeLayout:
    if not isinstance(layout, GenotypeLayout) or tuple(layout.planes[:3]) != PLANES:
        raise GenotileError("ccc3 reads the genotype_t store (planes L, H, V), not this one")
    return layout


def masked_segments(words: int) -> dict[str, tuple[int, int]]:
    return {s: (k * words, (k + 1) * words) for k, s in enumerate(MASKED)}


def mask_block(left: np.ndarray, middle_rows: np.ndarray, words: int, rows_per_j=None) -> np.ndarray:
    """The masked block of several middle vectors, stacked: for middle row t (of `middle_rows`,
    each a packed row of block J) the rows of `left` (block I; the first rows_per_j[t] of them when
    given), each with segments X_i & Y_j. Returns uint64 (sum of rows, 9 * words).

    Parameters
    ----------
    left : numpy.ndarray of uint64, shape (rows I, >= 3 * words)
        Block I's packed rows (planes L, H, V first).
    middle_rows : numpy.ndarray of uint64, shape (t, >= 3 * words)
        Packed rows j of block J.
    words : int
        Words per plane.
    rows_per_j : sequence of int, length t, optional
        Rows of `left` masked with each middle row (default: all).

    Returns
    -------
    numpy.ndarray of uint64, shape (sum of rows_per_j, 9 * words)
        Segment k of a row is X_i AND Y_j for (X, Y) = MASKED[k] ("LL", "LH", ..., "VV").
    """
    seg = {p: slice(k * words, (k + 1) * words) for k, p in enumerate(PLANES)}
    n_i = left.shape[0]
    counts = [n_i] * len(middle_rows) if rows_per_j is None else [int(r) for r in rows_per_j]
    out = np.empty((sum(counts), 9 * words), dtype=np.uint64)
    r0 = 0
    for row_j, n in zip(middle_rows, counts, strict=True):
        block = out[r0 : r0 + n]
        for k, (x, y) in enumerate(product(PLANES, PLANES)):
            np.bitwise_and(left[:n, seg[x]], row_j[None, seg[y]], out=block[:, k * words : (k + 1) * words])
        r0 += n
    return out


def count_terms(layout: GenotypeLayout) -> dict[str, list[Term]]:
    """The 8 counts as Terms between a masked block (left) and block K (right).

    Parameters
    ----------
    layout : GenotypeLayout
        The genotype_t store's layout (`complete`: products with V become row sums).

    Returns
    -------
    dict of str to list of Term
        {count: Terms} for COUNTS ("t", "s_i", ..., "s_ijk"): product P[X, Y, Z] =
        popcount(X_i & Y_j & Z_k) is the masked segment XY (left) against plane Z (right).

    Examples
    --------
    >>> from genotile.core.genotype import GenotypeLayout
    >>> count_terms(GenotypeLayout(1, PLANES, complete=False))["t"]
    [Term(coef=1, left=(8, 9), right=(2, 3))]
    """
    w = layout.words
    mseg, kseg = masked_segments(w), layout.segments()

    def term(x, y, z):
        if layout.complete and z == "V":
            return Term(1, mseg[x + y], None)  # popcount(X_i & Y_j): a row sum of the masked block
        if layout.complete and x == "V" and y == "V":
            return Term(1, None, kseg[z])  # popcount(Z_k): a row sum of block K
        return Term(1, mseg[x + y], kseg[z])

    def planes(has_g):
        return ("L", "H") if has_g else ("V",)

    return {
        name: [term(x, y, z) for x in planes(gi) for y in planes(gj) for z in planes(gk)]
        for name, (gi, gj, gk) in COUNT_G.items()
    }


def vector_stats(planes: np.ndarray, layout: GenotypeLayout) -> tuple[np.ndarray, np.ndarray]:
    """(c, s1) per row over all samples: c = #present, s1 = sum of g (s(0) = 2c - s1).

    Parameters
    ----------
    planes : numpy.ndarray of uint64, shape (rows, layout.total_words)
    layout : GenotypeLayout

    Returns
    -------
    tuple of numpy.ndarray of int64, each shape (rows,)
    """
    seg = layout.segments()
    c = popcount_rows(planes[:, slice(*seg["V"])])
    s1 = popcount_rows(planes[:, slice(*seg["L"])]) + popcount_rows(planes[:, slice(*seg["H"])])
    return c, s1


def tallies(counts: dict) -> dict[tuple[int, int, int], np.ndarray]:
    """r(a,b,c) (int64) from the 8 counts: the product of (ALPHA V + BETA G) expanded.

    Parameters
    ----------
    counts : dict of str to numpy.ndarray of int64, each of one shape
        The 8 COUNTS.

    Returns
    -------
    dict of (int, int, int) to numpy.ndarray of int64, each the counts' shape
        The 8 tallies r(a, b, c).
    """
    r = {}
    for a, b, c in product((0, 1), repeat=3):
        acc: Any = 0  # becomes an int64 array at the first count
        for name, g in COUNT_G.items():
            coef = 1
            for bit, has_g in zip((a, b, c), g, strict=True):
                coef *= BETA[bit] if has_g else ALPHA[bit]
            if coef:
                acc = acc + coef * counts[name]
        r[a, b, c] = acc
    return r


def freqs(c, s1):
    """{a: f(a)} = s(a) / (2c) as float64 (nan where c = 0; masked out by the epilogue)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return {1: s1 / (2.0 * c), 0: (2 * c - s1) / (2.0 * c)}


def sort3(x, y, z):
    """(min, mid, max) elementwise, exactly (no arithmetic)."""
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    return np.minimum(lo, z), np.maximum(lo, np.minimum(hi, z)), np.maximum(hi, z)


def epilogue(counts: dict, stats_i, stats_j, stats_k, params: Params) -> dict[str, np.ndarray]:
    """Values ccc_abc in (i, j, k) bit order. counts: the 8 int64 arrays (rows, cols); stats_x:
    (c, s1) int64 arrays broadcasting against them (i, j per row: (rows, 1); k: (1, cols)).

    Parameters
    ----------
    counts : dict of str to numpy.ndarray of int64, each shape (rows, cols)
        The 8 COUNTS of (i, j) pairs (rows) against vectors k (cols).
    stats_i, stats_j, stats_k : tuple of numpy.ndarray of int64
        `vector_stats` (c, s1) of each vector, shapes (rows, 1), (rows, 1) and (1, cols).
    params : Params
        M and P.

    Returns
    -------
    dict of str to numpy.ndarray of float64, each shape (rows, cols)
        COLUMNS "ccc_000" ... "ccc_111"; 0 where c_i, c_j, c_k or c_ijk is 0.
    """
    r = tallies(counts)
    c_ijk = 8 * counts["t"]
    f = [freqs(*s) for s in (stats_i, stats_j, stats_k)]
    ok = (stats_i[0] > 0) & (stats_j[0] > 0) & (stats_k[0] > 0) & (c_ijk > 0)
    m, p = params.multiplier, params.param
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for a, b, c in product((0, 1), repeat=3):
            f_min, f_mid, f_max = sort3(f[0][a], f[1][b], f[2][c])
            value = m * (r[a, b, c] / c_ijk) * (1 - p * f_min) * (1 - p * f_mid) * (1 - p * f_max)
            out[f"ccc_{a}{b}{c}"] = np.where(ok, value, 0.0)
    return out


def passes(values: dict, threshold) -> np.ndarray:
    """A triple passes when any of its 8 entries is >= threshold (None: every triple).

    Parameters
    ----------
    values : dict of str to numpy.ndarray, each of one shape
        The 8 COLUMNS.
    threshold : float or None

    Returns
    -------
    numpy.ndarray of bool, the values' shape

    Examples
    --------
    >>> passes({c: np.array([0.0, 1.0]) for c in COLUMNS}, 0.5).tolist()
    [False, True]
    """
    first = values[COLUMNS[0]]
    if threshold is None:
        return np.ones(np.shape(first), dtype=bool)
    return np.logical_or.reduce([values[col] >= threshold for col in COLUMNS])


def to_input_order(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ids (n, 3) original indices as computed (i, j, k), values (n, 8) in (i, j, k) bit order ->
    (ids sorted per row, values with the table's axes permuted so bits follow the sorted ids).

    Parameters
    ----------
    ids : numpy.ndarray of int64, shape (n, 3)
        Original vector indices (i, j, k) of each triple.
    values : numpy.ndarray of float64, shape (n, 8)
        ccc_abc in (i, j, k) bit order (column 4a + 2b + c).

    Returns
    -------
    tuple of numpy.ndarray, shapes (n, 3) and (n, 8)

    Examples
    --------
    Triple (5, 2, 9) becomes (2, 5, 9): the first two bits trade places.

    >>> ids, values = to_input_order(np.array([[5, 2, 9]]), np.arange(8.0)[None, :])
    >>> ids.tolist(), values.tolist()
    ([[2, 5, 9]], [[0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 6.0, 7.0]])
    """
    order = np.argsort(ids, axis=1, kind="stable")  # order[:, p]: the axis that goes to place p
    sorted_ids = np.take_along_axis(ids, order, axis=1)
    src = np.zeros((ids.shape[0], 8), dtype=np.int64)
    for dst, bits in enumerate(product((0, 1), repeat=3)):
        for p, x in enumerate(bits):  # place p holds bit x of axis order[:, p] (weight 4, 2, 1)
            src[:, dst] += x * (4 >> order[:, p])
    return sorted_ids, np.take_along_axis(values, src, axis=1)


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan3(Plan):
    """Block triples I <= J <= K over the store's permuted rows; the middle block cut into stages.

    Parameters
    ----------
    n_vectors, block_size, seed : int
        As `Plan` (ccc3's own block size, the store's permutation seed).
    stages : int, optional
        Contiguous parts of the middle block J, one job each.

    Examples
    --------
    >>> p = Plan3(5, 2, 1, stages=2)
    >>> p.block_triples()[:4], len(p.jobs()), p.stage_rows(0, 1), p.n_triples
    ([(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 1)], 20, range(1, 2), 10)
    """

    stages: int = 1

    def __post_init__(self):
        if self.block_size < 1 or self.stages < 1:
            raise GenotileError(
                f"ccc3: block_size ({self.block_size}) and stages ({self.stages}) must be positive integers"
            )

    def block_triples(self) -> list[tuple[int, int, int]]:
        n = self.n_blocks
        return [(i, j, k) for i in range(n) for j in range(i, n) for k in range(j, n)]

    def jobs(self) -> list[tuple[int, int, int, int]]:
        return [(i, j, k, s) for i, j, k in self.block_triples() for s in range(self.stages)]

    def stage_rows(self, bj: int, stage: int) -> range:
        """Rows (within block J) of one stage: contiguous parts, sizes differing by at most one;
        where the plan is one block (its one block triple diagonal: row j has j x (n - 1 - j)
        triples, most in the middle), parts of about equal triples, so that stages on as many
        GPUs end together.

        >>> [len(Plan3(1000, 1000, 1, stages=4).stage_rows(0, s)) for s in range(4)]
        [326, 173, 174, 327]
        >>> [len(Plan3(1000, 500, 1, stages=4).stage_rows(1, s)) for s in range(4)]
        [125, 125, 125, 125]
        """
        sl = self.block(bj)
        n = sl.stop - sl.start
        if self.n_blocks > 1 or self.stages == 1:
            return range(n * stage // self.stages, n * (stage + 1) // self.stages)
        done = np.cumsum(np.arange(n, dtype=np.float64) * (n - 1 - np.arange(n)))  # triples up to row j
        cuts = [0, *np.searchsorted(done, done[-1] * np.arange(1, self.stages) / self.stages).tolist(), n]
        return range(int(cuts[stage]), int(cuts[stage + 1]))

    @property
    def n_triples(self) -> int:
        return math.comb(self.n_vectors, 3)

    def describe(self) -> str:
        n_bt = len(self.block_triples())
        return (
            f"ccc3: {self.n_vectors} vectors in {self.n_blocks} block(s) of up to {self.block_size}: "
            f"{n_bt} block triple(s) (I <= J <= K) x {self.stages} stage(s) = {n_bt * self.stages} "
            f"triple job(s), {self.n_triples} unique triples"
        )

    def to_json(self) -> dict:
        return {**asdict(self), "n_blocks": self.n_blocks, "n_jobs": len(self.jobs()), "n_triples": self.n_triples}

    @classmethod
    def from_plan(cls, plan: Plan, block_size: int, stages: int) -> "Plan3":
        """The ccc3 plan over a store's 2-way plan: its vectors and permutation seed, ccc3's own
        block size and stages."""
        return cls(plan.n_vectors, int(block_size), plan.seed, int(stages))


def check_null_threshold(n_vectors: int, threshold, where: str = "", max_vectors: int = NULL_THRESHOLD_MAX) -> None:
    """Refuse a null ccc3 threshold beyond `max_vectors` vectors (n^3/6 rows of output); config
    `ccc3: {null_threshold_max: ...}`, default NULL_THRESHOLD_MAX.

    Parameters
    ----------
    n_vectors : int
        SNPs of the dataset.
    threshold : float or None
        The ccc3 threshold; only None is bounded.
    where : str, optional
        Prefix of the message (e.g. "dataset D: ").
    max_vectors : int, optional

    Raises
    ------
    GenotileError
        With the number of triples and the setting that moves the bound.
    """
    if threshold is None and n_vectors > max_vectors:
        rows = math.comb(n_vectors, 3)
        raise GenotileError(
            f"{where}ccc3 with a null threshold would write every one of the {rows:,} triples of "
            f"{n_vectors:,} vectors (about {rows * TRIPLE_TEXT_BYTES / 1e9:,.0f} GB of text and "
            f"{rows * TRIPLE_FILE_BYTES / 1e9:,.0f} GB of "
            f"triple files); a null ccc3 threshold is "
            f"allowed up to {max_vectors:,} vectors (ccc3: null_threshold_max): set thresholds: ccc3: <value>"
        )
