#!/usr/bin/env python3
"""Generate genotile's bundled example inputs (small, deterministic, msprime-based).

Usage:
    python3 dev/make_example_data.py [--outdir resources/example]

Writes, under OUTDIR:

``example.aln.fa`` -- FASTA multiple alignment, 60 haploid sequences x 5,000 columns.
    * 57 sequences from ``msprime.sim_ancestry`` (haploid, Ne = 1e4, L = 5,000 bp,
      recombination 1e-8 /bp/gen; seed ALN_ANCESTRY_SEED) and ``msprime.sim_mutations``
      (JC69, rate 4e-7 /bp/gen, so a column can carry 3 or 4 bases; seed ALN_MUTATION_SEED),
      written from ``ts.alignments()`` over a random ACGT reference (seed ALN_DAMAGE_SEED).
    * An "outbreak cluster": sample_58, sample_59 and sample_60 are copies of
      sample_14 (CLUSTER_SOURCE) with 0, 2 and 5 extra substitutions, so within the
      cluster every `snp` distance is <= 7 (median over all pairs: ~80).
    * Realistic damage (seed ALN_DAMAGE_SEED): about 1% N (leading/trailing runs,
      internal runs and single Ns), a few short gap runs '-' (one of them shared by
      several sequences), a handful of IUPAC codes (R, Y, K, M, S, W, consistent with
      the base they replace, mostly at variable columns), and 3 sequences with a
      stretch in lower case.
    * IDs sample_01..sample_60; every third header carries a description after a
      space (``>sample_03 collected=2021``). Sequence lines are wrapped at 60.

``example.vcf.gz`` (+ ``example.vcf.gz.tbi``) -- bgzipped, tabix-indexed diploid VCF,
    CHROM ``1``, 40 samples ind_01..ind_40, unphased GT only.
    * ind_01..ind_37 from ``msprime.sim_ancestry`` (37 diploids, Ne = 1e4,
      L = 1e6 bp, recombination 1e-8; seed VCF_ANCESTRY_SEED) and ``sim_mutations``
      (JC69, rate 5e-9; seed VCF_MUTATION_SEED).
    * Relatives built from founders' haplotypes (seed VCF_EDIT_SEED): each transmitted
      haplotype is a parent's two haplotypes joined at one random crossover.
        ind_38 = child of ind_05 x ind_12,
        ind_39 = full sibling of ind_38 (another child of ind_05 x ind_12),
        ind_40 = half sibling of ind_38/ind_39 (child of ind_05 x ind_21).
      Expected KING kinship: 0.25 for parent-offspring pairs (ind_38/39 with ind_05/12,
      ind_40 with ind_05/21), ~0.25 for the full sibs, ~0.125 for the half sibs, ~0
      for unrelated pairs. One 1-Mb coalescent window is a noisy estimate, though: the
      founders' own KING values spread widely (sd ~0.15, a few up to ~0.3, some far
      below 0), so the planted relatives are among the top pairs, not cleanly apart.
    * About 2% of GT calls set to missing ``./.``; ID ``rsNNN`` on about 10% of the
      records, ``.`` elsewhere; at least one multi-allelic record (one is made by hand
      if the simulation gives none: some ALT carriers of a biallelic site get a third
      allele); one record with FILTER ``LowQual`` (all others ``PASS``).

Result with these seeds: the alignment has 267 columns with >= 2 distinct A/C/G/T (6 of them
with 3 bases), 1.04% N, 45 '-', 12 IUPAC codes, and 395 of the 1,770 pairs at snp <= 20;
the VCF has 942 records (the simulation gave no multi-allelic site, so the one at
POS 194430, G -> A,C, is the hand-made one; LowQual is at POS 610243), 108 rs IDs and
1.98% missing calls.

Seeds: ALN_ANCESTRY_SEED (20240108) and VCF_EDIT_SEED (20240214) were picked from a scan
of ~10 consecutive seeds, for ~250 variable columns with ~20% of pairs at snp <= 20, and for
planted relatives whose KING values come out near their expectations; the others are fixed.
Every random choice comes from the seeds below, so reruns give byte-identical files
(with the same msprime/tskit versions: written with msprime 1.4.4, tskit 1.0.3,
pysam 0.24.1, numpy 2.4.6).
"""

import argparse
import os
import sys

import msprime
import numpy as np
import pysam

# ---- seeds and sizes ------------------------------------------------------------------
ALN_ANCESTRY_SEED = 20240108
ALN_MUTATION_SEED = 20240102
ALN_DAMAGE_SEED = 20240103
VCF_ANCESTRY_SEED = 20240201
VCF_MUTATION_SEED = 20240202
VCF_EDIT_SEED = 20240214

ALN_N_SIM = 57  # simulated haploid sequences
ALN_LENGTH = 5_000
ALN_MU = 4e-7
CLUSTER_SOURCE = 14  # sample_14 is copied into the outbreak cluster
CLUSTER_CHANGES = (0, 2, 5)
LINE_WIDTH = 60

VCF_N_FOUNDERS = 37  # simulated diploid individuals
VCF_LENGTH = 1_000_000
VCF_MU = 5e-9
VCF_MISSING = 0.02
# (child, mother, father), 1-based individual numbers
RELATIVES = ((38, 5, 12), (39, 5, 12), (40, 5, 21))

NE = 10_000
RECOMB = 1e-8
ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)
IUPAC = {  # code -> the two bases it stands for
    "R": "AG",
    "Y": "CT",
    "K": "GT",
    "M": "AC",
    "S": "CG",
    "W": "AT",
}


# ---- FASTA alignment -------------------------------------------------------------------
def simulate_alignment(rng: np.random.Generator) -> np.ndarray:
    """(ALN_N_SIM, ALN_LENGTH) uint8 matrix of upper-case ACGT from msprime."""
    ts = msprime.sim_ancestry(
        samples=ALN_N_SIM,
        ploidy=1,
        population_size=NE,
        sequence_length=ALN_LENGTH,
        recombination_rate=RECOMB,
        random_seed=ALN_ANCESTRY_SEED,
    )
    ts = msprime.sim_mutations(ts, rate=ALN_MU, model=msprime.JC69(), random_seed=ALN_MUTATION_SEED)
    reference = ACGT[rng.integers(0, 4, ALN_LENGTH)].tobytes().decode()
    rows = [np.frombuffer(a.encode(), dtype=np.uint8) for a in ts.alignments(reference_sequence=reference)]
    return np.array(rows, dtype=np.uint8)


def substitute(seq: np.ndarray, positions, rng: np.random.Generator) -> None:
    for p in positions:
        choices = ACGT[ACGT != seq[p]]
        seq[p] = choices[rng.integers(0, len(choices))]


def variable_columns(mat: np.ndarray) -> np.ndarray:
    """Indices of columns with >= 2 distinct A/C/G/T (case-insensitive)."""
    up = mat & ~np.uint8(0x20)  # ASCII upper case (letters only; '-' is 0x2D, unaffected)
    present = np.stack([(up == b).any(axis=0) for b in ACGT])
    return np.flatnonzero(present.sum(axis=0) >= 2)


def damage(mat: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ns, gaps, IUPAC codes and lower case, as a sequencing/assembly pipeline leaves them."""
    mat = mat.copy()
    n, m = mat.shape
    var = variable_columns(mat)

    # N: ragged ends on some sequences, internal dropout runs, scattered single Ns
    for i in range(n):
        if rng.random() < 0.25:
            mat[i, : rng.integers(5, 60)] = ord("N")
        if rng.random() < 0.25:
            mat[i, m - rng.integers(5, 60) :] = ord("N")
        if rng.random() < 0.25:
            start = rng.integers(100, m - 300)
            mat[i, start : start + rng.integers(20, 200)] = ord("N")
        singles = rng.choice(m, size=rng.poisson(12), replace=False)
        mat[i, singles] = ord("N")

    # gaps: one 3-bp deletion shared by 5 sequences, plus 5 private short runs
    shared_rows = rng.choice(n, size=5, replace=False)
    start = rng.integers(500, m - 500)
    mat[np.ix_(shared_rows, np.arange(start, start + 3))] = ord("-")
    for length in (1, 2, 6, 9, 12):
        i, start = rng.integers(0, n), rng.integers(200, m - 200)
        mat[i, start : start + length] = ord("-")

    # IUPAC: 12 ambiguity codes consistent with the base they replace, 9 at variable columns
    codes_for = {b: [c for c, pair in IUPAC.items() if b in pair] for b in "ACGT"}
    cols = np.concatenate([rng.choice(var, size=9, replace=False), rng.choice(m, size=3, replace=False)])
    for col in cols:
        i = rng.integers(0, n)
        base = chr(mat[i, col])
        if base in codes_for:
            options = codes_for[base]
            mat[i, col] = ord(options[rng.integers(0, len(options))])

    # lower case: a stretch of 3 sequences (soft-masked region / different assembler)
    for i in rng.choice(n, size=3, replace=False):
        start = rng.integers(0, m // 2)
        stop = start + rng.integers(m // 5, m // 2)
        seg = mat[i, start:stop]
        letters = (seg >= ord("A")) & (seg <= ord("Z"))
        seg[letters] |= 0x20
    return mat


def write_alignment(path: str) -> None:
    rng = np.random.default_rng(ALN_DAMAGE_SEED)
    sim = simulate_alignment(rng)

    # outbreak cluster: copies of one sequence with a few extra substitutions
    copies = []
    for k in CLUSTER_CHANGES:
        seq = sim[CLUSTER_SOURCE - 1].copy()
        substitute(seq, rng.choice(ALN_LENGTH, size=k, replace=False), rng)
        copies.append(seq)
    mat = damage(np.vstack([sim, np.array(copies)]), rng)

    years = (2019, 2020, 2021, 2022, 2023)
    with open(path + ".tmp", "w") as out:
        for i, row in enumerate(mat, start=1):
            header = f">sample_{i:02d}"
            if i % 3 == 0:
                header += f" collected={years[int(rng.integers(0, len(years)))]}"
            out.write(header + "\n")
            text = row.tobytes().decode()
            for s in range(0, len(text), LINE_WIDTH):
                out.write(text[s : s + LINE_WIDTH] + "\n")
    os.replace(path + ".tmp", path)


# ---- VCF -------------------------------------------------------------------------------
def gamete(h0: np.ndarray, h1: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One transmitted haplotype: the parent's two haplotypes joined at one crossover."""
    first, second = (h0, h1) if rng.random() < 0.5 else (h1, h0)
    cut = rng.integers(0, len(h0) + 1)
    return np.concatenate([first[:cut], second[cut:]])


def simulate_genotypes(rng: np.random.Generator):
    """Return positions (1-based), allele lists and haplotypes (sites x 2*n, allele index)."""
    ts = msprime.sim_ancestry(
        samples=VCF_N_FOUNDERS,
        ploidy=2,
        population_size=NE,
        sequence_length=VCF_LENGTH,
        recombination_rate=RECOMB,
        random_seed=VCF_ANCESTRY_SEED,
    )
    ts = msprime.sim_mutations(ts, rate=VCF_MU, model=msprime.JC69(), random_seed=VCF_MUTATION_SEED)
    positions, alleles, haps = [], [], []
    for var in ts.variants():
        positions.append(int(var.site.position) + 1)  # VCF is 1-based
        alleles.append(list(var.alleles))
        haps.append(var.genotypes.astype(np.int16))
    haps = np.array(haps)  # sites x (2 * founders); individual k has columns 2k, 2k+1

    extra = []
    for _child, mother, father in RELATIVES:
        for parent in (mother, father):
            a, b = haps[:, 2 * (parent - 1)], haps[:, 2 * (parent - 1) + 1]
            extra.append(gamete(a, b, rng))
    haps = np.column_stack([haps] + extra)

    # drop alleles nobody carries (a later mutation can overwrite an earlier one);
    # the ancestral allele stays REF even when nobody carries it
    for s, als in enumerate(alleles):
        used = [0] + [k for k in range(1, len(als)) if (haps[s] == k).any()]
        remap = {old: new for new, old in enumerate(used)}
        haps[s] = [remap[g] for g in haps[s]]
        alleles[s] = [als[k] for k in used]

    # guarantee a multi-allelic record: give some carriers of a common ALT a third base
    if not any(len(a) > 2 for a in alleles):
        freq = (haps > 0).mean(axis=1)
        s = int(np.argmin(np.abs(freq - 0.4)))
        carriers = np.flatnonzero(haps[s] == 1)
        third = next(b for b in "ACGT" if b not in alleles[s])
        alleles[s].append(third)
        haps[s, rng.choice(carriers, size=max(1, len(carriers) // 3), replace=False)] = 2
    return positions, alleles, haps


def write_vcf(path: str) -> tuple[int, int]:
    rng = np.random.default_rng(VCF_EDIT_SEED)
    positions, alleles, haps = simulate_genotypes(rng)
    n_sites, n_haps = haps.shape
    n_ind = n_haps // 2
    assert n_ind == VCF_N_FOUNDERS + len(RELATIVES)
    missing = rng.random((n_sites, n_ind)) < VCF_MISSING
    rs_ids = rng.random(n_sites) < 0.10
    lowqual = int(rng.integers(n_sites // 4, 3 * n_sites // 4))
    names = [f"ind_{k:02d}" for k in range(1, n_ind + 1)]

    lines = [
        "##fileformat=VCFv4.2",
        "##source=genotile dev/make_example_data.py (msprime simulation)",
        f"##contig=<ID=1,length={VCF_LENGTH}>",
        '##FILTER=<ID=PASS,Description="All filters passed">',
        '##FILTER=<ID=LowQual,Description="Low quality call set at this site">',
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t" + "\t".join(names),
    ]
    for s in range(n_sites):
        gts = []
        for k in range(n_ind):
            if missing[s, k]:
                gts.append("./.")
            else:
                a, b = sorted((int(haps[s, 2 * k]), int(haps[s, 2 * k + 1])))
                gts.append(f"{a}/{b}")
        rid = f"rs{1000 + 7 * s}" if rs_ids[s] else "."
        filt = "LowQual" if s == lowqual else "PASS"
        alt = ",".join(alleles[s][1:]) or "."
        lines.append(f"1\t{positions[s]}\t{rid}\t{alleles[s][0]}\t{alt}\t.\t{filt}\t.\tGT\t" + "\t".join(gts))

    plain = path[: -len(".gz")]
    with open(plain, "w") as out:
        out.write("\n".join(lines) + "\n")
    pysam.tabix_compress(plain, path, force=True)
    os.remove(plain)
    pysam.tabix_index(path, preset="vcf", force=True)
    return n_ind, n_sites


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outdir", default="resources/example", help="output folder (default: resources/example)")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    fa = os.path.join(args.outdir, "example.aln.fa")
    vcf = os.path.join(args.outdir, "example.vcf.gz")
    write_alignment(fa)
    n_ind, n_sites = write_vcf(vcf)
    print(f"wrote {fa}")
    print(f"wrote {vcf} (+ .tbi): {n_ind} samples, {n_sites} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
