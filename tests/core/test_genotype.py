"""ibs, king and ccc2 as plane products: counts identical to brute force, floats within 1e-12."""

import numpy as np
import pytest
from cpu_backends import CPU_BACKEND_PARAMS, CPU_BACKENDS
from genodata import MISSING, random_genotypes, read_float_matrix, vcf_text, write_vcf
from reference import ccc2_pair, ibs_pair, king_pair

from genotile import backends, pipeline
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.core.metrics import get_metric
from genotile.errors import GenotileError

FLOAT_TOL = 1e-12


def assert_floats(ours, ref, what=""):
    """Equal nan and inf cells, finite cells within FLOAT_TOL."""
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    assert np.array_equal(np.isnan(ours), np.isnan(ref)), f"{what}: nan cells differ"
    finite = np.isfinite(ref)
    assert np.array_equal(ours[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)]), f"{what}: inf cells differ"
    if finite.any():
        assert np.max(np.abs(ours[finite] - ref[finite])) <= FLOAT_TOL, what


def brute_matrices(vectors: np.ndarray, fn, **params) -> dict[str, np.ndarray]:
    """fn over every ordered pair (i, j), as full matrices per returned key (some are not symmetric)."""
    n = vectors.shape[0]
    out: dict[str, np.ndarray] = {}
    for i in range(n):
        for j in range(n):
            for key, value in fn(vectors[i], vectors[j], **params).items():
                if key == "r":
                    for (a, b), v in value.items():
                        out.setdefault(f"r{a}{b}", np.zeros((n, n), dtype=np.int64))[i, j] = v
                    continue
                dtype = np.float64 if isinstance(value, float) else np.int64
                out.setdefault(key, np.zeros((n, n), dtype=dtype))[i, j] = value
    return out


def vectors_for(metric: str, g: np.ndarray) -> np.ndarray:
    """ibs and king compare samples (rows of g), ccc2 compares variants (columns)."""
    return np.ascontiguousarray(g.T) if metric == "ccc2" else g


@pytest.fixture(scope="module")
def genotypes():
    # 70 samples x 150 variants: neither a multiple of 64; 10% missing plus the planted corner cases
    return {
        False: random_genotypes(70, 150, p_missing=0.1, seed=3),
        True: random_genotypes(70, 150, p_missing=0.0, seed=4, special=False),
    }


@pytest.fixture(scope="module")
def references(genotypes):
    return {
        (m, complete): brute_matrices(vectors_for(m, g), fn)
        for complete, g in genotypes.items()
        for m, fn in (("ibs", ibs_pair), ("king", king_pair), ("ccc2", ccc2_pair))
    }


def tile_counts(metric, codes, backend):
    layout = genotype_layout(codes, metric.encoding)
    planes = genotype_planes(codes, layout)
    return layout, backends.get(backend).count_matrices(planes, planes, metric.counts(layout))


@pytest.mark.parametrize("complete", [False, True], ids=["missing", "complete"])
@pytest.mark.parametrize("backend", CPU_BACKEND_PARAMS)
@pytest.mark.parametrize("name", ["ibs", "king", "ccc2"])
def test_counts_and_values_match_brute_force(name, backend, complete, genotypes, references):
    metric = get_metric(name)
    codes = vectors_for(name, genotypes[complete])
    layout, counts = tile_counts(metric, codes, backend)
    assert layout.complete is complete
    ref = references[name, complete]
    values = metric.epilogue(counts)
    if name == "ibs":
        assert np.array_equal(counts["ibs_count"], ref["ibs_count"])
        assert np.array_equal(counts["n"], ref["n"])
        assert_floats(values["dist_1ibs"], ref["dist_1ibs"], "dist_1ibs")
    elif name == "king":
        for key in ("nsnp", "hethet", "ibs0"):
            assert np.array_equal(counts[key], ref[key]), key
        assert_floats(values["kinship"], ref["kinship"], "kinship")
    else:
        r11, si, sj, both = counts["r11"], counts["sum_i"], counts["sum_j"], counts["both"]
        assert np.array_equal(r11, ref["r11"])
        assert np.array_equal(2 * si - r11, ref["r10"])
        assert np.array_equal(2 * sj - r11, ref["r01"])
        assert np.array_equal(4 * both - 2 * si - 2 * sj + r11, ref["r00"])
        assert np.array_equal(4 * both, ref["c_ij"])
        assert np.array_equal(counts["c_i"], ref["c_i"]) and np.array_equal(counts["c_j"], ref["c_j"])
        assert np.array_equal(counts["s_i"], ref["s_i1"]) and np.array_equal(counts["s_j"], ref["s_j1"])
        for col in metric.columns:
            assert_floats(values[col], ref[col], col)


@pytest.mark.parametrize("name", ["ibs", "king", "ccc2"])
def test_backends_give_identical_counts_on_unequal_blocks(name, genotypes):
    metric = get_metric(name)
    codes = vectors_for(name, genotypes[False])
    layout = genotype_layout(codes, metric.encoding)
    planes = genotype_planes(codes, layout)
    left, right = planes[:23], planes[23:]
    results = [backends.get(b).count_matrices(left, right, metric.counts(layout)) for b in CPU_BACKENDS]
    for other in results[1:]:
        assert results[0].keys() == other.keys()
        for key in results[0]:
            assert other[key].dtype == np.int64
            assert np.array_equal(results[0][key], other[key]), key


def test_plane_products_per_metric():
    """The algebra of docs/bitplanes.md: products per pair, and fewer on complete data."""

    def products(name, complete):
        metric = get_metric(name)
        layout = genotype_layout(
            np.zeros((2, 70), np.uint8) if complete else np.full((2, 70), MISSING, np.uint8), metric.encoding
        )
        terms = [t for ts in metric.counts(layout).values() for t in ts]
        return sum(1 for t in terms if t.left is not None and t.right is not None)

    assert {m: products(m, False) for m in ("ibs", "king", "ccc2")} == {"ibs": 7, "king": 6, "ccc2": 9}
    assert {m: products(m, True) for m in ("ibs", "king", "ccc2")} == {"ibs": 2, "king": 3, "ccc2": 4}


# -- the whole pipeline, from a VCF ----------------------------------------------------------


@pytest.fixture(scope="module")
def vcf_case(tmp_path_factory):
    """45 samples x 83 variants: blocks of 17 split both (45 = 17+17+11, 83 = 4*17+15)."""
    g = random_genotypes(45, 83, p_missing=0.1, seed=11)
    ids = [f"rs{v}" if v % 3 else "." for v in range(83)]
    path = write_vcf(tmp_path_factory.mktemp("vcf") / "case.vcf.gz", vcf_text(g, ids=ids, seed=2))
    variant_ids = [vid if vid != "." else f"1:{10 * v + 5}:A:G" for v, vid in enumerate(ids)]
    refs = {
        "ibs": brute_matrices(g, ibs_pair),
        "king": brute_matrices(g, king_pair),
        "ccc2": brute_matrices(np.ascontiguousarray(g.T), ccc2_pair),
    }
    return path, g, variant_ids, refs


@pytest.mark.parametrize("backend", CPU_BACKEND_PARAMS)
def test_pipeline_matches_brute_force(tmp_path, backend, vcf_case, pairs_reader):
    path, g, variant_ids, refs = vcf_case
    pipeline.run_all(path, tmp_path, ["ibs", "king", "ccc2"], block_size=17, seed=5, backend=backend)
    samples = [f"s{i}" for i in range(g.shape[0])]
    for name, ids in (("ibs", samples), ("king", samples), ("ccc2", variant_ids)):
        metric, ref = get_metric(name), refs[name]
        header, rows = pairs_reader(tmp_path / name / "pairs.tsv.gz")
        assert header == ["id1", "id2", *metric.columns]
        n = len(ids)
        assert len(rows) == n * (n - 1) // 2
        index = {v: k for k, v in enumerate(ids)}
        i = np.array([index[r[0]] for r in rows])
        j = np.array([index[r[1]] for r in rows])
        assert np.all(i < j)
        for c, col in enumerate(metric.columns, start=2):
            got = np.array([r[c] for r in rows])
            if ref[col].dtype == np.int64:
                assert np.array_equal(got.astype(np.int64), ref[col][i, j]), col
            else:
                assert_floats(got, ref[col][i, j], col)
        mids, matrix = read_float_matrix(tmp_path / name / "matrix.tsv")
        assert mids == ids
        off = ~np.eye(n, dtype=bool)
        assert_floats(matrix[off], ref[metric.dense_column][off], f"{name} matrix")


def test_thresholds_keep_the_brute_force_pairs(tmp_path, vcf_case, pairs_reader):
    path, g, variant_ids, refs = vcf_case
    thresholds = {"ibs": 0.2, "king": 0.05, "ccc2": 0.6}
    pipeline.run_all(path, tmp_path, ["ibs", "king", "ccc2"], block_size=17, thresholds=thresholds)
    samples = [f"s{i}" for i in range(g.shape[0])]
    for name, ids in (("ibs", samples), ("king", samples), ("ccc2", variant_ids)):
        ref, t = refs[name], thresholds[name]
        n = len(ids)
        if name == "ibs":
            passing = ref["dist_1ibs"] <= t
        elif name == "king":
            passing = ref["kinship"] >= t
        else:  # ge_any: any of the four entries
            passing = np.logical_or.reduce([ref[c] >= t for c in get_metric(name).columns])
        want = {(ids[a], ids[b]) for a, b in zip(*np.nonzero(passing & np.triu(np.ones((n, n), bool), 1)), strict=True)}
        _, rows = pairs_reader(tmp_path / name / "pairs.tsv.gz")
        assert {(r[0], r[1]) for r in rows} == want, name
        assert 0 < len(want) < n * (n - 1) // 2, f"{name}: threshold {t} should keep some pairs, not all"


def test_outputs_do_not_depend_on_block_size_or_seed(tmp_path, vcf_case):
    path = vcf_case[0]
    for k, (block, seed) in enumerate(((7, 1), (64, 9))):
        pipeline.run_all(path, tmp_path / str(k), ["ibs", "king", "ccc2"], block_size=block, seed=seed)
    for name in ("ibs", "king", "ccc2"):
        for out in ("pairs.tsv.gz", "matrix.tsv"):
            assert (tmp_path / "0" / name / out).read_bytes() == (tmp_path / "1" / name / out).read_bytes()


def test_ccc2_parameters(tmp_path, vcf_case, pairs_reader):
    path, g, variant_ids, _ = vcf_case
    params = {"multiplier": 1.0, "param": 0.5}
    summaries = pipeline.run_all(path, tmp_path, ["ccc2"], block_size=40, metric_params={"ccc2": params})
    assert summaries["ccc2"]["config"]["params"] == params
    ref = brute_matrices(np.ascontiguousarray(g.T), ccc2_pair, **params)
    index = {v: k for k, v in enumerate(variant_ids)}
    _, rows = pairs_reader(tmp_path / "ccc2" / "pairs.tsv.gz")
    i = np.array([index[r[0]] for r in rows])
    j = np.array([index[r[1]] for r in rows])
    for c, col in enumerate(("ccc_00", "ccc_01", "ccc_10", "ccc_11"), start=2):
        assert_floats(np.array([r[c] for r in rows]), ref[col][i, j], col)


def test_metric_parameter_errors():
    with pytest.raises(GenotileError, match="unknown parameter"):
        get_metric("ccc2", gamma=1)
    with pytest.raises(GenotileError, match="finite number"):
        get_metric("ccc2", multiplier="x")
    with pytest.raises(GenotileError, match="takes no parameters"):
        get_metric("ibs", multiplier=2)
    assert get_metric("ccc2", multiplier=None).params == {"multiplier": 4.5, "param": 2 / 3}


def test_summary_carries_the_vcf_counts(tmp_path, vcf_case):
    summaries = pipeline.run_all(vcf_case[0], tmp_path, ["ibs"], block_size=17)
    counts = summaries["ibs"]["ingest_counts"]
    g = vcf_case[1]
    assert counts["variants"] == g.shape[1] and counts["records"] == g.shape[1]
    assert counts["missing_calls"] == int((g == MISSING).sum())
    assert counts["monomorphic"] >= 3 and counts["all_missing"] == 1
