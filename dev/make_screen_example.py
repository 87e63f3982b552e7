#!/usr/bin/env python3
"""Generate the bundled screening example (small, deterministic, numpy only).

Usage:
    python3 dev/make_screen_example.py [--outdir resources/example]

Writes, under OUTDIR:

``example.reads.fq.gz`` -- 40 samples read_01..read_40 of 2,000-6,000 random bases with
    1-20% N (single Ns and runs), a few lower-case stretches, Phred+33 qualities 2..41.
    Planted copies of signatures (their Ns replaced by random bases): read_03 carries virus_a
    at position 1, read_07 carries virus_b at its very end, read_12 carries virus_c twice
    (at 501 and 200 bases from its end),
    read_20 carries virus_a and virus_d, read_31 has a run of quality 2 over its copy of
    virus_e (a match with a low score), read_39 is all N (matches every signature that fits)
    and read_40 is poly-A (matches the poly-A signature virus_polya only).
``example.signatures.fa`` -- 8 signatures virus_a..virus_g and virus_polya, 60-400 bases,
    0-5% N, wrapped at 70; virus_g is longer than every read but read_39 (no match elsewhere).

Every random choice comes from SEED: reruns give byte-identical files (gzip without a time).
"""

import argparse
import gzip
import os

import numpy as np

SEED = 20240707
N_READS = 40


def bases(rng, n):
    return np.array(list("ACGT"))[rng.integers(0, 4, n)]


def add_ns(rng, seq, frac):
    seq = seq.copy()
    seq[rng.random(seq.size) < frac] = "N"
    for _ in range(int(rng.integers(0, 3))):  # a few runs of N
        start = int(rng.integers(0, seq.size))
        seq[start : start + int(rng.integers(5, 60))] = "N"
    return seq


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outdir", default="resources/example")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    names = ["virus_a", "virus_b", "virus_c", "virus_d", "virus_e", "virus_f", "virus_g"]
    lengths = [120, 200, 80, 300, 150, 400, 7000]
    sigs = {}
    for name, length in zip(names, lengths, strict=True):
        s = bases(rng, length)
        s[rng.random(length) < rng.uniform(0, 0.05)] = "N"
        sigs[name] = s
    sigs["virus_polya"] = np.array(list("A" * 60))

    reads, quals = [], []
    for _ in range(N_READS):
        seq = add_ns(rng, bases(rng, int(rng.integers(2000, 6001))), rng.uniform(0.01, 0.2))
        qual = rng.integers(2, 42, seq.size)
        reads.append(seq)
        quals.append(qual)

    def plant(read, sig, at):
        s = sigs[sig].copy()
        s[s == "N"] = bases(rng, int((s == "N").sum()))
        reads[read][at : at + s.size] = s
        return at

    plant(2, "virus_a", 0)
    plant(6, "virus_b", reads[6].size - sigs["virus_b"].size)
    plant(11, "virus_c", 500)
    plant(11, "virus_c", reads[11].size - 200)
    plant(19, "virus_a", 1000)
    plant(19, "virus_d", 1500)
    at = plant(30, "virus_e", 700)
    quals[30][at : at + sigs["virus_e"].size] = 2
    reads[38] = np.array(list("N" * 7500))
    quals[38] = rng.integers(2, 42, 7500)
    reads[39] = np.array(list("A" * 3000))
    quals[39] = rng.integers(2, 42, 3000)
    for seq in reads[5:10]:  # lower case stretches
        seq[100:400] = np.char.lower(seq[100:400])

    os.makedirs(args.outdir, exist_ok=True)
    fq = os.path.join(args.outdir, "example.reads.fq.gz")
    with open(fq, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for k, (seq, qual) in enumerate(zip(reads, quals, strict=True), start=1):
            text = "".join(seq)
            q = "".join(chr(33 + int(v)) for v in qual)
            gz.write(f"@read_{k:02d} sample={k}\n{text}\n+\n{q}\n".encode())
    fa = os.path.join(args.outdir, "example.signatures.fa")
    with open(fa, "w") as fh:
        for name, s in sigs.items():
            text = "".join(s)
            fh.write(f">{name} synthetic\n")
            for k in range(0, len(text), 70):
                fh.write(text[k : k + 70] + "\n")
    print(f"wrote {fq} and {fa}")


if __name__ == "__main__":
    main()
