#!/usr/bin/env python3
"""End to end (issue 16): whole Snakemake runs of genotile against peers, same machine, same run.

    python3 bench/bench_e2e.py --cases snp_2k,snp_10k [--cores 2] [--out DIR] [--tmp DIR]
    python3 bench/bench_e2e.py --smoke            # tiny sizes, seconds (CI: tests/workflow/test_bench_smoke.py)

Each case generates its input, runs `snakemake` on the repository's Snakefile with the default
config (only the dataset, its threshold and `report: false` set; `block_size: auto`), runs the
peers on the same file, checks that the outputs agree pair for pair, and prints the ratios:

- snp_40k (GPU): 40,000 x 20,000 FASTA, 400 clusters, 1% N, threshold 20; peer hammingdist GPU.
- snp_200k (GPU): 200,000 x 30 kb SARS-CoV-2-like (300 variable columns, 2,000 lineages, half
  the sequences exact copies of others, 1% N in the rest), threshold 2; peer hammingdist GPU
  with remove_duplicates.
- king_20k (GPU) / king_2k (CPU): VCF of 20,000 samples x 100,000 variants / 2,000 x 50,000,
  king >= 0.0442; peer plink2 --make-king-table with the same threshold and cores.
- snp_2k / snp_10k (CPU): 2,000 / 10,000 x 30 kb ACGT, 3,000 variable columns, threshold 10;
  also `genotile run` (one process); peer hammingdist CPU, its lower triangle written.
- tiny: 2 sequences x 4 bases through Snakemake: the fixed cost of a whole run.

Per-stage breakdown: the `s` column of Snakemake's benchmark files (benchmarks/), summed per
rule; "Snakemake and plan" is the rest of the wall time (start-up, DAG, scheduling, the plan
checkpoint, which has no benchmark file). The store's split: ingest, pack, and the tiles it
computed itself (config `tiles_in_store`: a local GPU run; its tile jobs then only move them into
place). The tile row also gives the seconds spent computing and counting tiles (the tiles' own
`seconds_total` and `seconds_counts`, from summary.json), wherever they were computed.

First-run cost: the first case runs twice with empty compiler caches (NUMBA_CACHE_DIR,
CUPY_CACHE_DIR) and once more warm; the difference is what a fresh install pays once (numba and
CuPy compilation). Later cases use the warm caches.

Missing bases ("1% N" in the issue) are written '-': genotile's snp skips N and '-' alike, but
hammingdist 1.5.0 counts an N as a difference (even against N) and skips only '-' (seen on a
4-sequence file), so with '-' both count the same differences.
"""

import argparse
import datetime
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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ACGT = np.frombuffer(b"ACGT", np.uint8)
# missing bases: "-", which both genotile and hammingdist skip (hammingdist counts N as a base)
MISSING = "-"
GENOTYPES = np.array([b"0/0", b"0/1", b"1/1", b"./."], dtype="S3")
# code -> the call's 3 characters and a tab, as one 4-byte word
CALL_TEXT = np.frombuffer(b"".join(g + b"\t" for g in GENOTYPES.tolist()), np.uint32)


@dataclass
class Case:
    kind: str  # "fasta" | "vcf" | "tiny"
    n: int  # sequences or samples
    length: int  # columns or variants
    threshold: float | None
    gpu: bool = False
    variable: int = 0  # fasta: variable columns
    clusters: int = 1  # fasta: cluster centres (lineages)
    n_fraction: float = 0.0  # fasta: fraction of N; vcf: missing calls
    copies: float = 0.0  # fasta: fraction of sequences that are exact copies of another
    peers: tuple = ()
    run_too: bool = False  # also `genotile run` (one process)
    extra: dict = field(default_factory=dict)


CASES = {
    "snp_40k": Case("fasta", 40_000, 20_000, 20, gpu=True, variable=20_000, clusters=400, n_fraction=0.01,
                    peers=("hammingdist-gpu",)),
    "snp_200k": Case("fasta", 200_000, 30_000, 2, gpu=True, variable=300, clusters=2_000, n_fraction=0.01,
                     copies=0.5, peers=("hammingdist-gpu-dedup",)),
    "king_20k": Case("vcf", 20_000, 100_000, 0.0442, gpu=True, n_fraction=0.01, peers=("plink2",)),
    "king_2k": Case("vcf", 2_000, 50_000, 0.0442, n_fraction=0.01, peers=("plink2",)),
    "snp_2k": Case("fasta", 2_000, 30_000, 10, variable=3_000, clusters=100, peers=("hammingdist",), run_too=True),
    "snp_10k": Case("fasta", 10_000, 30_000, 10, variable=3_000, clusters=200, peers=("hammingdist",), run_too=True),
    "tiny": Case("tiny", 2, 4, None),
}  # fmt: skip
SMOKE = {
    "snp_smoke": Case("fasta", 60, 400, 12, variable=150, clusters=5, n_fraction=0.01, copies=0.3,
                      peers=("hammingdist", "hammingdist-dedup"), run_too=True),
    "king_smoke": Case("vcf", 40, 500, 0.0442, n_fraction=0.02, peers=("plink2",)),
    "tiny": CASES["tiny"],
}  # fmt: skip


# -- inputs ------------------------------------------------------------------------------------


def write_fasta(path: Path, case: Case, seed: int = 1) -> list[str]:
    """Sequences around `clusters` centres, differing at `variable` columns; 1% N where asked."""
    rng = np.random.default_rng(seed)
    base = ACGT[rng.integers(0, 4, case.length)]
    cols = np.sort(rng.choice(case.length, size=min(case.variable, case.length), replace=False))
    centres = np.repeat(base[cols][None, :], case.clusters, 0)
    flip = rng.random(centres.shape) < 0.05
    centres[flip] = ACGT[rng.integers(0, 4, int(flip.sum()))]
    ids, chunk = [], 4096
    with open(path, "wb") as fh:
        made = 0
        while made < case.n:
            k = min(chunk, case.n - made)
            rows = np.repeat(base[None, :], k, 0)
            centre = rng.integers(0, case.clusters, k)
            var = centres[centre]
            # about 3 mutations a sequence off its centre (0.5 where many are copies), so that
            # sequences of one cluster fall within the threshold of each other
            muts = rng.random(var.shape) < (0.5 if case.copies else 3.0) / max(1, len(cols))
            var[muts] = ACGT[rng.integers(0, 4, int(muts.sum()))]
            rows[:, cols] = var
            if case.n_fraction:
                ns = rng.random(rows.shape) < case.n_fraction
                if case.copies:  # copies carry no N of their own, so they stay exact duplicates
                    ns[rng.random(k) < case.copies] = False
                rows[ns] = ord(MISSING)
            if case.copies and made:
                # a fraction of the sequences repeat an earlier one of this chunk exactly
                dup = np.nonzero(rng.random(k) < case.copies)[0]
                dup = dup[dup > 0]
                rows[dup] = rows[rng.integers(0, dup)]
            for r in range(k):
                name = f"s{made + r}"
                ids.append(name)
                fh.write(b">" + name.encode() + b"\n" + rows[r].tobytes() + b"\n")
            made += k
    return ids


def write_vcf(path: Path, case: Case, seed: int = 2, threads: int | None = None) -> list[str]:
    """Biallelic SNPs, Hardy-Weinberg genotypes at uniform allele frequencies, some families.

    Blocks of variants are made on `threads` threads (default: every usable CPU) and written in
    order, the same bytes for the same seed whatever the threads: each block's generator is the
    one after the families were drawn, advanced past the draws of the blocks before it (every
    draw of a block is one 64-bit step of PCG64; `_vcf_block`)."""
    bits = np.random.PCG64(seed)  # default_rng(seed)'s
    ids = [f"i{k}" for k in range(case.n)]
    parents = np.random.Generator(bits).integers(0, case.n, size=(case.n // 10, 2))
    chunk = max(1, 2_000_000 // case.n)
    starts = range(0, case.length, chunk)
    draws = [0]  # 64-bit draws before each block: p, two HWE alleles, two child alleles, missing
    for v0 in starts:
        k = min(chunk, case.length - v0)
        draws.append(draws[-1] + k * (1 + 3 * case.n + 2 * (case.n // 10)))

    def block(b: int) -> np.ndarray:
        return _vcf_block(bits, draws[b], min(chunk, case.length - starts[b]), case, parents)

    threads = threads or len(os.sched_getaffinity(0))
    with open(path, "wb", buffering=1 << 22) as fh, ThreadPoolExecutor(threads) as pool:
        fh.write(b"##fileformat=VCFv4.2\n##contig=<ID=1,length=100000000>\n")
        fh.write(b'##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n')
        fh.write(("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t" + "\t".join(ids) + "\n").encode())
        pending: deque = deque()
        for b, v0 in enumerate(starts):  # about two blocks a thread ahead of the writing
            pending.append((v0, pool.submit(block, b)))
            if len(pending) > 2 * threads:
                _write_vcf_rows(fh, *pending.popleft())
        while pending:
            _write_vcf_rows(fh, *pending.popleft())
    return ids


def _write_vcf_rows(fh, v0: int, job) -> None:
    """The lines of a block of variants from v0 on: its columns before the calls, then its calls."""
    for r, calls in enumerate(job.result()):
        fh.write(b"1\t%d\tv%d\tA\tG\t.\tPASS\t.\tGT\t" % (v0 + r + 1, v0 + r + 1))
        fh.write(calls.data)


def _vcf_block(start: np.random.PCG64, skip: int, k: int, case: Case, parents: np.ndarray) -> np.ndarray:
    """(k, 4 n) uint8: the call text of k variants (each call 3 characters and a tab, the last a
    newline), drawn from a copy of `start` advanced by `skip` draws."""
    bits = np.random.PCG64()
    bits.state = start.state
    rng = np.random.Generator(bits.advance(skip))
    p = rng.uniform(0.05, 0.5, size=(k, 1))
    g = (rng.random((k, case.n)) < p).astype(np.uint8) + (rng.random((k, case.n)) < p)
    # every tenth sample a child of two others: first- and second-degree pairs pass king
    child = np.arange(case.n // 10) * 10
    g[:, child] = (g[:, parents[:, 0]] >= 1 + (rng.random((k, child.size)) < 0.5)).astype(np.uint8) + (
        g[:, parents[:, 1]] >= 1 + (rng.random((k, child.size)) < 0.5)
    )
    g[rng.random(g.shape) < case.n_fraction] = 3
    calls = np.take(CALL_TEXT, g).view(np.uint8)  # one 4-byte word per call: a table lookup
    calls[:, -1] = ord("\n")
    return calls


# -- runs --------------------------------------------------------------------------------------


def timed(cmd, env=None, cwd=None, log=None) -> float:
    """Wall seconds of `cmd`, its output written to `log`. With GENOTILE_BENCH_TRACE set, a
    `python -m snakemake` command runs under bench/trace_snakemake.py, which writes its split of
    the run beside the log (`LOG.trace.md`): a diagnostic, its marks cost a file append each."""
    cmd = [str(c) for c in cmd]
    if os.environ.get("GENOTILE_BENCH_TRACE") and cmd[1:3] == ["-m", "snakemake"] and log is not None:
        trace = [cmd[0], str(REPO / "bench" / "trace_snakemake.py"), "--out", f"{log}.trace.md", "--"]
        cmd = trace + cmd[3:]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if log is not None:
        Path(log).write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return seconds


def snakemake_run(work: Path, data: Path, case: Case, metric: str, cores: int, env) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    config = {
        "datasets": {"bench": {"input": str(data), "metrics": [metric]}},
        "thresholds": {metric: case.threshold},
        "report": False,
        **case.extra,  # config keys of the case (the warm-up's backend)
    }
    (work / "config.yaml").write_text(json.dumps(config))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work)]
    cmd += ["--configfile", str(work / "config.yaml"), "--cores", str(cores)]
    if case.gpu:
        cmd += ["--resources", "gpu=1"]
    wall = timed(cmd, env=env, log=work / "snakemake.log")
    return {"wall": wall, **stages(work, metric)}


def stages(work: Path, metric: str) -> dict:
    """Seconds per rule from Snakemake's benchmark files, and the tiles' counting seconds."""
    bench = work / "benchmarks" / "bench"
    out = {"store": 0.0, "tile": 0.0, "matrix": 0.0, "merge": 0.0}
    for f in bench.rglob("*.tsv"):
        rule = f.name.split(".")[0].split("_")[0]
        lines = f.read_text().splitlines()
        if rule in out and len(lines) > 1:
            out[rule] += float(lines[1].split("\t")[0])
    # the store job's own split (store/stage.store logs it): ingest, plan and pack; and the tiles
    # it computed itself (config tiles_in_store, pairs/early.py; scripts/store.py logs them)
    out["ingest"] = out["pack"] = out["store_tiles"] = 0.0
    for log in (work / "logs" / "bench").glob("store.*.log"):
        for line in log.read_text().splitlines():
            if "store stages (s):" in line:
                parts = dict(p.split() for p in line.split("store stages (s):")[1].split(","))
                out["ingest"] += float(parts.get("ingest", 0.0))
                out["pack"] += float(parts.get("pack", 0.0))
            elif "store tiles (s):" in line:
                out["store_tiles"] += float(line.split("store tiles (s):")[1].split()[0])
    summary = json.loads((work / "results/bench" / metric / "summary.json").read_text())
    out["tile_jobs"] = summary["plan"]["n_tiles"]
    out["block_size"] = summary["plan"]["block_size"]
    out["counts"] = summary["timings"]["tile_seconds_counts"]
    out["tile_compute"] = summary["timings"]["tile_seconds_total"]  # compute_tile: counts to arrays
    out["backend"] = ",".join(summary["backend"])
    return out


def genotile_run(work: Path, data: Path, case: Case, metric: str, env) -> float:
    cmd = [sys.executable, "-m", "genotile.cli", "run", str(data), "--outdir", str(work), "--metric", metric]
    cmd += ["--threshold", f"{metric}={case.threshold}"]
    return timed(cmd, env=env, log=work.parent / f"{work.name}.log")


HAMMINGDIST = """
import sys, time, numpy as np, hammingdist
path, gpu, dedup, write, threshold, out = sys.argv[1:7]
gpu, dedup, write, threshold = gpu == "1", dedup == "1", write == "1", float(threshold)
t0 = time.perf_counter()
data = hammingdist.from_fasta_large(path, use_gpu=gpu, remove_duplicates=dedup)
t1 = time.perf_counter()
if write:
    data.dump_lower_triangular(out + ".lt")
t2 = time.perf_counter()
# not timed: the pairs within the threshold, to check against genotile's
lt = np.asarray(data.lt_array)
hit = np.nonzero(lt <= threshold)[0]
row = ((1 + np.sqrt(1 + 8 * hit.astype(np.float64))) // 2).astype(np.int64)
row -= row * (row - 1) // 2 > hit
row += (row + 1) * row // 2 <= hit
idx = np.arange(0)
if dedup:
    data.dump_sequence_indices(out + ".idx")
    idx = np.loadtxt(out + ".idx", dtype=np.int64, ndmin=1)
np.savez(out + ".npz", a=hit - row * (row - 1) // 2, b=row, d=lt[hit].astype(np.int64), idx=idx)
print(f"{t1 - t0} {t2 - t1}")
"""


def hammingdist_run(
    work: Path, data: Path, gpu: bool, dedup: bool, write: bool, threshold, env, timeout: float | None = None
) -> dict:
    """hammingdist's from_fasta_large in its own process: compute (file read included) and,
    with `write`, its lower triangle written as it writes it (dump_lower_triangular)."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / "hd"
    t0 = time.perf_counter()
    args = [str(data), str(int(gpu)), str(int(dedup)), str(int(write)), str(threshold), str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", HAMMINGDIST, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"hammingdist failed:\n{proc.stderr[-3000:]}")
    compute, written = (float(x) for x in proc.stdout.split()[-2:])
    with np.load(str(out) + ".npz") as z:
        close = {k: z[k] for k in z.files}
    # the wall without the untimed check at its end
    return {"wall": compute + written, "compute": compute, "write": written, "process": wall, "close": close}


def hammingdist_pairs(close: dict, n: int):
    """(a, b, distance) of every pair within the threshold, a < b in input order, from
    hammingdist's pairs of (unique) sequences (copies expanded, distance 0 among them)."""
    ua, ub, ud = close["a"], close["b"], close["d"]
    if close["idx"].size:
        unique_of = close["idx"]
        order = np.argsort(unique_of, kind="stable")
        starts = np.searchsorted(unique_of[order], np.arange(unique_of.max() + 2))
        members = [order[starts[u] : starts[u + 1]] for u in range(unique_of.max() + 1)]
        parts = [np.zeros((0, 3), np.int64)]
        for u, v, dist in zip(ua, ub, ud, strict=True):
            x, y = np.meshgrid(members[u], members[v], indexing="ij")
            parts.append(np.stack([x.ravel(), y.ravel(), np.full(x.size, dist)], 1))
        for group in members:
            if group.size > 1:
                i, j = np.triu_indices(group.size, 1)
                parts.append(np.stack([group[i], group[j], np.zeros(i.size, np.int64)], 1))
        close3 = np.concatenate(parts)
    else:
        close3 = np.stack([ua, ub, ud], 1)
    lo, hi = np.minimum(close3[:, 0], close3[:, 1]), np.maximum(close3[:, 0], close3[:, 1])
    order = np.lexsort((hi, lo))
    return lo[order], hi[order], close3[order, 2].astype(float)


def plink2_run(work: Path, data: Path, case: Case, cores: int) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    cmd = ["plink2", "--vcf", str(data), "--make-king-table", "--king-table-filter", str(case.threshold)]
    cmd += ["--allow-extra-chr", "--threads", str(cores), "--out", str(work / "plink2")]
    return {"wall": timed(cmd, log=work / "plink2.stdout"), "kin0": work / "plink2.kin0"}


# -- agreement ---------------------------------------------------------------------------------


def genotile_pairs(work: Path, metric: str, ids: list[str], value: str):
    """(a, b, value) of genotile's pairs.tsv.gz, a < b as input indices, in file order."""
    import pandas as pd

    table = pd.read_csv(work / "results/bench" / metric / "pairs.tsv.gz", sep="\t", dtype={"id1": str, "id2": str})
    index = pd.Series(np.arange(len(ids)), index=ids)
    a = index.loc[table["id1"]].to_numpy(np.int64)
    b = index.loc[table["id2"]].to_numpy(np.int64)
    return a, b, table[value].to_numpy(np.float64)


def plink2_pairs(kin0: Path, ids: list[str]):
    index = {name: k for k, name in enumerate(ids)}
    a, b, v = [], [], []
    with open(kin0) as fh:
        header = fh.readline().lstrip("#").split()
        i1, i2, kc = header.index("IID1"), header.index("IID2"), header.index("KINSHIP")
        for line in fh:
            f = line.split()
            x, y = index[f[i1]], index[f[i2]]
            a.append(min(x, y))
            b.append(max(x, y))
            v.append(float(f[kc]))
    a, b, v = np.array(a, np.int64), np.array(b, np.int64), np.array(v)
    order = np.lexsort((b, a))
    return a[order], b[order], v[order]


def agree(ours, theirs, exact: bool, threshold=None) -> str:
    """'yes (N pairs)' when both give the same pairs and values; else what differs."""
    (a1, b1, v1), (a2, b2, v2) = ours, theirs
    if not exact:
        # PLINK prints kinship to 6 significant digits: pairs within that of the threshold may
        # fall on either side of it
        def clear(a, b, v):
            keep = np.abs(v - threshold) > 5e-6
            return a[keep], b[keep], v[keep]

        (a1, b1, v1), (a2, b2, v2) = clear(a1, b1, v1), clear(a2, b2, v2)
    if a1.size != a2.size or not (np.array_equal(a1, a2) and np.array_equal(b1, b2)):
        return f"NO: {a1.size} pairs against {a2.size}"
    ok = np.array_equal(v1, v2) if exact else bool(np.all(np.abs(v1 - v2) <= 5e-6 + 5e-6 * np.abs(v2)))
    return f"yes ({a1.size} pairs)" if ok else "NO: values differ"


# -- cases -------------------------------------------------------------------------------------


def run_case(name: str, case: Case, root: Path, args, env) -> dict:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if case.kind == "vcf":
        data, metric, value = d / "input.vcf", "king", "kinship"
        ids = write_vcf(data, case)
    elif case.kind == "fasta":
        data, metric, value = d / "input.fa", "snp", "snp"
        ids = write_fasta(data, case)
    else:
        data, metric, value = d / "input.fa", "snp", "snp"
        data.write_bytes(b">a\nACGT\n>b\nACGA\n")
        ids = ["a", "b"]
    made = time.perf_counter() - t0
    print(f"{name}: input {data.stat().st_size / 1e6:.1f} MB made in {made:.1f} s", flush=True)
    result = {"case": name, "input_mb": data.stat().st_size / 1e6, "n": case.n, "length": case.length}
    result["genotile"] = snakemake_run(d / "snakemake", data, case, metric, args.cores, env)
    print(f"  genotile (Snakemake): {result['genotile']}", flush=True)
    if case.kind == "tiny":
        return result
    ours = genotile_pairs(d / "snakemake", metric, ids, value)
    if case.run_too:
        result["genotile_run"] = genotile_run(d / "run", data, case, metric, env)
        print(f"  genotile run: {result['genotile_run']:.2f} s", flush=True)
    for peer in case.peers:
        if peer.startswith("hammingdist"):
            gpu = "gpu" in peer
            try:
                hd = hammingdist_run(
                    d / peer, data, gpu, "dedup" in peer, not gpu, case.threshold, env, args.peer_timeout
                )
            except subprocess.TimeoutExpired:
                result[peer] = {"skipped": f"did not finish within {args.peer_timeout:.0f} s"}
                print(f"  {peer}: {result[peer]}", flush=True)
                continue
            result[peer] = {k: v for k, v in hd.items() if k in ("wall", "compute", "write", "process")}
            result[peer]["agree"] = agree(ours, hammingdist_pairs(hd["close"], len(ids)), exact=True)
            shutil.rmtree(d / peer, ignore_errors=True)
        elif peer == "plink2":
            if shutil.which("plink2") is None:
                result[peer] = {"skipped": "plink2 not on PATH"}
                continue
            pk = plink2_run(d / peer, data, case, args.cores)
            result[peer] = {
                "wall": pk["wall"],
                "agree": agree(ours, plink2_pairs(pk["kin0"], ids), False, case.threshold),
            }
        print(f"  {peer}: {result[peer]}", flush=True)
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return result


def first_run_cost(root: Path, args, env, name: str) -> dict:
    """Case `name` with empty numba and CuPy caches, then warm: what a fresh install pays once."""
    case = {**CASES, **SMOKE}[name]
    case = Case(**{**case.__dict__, "peers": (), "run_too": False})
    out = {"case": name}
    for label in ("cold", "warm"):
        res = run_case(f"first_{label}_{name}", case, root, args, env)
        out[label] = res["genotile"]["wall"]
        out[f"{label}_stages"] = {k: res["genotile"][k] for k in ("store", "tile", "merge")}
    return out


# warm-up inputs just past the sizes where compiled paths take over, so that they are compiled
# before the timed cases: the VCF decode (vcf_fast.COMPILED_MIN_BYTES, 16 MB: ~24 MB here), the
# float and integer matrix.tsv text (io/text_kernels: 2^20 floats of a symmetric matrix's
# triangle, 1,500^2 / 2; 2^25 integer cells, 5,800^2)
WARM = {
    "snp_smoke": Case("fasta", 5_800, 200, 12, variable=150, clusters=5, n_fraction=0.01),
    "king_smoke": Case("vcf", 1_500, 4_000, 0.0442, n_fraction=0.01),
}


def warm_up(root: Path, args, env, cases) -> None:
    """One run of each metric first, so that no timed case pays numba's or CuPy's compilation
    (a fresh machine's caches are empty; --first-run measures that cost)."""
    for kind, name in (("fasta", "snp_smoke"), ("vcf", "king_smoke")):
        if any(c.kind == kind for c in cases.values()):
            case = Case(**{**SMOKE[name].__dict__, "peers": (), "run_too": False})
            if not args.smoke:  # (CI's smoke run stays seconds)
                case = Case(**WARM[name].__dict__)
            run_case(f"warm_up_{name}", case, root, args, env)
            if not any(c.gpu for c in cases.values()):
                # tiles this small take numpy under auto; larger CPU tiles take numba: compile it too
                case.extra = {"backend": "numba"}
                run_case(f"warm_up_{name}_numba", case, root, args, env)


def table(results: list[dict], first: dict | None, meta: str) -> str:
    lines = [meta, "", "| case | input | genotile Snakemake (s) | tile jobs (block) | stages: store (ingest, pack, "
             "tiles) / tile (compute_tile, counting) / matrix / merge / Snakemake (s) | `genotile run` (s) | peer | "
             "peer (s) | genotile / peer | outputs agree |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in results:
        g = r["genotile"]
        rest = g["wall"] - sum(g[k] for k in ("store", "tile", "matrix", "merge"))
        st = (
            f"{g['store']:.2f} ({g['ingest']:.2f}, {g['pack']:.2f}, {g.get('store_tiles', 0.0):.2f}) / "
            f"{g['tile']:.2f} ({g['tile_compute']:.2f}, {g['counts']:.2f}) / "
            f"{g['matrix']:.2f} / "
            f"{g['merge']:.2f} / {rest:.2f}"
        )
        run = f"{r['genotile_run']:.2f}" if "genotile_run" in r else ""
        peers = [p for p in r if p.startswith(("hammingdist", "plink2"))] or [None]
        for p in peers:
            pr = r.get(p) or {}
            pw = pr.get("wall")
            ratio = f"{g['wall'] / pw:.2f}" if pw else ""
            peer_s = f"{pw:.2f}" + (f" (compute {pr['compute']:.2f})" if "compute" in pr else "") if pw else ""
            lines.append(
                f"| {r['case']} | {r['n']} x {r['length']} ({r['input_mb']:.0f} MB) | {g['wall']:.2f} | "
                f"{g['tile_jobs']} ({g['block_size']}, {g['backend']}) | {st} | {run} | {p or ''} | {peer_s} | "
                f"{ratio} | {pr.get('agree', pr.get('skipped', ''))} |"
            )
    if first:
        lines += ["", f"First run ({first['case']}, Snakemake wall): empty numba/CuPy caches {first['cold']:.2f} s, "
                  f"warm {first['warm']:.2f} s: first-run cost {first['cold'] - first['warm']:.2f} s "
                  f"(stages cold {first['cold_stages']}, warm {first['warm_stages']})"]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="snp_2k,tiny", help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--smoke", action="store_true", help="tiny inputs, seconds (CI)")
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--out", default=None, help="folder for bench_e2e.md / .json")
    ap.add_argument("--tmp", default=None, help="where inputs and runs go (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep each case's folder")
    ap.add_argument("--peer-timeout", type=float, default=None, help="seconds a peer may take (then: not finished)")
    ap.add_argument("--first-run", metavar="CASE", help="first measure the first-run (compilation) cost on CASE")
    args = ap.parse_args()
    cases = SMOKE if args.smoke else {n: CASES[n] for n in args.cases.split(",")}
    if args.smoke:
        args.cores = min(args.cores, 2)
        try:
            import hammingdist  # noqa: F401
        except ImportError:
            print("bench_e2e --smoke: hammingdist not installed; its rows are skipped", flush=True)
            for c in cases.values():
                c.peers = tuple(p for p in c.peers if not p.startswith("hammingdist"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(dir=args.tmp, prefix="genotile_e2e_") as tmp:
        root = Path(tmp)
        env["NUMBA_CACHE_DIR"] = str(root / "numba_cache")
        env["CUPY_CACHE_DIR"] = str(root / "cupy_cache")
        first = first_run_cost(root, args, env, args.first_run) if args.first_run else None
        if not args.smoke:
            warm_up(root, args, env, cases)
        results = [run_case(name, case, root, args, env) for name, case in cases.items()]
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        head = head.stdout.strip() or "?"
    except OSError:
        head = "?"
    meta = (
        f"{datetime.date.today().isoformat()}, {platform.node()}, {os.cpu_count()} CPUs (--cores {args.cores}), "
        f"git {head}; Snakemake wall includes its start-up"
    )
    text = table(results, first, meta)
    print("\n" + text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_e2e.md").write_text(text)
        (out / "bench_e2e.json").write_text(
            json.dumps({"meta": meta, "results": results, "first": first}, indent=1, default=str)
        )
    bad = [
        r["case"]
        for r in results
        for p, v in r.items()
        if isinstance(v, dict) and str(v.get("agree", "")).startswith("NO")
    ]
    if bad:
        print(f"bench_e2e: outputs disagree in {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
