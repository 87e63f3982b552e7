#!/usr/bin/env python3
"""Biobank-sized king (issue 26): a whole `snakemake --cores N` run on a synthetic PLINK 1 fileset.

    python3 bench/bench_biobank.py --samples 1000000 --variants 20000 [--related 300] [--seed 1]
        [--cores N] [--peer plink2] [--pgen] [--out DIR] [--tmp DIR] [--keep]
    python3 bench/bench_biobank.py --samples 1000000 --variants 20000 --generate-only DIR/x
    python3 bench/bench_biobank.py --smoke     # 300 x 20,000, seconds on 2 cores (CI: tests/workflow)

Generating 1,000,000 x 20,000 (5 GB) takes about a minute on 2 cores, under 300 MB of memory.

The fileset (`write_fileset`): N samples x M biallelic SNPs on chromosome 1, written straight as
.bed/.bim/.fam a block of variants at a time on threads (memory bounded by the block, not by the
fileset; the same bytes for the same seed and sizes whatever the threads). Each variant's ALT
frequency p is uniform in 0.05-0.5; ALT is A1 (the .bim's 5th column, the allele genotile and
PLINK 2 count: docs/inputs.md, "PLINK filesets"). Every call is missing with probability 0.005,
else Hardy-Weinberg: ALT count 2, 1, 0 with p², 2p(1-p), (1-p)². IDs `s<k>`, FID 0 (genotile
then names samples by IID, as plink2's .kin0 does).

Planted relatives (`PLANTED`): `--related` pairs of samples, 2 distinct samples each and no
sample in two pairs, so that no other pair is related. Pair i is of kind i % 4, made from
haplotypes drawn at the variant's p (loci unlinked: every variant transmits independently, so
the kinships scatter less about their expectation than in a real genome):

| kind | how (a, b the pair) | expected KING kinship | KING range asserted |
|---|---|---|---|
| parent-offspring | b inherits one of a's haplotypes, its other drawn | 1/4 | first degree, 0.177-0.354 |
| full siblings | each inherits one haplotype of each of 2 parents not in the data | 1/4 | the same |
| duplicate | b's calls are a's (missing calls drawn apart) | 1/2 | > 0.354 |
| half siblings | each inherits one haplotype of 1 shared parent, its other drawn | 1/8 | second degree, 0.0884-0.177 |

Every other pair is unrelated: kinship about 0, its spread falling as 1/sqrt(M). At 20,000
variants none reached 0.0442 in the issue's 1,000,000-sample runs; at 2,000 its standard
deviation is about 0.015 and hundreds of 300 samples' pairs pass (5,000: a few), hence --smoke's
20,000 variants. The pairs are written beside the fileset (`x.related.tsv`: id1, id2, kind,
expected, low, high).

The run: a workflow folder whose config.yaml is the default config with one dataset
(`datasets: {bb: {input: x.bed, metrics: [king]}}`, `thresholds: {king: 0.0442}`, `report: false`),
`snakemake --cores N` on the repository's Snakefile, no other flag. Reported: its wall time; the
store job (Snakemake's benchmark file: seconds and peak RSS) split as its log gives it (ingest,
plan, pack, and the tiles it computed itself, config `tiles_in_store`); the tile jobs (count,
seconds summed, the tiles' own compute and counting seconds from summary.json); matrix, merge;
the rest (the wall less the jobs' seconds: Snakemake's start, DAG, scheduling; below 0 where
jobs ran at once); where nvidia-smi is on PATH, each GPU's busy percentage sampled every half
second over the run. Then results/bb/king/pairs.tsv.gz is checked: every planted pair found,
within its kind's range, and no other pair (each extra one is named). `--peer plink2`
runs `plink2 --bfile x --make-king-table --king-table-filter 0.0442 --threads N` on the same
fileset: its wall time, and its pairs against genotile's (bench_e2e.agree: kinships to plink2's
6 digits).
"""

import argparse
import datetime
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from bench_e2e import agree, plink2_pairs, timed  # noqa: E402

THRESHOLD = 0.0442  # KING's third-degree bound, 2^-4.5: the threshold
MAF = (0.05, 0.5)
P_MISSING = 0.005
MAGIC = b"\x6c\x1b\x01"  # a .bed in variant-major mode
TWO_BIT = np.array([3, 2, 0], dtype=np.uint8)  # ALT (A1) count 0, 1, 2 -> .bed code; missing: 01
BLOCK_CALLS = 1 << 23  # calls a block of variants holds (its variants: this over the samples)


@dataclass(frozen=True)
class Kind:
    name: str
    expected: float  # KING kinship
    low: float  # KING's bounds of its degree
    high: float


PLANTED = (  # pair i is of kind i % 4: half first-degree, half duplicates or second degree
    Kind("parent-offspring", 0.25, 0.177, 0.354),
    Kind("full siblings", 0.25, 0.177, 0.354),
    Kind("duplicate", 0.5, 0.354, 1.0),
    Kind("half siblings", 0.125, 0.0884, 0.177),
)
SMOKE = {"samples": 300, "variants": 20_000, "related": 12}


# -- the fileset -------------------------------------------------------------------------------


def related_pairs(n: int, related: int, seed: int) -> np.ndarray:
    """(related, 2) int64: the planted pairs' samples, each sample in at most one pair; row i of
    kind PLANTED[i % 4]."""
    if 2 * related > n:
        raise SystemExit(f"--related {related} needs at least {2 * related} samples, not {n}")
    rng = np.random.default_rng([seed, 0])
    return rng.permutation(n)[: 2 * related].reshape(related, 2)


def variant_block(seed: int, block: int, k: int, n: int, pairs: np.ndarray) -> np.ndarray:
    """(k, n) uint8: the .bed codes of block `block`'s k variants (A1 = ALT, 01 missing), drawn
    from a generator of its own (the seed and the block's index), so threads change nothing."""
    rng = np.random.default_rng([seed, 1, block])
    p = rng.uniform(*MAF, size=(k, 1)).astype(np.float32)
    # one 16-bit uniform a call (numpy draws four from a 64-bit step: twice as fast as float32):
    # [0, m) missing, then HWE over the rest: ALT count 2, 1, 0; probabilities to 1/65536
    m = round(P_MISSING * 65536)
    t2 = m + (65536 - m) * p * p
    t1 = t2 + (65536 - m) * 2 * p * (1 - p)  # below 65536: p <= 0.5 leaves (1 - p)^2 >= 1/4
    t2, t1 = np.rint(t2).astype(np.uint16), np.rint(t1).astype(np.uint16)
    u = rng.integers(0, 1 << 16, size=(k, n), dtype=np.uint16)
    codes = (u < m).view(np.uint8)  # 1 where missing, 0 ...
    codes += (u >= t2).view(np.uint8) << 1  # ... 2 where past the hom ALT interval ...
    codes += (u >= t1).view(np.uint8)  # ... 3 past the het one: 1, 0, 2, 3 by interval
    del u
    if len(pairs):
        codes[:, pairs.ravel()] = planted_codes(rng, p, pairs.shape[0]).reshape(k, -1)
    return codes


def planted_codes(rng: np.random.Generator, p: np.ndarray, n_pairs: int) -> np.ndarray:
    """(k, n_pairs, 2) uint8: the .bed codes of each planted pair's two samples, from four
    haplotypes a pair (ALT with probability p) and the choices of which ones pass on."""
    k = p.shape[0]
    hap = (rng.random((k, n_pairs, 4), dtype=np.float32) < p[:, :, None]).view(np.uint8)
    pick = rng.integers(0, 2, size=(k, n_pairs, 4), dtype=np.uint8)
    kind = np.arange(n_pairs) % len(PLANTED)
    h = [hap[:, :, j] for j in range(4)]
    of_parent1 = np.where(pick[:, :, 0], h[1], h[0])  # one haplotype of (h0, h1), passed on
    of_parent1b = np.where(pick[:, :, 1], h[1], h[0])  # another draw of the same
    of_parent2 = np.where(pick[:, :, 2], h[3], h[2])
    of_parent2b = np.where(pick[:, :, 3], h[3], h[2])
    a = h[0] + h[1]  # parent-offspring, duplicate: a's own haplotypes
    b = a.copy()  # duplicate
    po, fs, hs = kind == 0, kind == 1, kind == 3
    b[:, po] = (of_parent1 + h[2])[:, po]
    a[:, fs] = (of_parent1 + of_parent2)[:, fs]
    b[:, fs] = (of_parent1b + of_parent2b)[:, fs]
    a[:, hs] = (of_parent1 + h[2])[:, hs]
    b[:, hs] = (of_parent1b + h[3])[:, hs]
    codes = TWO_BIT[np.stack([a, b], axis=2)]
    codes[rng.random(codes.shape, dtype=np.float32) < P_MISSING] = 1
    return codes


def bed_records(codes: np.ndarray) -> bytes:
    """The .bed records of (k, n) codes: 4 samples a byte, the first in the low bits, 0 padding."""
    k, n = codes.shape
    padded = np.zeros((k, -(-n // 4) * 4), dtype=np.uint8)
    padded[:, :n] = codes
    q = padded.reshape(k, -1, 4)
    out = q[:, :, 0] | (q[:, :, 1] << 2)
    out |= q[:, :, 2] << 4
    out |= q[:, :, 3] << 6
    return out.tobytes()


def block_variants(n: int) -> int:
    return max(1, BLOCK_CALLS // n)


def write_fileset(prefix, n: int, m: int, related: int, seed: int, threads: int | None = None) -> dict:
    """Write prefix.bed/.bim/.fam and prefix.related.tsv; return what was made.

    Blocks of variants (BLOCK_CALLS calls each) are drawn on `threads` threads (default: every
    usable CPU) and written in order, at most two a thread ahead of the writing."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    pairs = related_pairs(n, related, seed)
    k = block_variants(n)
    starts = range(0, m, k)
    threads = threads or len(os.sched_getaffinity(0))
    t0 = time.perf_counter()

    def block(b: int) -> bytes:
        return bed_records(variant_block(seed, b, min(k, m - starts[b]), n, pairs))

    with open(f"{prefix}.bed", "wb") as fh, ThreadPoolExecutor(threads) as pool:
        fh.write(MAGIC)
        pending: deque = deque()
        every = max(1, len(starts) // 20)
        for b in range(len(starts)):
            pending.append(pool.submit(block, b))
            if len(pending) > 2 * threads:
                fh.write(pending.popleft().result())
            if b and b % every == 0 and m * n > 1e8:
                print(f"  {starts[b]:,} of {m:,} variants drawn, {time.perf_counter() - t0:.1f} s", flush=True)
        while pending:
            fh.write(pending.popleft().result())
    with open(f"{prefix}.bim", "w") as fh:
        for v0 in range(0, m, 100_000):
            fh.write("".join(f"1\tv{v + 1}\t0\t{v + 1}\tG\tA\n" for v in range(v0, min(m, v0 + 100_000))))
    ids = sample_ids(n)
    Path(f"{prefix}.fam").write_text("".join(f"0\t{name}\t0\t0\t0\t-9\n" for name in ids))
    with open(f"{prefix}.related.tsv", "w") as fh:
        fh.write("id1\tid2\tkind\texpected\tlow\thigh\n")
        for i, (a, b) in enumerate(pairs):
            kind = PLANTED[i % len(PLANTED)]
            fh.write(f"{ids[a]}\t{ids[b]}\t{kind.name}\t{kind.expected}\t{kind.low}\t{kind.high}\n")
    return {"bed": Path(f"{prefix}.bed"), "pairs": pairs, "seconds": time.perf_counter() - t0}


def sample_ids(n: int) -> list[str]:
    return [f"s{k}" for k in range(n)]


# -- the run -----------------------------------------------------------------------------------


def snakemake_run(work: Path, bed: Path, cores: int, env) -> dict:
    """`snakemake --cores N` on the default config with one dataset; its wall time and stages."""
    work.mkdir(parents=True, exist_ok=True)
    config = {"datasets": {"bb": {"input": str(bed), "metrics": ["king"]}}, "thresholds": {"king": THRESHOLD}}
    (work / "config.yaml").write_text(json.dumps({**config, "report": False}))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work)]
    cmd += ["--configfile", str(work / "config.yaml"), "--cores", str(cores)]
    with GpuBusy(work / "gpu_busy.csv") as busy:
        wall = timed(cmd, env=env, log=work / "snakemake.log")
    return {"wall": wall, **stages(work), "gpu_busy": busy.summary()}


def stages(work: Path) -> dict:
    """Seconds per rule from Snakemake's benchmark files, the store job's split from its log, and
    the tiles' own seconds from summary.json."""
    out = {"store": 0.0, "tile": 0.0, "matrix": 0.0, "merge": 0.0, "store_rss_mb": 0.0, "tile_jobs_run": 0}
    for f in (work / "benchmarks" / "bb").rglob("*.tsv"):
        rule = f.name.split(".")[0].split("_")[0]
        lines = f.read_text().splitlines()
        if rule in out and len(lines) > 1:
            row = dict(zip(lines[0].split("\t"), lines[1].split("\t"), strict=False))
            out[rule] += float(row["s"])
            if rule == "store":
                out["store_rss_mb"] = max(out["store_rss_mb"], float(row.get("max_rss", "0").replace("-", "0")))
            out["tile_jobs_run"] += rule == "tile"
    split = {"ingest": 0.0, "plan": 0.0, "pack": 0.0, "store_tiles": 0.0}
    for log in (work / "logs" / "bb").glob("store.*.log"):
        for line in log.read_text().splitlines():
            if "store stages (s):" in line:
                for part in line.split("store stages (s):")[1].split(","):
                    name, seconds = part.split()
                    split[name] = split.get(name, 0.0) + float(seconds)
            elif "store tiles (s):" in line:
                split["store_tiles"] += float(line.split("store tiles (s):")[1].split()[0])
    summary = json.loads((work / "results/bb/king/summary.json").read_text())
    return {
        **out,
        **split,
        "tiles": summary["plan"]["n_tiles"],
        "block_size": summary["plan"]["block_size"],
        "tile_compute": summary["timings"]["tile_seconds_total"],
        "counts": summary["timings"]["tile_seconds_counts"],
        "backend": ",".join(summary["backend"]),
    }


class GpuBusy:
    """nvidia-smi sampling each GPU's utilization every 500 ms over a run, where it is on PATH."""

    def __init__(self, path: Path):
        self.path, self.proc = path, None

    def __enter__(self):
        if shutil.which("nvidia-smi"):
            cmd = ["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits", "-lms", "500"]
            with open(self.path, "w") as fh:  # the child keeps its own copy of the descriptor
                self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()

    def summary(self) -> str:
        """'GPU i: mean% (samples > 50% / samples)', one per GPU; '' without nvidia-smi."""
        if self.proc is None or not self.path.exists():
            return ""
        busy: dict[str, list[float]] = {}
        for line in self.path.read_text().splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) == 2 and fields[1].isdigit():
                busy.setdefault(fields[0], []).append(float(fields[1]))
        return "; ".join(
            f"GPU {i}: {np.mean(v):.0f}% ({sum(x > 50 for x in v)}/{len(v)} > 50%)" for i, v in busy.items()
        )


def found_pairs(pairs_tsv: Path) -> dict[tuple[str, str], float]:
    """{(id1, id2) sorted: kinship} of a pairs.tsv.gz."""
    with gzip.open(pairs_tsv, "rt") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        i1, i2, kc = header.index("id1"), header.index("id2"), header.index("kinship")
        rows = (line.rstrip("\n").split("\t") for line in fh)
        return {tuple(sorted((f[i1], f[i2]))): float(f[kc]) for f in rows}


def check_planted(found: dict, prefix: Path) -> dict:
    """The planted pairs against those found: missed ones, ones outside their kind's range, extras."""
    planted = {}
    with open(f"{prefix}.related.tsv") as fh:
        fh.readline()
        for line in fh:
            a, b, kind, _, low, high = line.rstrip("\n").split("\t")
            planted[tuple(sorted((a, b)))] = (kind, float(low), float(high))
    missed = sorted(pair for pair in planted if pair not in found)
    outside = sorted(
        f"{a}-{b} {kind} {found[(a, b)]:.4f}"
        for (a, b), (kind, low, high) in planted.items()
        if (a, b) in found and not low <= found[(a, b)] <= high
    )
    extra = sorted(f"{a}-{b} {k:.4f}" for (a, b), k in found.items() if (a, b) not in planted)
    by_kind: dict[str, list[float]] = {}
    for pair, (kind, _, _) in planted.items():
        if pair in found:
            by_kind.setdefault(kind, []).append(found[pair])
    ranges = {kind: f"{min(v):.3f}-{max(v):.3f}" for kind, v in by_kind.items()}
    exact = not (missed or outside or extra)
    return {"planted": len(planted), "found": len(found), "missed": missed, "outside": outside, "extra": extra,
            "ranges": ranges, "exact": exact}  # fmt: skip


def plink2_run(work: Path, prefix: Path, cores: int, ids: list[str], found: dict) -> dict:
    """plink2's king table of the same fileset: its wall time, and its pairs against `found`."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = ["plink2", "--bfile", str(prefix), "--make-king-table", "--king-table-filter", str(THRESHOLD)]
    cmd += ["--threads", str(cores), "--out", str(work / "plink2")]
    wall = timed(cmd, log=work / "plink2.stdout")
    index = {name: k for k, name in enumerate(ids)}
    # genotile's pairs as plink2_pairs gives plink2's: a < b as sample indices, sorted
    rows = sorted((min(index[p], index[q]), max(index[p], index[q]), k) for (p, q), k in found.items())
    a, b, v = (np.array([r[j] for r in rows], dtype) for j, dtype in enumerate((np.int64, np.int64, float)))
    return {"wall": wall, "agree": agree((a, b, v), plink2_pairs(work / "plink2.kin0", ids), False, THRESHOLD)}


def table(r: dict, meta: str) -> str:
    peer = r.get("plink2") or {}
    peer_s = f"{peer['wall']:.2f}" if "wall" in peer else ""
    lines = [
        meta,
        "",
        "| input | genotile Snakemake (s) | store (s): ingest, plan, pack, tiles; peak RSS | tile jobs (s): "
        "count, compute, counting | matrix / merge / rest (s) | tiles (block, backend) | GPU busy | "
        "planted pairs | plink2 (s) | plink2 pairs |",
        "|---|---|---|---|---|---|---|---|---|---|",
        _row(f".bed, {r['samples']:,} x {r['variants']:,} ({r['bed_mb']:,.0f} MB)", r["genotile"], r["check"])
        + f" {peer_s} | {peer.get('agree', peer.get('skipped', ''))} |",
    ]
    if "pgen" in r:  # the .pgen plink2 made of the same .bed (--pgen)
        p = r["pgen"]
        lines.append(_row(f".pgen ({p['pgen_mb']:,.0f} MB)", p["genotile"], p["check"]) + " | |")
        lines += ["", f".pgen / .bed, whole runs: {p['genotile']['wall'] / r['genotile']['wall']:.2f} (goal <= 1.25); "
                  f"`plink2 --bfile --make-pgen` took {p['make_pgen']:.1f} s (not in either run)"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _row(what: str, g: dict, c: dict) -> str:
    rest = g["wall"] - sum(g[k] for k in ("store", "tile", "matrix", "merge"))
    return (
        f"| {what} | {g['wall']:.2f} | "
        f"{g['store']:.2f}: {g['ingest']:.2f}, {g['plan']:.2f}, {g['pack']:.2f}, {g['store_tiles']:.2f}; "
        f"{g['store_rss_mb'] / 1024:.1f} GiB | {g['tile']:.2f}: {g['tile_jobs_run']}, {g['tile_compute']:.2f}, "
        f"{g['counts']:.2f} | {g['matrix']:.2f} / {g['merge']:.2f} / {rest:.2f} | "
        f"{g['tiles']} ({g['block_size']}, {g['backend']}) | {g['gpu_busy']} | {verdict(c)} |"
    )


def verdict(c: dict) -> str:
    head = f"{c['planted'] - len(c['missed'])} of {c['planted']} found"
    if c["exact"]:
        return f"exact: {head}, nothing else; " + ", ".join(f"{k} {v}" for k, v in c["ranges"].items())
    what = [head]
    if c["outside"]:
        what.append("outside their range: " + "; ".join(c["outside"][:5]))
    if c["extra"]:
        what.append(f"{len(c['extra'])} extra: " + "; ".join(c["extra"][:5]))
    return "NO: " + ", ".join(what)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--variants", type=int, default=20_000)
    ap.add_argument("--related", type=int, default=300, help="planted related pairs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--peer", choices=["plink2"], default=None)
    ap.add_argument("--out", default=None, help="folder for bench_biobank.md / .json")
    ap.add_argument("--tmp", default=None, help="where the fileset and the run go (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the fileset and the workflow folder")
    ap.add_argument("--generate-only", metavar="PREFIX", help="write PREFIX.bed/.bim/.fam/.related.tsv and stop")
    ap.add_argument("--smoke", action="store_true", help=f"{SMOKE}, seconds on 2 cores (CI)")
    ap.add_argument("--pgen", action="store_true", help="also the .pgen plink2 makes of the fileset, a run of its own")
    args = ap.parse_args()
    if args.smoke:
        args.samples, args.variants, args.related = SMOKE["samples"], SMOKE["variants"], SMOKE["related"]
        args.cores = min(args.cores, 2)
    if args.generate_only:
        made = write_fileset(args.generate_only, args.samples, args.variants, args.related, args.seed)
        size = made["bed"].stat().st_size / 1e6
        print(f"{made['bed']}: {args.samples:,} x {args.variants:,} ({size:,.0f} MB) in {made['seconds']:.1f} s")
        return 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    root = Path(tempfile.mkdtemp(dir=args.tmp, prefix="genotile_biobank_"))
    try:
        prefix = root / "x"
        made = write_fileset(prefix, args.samples, args.variants, args.related, args.seed)
        bed_mb = made["bed"].stat().st_size / 1e6
        print(f"fileset {args.samples:,} x {args.variants:,} ({bed_mb:,.0f} MB) made in {made['seconds']:.1f} s")
        # on disk before the clock starts: a user's input is not being written back while they run
        # (the 2-GPU host's run took 17.28-18.58 s right after the write, 16.57-17.16 s later; RESULTS.md)
        os.sync()
        result = {"samples": args.samples, "variants": args.variants, "related": args.related, "seed": args.seed}
        result["bed_mb"] = bed_mb
        result["genotile"] = snakemake_run(root / "run", made["bed"], args.cores, env)
        print(f"genotile (Snakemake): {result['genotile']}", flush=True)
        found = found_pairs(root / "run/results/bb/king/pairs.tsv.gz")
        result["check"] = check_planted(found, prefix)
        if args.pgen:  # the same genotypes as a .pgen, made by plink2 (untimed), its own whole run
            t0 = time.perf_counter()
            make = ["plink2", "--bfile", str(prefix), "--make-pgen", "--threads", str(args.cores)]
            subprocess.run([*make, "--out", str(root / "p")], check=True, capture_output=True)
            made_s = time.perf_counter() - t0
            run = snakemake_run(root / "run_pgen", root / "p.pgen", args.cores, env)
            result["pgen"] = {
                "make_pgen": made_s,
                "pgen_mb": (root / "p.pgen").stat().st_size / 1e6,
                "genotile": run,
                "check": check_planted(found_pairs(root / "run_pgen/results/bb/king/pairs.tsv.gz"), prefix),
            }
            print(f"genotile (Snakemake, .pgen): {run}", flush=True)
        if args.peer == "plink2":
            if shutil.which("plink2") is None:
                result["plink2"] = {"skipped": "plink2 not on PATH"}
            else:
                result["plink2"] = plink2_run(root / "plink2", prefix, args.cores, sample_ids(args.samples), found)
            print(f"plink2: {result['plink2']}", flush=True)
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    meta = (
        f"{datetime.date.today().isoformat()}, {platform.node()}, {os.cpu_count()} CPUs (--cores {args.cores}), "
        f"git {head.stdout.strip() or '?'}; seed {args.seed}, {args.related} planted pairs; "
        "Snakemake wall includes its start-up"
    )
    text = table(result, meta)
    print("\n" + text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_biobank.md").write_text(text)
        (out / "bench_biobank.json").write_text(json.dumps({"meta": meta, **result}, indent=1, default=str))
    bad = not result["check"]["exact"] or str((result.get("plink2") or {}).get("agree", "")).startswith("NO")
    bad = bad or ("pgen" in result and not result["pgen"]["check"]["exact"])
    if bad:
        print("bench_biobank: the pairs found are not the planted ones (or not plink2's)", file=sys.stderr)
    return int(bad)


if __name__ == "__main__":
    sys.exit(main())
