"""Brute-force screening reference and random inputs for the screening tests.

`first_match` compares position by position in plain Python (no bit masks), `score_text`
takes the exact fraction and rounds half up, so neither shares code with genotile.screen.
"""

import math
from fractions import Fraction

import numpy as np

SAMPLE_ALPHABET = "ACGT"


def first_match(sample: str, sig: str) -> int:
    """0-based start of the leftmost match, -1 for none."""
    s, g = sample.upper(), sig.upper()
    for p in range(len(s) - len(g) + 1):
        for k, c in enumerate(g):
            x = s[p + k]
            if not (c == "N" or x == "N" or x == c):
                break
        else:
            return p
    return -1


def score_text(qual: str, start: int, length: int) -> str:
    mean = Fraction(sum(ord(c) - 33 for c in qual[start : start + length]), length)
    h = math.floor(mean * 100 + Fraction(1, 2))
    return f"{h // 100}.{h % 100:02d}"


def expected_rows(samples, sigs, min_score=None):
    """[(sample, signature, 1-based position, score)] in sample then signature order."""
    rows = []
    for name, seq, qual in samples:
        for sname, sig in sigs:
            p = first_match(seq, sig)
            if p < 0:
                continue
            text = score_text(qual, p, len(sig))
            if min_score is not None and Fraction(text) < Fraction(str(min_score)):
                continue
            rows.append((name, sname, str(p + 1), text))
    return rows


def with_ns(rng, seq: str, frac: float) -> str:
    chars = np.array(list(seq))
    hit = rng.random(len(chars)) < frac
    chars[hit] = rng.choice(["N", "n"], hit.sum())
    return "".join(chars)


def random_bases(rng, n: int) -> str:
    return "".join(rng.choice(list(SAMPLE_ALPHABET), n))


def mixed_case(rng, seq: str) -> str:
    chars = np.array(list(seq))
    low = rng.random(len(chars)) < 0.3
    chars[low] = np.char.lower(chars[low])
    return "".join(chars)


def random_screen(rng, n_samples, sample_len, n_sigs, sig_len, n_frac=(0.01, 0.2), plants=3):
    """Samples (name, seq, qual) and signatures (name, seq) with planted matches: several per
    pair, at the very start and end, and signatures longer than some samples."""
    sigs = []
    for g in range(n_sigs):
        length = int(rng.integers(max(1, sig_len // 2), sig_len + 1))
        sigs.append((f"sig{g}", with_ns(rng, random_bases(rng, length), rng.uniform(*n_frac) / 2)))
    samples = []
    for s in range(n_samples):
        length = int(rng.integers(max(1, sample_len // 4), sample_len + 1))
        seq = list(random_bases(rng, length))
        for _ in range(int(rng.integers(0, plants + 1))):
            sig = sigs[int(rng.integers(n_sigs))][1]
            if len(sig) > length:
                continue
            where = rng.choice([0, length - len(sig), int(rng.integers(0, length - len(sig) + 1))])
            planted = [c if c not in "Nn" else rng.choice(list("ACGT")) for c in sig]
            seq[where : where + len(sig)] = planted
        text = with_ns(rng, "".join(seq), rng.uniform(*n_frac))
        qual = "".join(chr(33 + int(q)) for q in rng.integers(0, 42, length))
        samples.append((f"read{s}", mixed_case(rng, text), qual))
    return samples, sigs


def write_fastq(path, samples):
    with open(path, "w") as fh:
        for name, seq, qual in samples:
            fh.write(f"@{name} len={len(seq)}\n{seq}\n+\n{qual}\n")


def write_signatures(path, sigs):
    with open(path, "w") as fh:
        for name, seq in sigs:
            fh.write(f">{name} virus\n")
            for k in range(0, len(seq), 70):
                fh.write(seq[k : k + 70] + "\n")


def as_sets(samples, sigs):
    """genotile SequenceSets of the same inputs."""
    from genotile.screen.encode import from_records

    def b(x):
        return np.frombuffer(x.encode(), dtype=np.uint8)

    return (
        from_records([(n, b(s), b(q)) for n, s, q in samples], with_qual=True),
        from_records([(n, b(s)) for n, s in sigs], with_qual=False),
    )


def repeat_text(rng, unit: str, length: int, defects: int = 0, n_frac: float = 0.0) -> str:
    """`unit` repeated to `length`, with `defects` random bases changed and N at `n_frac`."""
    chars = list((unit * (length // len(unit) + 1))[:length])
    for k in rng.integers(0, length, defects) if length else []:
        chars[k] = rng.choice(list("ACGT"))
    return with_ns(rng, "".join(chars), n_frac) if n_frac else "".join(chars)


def low_complexity_screen(rng, n_samples, sample_len, n_sigs, sig_len):
    """Samples and signatures made of runs and short repeats (A^k C, AC, AAC, ...), some with
    defects and Ns, and signatures cut from the samples (matches), mismatches at their ends."""
    units = ["A", "AC", "AG", "AAC", "A" * 5 + "C", "A" * 17 + "T", "CA", "ACGT"]
    samples = []
    for s in range(n_samples):
        unit = units[int(rng.integers(len(units)))]
        length = int(rng.integers(sample_len // 2, sample_len + 1))
        seq = repeat_text(rng, unit, length, int(rng.integers(0, 4)), float(rng.choice([0, 0, 0.02, 0.2])))
        qual = "".join(chr(33 + int(q)) for q in rng.integers(0, 42, length))
        samples.append((f"lc{s}", mixed_case(rng, seq), qual))
    sigs = []
    for g in range(n_sigs):
        length = int(rng.integers(max(1, sig_len // 4), sig_len + 1))
        kind = g % 4
        if kind == 0:  # cut from a sample: a match somewhere
            src = samples[int(rng.integers(n_samples))][1]
            at = int(rng.integers(0, max(1, len(src) - length + 1)))
            sig = src[at : at + length].upper()
        else:
            sig = repeat_text(
                rng, units[int(rng.integers(len(units)))], length, int(kind == 2), 0.05 if kind == 3 else 0.0
            )
        if g % 3 == 1 and sig:  # a mismatch at the end (or the start)
            k = len(sig) - 1 if g % 2 else 0
            sig = sig[:k] + {"A": "C", "C": "A", "G": "T", "T": "G", "N": "A"}[sig[k]] + sig[k + 1 :]
        sigs.append((f"lcsig{g}", sig))
    return samples, sigs
