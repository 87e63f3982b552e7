"""The numpy (BLAS) backend's radix GEMMs, bound-driven chunks and diagonal blocks: bit for bit
equal to numpy-popcount (plain AND + popcount in int64) on every count.

What is exercised: terms grouped by left range and several counts riding in one float
(`MAX_SLOTS`), chunk widths chosen from exact popcount bounds (pushed to the float32 limit
with dense planes and lowered limits), the fallbacks (radix that does not fit -> one count
per GEMM; coefficients too large for float32 -> popcount), diagonal tiles computed on the
blocks right of the diagonal and mirrored (symmetric counts, transposed pairs, counts with no
mirror), and the real metrics' terms on genotype and alignment planes.
"""

import numpy as np
import pytest
from genodata import random_genotypes

from genotile.backends.cpu import numpy_blas, numpy_popcount
from genotile.core.bits import pack_bits
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.core.metrics import Term, get_metric


def planes(rng, rows, words, density=0.5):
    return pack_bits(rng.random((rows, words * 64)) < density)


def assert_same(left, right, counts):
    want = numpy_popcount.count_matrices(left, right, counts)
    got = numpy_blas.count_matrices(left, right, counts)
    assert set(got) == set(want)
    for name in want:
        assert got[name].dtype == np.int64, name
        assert got[name].shape == want[name].shape, name
        assert np.array_equal(got[name], want[name]), name


def random_counts(rng, words, n_planes, n_counts):
    """Counts of random signed terms over `n_planes` planes of `words` words (row sums too)."""
    rng_ = [(k * words, (k + 1) * words) for k in range(n_planes)]
    counts = {}
    for c in range(n_counts):
        terms = []
        for _ in range(rng.integers(1, 5)):
            kind = rng.random()
            coef = int(rng.choice([-3, -2, -1, 1, 1, 1, 2, 5]))
            a, b = rng_[rng.integers(n_planes)], rng_[rng.integers(n_planes)]
            if kind < 0.1:
                terms.append(Term(coef, None, b))
            elif kind < 0.2:
                terms.append(Term(coef, a, None))
            else:
                terms.append(Term(coef, a, b))
        counts[f"c{c}"] = terms
    return counts


@pytest.fixture(autouse=True)
def fresh_plans():
    numpy_blas._PLANS.clear()
    yield
    numpy_blas._PLANS.clear()


@pytest.mark.parametrize("seed", range(12))
def test_random_terms_unequal_blocks(seed):
    rng = np.random.default_rng(seed)
    words = int(rng.integers(1, 9))
    n_planes = int(rng.integers(2, 5))
    counts = random_counts(rng, words, n_planes, int(rng.integers(1, 6)))
    density = float(rng.choice([0.05, 0.5, 0.95]))
    left = planes(rng, int(rng.integers(1, 80)), words * n_planes, density)
    right = planes(rng, int(rng.integers(1, 80)), words * n_planes, density)
    assert_same(left, right, counts)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("row_block", [1, 7, 64])
def test_diagonal_blocks_and_mirrors(seed, row_block, monkeypatch):
    """right is left: only blocks right of the diagonal are multiplied, the rest mirrored."""
    monkeypatch.setattr(numpy_blas, "ROW_BLOCK", row_block)
    monkeypatch.setattr(numpy_blas, "DIAGONAL_BLOCKS", 1000)
    rng = np.random.default_rng(100 + seed)
    words = int(rng.integers(1, 6))
    a, b, c = (0, words), (words, 2 * words), (2 * words, 3 * words)
    counts = {
        "sym": [Term(1, a, b), Term(1, b, a), Term(-2, c, c)],  # its own transpose
        "t1": [Term(1, a, c), Term(3, b, b)],  # t1 and t2 are each other's transpose
        "t2": [Term(1, c, a), Term(3, b, b)],
        "lone": [Term(2, a, b), Term(-1, c, a)],  # no mirror: computed in full
        "sums": [Term(1, None, a), Term(-1, b, None), Term(1, c, c)],
    }
    left = planes(rng, int(rng.integers(2, 150)), 3 * words, float(rng.choice([0.1, 0.5, 0.9])))
    assert_same(left, left, counts)


def test_diagonal_detected_for_equal_views():
    """A diagonal tile may arrive as two arrays over the same memory."""
    rng = np.random.default_rng(5)
    left = planes(rng, 300, 4)
    counts = {"x": [Term(1, (0, 2), (2, 4)), Term(1, (2, 4), (0, 2))], "y": [Term(1, (0, 2), (0, 2))]}
    assert_same(left, left[:], counts)


@pytest.mark.parametrize("limit", [2**8, 2**9, 3 * 2**8 + 5, 2**11, 2**13])
@pytest.mark.parametrize("density", [0.5, 1.0])
def test_chunks_from_bounds_at_small_limits(limit, density, monkeypatch):
    """Low EXACT_LIMITs force narrow chunks, single slots and the popcount fallback."""
    monkeypatch.setattr(numpy_blas, "EXACT_LIMIT", limit)
    monkeypatch.setattr(numpy_blas, "MIN_RADIX_WORDS", 1)
    rng = np.random.default_rng(limit)
    words = 13
    a, b, c = (0, words), (words, 2 * words), (2 * words, 3 * words)
    counts = {
        "p": [Term(1, a, b), Term(-2, a, a), Term(1, c, b)],
        "q": [Term(1, a, c), Term(1, c, c)],
        "r": [Term(4, b, b)],  # 4 * 64 = 256 per word: past the lowest limit alone
        "s": [Term(1, None, b), Term(1, c, a)],
    }
    left = planes(rng, 37, 3 * words, density)
    right = planes(rng, 29, 3 * words, density)
    assert_same(left, right, counts)
    assert_same(left, left, counts)


def test_dense_planes_at_the_float32_limit():
    """All-ones planes make every bound tight: partial sums reach 2**24 and stay exact."""
    words = 4100  # 262,400 fields
    left = np.full((3, 2 * words), np.uint64(2**64 - 1), dtype=np.uint64)
    left[1, :3] = 0
    counts = {
        "a": [Term(1, (0, words), (words, 2 * words))],
        "b": [Term(1, (0, words), (0, words))],
        "c": [Term(64, (0, words), (0, words))],
    }
    assert_same(left, left, counts)
    assert_same(left, left[:2], counts)


def test_past_float32_integers():
    words = 2**18 + 3  # 2**24 + 192 set bits per row
    left = np.full((1, words), np.uint64(2**64 - 1), dtype=np.uint64)
    left[0, 0] = np.uint64(2**64 - 2)
    counts = {
        "x": [Term(1, (0, words), (0, words))],
        "y": [Term(-2, (0, words), (0, words))],
        "z": [Term(3, (0, words), (0, words))],
    }
    got = numpy_blas.count_matrices(left, left, counts)
    assert int(got["x"][0, 0]) == 2**24 + 191
    assert int(got["y"][0, 0]) == -2 * (2**24 + 191)
    assert int(got["z"][0, 0]) == 3 * (2**24 + 191)


def test_huge_coefficients_fall_back_to_popcount():
    rng = np.random.default_rng(9)
    left, right = planes(rng, 5, 2), planes(rng, 6, 2)
    counts = {"big": [Term(2**20, (0, 1), (1, 2)), Term(-(2**19), (1, 2), (0, 1))], "small": [Term(1, (0, 1), (0, 1))]}
    assert_same(left, right, counts)


@pytest.mark.parametrize("max_slots", [1, 2])
@pytest.mark.parametrize("name", ["ibs", "king", "ccc2"])
@pytest.mark.parametrize("p_missing", [0.0, 0.1])
def test_genotype_metrics(name, p_missing, max_slots, monkeypatch):
    monkeypatch.setattr(numpy_blas, "MAX_SLOTS", max_slots)
    monkeypatch.setattr(numpy_blas, "ROW_BLOCK", 16)
    metric = get_metric(name)
    g = random_genotypes(97, 333, p_missing=p_missing, seed=7, special=p_missing > 0)
    codes = np.ascontiguousarray(g.T) if name == "ccc2" else g
    layout = genotype_layout(codes, metric.encoding)
    p = genotype_planes(codes, layout)
    counts = metric.counts(layout)
    assert_same(p, p, counts)
    assert_same(p[:40], p[40:], counts)


def test_metric_plans_cut_k():
    """The grouping the module docstring promises: ibs 7 products -> K of 3 planes in one GEMM
    (ibs_count and n share it), king 6 -> 4 planes, ccc2 9 -> 3 planes."""

    def plan_words(name):
        metric = get_metric(name)
        layout = genotype_layout(np.full((2, 640), 255, np.uint8), metric.encoding)
        plan = numpy_blas._make_plan(metric.counts(layout))
        return [(j.names, j.words // layout.words) for j in plan.jobs]

    ibs = plan_words("ibs")
    assert len(ibs) == 1 and sorted(ibs[0][0]) == ["ibs_count", "n"] and ibs[0][1] == 3
    assert sum(w for _, w in plan_words("king")) == 4
    assert sum(w for _, w in plan_words("ccc2")) == 3


def test_alignment_metrics():
    from conftest import make_alignment

    from genotile.core.encode import ALPHABETS, categorical_encoding, categorical_planes, symbol_counts

    for metric_name in ("snp", "hamming"):
        metric = get_metric(metric_name)
        seqs = [s for _, s in make_alignment(90, 700, seed=4)]
        raw = np.array([np.frombuffer(s.encode(), dtype=np.uint8) for s in seqs])
        alpha = ALPHABETS[metric.encoding]
        codes = alpha.encode(raw)
        enc = categorical_encoding(symbol_counts(codes), alpha.has_missing)
        p = categorical_planes(codes, enc)
        counts = metric.counts(enc.layout)
        assert_same(p, p, counts)
        assert_same(p[:50], p[50:], counts)
