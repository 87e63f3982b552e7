"""Screening on the CPU: the numpy backend and the exact scores against the brute-force
reference (tests/screenref.py) on random and adversarial inputs."""

import numpy as np
import pytest
import screenref as R

from genotile.errors import GenotileError
from genotile.screen import encode, numpy_search, score


def check(samples, sigs):
    S, G = R.as_sets(samples, sigs)
    want = np.array([[R.first_match(s[1], g[1]) for g in sigs] for s in samples], dtype=np.int32)
    got = numpy_search.first_matches(S, G)
    np.testing.assert_array_equal(got, want)
    h = score.hundredths(score.qual_sums(S, got, G.lengths), G.lengths[None, :])
    for i, j in zip(*np.nonzero(want >= 0), strict=True):
        assert score.format_score(int(h[i, j])) == R.score_text(samples[i][2], want[i, j], len(sigs[j][1]))
    return want


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_planted(seed):
    rng = np.random.default_rng(seed)
    samples, sigs = R.random_screen(rng, 20, 1500, 15, 90, plants=4)
    want = check(samples, sigs)
    assert (want >= 0).sum() >= 10  # planted matches found
    assert (want == 0).any()  # one at the very start


def test_matches_at_the_end_and_several_per_pair():
    rng = np.random.default_rng(9)
    sig = R.with_ns(rng, R.random_bases(rng, 150), 0.1)
    copy = "".join(c if c != "N" else "G" for c in sig)
    body = R.random_bases(rng, 2000)
    samples = [
        ("end", body + copy, "I" * 2150),  # only at the very end
        ("twice", body[:300] + copy + body[300:900] + copy, "5" * 1200),
        ("short", copy[:-1], "5" * 149),
    ]  # one base too short
    want = check(samples, [("sig", sig), ("short_sig", "ACG"), ("longer", sig + "A" * 3000)])
    assert want[0, 0] == 2000 and want[1, 0] == 300 and want[2, 0] == -1 and (want[:, 2] == -1).all()


def test_short_signatures_many_matches():
    rng = np.random.default_rng(5)
    samples, sigs = R.random_screen(rng, 10, 800, 40, 5, n_frac=(0.05, 0.2))
    want = check(samples, sigs)
    assert (want > 0).sum() > 100


def test_adversarial():
    rng = np.random.default_rng(11)
    q = lambda n: "".join(chr(33 + int(v)) for v in rng.integers(0, 42, n))  # noqa: E731
    samples = [
        ("all_n", "N" * 3000, q(3000)),
        ("poly_a", "A" * 3000, q(3000)),
        ("poly_a_n", R.with_ns(rng, "a" * 3000, 0.1), q(3000)),
        ("periodic", ("A" * 99 + "C") * 30, q(3000)),
        ("iupac", "ACGTRYKM-.ACGT", q(14)),
    ]
    sigs = [
        ("polya", "A" * 400),
        ("polya_c", "A" * 399 + "C"),
        ("n_only", "N" * 40),
        ("long", "A" * 4000),
        ("ac", "AC"),
        ("r", "ANNNNNA"),
        ("mixed", R.random_bases(rng, 200)),
    ]
    want = check(samples, sigs)
    assert want[0].tolist() == [0, 0, 0, -1, 0, 0, 0]
    assert want[1, 1] == -1 and want[3, 0] == -1 and want[3, 4] == 98
    assert want[4, 5] == -1 and want[4, 2] == -1  # IUPAC and '-' match only an N of the signature


def decode_probe(x):
    """(offset, base, stride, level) of a probe; stride 0 for a base mask."""
    offset, plane = int(x) >> 8, int(x) & 255
    if plane < 4:
        return offset, "ACGT"[plane], 0, 0
    m, rest = divmod(plane - 4, 8)
    return offset, "ACGT"[rest % 4], rest // 4 + 1, m + 1


def test_probes_order():
    # singles rarest base first (C, T, G, A) then by offset, then the run A^8 as one probe
    _, G = R.as_sets([], [("s", "AAAAAAAAcAAGGNT")])
    prb, start, levels = encode.all_probes(G)
    assert [decode_probe(x) for x in prb] == [
        (8, "C", 0, 0),
        (14, "T", 0, 0),
        (11, "G", 0, 0),
        (12, "G", 0, 0),
        (9, "A", 0, 0),
        (10, "A", 0, 0),
        (0, "A", 1, 3),
    ]
    assert start.tolist() == [0, 7] and levels == 3
    # the first FIRST_SINGLES singles go before the runs, the others after them
    _, G = R.as_sets([], [("s", "A" * 65 + "ACGT" * 3 + "N" + "G")])
    prb, _, _ = encode.all_probes(G)
    kinds = [decode_probe(x)[2] for x in prb]
    assert kinds == [0] * 8 + [1, 1] + [0] * 4  # a run of 66 A: two probes of A^64


@pytest.mark.parametrize("seed", [1, 2])
def test_probes_cover_every_base_and_no_n(seed):
    # the probes' positions, taken together, are exactly the signature's non-N positions, each
    # with its own base: AND over the probes = "every non-N base matches"
    rng = np.random.default_rng(seed)
    _, sigs = R.low_complexity_screen(rng, 6, 400, 60, 300)
    sigs += [
        ("poly_a", "A" * 1000),
        ("ac_aa", "AC" * 300 + "AA"),
        ("runs_n", ("A" * 20 + "N") * 30),
        ("mixed", R.random_bases(rng, 500)),
        ("acgt", "ACGT" * 50),
        ("n", "NNN"),
    ]
    _, G = R.as_sets([], sigs)
    prb, start, levels = encode.all_probes(G)
    assert levels == 9  # 1000 = 512 + 488: level 9 for the poly-A run
    for g, (_, sig) in enumerate(sigs):
        sig = sig.upper()
        seen = set()
        for x in prb[start[g] : start[g + 1]]:
            offset, b, d, m = decode_probe(x)
            span = [offset + t * max(d, 1) for t in range(1 << m)]
            assert all(sig[k] == b for k in span), (g, offset, b, d, m)
            seen.update(span)
        assert seen == {k for k, c in enumerate(sig) if c != "N"}
        n_probes = int(start[g + 1] - start[g])
        if sig in ("A" * 1000, "AC" * 300 + "AA"):
            assert n_probes <= 5  # a run: 2 probes; an alternation: 4, plus the last A


@pytest.mark.parametrize("levels", [0, 1, 4])
def test_run_masks(levels):
    rng = np.random.default_rng(levels)
    seq = (R.repeat_text(rng, "AAAAAAAC", 300, defects=10, n_frac=0.1) + R.repeat_text(rng, "AG", 200, 5, 0.05)).upper()
    m = encode.sample_masks(np.frombuffer(seq.encode(), dtype=np.uint8), levels=levels)
    assert m.shape == (encode.n_planes(levels), encode.words_for(len(seq)))
    bits = np.unpackbits(m.view(np.uint8), axis=1, bitorder="little")
    for level in range(levels + 1):
        for d in (1, 2):
            for b in "ACGT":
                plane = encode.plane_index("ACGT".index(b), d, level)
                want = [
                    all(q + t * d < len(seq) and seq[q + t * d] in (b, "N") for t in range(1 << level))
                    for q in range(bits.shape[1])
                ]
                assert bits[plane].tolist() == want, (level, d, b)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_low_complexity(seed):
    # runs, dinucleotide and longer repeats, with defects and Ns, signatures cut from the samples
    # and repeats ending (or starting) in a mismatch: the run and alternation masks are exact
    rng = np.random.default_rng(seed)
    samples, sigs = R.low_complexity_screen(rng, 8, 1500, 24, 400)
    sigs += [("poly_a", "A" * 300), ("ac_aa", "AC" * 100 + "AA"), ("ag_flip", "AG" * 60 + "AA" + "AG" * 60)]
    samples += [("a999c", ("A" * 99 + "C") * 20, "I" * 2000), ("ac_defect", "AC" * 300 + "AA" + "AC" * 400, "5" * 1402)]
    want = check(samples, sigs)
    assert (want >= 0).sum() >= 8 and (want < 0).sum() >= 8


def test_score_rounding_is_exact_half_up():
    # 1/8 = 0.125 -> 0.13 (a float formatted with :.2f gives 0.12); 2/3 -> 0.67; 1/200 -> 0.01
    assert [score.format_score(int(h)) for h in score.hundredths([1, 2, 1, 0, 93 * 7], [8, 3, 200, 5, 7])] == [
        "0.13",
        "0.67",
        "0.01",
        "0.00",
        "93.00",
    ]
    assert score.format_score(int(score.hundredths(100_001, 8))) == "12500.13"  # 12500.125


def test_min_score_compares_the_printed_score_exactly():
    h = np.array([3009, 3010, 3011])
    assert score.passes(h, 30.1).tolist() == [False, True, True]  # 30.1 is not rounded through binary
    assert score.passes(h, None).all()
    assert score.passes(h, 0).all()


def test_sample_masks_layout():
    seq = np.frombuffer(b"ACGTNnxa" * 10, dtype=np.uint8)
    m = encode.sample_masks(seq)
    assert m.shape == (4, 4)
    bits = np.unpackbits(m.view(np.uint8), axis=1, bitorder="little")
    assert bits[0, :8].tolist() == [1, 0, 0, 0, 1, 1, 0, 1]
    assert bits[3, :8].tolist() == [0, 0, 0, 1, 1, 1, 0, 0]
    assert not bits[:, 80:].any()


def test_every_cpu_backend_name_screens_on_the_numpy_backend():
    from genotile.backends import registry
    from genotile.screen.backend import resolve

    cpu = [name for name in registry.BACKENDS if registry.is_cpu(name)]
    assert cpu == ["numba", "numpy", "numpy-popcount"]
    for name in cpu:
        assert resolve(name) == "numpy"
    with pytest.raises(GenotileError, match="unknown backend"):
        resolve("fortran")
    with pytest.raises(GenotileError, match=r"unknown backend 'cupy'; known: auto, cupy-b1"):
        resolve("cupy")


def test_screen_family_follows_the_registry():
    from genotile.backends import registry
    from genotile.backends.cuda import cupy_common
    from genotile.screen.backend import resolve

    for name in registry.BACKENDS:
        if registry.is_cpu(name):
            assert resolve(name) == "numpy"
        elif not cupy_common.has_gpu():
            with pytest.raises(GenotileError, match="needs CuPy and a CUDA GPU"):
                resolve(name)
    if not cupy_common.has_gpu():
        assert resolve("auto") == "numpy"
