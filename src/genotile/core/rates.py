"""Measured rates: the one table `genotile plan` predicts a run's time from.

Every figure is copied from a measurement (bench/RESULTS.md, the table and date named beside it);
a new measurement goes into bench/RESULTS.md first, then here. The model that reads them
(pairs/estimate.py, docs/usage.md "genotile plan") is a sum of stages, one after another:

    start + store + tiles + merge

- store: vectors x fields of input read, checked and packed into bit planes, at the input
  format's rate for the host's CPU cores (`STORE`);
- tiles: pairs x fields element comparisons at the metric's rate on the backend (`TILES`), plus,
  where the epilogue's cost by the pair is measured apart, pairs at `TILE_PAIRS`; per GPU or per
  CPU core, spread over the GPUs or cores;
- merge: a cost per run and per tile, plus the passing pairs' text rows and matrix.tsv written
  (`MERGE_*`, `TEXT_BYTES`, `MATRIX_BYTES`);
- start: Snakemake's own start and the tile jobs' starts (`START`, `JOB_START`).

A rate measured at several core counts is a dict {cores: rate}; between two of them the rate
follows the power law through both (a straight line on log-log axes), outside them the nearest
measurement holds (no credit for cores never measured).
"""

import math

# --- tiles: element comparisons (pairs x fields) per second, per GPU (cupy-*) or per CPU core
# (numba, numpy), as measured on the benches' data (`genotile plan --complete` changes the bit-MACs
# it shows and the memory, not the time: complete data is planned at these rates, an upper bound).
# cupy-b1 and cupy-int8: bench/RESULTS.md "GPU tiles and ceilings" (2026-11-22, H200, whole tile
# jobs of 16,384 x 16,384 x 65,536, memmap -> device -> tile file); cupy-b1 king instead from
# "Session 13: the store on the GPU" (2026-11-27, one H200, bench_biobank 1,000,000 x 20,000 and
# x 50,000: 1e16 and 2.5e16 comparisons in the store job's 24.47 s and 53.77 s of tiles, 4.09e14
# and 4.65e14/s, kernels/b1_select.cu; 4.3e14 between them), the size a biobank plan asks about;
# since "Session 17: wgmma" (2026-11-27, b1_select's Hopper main loop, kernels/b1_wgmma.cuh) 5.2e14
# (one H100, 1e16 comparisons in 18.96-19.22 s of tiles over 4 runs), and since "Session 18: the
# king epilogue" (2026-11-27, the epilogue as straight-line code) 6.1e14: one H100, 1e16 in
# 16.40-16.59 s of tiles over 3 runs (6.07e14/s); GPUs other than Hopper keep mma.sync's main
# loop (4.3e14 on an H200 before wgmma, planned the same). Since "Session 19: a million samples x
# 50,000" (2026-11-27) king's tiles are two terms, the GEMM by the comparison (9.39e14) and the
# epilogue by the pair (TILE_PAIRS 8.55e10): one H100's tiles took 16.5 s at x 20,000 (Session 18)
# and 32.48 s at x 50,000 (32.49, 32.47), 5e11 pairs each: 15.98 s more for 1.5e16 more
# comparisons, and 16.5 - 1e16 / 9.39e14 = 5.85 s for the pairs (one rate read 6.1e14 at x 20,000
# and 7.7e14 at x 50,000).
# numba and numpy: the 2-core rows of
# "Genotype tiles" and "SNP distances" (2026-11-22, AMD EPYC, 2 threads; hamming taken equal to
# snp), halved to a core.
TILES: dict[str, dict[str, float]] = {
    "cupy-b1": {"snp": 3.099e14, "hamming": 2.695e14, "ibs": 2.014e14, "king": 9.39e14, "ccc2": 1.583e14},
    "cupy-int8": {"snp": 1.415e14, "hamming": 1.184e14, "ibs": 7.895e13, "king": 8.133e13, "ccc2": 5.943e13},
    "numba": {"snp": 4.55e10, "hamming": 4.55e10, "ibs": 7.85e10, "king": 6.95e10, "ccc2": 8.35e10},
    "numpy": {"snp": 2.2e10, "hamming": 2.2e10, "ibs": 7.5e9, "king": 7.5e9, "ccc2": 6.0e9},
}

# --- the epilogue's cost by the pair (pairs/s a GPU), where it is measured apart from the GEMM's:
# a tile's seconds are then comparisons / TILES + pairs / TILE_PAIRS (above: king on cupy-b1).
TILE_PAIRS: dict[str, dict[str, float]] = {"cupy-b1": {"king": 8.55e10}}

# --- each GPU's tile rate, as a share of one GPU's alone, where the store job shares its tiles out
# among this many GPUs (pairs/early.py: a thread a GPU, the store copied to each). bench/RESULTS.md
# "Session 15: tiles two at once" (2 x H200, 1,000,000 x 20,000: 11.95 s of tiles a GPU where one
# GPU at the TILES rate takes 11.63 s a half: 0.97; Session 13's 0.65 came from a numba warm-up
# thread holding the GIL through the tiles, gone since 8f28cd6).
MULTI_GPU: dict[int, float] = {1: 1.0, 2: 0.97}

# --- the CPU backend `auto` takes for a tile (backends.resolve): the counts alone
# (count_matrices) in pair-words (pairs x plane words of a vector) per second on the host's 2
# threads, and what numba costs a process before its first tile (import, then the first kernel
# call: typing registries and the cached kernel loaded). bench/RESULTS.md "CPU backend choice"
# (issue 28, 2-core AMD EPYC, one diagonal tile of king, ibs, snp at 250-2,000 vectors x
# 5,000-100,000 fields, the machine quiet): numba 1.2e10-2.8e10 (median 1.5e10), numpy 1.1e9-2.9e9
# (median 1.9e9) pair-words/s, about alike for every metric in this unit; numba's start 0.55-0.86 s
# in a fresh process (median 0.65). With another job beside it numpy slowed 4-10x, numba barely.
# The first call 0.12 s less since numba's BLAS probe imports no scipy.linalg (util/numba_start.py:
# 0.44 -> 0.31 s in all on the same VM, "Session 20").
CPU_COUNTS: dict[str, float] = {"numba": 1.5e10, "numpy": 1.9e9}
NUMBA_START = {"import": 0.3, "first_call": 0.23}

# --- store: input vectors x fields per second (genotypes, or alignment characters), the whole
# store job but its tiles (ingest, plan, pack, the input's checksum), by input format and cores.
# bed 16 and 32: "Session 12: king in one GEMM" (2026-11-27, 1,000,000 x 20,000 and x 50,000 .bed
# streamed, the store job less its tiles: 12.72 s and 27.42 s on one H200 host's 16 cores, 1.57e9
# and 1.82e9 genotypes/s; 15.21 s on the 2 x H200 host's 32, 1.31e9: the GPU hosts' file system
# (gVisor) makes their I/O slower than this VM's, and unevenly from host to host);
# bed 2: "Session 10: a million samples" (this 2-core VM, 480,000 x 10,000 .bed, store job 3.83-4.12 s).
# vcf 16 and fasta 16: "Whole runs on
# one GPU" (2026-11-24, H100 host: king_20k 19.28 - 5.42 s, snp_40k 3.07 - 0.41 s); vcf 2 and
# fasta 2: "Whole runs on 2 CPU cores" (2026-11-24: king_2k 2.47 s, snp_10k 0.98 s). pgen: the .bed's
# pass (store job 0.94 x the .bed's, 480,000 x 10,000 on 2 cores, "Session 11"); bcf and vcz: not
# measured (taken as vcf).
STORE: dict[str, dict[int, float]] = {
    "bed": {2: 1.2e9, 16: 1.7e9, 32: 1.31e9},
    "vcf": {2: 4.05e7, 16: 1.44e8},
    "fasta": {2: 3.06e8, 16: 3.0e8},
}
STORE_ALIASES = {"pgen": "bed", "bcf": "vcf", "vcz": "vcf"}
# A whole .bed (or .pgen) store made on the GPU where the store job computes its tiles there
# (store/resident.py: transposed on the device, the SHA-256 and the files written behind the
# tiles): the store job less its tiles. "Session 13: the store on the GPU" (2026-11-27): one H200
# host's 16 cores, 1,000,000 x 20,000 and x 50,000, 5.29 s and 5.90 s (mostly fixed: the .fam
# read, the pass, the last writes; 5e9 genotypes/s between them); the 2 x H200 host's 32: "Session
# 18: the king epilogue" (2026-11-27, 1,000,000 x 20,000, traced: the store job 14.52 s less its
# 9.73 s of tiles, 4.79 s; 10.83 s in Session 13, the manifests written before the tiles then); one
# H100 host's 16 cores, "Session 19: a million samples x 50,000" (2026-11-27): 5.82 and 5.70 s.
# Mostly fixed, so a start (STORE_GPU_START) plus genotypes at the rate: 16 cores 5.07 s at x 20,000
# and 6.07 at x 50,000 against 5.29 / 5.70-5.90 measured, 32 cores 4.79 at x 20,000.
STORE_GPU_START = 4.4
STORE_GPU: dict[str, dict[int, float]] = {"bed": {16: 3.0e10, 32: 5.1e10}}

# --- merge: seconds a run and a tile ("Session 9", 2026-11-26: merges of 0.44 s for 3 tiles and
# 1.14 s for 10, nearly nothing passing), then the passing pairs' text rows (pairs.tsv.gz) and
# matrix.tsv in bytes per second ("Output writers", 2026-11-24, 2 cores: 59.6 MB of pairs text in
# 1.38 s; matrix.tsv 7.84 GB in 63.8 s on 2 cores, in 19.29 s in king_20k's whole run on 16).
MERGE_RUN = 0.14
MERGE_TILE = 0.10
TEXT_BYTES: dict[int, float] = {2: 4.3e7}
MATRIX_BYTES: dict[int, float] = {2: 1.23e8, 16: 4.06e8}

# --- start: Snakemake's own start and the DAG ("Session 9", 2026-11-26: the 2.30-2.37 s a whole
# run spends outside its jobs), and a tile job's cost beyond its tile where tiles run as jobs of
# their own ("Whole runs on 2 CPU cores", 2026-11-24: snp_10k's 6 tile jobs took 5.94 s, their
# compute_tile 3.92 s). A GPU tile job's CUDA context is not measured apart.
START = 2.4
JOB_START = 0.34

# --- ccc3 on a GPU: bit-MACs (triples x 27 plane products x 64 x plane words) per second a GPU in
# the fused kernel (cupy-b1, a threshold: backends/cuda/ccc3_fused.py; the streamed kernel for wider
# planes counted a block triple at 20,000 samples at 2.53e15 on the H100, the resident one at
# 2,000 samples 2.45e15: one rate for both), and the
# merge's seconds (a start, then a cost a passing triple). bench/RESULTS.md "Session 14: ccc3 in
# one fused kernel" (2026-11-27, 20,000 SNPs x 2,000 samples, 7.37e16 bit-MACs: one H100's job
# counted 30.83 s, 2.39e15/s; an H200's 31.66 s; the merge of 948,095 triples 4.81 s on the H100
# host, its numba kernels compiled).
CCC3_FUSED_BIT_MACS = 2.39e15
CCC3_MERGE = {"start": 1.0, "per_triple": 4.0e-6}


def at_cores(rates: dict[int, float], cores: int) -> float:
    """A rate measured at some core counts, at `cores`: the power law through the two measured
    counts around it, or the nearest measurement outside them.

    >>> at_cores({2: 1e8, 16: 8e8}, 4), at_cores({2: 1e8, 16: 8e8}, 64), at_cores({2: 5.0}, 8)
    (200000000.0, 800000000.0, 5.0)
    """
    counts = sorted(rates)
    if cores <= counts[0]:
        return rates[counts[0]]
    if cores >= counts[-1]:
        return rates[counts[-1]]
    high = next(c for c in counts if c >= cores)
    low = counts[counts.index(high) - 1]
    slope = math.log(rates[high] / rates[low]) / math.log(high / low)
    return rates[low] * (cores / low) ** slope


# --- pairs passing: the workflow's default thresholds (config/config.yaml; a test holds them
# equal) and the fraction of pairs assumed to pass each, with the reason `genotile plan` prints.
# A null threshold keeps every pair (1.0).
THRESHOLDS: dict[str, float | None] = {
    "snp": 20,
    "hamming": None,
    "ibs": None,
    "king": 0.0442,
    "ccc2": 0.7,
    "ccc3": 0.3,
}
PASS_FRACTION: dict[str, tuple[float, str]] = {
    "king": (
        1e-6,
        "a biobank's relatives: UK Biobank's ~107,000 pairs of 3rd degree or closer among 488,000 "
        "samples are 9e-7 of its pairs (Bycroft et al. 2018); unrelated samples almost never pass",
    ),
    "snp": (1e-2, "a guess, not measured: closely related genomes (an outbreak) pass far more"),
    "ccc2": (1e-3, "a guess, not measured: SNP pairs in strong LD"),
    "ccc3": (1e-6, "bench_ccc3's random genotypes pass 7e-7 of triples at 0.244 (bench/RESULTS.md, 2026-11-22)"),
}
