"""Property-based tests (hypothesis) of the ccc3 and screening kernels: random shapes, missing
patterns, alphabets and parameters (the 2-way metrics' are in test_properties.py).

- ccc3: every unique triple of every job of random plans (block sizes, stages, permutations) on
  both CPU backends equals the brute force (tests/reference.py ccc3_triple): the same triples,
  values bit for bit (the same IEEE operations in the same order), for random multipliers and
  params; a threshold keeps exactly the triples with an entry >= it;
- ccc3 on the GPU: cupy-b1 and cupy-int8 job outputs equal numpy's byte for byte, threshold at a
  random quantile, small batches and a small passing buffer (regrow and rerun);
- screening: first matches and quality sums (and printed scores) of the numpy backend equal the
  brute force (tests/screenref.py), on random and low-complexity samples with N (0-60%), lower
  case and IUPAC codes, signatures of ACGTN (some longer than the samples, some of N only) and
  planted matches; the GPU backend (shared- and global-memory search) equals numpy exactly.
GPU tests are skipped where there is no CUDA GPU / CuPy.
"""

import math

import numpy as np
import pytest
import screenref as R
from ccc3ref import reference, run_jobs, store
from cpu_backends import CPU_BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import genotype_codes

from genotile.backends.cuda import cupy_common
from genotile.core import ccc3
from genotile.screen import backend as screen_backend
from genotile.screen import score
from genotile.triples.tile import compute_triples

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
HAS_GPU = cupy_common.has_gpu()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU / CuPy: GPU property tests need a device")
needs_gpu80 = pytest.mark.skipif(
    not cupy_common.has_gpu(80), reason="no CUDA GPU (compute capability >= 8.0) / CuPy: ccc3 device path untestable"
)

# ---------------------------------------------------------------- ccc3

finite = st.floats(-8, 8, allow_nan=False, allow_infinity=False)
ccc3_params = st.one_of(
    st.just(ccc3.Params()),
    st.builds(ccc3.Params, finite, finite),
    st.sampled_from([ccc3.Params(1.0, 0.0), ccc3.Params(3.0, 0.5), ccc3.Params(-2.5, 1.0)]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=SLOW_OK)
@given(
    codes=genotype_codes(max_vectors=14, max_fields=150),
    block_size=st.integers(1, 16),
    stages=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
    params=ccc3_params,
    quantile=st.floats(0, 1),
)
def test_property_ccc3_every_triple_equals_brute_force(codes, block_size, stages, seed, params, quantile):
    g = codes  # genotype_codes' (vectors, fields): SNP vectors (rows) x samples
    n = g.shape[0]
    block_size = max(block_size, -(-n // 4))  # at most 4 blocks: 20 block triples x stages jobs
    ref = reference(g, multiplier=params.multiplier, param=params.param)
    assert len(ref) == math.comb(n, 3)
    for backend in CPU_BACKENDS:
        found, layout = run_jobs(g, block_size=block_size, stages=stages, backend=backend, seed=seed, params=params)
        assert layout.complete is not bool((g == 255).any())
        assert found.keys() == ref.keys(), backend
        bad = [k for k in ref if found[k] != ref[k]]
        assert not bad, (backend, bad[:3], [found[k] for k in bad[:3]], [ref[k] for k in bad[:3]])
    if ref:  # a threshold keeps exactly the triples with some entry >= it
        threshold = float(np.quantile([max(v) for v in ref.values()], quantile))
        found, _ = run_jobs(g, block_size=block_size, stages=stages, seed=seed, params=params, threshold=threshold)
        assert found == {k: v for k, v in ref.items() if max(v) >= threshold}


@needs_gpu80
@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(
    codes=genotype_codes(max_vectors=48, max_fields=600),
    block_size=st.integers(1, 48),
    stages=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    params=ccc3_params,
    quantile=st.one_of(st.none(), st.floats(0, 1)),
    batch_rows=st.integers(1, 200),
    capacity=st.integers(1, 64),
    most=st.integers(1, 96),
)
def test_property_gpu_ccc3_triples_equal_numpy(
    codes, block_size, stages, seed, params, quantile, batch_rows, capacity, most
):
    from genotile.backends.cuda import cupy_ccc3

    g = codes  # genotype_codes' (vectors, fields): SNP vectors (rows) x samples
    planes, layout, perm = store(g, seed)
    plan = ccc3.Plan3(g.shape[0], max(block_size, -(-g.shape[0] // 4)), seed, stages)  # <= 60 jobs
    threshold = None
    if quantile is not None:  # a threshold at a quantile of the triples' largest entries
        best = [
            np.max([arrays[c] for c in ccc3.COLUMNS], axis=0)
            for arrays in (
                compute_triples(planes, layout, perm, plan, params, *job, None, "numpy")[0] for job in plan.jobs()
            )
        ]
        best = np.concatenate(best)
        threshold = float(np.quantile(best, quantile)) if best.size else None
    saved = cupy_common.POISON, cupy_ccc3.BATCH_ROWS, cupy_ccc3.INITIAL_CAPACITY, cupy_ccc3.MAX_CAPACITY
    # a buffer that grows to `most` triples at most, then ranges cut to fit it (issue 30)
    cupy_common.POISON, cupy_ccc3.BATCH_ROWS, cupy_ccc3.INITIAL_CAPACITY = True, batch_rows, capacity
    cupy_ccc3.MAX_CAPACITY = most
    try:
        for job in plan.jobs():
            want, _ = compute_triples(planes, layout, perm, plan, params, *job, threshold, "numpy")
            for backend in ("cupy-b1", "cupy-int8"):
                got, meta = compute_triples(planes, layout, perm, plan, params, *job, threshold, backend)
                assert meta["backend"] == backend and got.keys() == want.keys(), (backend, job)
                for key in want:
                    assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, (backend, job, key)
                    assert got[key].tobytes() == want[key].tobytes(), (backend, job, key)
    finally:
        cupy_common.POISON, cupy_ccc3.BATCH_ROWS, cupy_ccc3.INITIAL_CAPACITY, cupy_ccc3.MAX_CAPACITY = saved


# ---------------------------------------------------------------- screening

IUPAC = list("RYKMSWBDHVryk-.")
UNITS = ["A", "C", "AC", "AG", "CA", "AAC", "AAAAAC", "ACGT", "AAAAAAAAAAAAAAAAAT"]


@st.composite
def screen_case(draw, max_samples=8, max_sigs=10, max_len=300, max_sig_len=80):
    """(samples [(name, seq, qual)], sigs [(name, seq)]): random or low-complexity samples with N,
    lower case and IUPAC codes, signatures of ACGTN with repeats, cuts of samples and planted copies."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_samples, n_sigs = draw(st.integers(1, max_samples)), draw(st.integers(1, max_sigs))
    # longest sample / signature: small, around the 64-bit word boundaries, or the largest
    sample_len = draw(st.sampled_from([0, 1, 7, 63, 64, 65, 129, max_len // 2, max_len, max_len]))
    sig_len = draw(st.sampled_from([1, 2, 5, 17, 63, 64, 65, max_sig_len, max_sig_len]))
    low_complexity = draw(st.booleans())
    n_frac = draw(st.sampled_from([0.0, 0.01, 0.1, 0.3, 0.6]))
    iupac_frac = draw(st.sampled_from([0.0, 0.0, 0.02, 0.2]))
    seqs = []
    for s in range(n_samples):
        length = sample_len if s == 0 else int(rng.integers(0, sample_len + 1))
        if low_complexity:
            unit = UNITS[int(rng.integers(len(UNITS)))]
            text = R.repeat_text(rng, unit, length, int(rng.integers(0, 4)))
        else:
            text = R.random_bases(rng, length)
        chars = np.array(list(text), dtype="<U1")
        hit = rng.random(length) < n_frac
        chars[hit] = rng.choice(["N", "n"], int(hit.sum()))
        hit = rng.random(length) < iupac_frac
        chars[hit] = rng.choice(IUPAC, int(hit.sum()))
        seqs.append(chars)
    sigs = []
    for g in range(n_sigs):
        length = sig_len if g == 0 else int(rng.integers(1, sig_len + 1))
        kind = int(rng.integers(0, 5))
        donors = [s for s in seqs if s.size]
        if kind == 0 and donors:  # cut from a sample (a match unless IUPAC codes were cut too)
            src = donors[int(rng.integers(len(donors)))]
            at = int(rng.integers(0, src.size))
            sig = "".join(src[at : at + length]).upper()
            sig = "".join(c if c in "ACGTN" else "N" for c in sig)
        elif kind == 1:  # a repeat, with a defect or a mismatch at one end
            sig = R.repeat_text(rng, UNITS[int(rng.integers(len(UNITS)))], length, int(rng.integers(0, 2)))
            if rng.random() < 0.5:
                k = int(rng.choice([0, length - 1]))
                sig = sig[:k] + {"A": "C", "C": "A", "G": "T", "T": "G"}[sig[k]] + sig[k + 1 :]
        elif kind == 2 and rng.random() < 0.3:
            sig = "N" * length
        else:
            sig = R.random_bases(rng, length)
        sig = R.with_ns(rng, sig, float(rng.choice([0.0, 0.05, 0.3])))
        sigs.append((f"sig{g}", R.mixed_case(rng, sig) if rng.random() < 0.3 else sig))
    for chars in seqs:  # planted copies (N of the signature as a base or kept), at the start, end or inside
        for _ in range(int(rng.integers(0, 3))):
            sig = sigs[int(rng.integers(n_sigs))][1]
            if len(sig) > chars.size:
                continue
            where = int(rng.choice([0, chars.size - len(sig), int(rng.integers(0, chars.size - len(sig) + 1))]))
            chars[where : where + len(sig)] = [
                c if c not in "Nn" or rng.random() < 0.5 else rng.choice(list("ACGT")) for c in sig
            ]
    samples = []
    for s, chars in enumerate(seqs):
        text = "".join(chars)
        text = R.mixed_case(rng, text) if text and rng.random() < 0.5 else text
        qual = "".join(chr(33 + int(q)) for q in rng.integers(0, 94, chars.size))
        samples.append((f"read{s}", text, qual))
    return samples, sigs


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(case=screen_case())
def test_property_numpy_search_equals_brute_force(case):
    samples, sigs = case
    S, G = R.as_sets(samples, sigs)
    want = np.array([[R.first_match(s[1], g[1]) for g in sigs] for s in samples], dtype=np.int32)
    want_sums = np.zeros(want.shape, dtype=np.int64)
    for i, j in zip(*np.nonzero(want >= 0), strict=True):
        want_sums[i, j] = sum(ord(c) - 33 for c in samples[i][2][want[i, j] : want[i, j] + len(sigs[j][1])])
    pos, sums = screen_backend.first_matches_and_sums(S, G, "numpy")
    assert pos.dtype == np.int32 and sums.dtype == np.int64
    np.testing.assert_array_equal(pos, want)
    np.testing.assert_array_equal(sums, want_sums)
    h = score.hundredths(sums, G.lengths[None, :])
    for i, j in zip(*np.nonzero(want >= 0), strict=True):
        assert score.format_score(int(h[i, j])) == R.score_text(samples[i][2], int(want[i, j]), len(sigs[j][1]))


@needs_gpu
@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(case=screen_case(max_samples=30, max_sigs=40, max_len=2500, max_sig_len=400), force_global=st.booleans())
def test_property_gpu_screen_equals_numpy(case, force_global):
    from genotile.screen import cupy_search

    samples, sigs = case
    S, G = R.as_sets(samples, sigs)
    want, want_sums = screen_backend.first_matches_and_sums(S, G, "numpy")
    saved = cupy_common.POISON
    cupy_common.POISON = True
    try:
        pos, sums = screen_backend.first_matches_and_sums(S, G, "cupy")
        np.testing.assert_array_equal(pos, want)
        np.testing.assert_array_equal(sums, want_sums)
        assert pos.dtype == want.dtype and sums.dtype == want_sums.dtype
        if force_global:
            np.testing.assert_array_equal(cupy_search.first_matches(S, G, force_global=True), want)
    finally:
        cupy_common.POISON = saved
