"""Screening on the CPU: the numpy backend and the exact scores against the brute-force
reference (tests/screenref.py) on random and adversarial inputs."""

import numpy as np
import pytest
import screenref as R

from genotile.screen import encode, numpy_backend, score


def check(samples, sigs):
    S, G = R.as_sets(samples, sigs)
    want = np.array([[R.first_match(s[1], g[1]) for g in sigs] for s in samples], dtype=np.int32)
    got = numpy_backend.first_matches(S, G)
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
    samples = [("end", body + copy, "I" * 2150),  # only at the very end
               ("twice", body[:300] + copy + body[300:900] + copy, "5" * 1200),
               ("short", copy[:-1], "5" * 149)]  # one base too short
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
    samples = [("all_n", "N" * 3000, q(3000)), ("poly_a", "A" * 3000, q(3000)),
               ("poly_a_n", R.with_ns(rng, "a" * 3000, 0.1), q(3000)), ("periodic", ("A" * 99 + "C") * 30, q(3000)),
               ("iupac", "ACGTRYKM-.ACGT", q(14))]
    sigs = [("polya", "A" * 400), ("polya_c", "A" * 399 + "C"), ("n_only", "N" * 40), ("long", "A" * 4000),
            ("ac", "AC"), ("r", "ANNNNNA"), ("mixed", R.random_bases(rng, 200))]
    want = check(samples, sigs)
    assert want[0].tolist() == [0, 0, 0, -1, 0, 0, 0]
    assert want[1, 1] == -1 and want[3, 0] == -1 and want[3, 4] == 98
    assert want[4, 5] == -1 and want[4, 2] == -1  # IUPAC and '-' match only an N of the signature


def test_probes_rarest_base_first():
    sig = np.frombuffer(b"AAAAcAAGGNT", dtype=np.uint8)
    p = encode.probes(sig)
    assert [(int(x) >> 2, "ACGT"[int(x) & 3]) for x in p] == [
        (4, "C"), (10, "T"), (7, "G"), (8, "G"), (0, "A"), (1, "A"), (2, "A"), (3, "A"), (5, "A"), (6, "A")]


def test_score_rounding_is_exact_half_up():
    # 1/8 = 0.125 -> 0.13 (a float formatted with :.2f gives 0.12); 2/3 -> 0.67; 1/200 -> 0.01
    assert [score.format_score(int(h)) for h in score.hundredths([1, 2, 1, 0, 93 * 7], [8, 3, 200, 5, 7])] == [
        "0.13", "0.67", "0.01", "0.00", "93.00"]
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
