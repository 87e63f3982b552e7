"""Property-based tests (hypothesis) of every kernel: random shapes, alphabets and missing patterns.

- genotype metrics (ibs, king, ccc2) on both CPU backends equal the brute-force definitions
  (tests/reference.py), counts exactly and values to 1e-12, on blocks of unequal size;
  (the alignment metrics' property test is in test_kernels.py);
- the GPU backends (cupy-b1, cupy-int8: counts, and the device tile path with epilogue,
  threshold and compaction) equal the numpy backend bit for bit, for all five metrics.
  Skipped where there is no CUDA GPU / CuPy.
"""

import numpy as np
import pytest
from cpu_backends import CPU_BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import GENOTYPE_REFERENCES
from strategies import genotype_codes

from genotile import backends
from genotile.backends.cuda import cupy_common
from genotile.core.encode import ALPHABETS, categorical_encoding, categorical_planes, symbol_counts
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.pairs.tile import compute_tile

FLOAT_TOL = 1e-12
HAS_GPU = cupy_common.has_gpu()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU / CuPy: GPU property tests need a device")


def brute(name, left, right, params):
    """{column: (rows, cols) array} of the reference over every (left row, right row) pair."""
    out: dict[str, np.ndarray] = {}
    for i, gi in enumerate(left):
        for j, gj in enumerate(right):
            for key, value in GENOTYPE_REFERENCES[name](gi, gj, **params).items():
                if key == "r":
                    continue
                dtype = np.float64 if isinstance(value, float) else np.int64
                out.setdefault(key, np.zeros((left.shape[0], right.shape[0]), dtype=dtype))[i, j] = value
    return out


def assert_floats(ours, ref, what):
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    assert np.array_equal(np.isnan(ours), np.isnan(ref)), f"{what}: nan cells differ"
    inf = np.isinf(ref)
    assert np.array_equal(ours[inf], ref[inf]), f"{what}: inf cells differ"
    fin = np.isfinite(ref)
    assert not fin.any() or np.max(np.abs(ours[fin] - ref[fin])) <= FLOAT_TOL, what


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    codes=genotype_codes(),
    split=st.floats(0, 1),
    name=st.sampled_from(["ibs", "king", "ccc2"]),
    backend=st.sampled_from(CPU_BACKENDS),
    params=st.sampled_from([{}, {"multiplier": 1.0, "param": 0.5}]),
)
def test_property_genotype_metrics_equal_brute_force(codes, split, name, backend, params):
    params = params if name == "ccc2" else {}
    metric = get_metric(name, **params)
    layout = genotype_layout(codes, metric.encoding)
    planes = genotype_planes(codes, layout)
    cut = int(round(split * codes.shape[0]))
    left, right = (planes, planes) if cut in (0, codes.shape[0]) else (planes[:cut], planes[cut:])
    lcodes, rcodes = (codes, codes) if left is right else (codes[:cut], codes[cut:])
    counts = backends.get(backend).count_matrices(left, right, metric.counts(layout))
    values = metric.epilogue(counts)
    ref = brute(name, lcodes, rcodes, params)
    for column in metric.columns:
        if column in ("ibs_count", "n", "nsnp", "hethet", "ibs0"):
            assert values[column].dtype.kind in "iu" and np.array_equal(values[column], ref[column]), column
        else:
            assert_floats(values[column], ref[column], column)


# ---------------------------------------------------------------- GPU backends against numpy


@st.composite
def alignment_codes(draw):
    """(codes, metric) of a random alignment: nucleotides with missing, or a categorical alphabet."""
    metric = draw(st.sampled_from(["snp", "hamming"]))
    n, m = draw(st.integers(1, 300)), draw(st.integers(1, 700))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    symbols = np.frombuffer(
        draw(st.sampled_from([b"ACGTN-", b"AC", b"ACGTRYKM-N", b"ACDEFGHIKLMNPQRSTVWY*"])), dtype=np.uint8
    )
    base = rng.choice(symbols, size=m)
    raw = np.where(
        rng.random((n, m)) < draw(st.sampled_from([0.0, 0.05, 0.5])), rng.choice(symbols, size=(n, m)), base[None, :]
    )
    return ALPHABETS[get_metric(metric).encoding].encode(raw), metric


def planes_of(codes, metric):
    if metric.encoding in ALPHABETS:
        enc = categorical_encoding(symbol_counts(codes), ALPHABETS[metric.encoding].has_missing)
        return categorical_planes(codes, enc), enc.layout
    layout = genotype_layout(codes, metric.encoding)
    return genotype_planes(codes, layout), layout


def gpu_case(codes, metric_name, block_size, seed, threshold_quantile):
    """Every tile of a plan through numpy and each GPU backend: equal arrays, byte for byte."""
    metric = get_metric(metric_name)
    planes, layout = planes_of(codes, metric)
    plan = Plan(codes.shape[0], block_size, seed)
    perm = plan.permutation()
    planes = planes[perm]
    threshold = None
    for bi, bj in plan.tiles():
        want, _ = compute_tile(planes, layout, perm, plan, metric, bi, bj, None, True, "numpy")
        if threshold_quantile is not None and threshold is None and want[metric.dense_column].size:
            col = want[metric.columns[0]]
            threshold = float(np.nanquantile(col, threshold_quantile)) if np.isfinite(col).any() else None
        if threshold is not None:
            want, _ = compute_tile(planes, layout, perm, plan, metric, bi, bj, threshold, True, "numpy")
        for backend in ("cupy-b1", "cupy-int8"):
            got, meta = compute_tile(planes, layout, perm, plan, metric, bi, bj, threshold, True, backend)
            assert meta["backend"] == backend and got.keys() == want.keys(), backend
            for key in want:
                assert (
                    got[key].dtype == want[key].dtype and np.array_equal(got[key], want[key], equal_nan=True)
                    if want[key].dtype.kind == "f"
                    else np.array_equal(got[key], want[key])
                ), (backend, key, bi, bj)
        left, right = planes[plan.block(bi)], planes[plan.block(bj)]
        ref = backends.get("numpy").count_matrices(left, right, metric.counts(layout))
        for backend in ("cupy-b1", "cupy-int8"):
            counts = backends.get(backend).count_matrices(left, right, metric.counts(layout))
            for key in ref:
                assert np.array_equal(counts[key], ref[key]), (backend, key)


@needs_gpu
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    case=alignment_codes(),
    block_size=st.integers(1, 400),
    seed=st.integers(0, 2**32 - 1),
    quantile=st.sampled_from([None, 0.3]),
)
def test_property_gpu_alignment_tiles_equal_numpy(case, block_size, seed, quantile):
    codes, metric = case
    gpu_case(codes, metric, max(block_size, codes.shape[0] // 8 + 1), seed, quantile)


@needs_gpu
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    codes=genotype_codes(max_vectors=260, max_fields=600),
    name=st.sampled_from(["ibs", "king", "ccc2"]),
    block_size=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
    quantile=st.sampled_from([None, 0.5]),
)
def test_property_gpu_genotype_tiles_equal_numpy(codes, name, block_size, seed, quantile):
    gpu_case(codes, name, max(block_size, codes.shape[0] // 8 + 1), seed, quantile)
