"""GPU screening (cupy backend, kernels/screen_search.cu) against the brute-force reference and
the numpy backend, exactly: positions and quality sums.

Skipped where there is no CUDA GPU / CuPy. On a GPU: random inputs with 1-20% N and planted
matches (start, end, several per pair), signatures longer than samples, all-N and poly-A
adversarial inputs, low-complexity inputs (runs, (A^k C)* for several k, dinucleotide repeats
against repeat signatures ending in a mismatch: the run and every-other-base masks), signatures
of N only, the shared-memory and the global-memory variant,
samples too long for shared memory, outputs poisoned before the kernel writes them.
"""

import numpy as np
import pytest
import screenref as R

from genotile.backends.cuda import cupy_common
from genotile.screen import encode, numpy_search, score

HAS_GPU = cupy_common.has_gpu()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU / CuPy")


@pytest.fixture(autouse=True)
def poisoned_outputs(monkeypatch):
    monkeypatch.setattr(cupy_common, "POISON", True)


def check(samples, sigs, force_global=False):
    from genotile.screen import cupy_search

    S, G = R.as_sets(samples, sigs)
    want = np.array([[R.first_match(s[1], g[1]) for g in sigs] for s in samples], dtype=np.int32)
    got = cupy_search.first_matches(S, G, force_global=force_global)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(numpy_search.first_matches(S, G), want)
    qs = cupy_search.qual_sums(S, got, G.lengths)
    np.testing.assert_array_equal(qs, score.qual_sums(S, got, G.lengths))
    h = score.hundredths(qs, G.lengths[None, :])
    for i, j in zip(*np.nonzero(want >= 0), strict=True):
        assert score.format_score(int(h[i, j])) == R.score_text(samples[i][2], want[i, j], len(sigs[j][1]))
    return want


@needs_gpu
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("force_global", [False, True])
def test_random_planted(seed, force_global):
    rng = np.random.default_rng(seed)
    samples, sigs = R.random_screen(rng, 40, 3000, 37, 150, plants=4)
    want = check(samples, sigs, force_global)
    assert (want >= 0).sum() >= 20 and (want == 0).any()


@needs_gpu
def test_short_signatures_many_matches():
    # short signatures match many times per sample: the first of several must be reported
    rng = np.random.default_rng(7)
    samples, sigs = R.random_screen(rng, 25, 2500, 70, 6, n_frac=(0.05, 0.2))
    want = check(samples, sigs)
    assert (want > 0).sum() > 500


@needs_gpu
def test_adversarial():
    rng = np.random.default_rng(11)
    q = lambda n: "".join(chr(33 + int(v)) for v in rng.integers(0, 42, n))  # noqa: E731
    samples = [
        ("all_n", "N" * 5000, q(5000)),
        ("poly_a", "A" * 6000, q(6000)),
        ("poly_a_n", R.with_ns(rng, "a" * 6000, 0.1), q(6000)),
        ("periodic", ("A" * 99 + "C") * 60, q(6000)),
        ("tiny", "AC", q(2)),
    ]
    sigs = [
        ("polya", "A" * 700),
        ("polya_c", "A" * 699 + "C"),
        ("n_only", "N" * 40),
        ("long", "A" * 7000),
        ("ac", "AC"),
        ("mixed", R.random_bases(rng, 300)),
    ]
    want = check(samples, sigs)
    assert want[0].tolist() == [0, 0, 0, -1, 0, 0]
    assert want[1, 1] == -1 and want[3, 0] == -1 and want[3, 4] == 98


@needs_gpu
def test_sample_longer_than_shared_memory():
    from genotile.screen import cupy_search

    length = cupy_search.smem_limit() // 4 * 8 + 5000  # too many words for the planes in shared memory
    rng = np.random.default_rng(5)
    seq = list(R.random_bases(rng, length))
    sigs = [(f"s{k}", R.with_ns(rng, R.random_bases(rng, 200), 0.05)) for k in range(6)]
    for k, at in enumerate([0, length - 200, length // 2]):
        seq[at : at + 200] = [c if c != "N" else "A" for c in sigs[k][1]]
    samples = [("long", "".join(seq), "I" * length), ("short", R.random_bases(rng, 500), "5" * 500)]
    want = check(samples, sigs)
    assert want[0, :3].tolist() == [0, length - 200, length // 2]


@needs_gpu
def test_device_probes_match_host_order():
    from genotile.screen import cupy_search

    rng = np.random.default_rng(3)
    _, sigs = R.random_screen(rng, 1, 10, 50, 300)
    sigs.append(("skewed", "A" * 50 + "C" + "G" * 3 + "N" * 5 + "T" * 9))
    _, G = R.as_sets([], sigs)
    d_prb, d_start, d_levels = cupy_search.device_probes(G)
    prb, start, levels = encode.all_probes(G)
    np.testing.assert_array_equal(d_prb.get(), prb)
    np.testing.assert_array_equal(d_start.get(), start)
    assert d_levels == levels


@needs_gpu
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_low_complexity(seed):
    rng = np.random.default_rng(seed)
    samples, sigs = R.low_complexity_screen(rng, 16, 3000, 40, 700)
    _, G = R.as_sets([], sigs)
    from genotile.screen import cupy_search

    d_prb, d_start, d_levels = cupy_search.device_probes(G)  # run and alternation probes, same order
    prb, start, levels = encode.all_probes(G)
    np.testing.assert_array_equal(d_prb.get(), prb)
    np.testing.assert_array_equal(d_start.get(), start)
    assert d_levels == levels >= 7
    for force_global in (False, True):
        want = check(samples, sigs, force_global)
    assert (want >= 0).sum() >= 16 and (want < 0).sum() >= 16


@needs_gpu
def test_periodic_and_repeat_mismatches():
    # (A^k C)* against poly-A (no match), dinucleotide repeats against repeat signatures ending
    # or starting in a mismatch, or with one in the middle, and samples with a defect in the repeat
    rng = np.random.default_rng(13)
    q = lambda n: "".join(chr(33 + int(v)) for v in rng.integers(0, 42, n))  # noqa: E731
    samples = []
    for k in (1, 3, 15, 63, 999):
        n = 6000 // (k + 1) * (k + 1)
        samples.append((f"a{k}c", ("A" * k + "C") * (n // (k + 1)), q(n)))
    ac = "AC" * 3000
    samples += [
        ("ac", ac, q(6000)),
        ("ac_defect", ac[:3001] + "A" + ac[3002:], q(6000)),
        ("ag_n", R.with_ns(rng, "AG" * 3000, 0.05), q(6000)),
        ("a999c_n", R.with_ns(rng, ("A" * 999 + "C") * 6, 0.05), q(6000)),
    ]
    sigs = [
        ("polya", "A" * 1500),
        ("polya_short", "A" * 40),
        ("ac_aa", "AC" * 749 + "AA"),
        ("cc_ac", "CC" + "AC" * 749),
        ("ac_mid", "AC" * 300 + "AA" + "AC" * 449),
        ("ag_gg", "AG" * 749 + "GG"),
        ("ac", "AC" * 750),
        ("a999c", "A" * 999 + "C" + "A" * 500),
    ]
    want = check(samples, sigs)
    assert want[:5, 0].tolist() == [-1] * 5 and want[4, 1] == 0 and want[5, 6] == 0 and want[6, 6] == 0
    assert want[5, 2] == -1 and want[5, 3] == -1 and want[5, 4] == -1 and want[4, 7] == 0
