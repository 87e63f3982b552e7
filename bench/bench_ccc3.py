#!/usr/bin/env python3
"""ccc3 benchmark (issue 6): the b1 ceiling, then 3-way jobs per GPU backend, in one process.

    PYTHONPATH=src python3 bench/bench_ccc3.py [--block 4096] [--fields 20000] [--middle 64] [--out DIR]

1. The b1 mma.sync ceiling measured here and now (bench_gpu.b1_ceiling).
2. One off-diagonal block triple (I < J < K, blocks of --block SNPs x --fields samples, random
   genotypes with 2% missing), --middle rows of J: cupy_ccc3.triples_device (mask, 8 counts,
   epilogue, threshold, compaction on the device; a threshold few triples pass) per backend.
   element comparisons/s = triples x fields / s; bit-MAC/s = triples x 27 plane products x
   64 x words / s, against the ceiling.
3. End to end: --e2e-snps SNPs x --e2e-samples samples (5% missing), packed into a genotype_t
   store in process (no VCF: Snakemake is not on the device), then run_ccc3 (every job,
   cupy-b1, blocks of --block, triple files, merge to triples.tsv.gz) with a threshold chosen from
   a sample of triples so that about 1e-6 of all triples pass.
"""

import argparse
import datetime
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402
from bench_gpu import b1_ceiling  # noqa: E402

from genotile.backends.cuda import cupy_b1, cupy_ccc3, cupy_int8  # noqa: E402
from genotile.core import ccc3  # noqa: E402
from genotile.core.genotype import genotype_layout, genotype_planes  # noqa: E402
from genotile.core.plan import Plan  # noqa: E402
from genotile.io.planfile import write_plan  # noqa: E402
from genotile.pipeline import run_ccc3  # noqa: E402
from genotile.store.pack import open_store, pack  # noqa: E402

ENGINES = {"cupy-b1": cupy_b1.ENGINE, "cupy-int8": cupy_int8.ENGINE}


def genotypes(n, m, missing, seed):
    rng = np.random.default_rng(seed)
    freq = rng.beta(0.5, 0.5, size=n)
    g = rng.binomial(2, freq[:, None], size=(n, m)).astype(np.uint8)
    g[rng.random(g.shape) < missing] = 255
    return g


def block_rows(add, args, ceiling):
    n, m = args.block, args.fields
    g = genotypes(3 * n, m, 0.02, 1)
    layout = genotype_layout(g, "genotype_t")
    planes = genotype_planes(g, layout)
    blocks = [planes[b * n : (b + 1) * n] for b in range(3)]
    stats = [ccc3.vector_stats(b, layout) for b in blocks]
    products = sum(1 for ts in ccc3.count_terms(layout).values() for t in ts if t.left and t.right)
    for backend, middle in (("cupy-b1", args.middle), ("cupy-int8", max(1, args.middle // 8))):
        plan = ccc3.Plan3(3 * n, n, 1, n // middle)  # stage 0 of J = the first `middle` rows
        run = lambda thr, plan=plan, backend=backend: cupy_ccc3.triples_device(  # noqa: E731
            ENGINES[backend], blocks, stats, layout, plan, ccc3.Params(), (0, 1, 2), 0, thr
        )
        run(0.5)  # warm-up (compiles)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        res = run(0.5)
        seconds = time.perf_counter() - t0
        triples = len(plan.stage_rows(1, 0)) * n * n
        add(
            backend,
            f"block triple {n}x{n}x{n}, {len(plan.stage_rows(1, 0))} middle rows, {m} samples",
            seconds,
            triples * m,
            triples * products * 64 * layout.words,
            ceiling,
            res.values.shape[0],
        )


def e2e(add, args, ceiling, out):
    work = Path(args.workdir)
    n, m = args.e2e_snps, args.e2e_samples
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
    plan = Plan(n, args.block, 1)
    write_plan(plan, store / "plan.json", store / "perm.npy")
    t0 = time.perf_counter()
    pack(work / "codes.npy", ingest, plan, np.load(store / "perm.npy"), store / "planes.npy", store / "manifest.json")
    t_pack = time.perf_counter() - t0
    # threshold: from every triple of a sample block triple, the value 1e-6 of them reach
    planes, _, layout = open_store(store / "planes.npy", store / "manifest.json")
    sample = min(256, n // 3)
    blocks = [np.asarray(planes[b * sample : (b + 1) * sample]) for b in range(3)]
    stats = [ccc3.vector_stats(b, layout) for b in blocks]
    res = cupy_ccc3.triples_device(
        cupy_b1.ENGINE, blocks, stats, layout, ccc3.Plan3(3 * sample, sample, 1, 1), ccc3.Params(), (0, 1, 2), 0, None
    )
    best = np.sort(res.values.max(axis=1))[::-1]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--fields", type=int, default=20000)
    ap.add_argument("--middle", type=int, default=64)
    ap.add_argument("--e2e-snps", type=int, default=20000)
    ap.add_argument("--e2e-samples", type=int, default=2000)
    ap.add_argument("--workdir", default="/tmp/bench_ccc3")
    ap.add_argument("--out", default=".")
    ap.add_argument("--skip-e2e", action="store_true")
    args = ap.parse_args()
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

    block_rows(add, args, ceiling)
    if not args.skip_e2e:
        e2e(add, args, ceiling, out)
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
    main()
