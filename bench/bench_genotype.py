#!/usr/bin/env python3
"""Genotype benchmark on the CPU (issue 3): ibs / king tiles and VCF ingestion against PLINK.

    PYTHONPATH=src python3 bench/bench_genotype.py [--samples 2000] [--variants 100000]
        [--ingest-samples 1000] [--ingest-variants 200000] [--p-missing 0.02]
        [--source msprime|random] [--seed 1] [--repeats 3] [--threads 2] [--data DIR]
        [--skip tiles|ingest] [--out TABLE.md]

Makes the data once (cached in --data, default a temporary folder): msprime diploid samples
(or random genotypes, allele frequencies ~ Beta(0.5, 0.5)), the first `variants` biallelic
sites, calls missing ('./.') with probability p_missing, written as bgzip VCF. Then, in this
one run, every measurement repeated `repeats` times, interleaved with the peer's, medians
reported (the machine is shared; docs/ceilings.md: ratios in the same run):

  tiles  (samples x variants): genotile `compute_tile` over every tile of the plan (one block
         when samples <= 4096), numpy backend, from the packed store (in memory), for ibs and
         king; also the tile job's file write (tilefile.write_tile, dense block included).
         Peers: `plink1.9 --bfile B --distance square 1-ibs flat-missing` and `plink2 --pfile P
         --make-king-table`, each from its own binary fileset made beforehand (not timed; as
         genotile's store), --threads T. Each genotile measurement runs in a child process
         (`--phase`), whose wall time (imports included) is reported too.
  ingest (ingest-samples x ingest-variants): genotile ingest (VCF -> codes) + plan + pack
         (codes -> packed planes), in a child process; peer `plink2 --vcf X --make-pgen`.
  --baseline REV: also once with the numpy backend and the VCF reading of git revision REV
         (before/after numbers; the VCF fast path off, as it did not exist before it).

Rates: element comparisons/s = unique pairs x variants / s; bit-MAC/s = the metric's plane
products (Terms with both sides) x n^2 x bits / s (a diagonal tile counted as its square, as
bench_snp.py does); GEMM MAC/s = float multiply-adds the backend issued / s, next to the
float32 sgemm MAC/s measured in the same run (2048 x 2048 x 16384).

`--smoke` (CI, tests/workflow/test_bench_smoke.py): tiny sizes (40 x 600 tiles in blocks of 16,
30 x 500 ingest, random genotypes, one repeat, a small sgemm), seconds on 2 cores; the tiles'
arrays must be the same on every backend (a mismatch fails the run), and a PLINK not installed
is skipped with its reason instead of stopping the run.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

import ceilings  # noqa: E402

# ---------------------------------------------------------------- data


def simulate(n: int, m: int, source: str, seed: int) -> np.ndarray:
    """(variants, 2n) haplotype alleles 0/1 of m biallelic sites."""
    if source == "msprime":
        import msprime

        harmonic = sum(1 / i for i in range(1, 2 * n))
        length = int(m / (4e-4 * harmonic) * 1.2) + 1000  # theta = 4 Ne mu = 4e-4 per bp
        while True:
            ts = msprime.sim_ancestry(
                n, sequence_length=length, recombination_rate=1e-8, population_size=10_000, random_seed=seed
            )
            ts = msprime.sim_mutations(ts, rate=1e-8, random_seed=seed, model=msprime.BinaryMutationModel())
            if ts.num_sites >= m:
                return ts.genotype_matrix()[:m].astype(np.uint8)
            length = int(length * 1.3)
    rng = np.random.default_rng(seed)
    freq = rng.beta(0.5, 0.5, size=m)
    return (rng.random((m, 2 * n)) < freq[:, None]).astype(np.uint8)


def write_vcf(hap: np.ndarray, path: Path, p_missing: float, seed: int) -> None:
    """bgzip VCF of haplotypes (variants, 2n): phased calls, './.' with probability p_missing."""
    import pysam

    m, h = hap.shape
    n = h // 2
    rng = np.random.default_rng(seed + 7)
    plain = path.with_suffix("")  # x.vcf.gz -> x.vcf
    head = (
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000000000>\n"
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
        + "\t".join(
            ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *[f"s{i}" for i in range(n)]]
        )
        + "\n"
    )
    with open(plain, "wb") as fh:
        fh.write(head.encode())
        for v0 in range(0, m, 4096):
            blk = hap[v0 : v0 + 4096].reshape(-1, n, 2)
            k = blk.shape[0]
            cell = np.empty((k, n, 4), np.uint8)
            cell[..., 0] = ord("0") + blk[..., 0]
            cell[..., 1] = ord("|")
            cell[..., 2] = ord("0") + blk[..., 1]
            cell[..., 3] = ord("\t")
            miss = rng.random((k, n)) < p_missing
            cell[miss, 0], cell[miss, 1], cell[miss, 2] = ord("."), ord("/"), ord(".")
            cell[:, -1, 3] = ord("\n")
            body = cell.reshape(k, -1)
            for r in range(k):
                fh.write(b"1\t%d\t.\tA\tT\t.\tPASS\t.\tGT\t" % (v0 + r + 1) + body[r].tobytes())
    pysam.tabix_compress(str(plain), str(path), force=True)
    plain.unlink()


def dataset(a, kind: str, n: int, m: int) -> Path:
    path = Path(a.data) / f"{kind}_{a.source}_{n}x{m}_miss{a.p_missing}_seed{a.seed}.vcf.gz"
    if not path.exists():
        t0 = time.perf_counter()
        write_vcf(simulate(n, m, a.source, a.seed), path, a.p_missing, a.seed)
        print(f"# made {path.name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return path


# ---------------------------------------------------------------- child phases


def phase_store(a) -> dict:
    """ingest + plan + pack of the tiles VCF into a store (not part of the tile timing)."""
    from genotile.store import stage

    out = Path(a.workdir)
    stage.ingest(a.vcf, "genotype", out / "codes.npy", out / "ingest.json")
    stage.plan(out / "ingest.json", a.block_size, a.seed, out / "plan.json", out / "perm.npy")
    stage.pack(
        out / "codes.npy",
        out / "ingest.json",
        out / "plan.json",
        out / "perm.npy",
        out / "planes.npy",
        out / "manifest.json",
    )
    return {}


def use_head(a) -> None:
    """--impl REV: the numpy backend and the VCF reading of git revision REV (before/after numbers)."""
    if a.impl == "tree":
        return
    import importlib.util

    from genotile import backends
    from genotile.core import genotype
    from genotile.io.readers import vcf
    from genotile.store import ingest_genotypes

    src = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{a.impl}:src/genotile/backends/numpy_blas.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(a.workdir) / "numpy_blas_head.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("genotile.backends.numpy_blas_head", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.MACS = [0]
    backends.BACKENDS["numpy"] = mod
    vcf.FAST_PATH = False  # cyvcf2 for every record
    ingest_genotypes.MEMORY_BYTES = 0  # rows through the temporary file and the memmap transpose
    genotype.scan_codes = _scan_codes_bincount  # as it was


def phase_tiles(a) -> dict:
    from genotile import backends
    from genotile.core.metrics import get_metric
    from genotile.core.plan import Plan
    from genotile.io.tilefile import arrays_digest, write_tile
    from genotile.pairs.tile import compute_tile
    from genotile.store.pack import open_store

    use_head(a)
    numpy_blas = backends.BACKENDS["numpy"]
    out = Path(a.workdir)
    planes_mm, manifest, layout = open_store(out / "planes.npy", out / "manifest.json")
    planes = np.ascontiguousarray(planes_mm)
    perm = np.load(out / "perm.npy")
    plan = Plan.from_json(manifest["plan"])
    metric = get_metric(a.metric)
    counts_terms = metric.counts(layout)
    products = [t for ts in counts_terms.values() for t in ts if t.left is not None and t.right is not None]
    bits = sum((t.left[1] - t.left[0]) * 64 for t in products)
    small = Plan(min(64, plan.n_vectors), plan.block_size, plan.seed)  # warm-up (thread pools)
    digests = []  # --smoke: each tile's arrays, to check the backends agree
    compute_tile(
        planes[: small.n_vectors], layout, perm[: small.n_vectors], small, metric, 0, 0, None, False, a.backend
    )
    macs0 = getattr(numpy_blas, "MACS", [0])[0]
    seconds = counts = write = bit_macs = 0.0
    pairs = 0
    for bi, bj in plan.tiles():
        t0 = time.perf_counter()
        arrays, meta = compute_tile(planes, layout, perm, plan, metric, bi, bj, None, True, a.backend)
        t1 = time.perf_counter()
        write_tile(out / f"tile_{a.metric}_{bi}_{bj}.npz", arrays, meta)
        write += time.perf_counter() - t1
        if a.smoke:
            digests.append(arrays_digest(arrays))
        seconds += t1 - t0
        counts += meta["seconds_counts"]
        pairs += meta["pairs_computed"]
        rows_i, rows_j = (plan.block(b).stop - plan.block(b).start for b in (bi, bj))
        bit_macs += rows_i * rows_j * bits
    return {
        "seconds": seconds,
        "seconds_counts": counts,
        "seconds_write": write,
        "pairs": pairs,
        "fields": manifest["n_fields"],
        "bit_macs": bit_macs,
        "gemm_macs": getattr(numpy_blas, "MACS", [0])[0] - macs0,
        "tiles": len(plan.tiles()),
        "products": len(products),
        "digest": hashlib.sha256("".join(digests).encode()).hexdigest() if a.smoke else None,
    }


def _scan_codes_bincount(codes) -> bool:
    """genotype.scan_codes before 2026-11-22 (np.bincount per block), for --baseline."""
    from genotile.core.encode import MISSING

    n, m = codes.shape
    step = max(1, (1 << 26) // max(1, m))
    complete = True
    for r0 in range(0, n, step):
        counts = np.bincount(np.asarray(codes[r0 : r0 + step]).ravel(), minlength=256)
        if counts[3:MISSING].any():
            raise SystemExit("bad genotype code")
        complete &= counts[MISSING] == 0
    return bool(complete)


def phase_ingest(a) -> dict:
    from genotile.store import stage

    use_head(a)
    out = Path(a.workdir)
    t0 = time.perf_counter()
    m = stage.ingest(a.vcf, "genotype", out / "codes.npy", out / "ingest.json").manifest
    t1 = time.perf_counter()
    stage.plan(out / "ingest.json", a.block_size, a.seed, out / "plan.json", out / "perm.npy")
    t2 = time.perf_counter()
    stage.pack(
        out / "codes.npy",
        out / "ingest.json",
        out / "plan.json",
        out / "perm.npy",
        out / "planes.npy",
        out / "manifest.json",
    )
    t3 = time.perf_counter()
    return {"ingest": t1 - t0, "plan": t2 - t1, "pack": t3 - t2, "variants": m["n_fields"], "samples": m["n_vectors"]}


def phase_ceiling(a) -> dict:
    out = {}
    try:
        out["popcount_words"] = ceilings.numba_popcount_words()
    except ImportError:  # no numba here
        pass
    rng = np.random.default_rng(0)
    m, k = (256, 2048) if a.smoke else (2048, 16384)
    x = rng.random((m, k), dtype=np.float32)
    y = rng.random((m, k), dtype=np.float32)
    x @ y.T
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        x @ y.T
        best = min(best, time.perf_counter() - t0)
    return {**out, "sgemm_macs": m * m * k / best}


PHASES = {"store": phase_store, "tiles": phase_tiles, "ingest": phase_ingest, "ceiling": phase_ceiling}


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished children so far: less sensitive than wall
    time to other work on a shared machine."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def child(a, phase: str, **extra) -> dict:
    args = [sys.executable, __file__, "--phase", phase, "--seed", str(a.seed), "--block-size", str(a.block_size)]
    for key, value in extra.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    args += ["--smoke"] if a.smoke else []
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    t0, c0 = time.perf_counter(), children_cpu()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["child_wall"], result["child_cpu"] = wall, children_cpu() - c0
    return result


CPU: dict = {}  # label -> CPU seconds of each PLINK run
MISSING: set = set()  # PLINK binaries --smoke goes on without


def run_plink(binary: str, args: list[str], out: Path, threads: int, label: str = "") -> float:
    """Wall seconds of one PLINK run; NaN where --smoke found it not installed (MISSING)."""
    if binary in MISSING:
        return float("nan")
    cmd = [binary, *args, "--allow-extra-chr", "--double-id", "--threads", str(threads), "--out", str(out)]
    t0, c0 = time.perf_counter(), children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}")
    CPU.setdefault(label, []).append(children_cpu() - c0)
    return wall


def peer_cpu(label: str) -> float:
    """Median CPU seconds of the PLINK runs of `label` (NaN where --smoke skipped PLINK)."""
    return med(CPU[label]) if label in CPU else float("nan")


def peer_label(tool: str, label: str) -> str:
    return f"{label} (not installed: skipped)" if tool in MISSING else label


# ---------------------------------------------------------------- main


def med(values) -> float:
    return statistics.median(values)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--variants", type=int, default=100_000)
    p.add_argument("--ingest-samples", type=int, default=1000)
    p.add_argument("--ingest-variants", type=int, default=200_000)
    p.add_argument("--p-missing", type=float, default=0.02)
    p.add_argument("--source", choices=["msprime", "random"], default="msprime")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--block-size", type=int, default=4096)
    p.add_argument("--data", default=None, help="folder for the generated VCFs (kept between runs)")
    p.add_argument("--skip", action="append", default=[], choices=["tiles", "ingest"])
    p.add_argument("--out", default=None)
    p.add_argument("--smoke", action="store_true", help="tiny sizes, backends checked to agree (CI; seconds)")
    p.add_argument(
        "--backends",
        default="numba,numpy",
        help="CPU backends timed on the tiles, comma-separated (each against the same PLINK runs)",
    )
    p.add_argument(
        "--baseline",
        metavar="REV",
        default=None,
        help="also time the numpy backend and VCF reading of git revision REV once (before/after)",
    )
    # child phases
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--vcf", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--metric", help=argparse.SUPPRESS)
    p.add_argument("--impl", default="tree", help=argparse.SUPPRESS)
    p.add_argument("--backend", default="numpy", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.phase:
        print(json.dumps(PHASES[a.phase](a)))
        return

    if a.smoke:
        a.samples, a.variants, a.ingest_samples, a.ingest_variants = 40, 600, 30, 500
        a.source, a.repeats, a.block_size = "random", 1, 16  # 3 blocks: diagonal and off-diagonal tiles
        a.backends = ",".join(b for b in a.backends.split(",") if b and b in available_backends())
    for tool in ("plink1.9", "plink2"):
        if shutil.which(tool) is None:
            if not a.smoke:
                raise SystemExit(f"{tool} is not on PATH (Debian: apt-get install {tool})")
            print(f"bench_genotype --smoke: {tool} is not installed: its peer rows skipped", flush=True)
            MISSING.add(tool)
    tmp = Path(tempfile.mkdtemp(prefix="bench_genotype."))
    a.data = a.data or str(tmp / "data")
    Path(a.data).mkdir(parents=True, exist_ok=True)
    results: dict = {"ceiling": child(a, "ceiling")}
    rows = []
    failed = False

    if "tiles" not in a.skip:
        vcf = dataset(a, "tiles", a.samples, a.variants)
        store = tmp / "store"
        store.mkdir()
        child(a, "store", vcf=vcf, workdir=store)
        plink_dir = tmp / "plink"
        plink_dir.mkdir()
        run_plink("plink1.9", ["--vcf", str(vcf), "--make-bed"], plink_dir / "b", a.threads)
        run_plink("plink2", ["--vcf", str(vcf), "--make-pgen"], plink_dir / "p", a.threads)
        peers = {
            "ibs": (
                "plink1.9",
                ["--bfile", str(plink_dir / "b"), "--distance", "square", "1-ibs", "flat-missing"],
                peer_label("plink1.9", "plink1.9 --distance square 1-ibs flat-missing"),
            ),
            "king": (
                "plink2",
                ["--pfile", str(plink_dir / "p"), "--make-king-table"],
                peer_label("plink2", "plink2 --make-king-table"),
            ),
        }
        names = [b for b in a.backends.split(",") if b]
        for metric, (tool, args, label) in peers.items():
            ours: dict = {b: [] for b in names}
            theirs = []
            for _ in range(a.repeats):
                theirs.append(run_plink(tool, args, plink_dir / f"out_{metric}", a.threads, metric))
                for b in names:
                    ours[b].append(child(a, "tiles", workdir=store, metric=metric, backend=b))
            results[metric] = {"ours": ours[names[0]], "peer": theirs, "by_backend": ours}
            if a.smoke:  # every backend's tiles the same arrays
                agree = len({r["digest"] for b in names for r in ours[b]}) == 1
                print(f"{metric}: the backends' tiles agree: {'yes' if agree else 'NO   <<< MISMATCH'}", flush=True)
                failed = failed or not agree
            if a.baseline:
                results[metric]["head"] = child(a, "tiles", workdir=store, metric=metric, impl=a.baseline)
            for b in names:
                runs = ours[b]
                t = med([r["seconds"] for r in runs])
                r0 = runs[0]
                rate = r0["pairs"] * r0["fields"] / t
                t_counts = med([r["seconds_counts"] for r in runs])
                if b == "numba" and "popcount_words" in results["ceiling"]:
                    # word pairs ANDed and counted: products x pairs computed x words, against the ceiling
                    words = r0["bit_macs"] / 64 / 2  # bit_macs counts a diagonal tile as its square
                    kernel = (
                        f"kernel {words / t_counts:.3g} word-pairs/s = "
                        f"{100 * words / t_counts / results['ceiling']['popcount_words']:.0f}% of the "
                        f"popcount ceiling"
                    )
                else:
                    kernel = f"GEMM {r0['gemm_macs'] / t_counts:.3g} MAC/s"
                rows.append(
                    {
                        "what": f"{metric}: compute_tile, all tiles ({a.samples} x {a.variants}), `{b}` backend",
                        "ours": t,
                        "peer": med(theirs),
                        "peer_label": label,
                        "extra": (
                            f"counts {t_counts:.2f} s; tile file write {med([r['seconds_write'] for r in runs]):.2f}"
                            f" s; child wall {med([r['child_wall'] for r in runs]):.2f} s; CPU s (whole child / "
                            f"PLINK) {med([r['child_cpu'] for r in runs]):.1f} / {peer_cpu(metric):.1f}; "
                            f"{rate:.3g} comparisons/s; {kernel}"
                        ),
                        "target": "< 1",
                    }
                )
            if a.baseline:
                h = results[metric]["head"]
                rows.append(
                    {
                        "what": f"{metric}: the same with {a.baseline}'s numpy backend (before)",
                        "ours": h["seconds"],
                        "peer": med(theirs),
                        "peer_label": label,
                        "extra": f"1 run; {h['pairs'] * h['fields'] / h['seconds']:.3g} comparisons/s",
                        "target": "",
                    }
                )

    if "ingest" not in a.skip:
        vcf = dataset(a, "ingest", a.ingest_samples, a.ingest_variants)
        ours, theirs = [], []
        for k in range(a.repeats):
            theirs.append(
                run_plink("plink2", ["--vcf", str(vcf), "--make-pgen"], tmp / f"pgen{k}", a.threads, "ingest")
            )
            work = tmp / f"ingest{k}"
            work.mkdir()
            ours.append(child(a, "ingest", vcf=vcf, workdir=work))
            shutil.rmtree(work)
        results["ingest"] = {"ours": ours, "peer": theirs}
        if a.baseline:
            work = tmp / "ingest_head"
            work.mkdir()
            results["ingest"]["head"] = child(a, "ingest", vcf=vcf, workdir=work, impl=a.baseline)
            shutil.rmtree(work)
        peer = med(theirs)
        ing, pack = med([r["ingest"] for r in ours]), med([r["pack"] for r in ours])
        plan_s = med([r["plan"] for r in ours])
        rows.append(
            {
                "what": f"ingest + plan + pack, VCF -> planes ({a.ingest_samples} x {a.ingest_variants})",
                "ours": ing + plan_s + pack,
                "peer": peer,
                "peer_label": peer_label("plink2", "plink2 --vcf --make-pgen"),
                "extra": (
                    f"ingest {ing:.2f} s, plan {plan_s:.2f} s, pack {pack:.2f} s; "
                    f"child wall {med([r['child_wall'] for r in ours]):.2f} s; CPU s (whole child / "
                    f"PLINK) {med([r['child_cpu'] for r in ours]):.1f} / {peer_cpu('ingest'):.1f}"
                ),
                "target": "<= 2",
            }
        )
        if a.baseline:
            h = results["ingest"]["head"]
            rows.append(
                {
                    "what": f"ingest + plan + pack with {a.baseline}'s VCF reading and scan (before)",
                    "ours": h["ingest"] + h["plan"] + h["pack"],
                    "peer": peer,
                    "peer_label": peer_label("plink2", "plink2 --vcf --make-pgen"),
                    "extra": f"1 run; ingest {h['ingest']:.2f} s, pack {h['pack']:.2f} s",
                    "target": "",
                }
            )

    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "src", "bench"], capture_output=True, text=True
    ).stdout.strip()
    head += " (+ uncommitted changes)" if dirty else ""
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    lines = [
        f"{datetime.date.today()}, {cpu}, {os.cpu_count()} CPUs, git {head}, numpy {np.__version__}, "
        f"python {platform.python_version()}; data: {a.source}, {a.p_missing:.0%} missing calls, seed {a.seed}; "
        f"PLINK --threads {a.threads}; medians of {a.repeats} interleaved runs.",
        "",
        f"float32 sgemm ceiling (same run): {results['ceiling']['sgemm_macs']:.3g} MAC/s; numba AND + popcount "
        f"ceiling: {results['ceiling'].get('popcount_words', float('nan')):.3g} word pairs/s",
        "",
        "| measurement | genotile (s) | peer | peer (s) | genotile / peer | target | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['what']} | {r['ours']:.2f} | `{r['peer_label']}` | {r['peer']:.2f} | "
            f"{r['ours'] / r['peer']:.2f} | {r['target']} | {r['extra']} |"
        )
    for metric in ("ibs", "king", "ingest"):
        if metric in results:
            ours = results[metric]["ours"]
            key = "seconds" if metric != "ingest" else "ingest"
            lines.append("")
            lines.append(
                f"{metric} runs (s): genotile {[round(r[key], 2) for r in ours]}, "
                f"peer {[round(x, 2) for x in results[metric]['peer']]}"
            )
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        Path(a.out).write_text(table)
    shutil.rmtree(tmp, ignore_errors=True)  # the data too, unless --data put it elsewhere
    if failed:
        raise SystemExit("bench_genotype --smoke: the backends' tiles differ")


def available_backends() -> list[str]:
    from genotile import backends

    return backends.available()


if __name__ == "__main__":
    main()
