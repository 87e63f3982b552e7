#!/usr/bin/env python3
"""ccc3 benchmark (issue 6): the b1 ceiling, then 3-way jobs per GPU backend, in one process.

    PYTHONPATH=src python3 bench/bench_ccc3.py [--block 4096] [--fields 20000] [--middle 64] [--out DIR]

1. The b1 mma.sync ceiling measured here and now (bench_gpu.b1_ceiling).
2. One off-diagonal block triple (I < J < K, blocks of --block SNPs x --fields samples, random
   genotypes with 2% missing), --middle rows of J: cupy_ccc3.triples_device (mask, 8 counts,
   epilogue, threshold, compaction on the device; a threshold few triples pass) per backend,
   the median of three timed runs after a warm-up (each printed).
   element comparisons/s = triples x fields / s; bit-MAC/s = triples x 27 plane products x
   64 x words / s, against the ceiling.
3. End to end: --e2e-snps SNPs x --e2e-samples samples (5% missing), packed into a genotype_t
   store in process (no VCF: Snakemake is not on the device), then run_ccc3 (every job,
   cupy-b1, blocks of --block, triple files, merge to triples.tsv.gz) with a threshold chosen from
   a sample of triples so that about 1e-6 of all triples pass.

`--smoke` (CI, tests/workflow/test_bench_smoke.py): tiny sizes (3 blocks of 48 SNPs x 300
samples, a whole run of 60 SNPs x 40 samples), no ceiling; each row's triples are checked against
the numpy path's, the block triple's arrays and the run's triples.tsv.gz byte for byte, and a
mismatch fails the run. Without CuPy or a GPU the rows run on the CPU (numba, else numpy), so the
store, job, run and merge code this bench drives is exercised.
"""

import argparse
import contextlib
import datetime
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    import cupy as cp  # noqa: E402
except ImportError:  # --smoke runs the CPU rows without it
    cp = None
from bench_gpu import b1_ceiling, gpu_present  # noqa: E402

from genotile import backends  # noqa: E402
from genotile.backends.cuda import b1_select, cupy_b1, cupy_ccc3, cupy_int8  # noqa: E402
from genotile.core import ccc3  # noqa: E402
from genotile.core.genotype import genotype_layout, genotype_planes  # noqa: E402
from genotile.core.plan import Plan  # noqa: E402
from genotile.io.planfile import write_plan  # noqa: E402
from genotile.io.tilefile import arrays_digest  # noqa: E402
from genotile.pipeline import run_ccc3  # noqa: E402
from genotile.store.pack import open_store, pack  # noqa: E402
from genotile.triples.tile import compute_triples  # noqa: E402

ENGINES = {"cupy-b1": cupy_b1.ENGINE, "cupy-int8": cupy_int8.ENGINE}


def genotypes(n, m, missing, seed):
    rng = np.random.default_rng(seed)
    freq = rng.beta(0.5, 0.5, size=n)
    g = rng.binomial(2, freq[:, None], size=(n, m)).astype(np.uint8)
    g[rng.random(g.shape) < missing] = 255
    return g


REPEATS = 3  # a block triple's timed runs (after a warm-up): the median is its row


def block_rows(add, args, ceiling):
    """One block triple at --fields samples (planes too wide to be held: the streamed fused
    kernel on sm_90: on Hopper the warpgroup MMA's, beside it mma.sync's) and at --fused-fields
    (the fused kernel holding the planes); beside each cupy-b1's select path and cupy-int8's."""
    for m, middle in ((args.fields, args.middle), (args.fused_fields, 4 * args.middle)):
        block_triple(add, args.block, m, middle, ceiling)


def block_triple(add, n, m, middle, ceiling):
    g = genotypes(3 * n, m, 0.02, 1)
    layout = genotype_layout(g, "genotype_t")
    planes = genotype_planes(g, layout)
    blocks = [planes[b * n : (b + 1) * n] for b in range(3)]
    stats = [ccc3.vector_stats(b, layout) for b in blocks]
    products = sum(1 for ts in ccc3.count_terms(layout).values() for t in ts if t.left and t.right)
    kernel = cupy_ccc3.fused_kernel(cupy_b1.ENGINE, layout, 0.5)  # the auto path's fused kernel, if any
    runs = [("cupy-b1", "auto", middle, True)]
    if kernel == "streamed" and b1_select.uses_wgmma():  # Hopper's wgmma kernel; beside it mma.sync's
        runs += [("cupy-b1", "auto", middle, False)]
    runs += [("cupy-b1", "select", middle, True)]  # beside it: the select path
    runs += [("cupy-int8", "select", max(1, middle // 8), True)]
    for backend, path, rows, wgmma in runs:
        plan = ccc3.Plan3(3 * n, n, 1, n // rows)  # stage 0 of J = the first `rows` rows
        info: dict = {}
        run = lambda thr, plan=plan, backend=backend, path=path, info=info: cupy_ccc3.triples_device(  # noqa: E731
            ENGINES[backend], blocks, stats, layout, plan, ccc3.Params(), (0, 1, 2), 0, thr, info, path=path
        )
        mma_sync = (
            contextlib.nullcontext() if wgmma else mock.patch.object(b1_select, "uses_wgmma", lambda w=None: False)
        )
        with mma_sync:
            for _ in run(0.5):  # warm-up (compiles)
                pass
            times = []
            for _ in range(REPEATS):
                cp.cuda.Device().synchronize()
                t0 = time.perf_counter()
                passing = sum(values.shape[0] for *_, values in run(0.5))  # the chunks, one readback each
                times.append(time.perf_counter() - t0)
            seconds = float(np.median(times))
            print(f"    {backend} {path} wgmma={wgmma}: {', '.join(f'{t:.4f}' for t in times)} s", flush=True)
        triples = len(plan.stage_rows(1, 0)) * n * n
        fused = f"fused ({info['kernel']})" if "kernel" in info else "select"
        how = path if path != "auto" else fused
        add(
            backend,
            f"block triple {n}x{n}x{n}, {len(plan.stage_rows(1, 0))} middle rows, {m} samples, {how}",
            seconds,
            triples * m,
            triples * products * 64 * layout.words,
            ceiling,
            passing,
        )


def make_store(work: Path, n: int, m: int, block: int) -> tuple[Path, float]:
    """A packed genotype_t store of n SNPs x m samples (5% missing, 2-way blocks of `block`) in
    work/store; the pack's seconds."""
    g = genotypes(n, m, 0.05, 2)
    store = work / "store"
    store.mkdir(parents=True, exist_ok=True)
    np.save(work / "codes.npy", g)
    ingest = {
        "encoding": "genotype_t",
        "n_fields": m,
        "n_vectors": n,
        "input": "synthetic",
        "input_sha256": "0" * 64,
        "ids": [f"snp{k}" for k in range(n)],
        "counts": {},
    }
    plan = Plan(n, block, 1)
    write_plan(plan, store / "plan.json", store / "perm.npy")
    t0 = time.perf_counter()
    pack(work / "codes.npy", ingest, plan, np.load(store / "perm.npy"), store / "planes.npy", store / "manifest.json")
    return store, time.perf_counter() - t0


def e2e(add, args, ceiling, out):
    work = Path(args.workdir)
    n, m = args.e2e_snps, args.e2e_samples
    store, t_pack = make_store(work, n, m, args.block)
    # threshold: from every triple of a sample block triple, the value 1e-6 of them reach
    planes, _, layout = open_store(store / "planes.npy", store / "manifest.json")
    sample = min(256, n // 3)
    blocks = [np.asarray(planes[b * sample : (b + 1) * sample]) for b in range(3)]
    stats = [ccc3.vector_stats(b, layout) for b in blocks]
    chunks = cupy_ccc3.triples_device(
        cupy_b1.ENGINE, blocks, stats, layout, ccc3.Plan3(3 * sample, sample, 1, 1), ccc3.Params(), (0, 1, 2), 0, None
    )
    best = np.sort(np.concatenate([values.max(axis=1) for *_, values in chunks] or [np.zeros(0)]))[::-1]
    threshold = float(best[max(0, int(1e-6 * best.size) - 1)]) if best.size >= 1e6 else float(best[0])
    t0 = time.perf_counter()
    summary = run_ccc3(store, work / "ccc3", block_size=args.block, stages=1, threshold=threshold, backend="cupy-b1")
    seconds = time.perf_counter() - t0
    triples = math.comb(n, 3)
    products = 27
    add(
        "cupy-b1",
        f"end to end {n} SNPs x {m} samples (pack {t_pack:.1f} s before), threshold {threshold:.6g}",
        seconds,
        triples * m,
        triples * products * 64 * layout.words,
        ceiling,
        summary["triples_passing"],
    )
    (out / "e2e_summary.json").write_text(
        json.dumps({k: summary[k] for k in ("triples_computed", "triples_passing", "timings", "plan")}, indent=1)
    )
    return threshold, summary["triples_passing"], work / "ccc3" / "triples.tsv.gz"


def workflow(add, args, ceiling, threshold, want_passing, want_triples, gpus: int):
    """Goal 1's whole run: the e2e's genotypes as a PLINK 1 fileset (A1 = ALT), `snakemake
    --cores N` with the default config and that threshold; per-rule seconds, GPU busy, and its
    triples.tsv.gz against the in-process run's (or, without one, the first workflow run's).
    `gpus`: the run sees GPUs 0 .. gpus - 1 (CUDA_VISIBLE_DEVICES). Returns its triples.tsv.gz."""
    from bench_biobank import MAGIC, TWO_BIT, GpuBusy, bed_records
    from bench_e2e import timed

    work = Path(args.workdir) / f"workflow_{gpus}gpu"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    n, m = args.e2e_snps, args.e2e_samples
    g = genotypes(n, m, 0.05, 2)  # the e2e's: (SNPs, samples)
    codes = TWO_BIT[np.minimum(g, 2)]
    codes[g == 255] = 1
    (work / "x.bed").write_bytes(MAGIC + bed_records(codes))
    (work / "x.bim").write_text("".join(f"1\tsnp{k}\t0\t{k + 1}\tG\tA\n" for k in range(n)))
    (work / "x.fam").write_text("".join(f"0\ts{k}\t0\t0\t0\t-9\n" for k in range(m)))
    dataset = {"input": str(work / "x.bed"), "metrics": ["ccc3"]}
    config = {"datasets": {"c3": dataset}, "thresholds": {"ccc3": threshold}}
    (work / "config.yaml").write_text(json.dumps({**config, "report": False}))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work)]
    cmd += ["--configfile", str(work / "config.yaml"), "--cores", str(args.cores)]
    with GpuBusy(work / "gpu_busy.csv") as busy:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(map(str, range(gpus)))}
        seconds = timed(cmd, env=env, log=work / "snakemake.log")
    rules: dict[str, float] = {}
    for f in (work / "benchmarks").rglob("*.tsv"):
        rule = f.stem.split("_")[0]
        rules[rule] = rules.get(rule, 0.0) + float(f.read_text().splitlines()[1].split("\t")[0])
    summary = json.loads((work / "results" / "c3" / "ccc3" / "summary.json").read_text())
    got = gzip.decompress((work / "results" / "c3" / "ccc3" / "triples.tsv.gz").read_bytes())
    same = want_triples is None or got == gzip.decompress(want_triples.read_bytes())
    split = ", ".join(f"{k} {v:.2f}" for k, v in sorted(rules.items()))
    triples = math.comb(n, 3)
    add(
        "cupy-b1",
        f"whole snakemake run, {gpus} GPU(s), {n} SNPs x {m} samples .bed, threshold {threshold:.6g} "
        f"(per rule, s: {split}; GPU busy {busy.summary()}; triples.tsv.gz equal to the reference's: "
        f"{'yes' if same else 'NO'})",
        seconds,
        triples * m,
        triples * 27 * 64 * -(-m // 64),
        ceiling,
        summary.get("triples_passing", -1),
    )
    if not same or (want_passing is not None and summary.get("triples_passing") != want_passing):
        raise SystemExit("the workflow's triples differ from the in-process run's")
    return work / "results" / "c3" / "ccc3" / "triples.tsv.gz", summary.get("triples_passing")


def smoke(args) -> int:
    """--smoke: the block triple and a whole run at tiny sizes on each backend here (the GPU ones,
    else the CPU's best), each checked byte for byte against the numpy path; 1 on a mismatch."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if gpu_present():
        names = list(ENGINES)
    else:
        names = [backends.resolve("auto")]
        why = "CuPy is not installed" if cp is None else "no CUDA device"
        print(f"bench_ccc3 --smoke: {why}; GPU rows skipped, the rows run on the {names[0]} backend", flush=True)
    n, m, middle = 48, 300, 8
    g = genotypes(3 * n, m, 0.02, 1)
    layout = genotype_layout(g, "genotype_t")
    planes = genotype_planes(g, layout)
    perm = np.arange(3 * n)
    plan = ccc3.Plan3(3 * n, n, 1, n // middle)  # stage 0 of J = its first `middle` rows
    job = (0, 1, 2, 0)
    every, _ = compute_triples(planes, layout, perm, plan, ccc3.Params(), *job, None, "numpy")
    best = np.max([every[c] for c in ccc3.COLUMNS], axis=0)
    threshold = float(np.quantile(best, 0.9))  # about a tenth of the triples pass
    want, _ = compute_triples(planes, layout, perm, plan, ccc3.Params(), *job, threshold, "numpy")
    work = Path(args.workdir) / f"smoke_{os.getpid()}"
    store, _ = make_store(work, 60, 40, 16)
    whole = run_ccc3(store, work / "numpy", block_size=16, stages=2, threshold=threshold, backend="numpy")
    text = gzip.decompress((work / "numpy" / "triples.tsv.gz").read_bytes())
    rows, failed = [], False
    for name in names:
        t0 = time.perf_counter()
        got, meta = compute_triples(planes, layout, perm, plan, ccc3.Params(), *job, threshold, name)
        seconds = time.perf_counter() - t0
        same = arrays_digest(got) == arrays_digest(want) and meta["backend"] == name
        rows.append(
            (name, f"block triple {n}x{n}x{n}, {middle} middle rows, {m} samples", seconds, got["a"].size, same)
        )
        t0 = time.perf_counter()
        summary = run_ccc3(store, work / name, block_size=16, stages=2, threshold=threshold, backend=name)
        seconds = time.perf_counter() - t0
        same = gzip.decompress((work / name / "triples.tsv.gz").read_bytes()) == text
        same = same and summary["triples_passing"] == whole["triples_passing"]
        rows.append(
            (name, "end to end 60 SNPs x 40 samples, blocks of 16, 2 stages", seconds, summary["triples_passing"], same)
        )
    shutil.rmtree(work, ignore_errors=True)
    lines = [f"threshold {threshold:.6g}", "| backend | what | s | passing | equals numpy |", "|---|---|---|---|---|"]
    for name, what, seconds, passing, same in rows:
        lines.append(f"| {name} | {what} | {seconds:.3g} | {passing} | {'yes' if same else 'NO   <<< MISMATCH'} |")
        failed = failed or not same or passing == 0
    (out / "bench_ccc3.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--fields", type=int, default=20000)
    ap.add_argument("--middle", type=int, default=64)
    ap.add_argument("--fused-fields", type=int, default=2000, help="samples of the second block triple (fused)")
    ap.add_argument("--e2e-snps", type=int, default=20000)
    ap.add_argument("--e2e-samples", type=int, default=2000)
    ap.add_argument("--workdir", default="/tmp/bench_ccc3")
    ap.add_argument("--out", default=".")
    ap.add_argument("--skip-e2e", action="store_true")
    ap.add_argument("--skip-blocks", action="store_true", help="no block-triple rows")
    ap.add_argument(
        "--workflow", type=int, nargs="*", help="goal 1's whole snakemake run on a .bed, on each number of GPUs given"
    )
    ap.add_argument("--threshold", type=float, help="the workflow runs' ccc3 threshold where --skip-e2e")
    ap.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, checked against numpy (CI; CPU without a GPU)")
    args = ap.parse_args()
    if args.smoke:
        return smoke(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = cp.cuda.runtime.getDeviceProperties(0)
    sms = dev["multiProcessorCount"]
    print(f"GPU: {dev['name'].decode()}, {sms} SMs", flush=True)
    ceiling = b1_ceiling(sms)["bit_mac_per_s"]
    rows = []

    def add(backend, what, seconds, comparisons, bit_macs, ceiling, passing):
        row = {
            "backend": backend,
            "what": what,
            "seconds": seconds,
            "comparisons_per_s": comparisons / seconds,
            "bit_mac_per_s": bit_macs / seconds,
            "pct_b1_ceiling": 100 * bit_macs / seconds / ceiling,
            "passing": int(passing),
        }
        rows.append(row)
        print(
            f"  {backend:9s} {what}: {seconds:.3f} s, {row['comparisons_per_s']:.3e} comparisons/s, "
            f"{row['bit_mac_per_s']:.3e} bit-MAC/s = {row['pct_b1_ceiling']:.1f}% of b1 ceiling, "
            f"{passing} passing",
            flush=True,
        )

    if not args.skip_blocks:
        block_rows(add, args, ceiling)
    threshold, passing, triples_gz = args.threshold, None, None
    if not args.skip_e2e:
        threshold, passing, triples_gz = e2e(add, args, ceiling, out)
    for gpus in args.workflow or []:  # each run's triples equal to the first's (or the e2e's)
        triples_gz, passing = workflow(add, args, ceiling, threshold, passing, triples_gz, gpus)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {
        "date": datetime.date.today().isoformat(),
        "gpu": dev["name"].decode(),
        "commit": commit,
        "b1_ceiling_bit_mac_per_s": ceiling,
        "rows": rows,
    }
    (out / "bench_ccc3.json").write_text(json.dumps(result, indent=1))
    print("| backend | what | s | comparisons/s | bit-MAC/s | % b1 ceiling | passing |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['backend']} | {r['what']} | {r['seconds']:.3g} | {r['comparisons_per_s']:.3g} | "
            f"{r['bit_mac_per_s']:.3g} | {r['pct_b1_ceiling']:.1f} | {r['passing']} |"
        )


if __name__ == "__main__":
    sys.exit(main())
