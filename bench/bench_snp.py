#!/usr/bin/env python3
"""SNP-distance benchmark on the CPU (issue 2): CPU backends, pipeline, Snakemake, baseline.

    PYTHONPATH=src python3 bench/bench_snp.py [--n 2000] [--length 30000] [--informative 3000]
        [--block-size 4096] [--seed 1] [--threshold 20] [--out TABLE.md]

Makes a random alignment (n sequences x length columns, about `informative` columns with
2-4 distinct bases, the rest constant; ~1% N, some gap runs, a little lower case), writes it
as FASTA in a temporary folder, then measures in this one run, each step in its own child
process (so each peak memory is its own: ru_maxrss of the child and its waited-for
descendants, from wait4 -- resource.getrusage's numbers for one child; this process stays
small because a child's ru_maxrss starts from its parent's size at the fork):
  (1) the tile kernel alone: compute_tile over every tile of the plan, on the numba (AND +
      popcount), numpy (BLAS sgemm) and numpy-popcount backends (--backends), next to CPU
      ceilings measured in this run (numba's own micro tile in L1; float32 sgemm MAC/s; numpy
      AND + popcount bit/s over large uint64 arrays; each in a child of its own);
  (2) the whole pipeline in-process (pipeline.run_all, snp: ingest + plan + pack + tiles + matrix +
      merge), with the threshold, and again with no threshold (every pair written);
  (3) the whole Snakemake workflow (snakemake -s <repo>/Snakefile --directory TMP --configfile CFG
      --cores 2 -q), if snakemake is on PATH and the Snakefile exists; its matrix.tsv and
      pairs.tsv.gz must be byte-identical to (2)'s;
  (4) the vector-based baseline, Algorithm 1 of the matrix-based Hamming paper: for each pair,
      compare the two rows with numpy on the same informative columns (uint8 codes, both valid
      and different, count). Timed on a random subset of pairs and extrapolated to all pairs;
      its counts are checked equal to the pipeline's matrix.tsv on that subset.
snp-dists 0.8.2 is run if it is on PATH; otherwise an ESTIMATE (pairs x length / an assumed
1e9 character comparisons/s) is printed, clearly marked as not a measurement.

Rates (docs/ceilings.md): element comparisons/s = unique pairs x informative fields / s;
bit-MAC/s = sum over the plane products of rows x cols x bits / s (bits = the product's word
range x 64, padding included; a diagonal tile's kernel computes its whole square block).
"""

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
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

MISSING = 255
ASSUMED_SNP_DISTS_RATE = 1e9  # character comparisons per second, single-threaded C (an assumption)


# ---------------------------------------------------------------- data


def make_alignment(n: int, length: int, informative: int, seed: int, acgt: bool = False) -> np.ndarray:
    """(n, length) uint8 ASCII alignment: `informative` columns with 2-4 bases, the rest constant;
    ~1% N, gap runs and a little lower case unless `acgt` (upper-case A, C, G, T only, on which
    snp, hamming and hammingdist's distance agree)."""
    rng = np.random.default_rng(seed)
    bases = np.frombuffer(b"ACGT", dtype=np.uint8)
    aln = np.repeat(rng.choice(bases, size=length)[None, :], n, axis=0)
    cols = np.sort(rng.choice(length, size=min(informative, length), replace=False))
    n_alleles = rng.choice([2, 3, 4], size=cols.size, p=[0.85, 0.10, 0.05])
    for c, k in zip(cols, n_alleles, strict=True):
        alleles = rng.permutation(bases)[:k]
        freqs = rng.dirichlet(np.ones(k) * 0.7)
        col = rng.choice(alleles, size=n, p=freqs)
        col[rng.choice(n, size=min(k, n), replace=False)] = alleles[: min(k, n)]  # every allele occurs
        aln[:, c] = col
    if acgt:
        return aln
    aln[rng.random(aln.shape) < 0.01] = ord("N")
    for _ in range(max(1, n // 10)):  # gap runs
        r, c0 = rng.integers(n), rng.integers(length)
        aln[r, c0 : c0 + int(rng.integers(1, 50))] = ord("-")
    lower = rng.random(aln.shape) < 0.02
    aln[lower] = np.where((aln[lower] >= 65) & (aln[lower] <= 90), aln[lower] + 32, aln[lower])
    return aln


def write_fasta(aln: np.ndarray, path: Path, width: int = 60) -> None:
    with open(path, "wb") as fh:
        for i, row in enumerate(aln):
            seq = row.tobytes()
            fh.write(f">seq{i:05d}\n".encode())
            fh.write(b"\n".join(seq[k : k + width] for k in range(0, len(seq), width)) + b"\n")


# ---------------------------------------------------------------- child phases


def phase_pipeline(a) -> dict:
    from genotile import pipeline
    from genotile.pairs import stage as pairs_stage
    from genotile.store import stage as store_stage

    thresholds = {} if a.threshold is None else {"snp": a.threshold}
    stages = {}

    def timed(name, fn):  # run_all calls the stages through the module: time each one
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                stages[name] = stages.get(name, 0.0) + time.perf_counter() - t

        return wrapper

    for module, names in ((store_stage, ("ingest", "plan", "pack")), (pairs_stage, ("tile", "matrix", "merge"))):
        for name in names:
            setattr(module, name, timed(name, getattr(module, name)))
    t0 = time.perf_counter()
    summaries = pipeline.run_all(
        a.fasta,
        a.outdir,
        ["snp"],
        block_size=a.block_size,
        seed=a.seed,
        thresholds=thresholds,
        backend=a.pipeline_backend,
    )
    seconds = time.perf_counter() - t0
    s = summaries["snp"]
    return {
        "seconds": seconds,
        "n_vectors": s["n_vectors"],
        "n_fields": s["n_fields"],
        "n_kept": s["n_fields_kept"],
        "pairs": s["pairs_computed"],
        "pairs_passing": s["pairs_passing"],
        "stages": stages,
        "backends": s["backend"],
    }


def measure_ceilings(backend: str) -> dict:
    rng = np.random.default_rng(0)
    if backend == "numba":  # its own micro tile, operands in L1: word pairs x 64 = bit-MACs
        return {
            "ceiling": ceilings.numba_popcount_words() * 64,
            "ceiling_what": "numba AND + popcount bit/s (its 2 x 2 micro tile, L1)",
        }
    if backend == "numpy":  # float32 sgemm at a tile-like shape: one MAC = one bit-MAC here
        m, k = 2048, 16384
        x = rng.random((m, k), dtype=np.float32)
        y = rng.random((m, k), dtype=np.float32)
        x @ y.T
        best = min(_timed(lambda: x @ y.T) for _ in range(3))
        return {"ceiling": m * m * k / best, "ceiling_what": "float32 sgemm MAC/s (2048 x 2048 x 16384)"}
    words = 1 << 22  # 32 MiB per operand: AND + popcount streamed from memory
    x = rng.integers(0, 2**63, size=words, dtype=np.uint64)
    y = rng.integers(0, 2**63, size=words, dtype=np.uint64)
    best = min(_timed(lambda: np.bitwise_count(x & y).sum()) for _ in range(5))
    return {"ceiling": words * 64 / best, "ceiling_what": "numpy AND + popcount bit/s (2^22 words)"}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def phase_kernel(a) -> dict:
    from genotile.core.metrics import get_metric
    from genotile.core.plan import Plan
    from genotile.pairs.tile import compute_tile
    from genotile.store.pack import open_store

    store = Path(a.outdir) / "store" / "nucleotide"
    planes_mm, manifest, layout = open_store(store / "planes.npy", store / "manifest.json")
    planes = np.ascontiguousarray(planes_mm)  # in memory: time the kernel, not the disk
    perm = np.load(store / "perm.npy")
    plan = Plan.from_json(manifest["plan"])
    metric = get_metric("snp")
    terms = [t for ts in metric.counts(layout).values() for t in ts if t.left is not None and t.right is not None]
    bits_per_pair = sum((t.left[1] - t.left[0]) * 64 for t in terms)
    # warm-up on a small tile-shaped problem (thread pools, page faults)
    small = Plan(min(64, plan.n_vectors), plan.block_size, plan.seed)
    compute_tile(
        planes[: small.n_vectors], layout, perm[: small.n_vectors], small, metric, 0, 0, a.threshold, False, a.backend
    )
    best = None
    for _ in range(a.repeats):  # the best of a few passes over every tile
        seconds = counts = bit_macs = 0.0
        pairs = 0
        for bi, bj in plan.tiles():
            t0 = time.perf_counter()
            _, meta = compute_tile(planes, layout, perm, plan, metric, bi, bj, a.threshold, False, a.backend)
            seconds += time.perf_counter() - t0
            counts += meta["seconds_counts"]
            pairs += meta["pairs_computed"]
            rows_i = plan.block(bi).stop - plan.block(bi).start
            rows_j = plan.block(bj).stop - plan.block(bj).start
            bit_macs += rows_i * rows_j * bits_per_pair
        if best is None or seconds < best[0]:
            best = (seconds, counts)
    seconds, counts = best
    return {
        "seconds": seconds,
        "seconds_counts": counts,
        "pairs": pairs,
        "bit_macs": bit_macs,
        "n_kept": manifest["n_kept"],
        "tiles": len(plan.tiles()),
        "words": layout.total_words,
    }


def phase_ceiling(a) -> dict:
    return measure_ceilings(a.backend)


def read_matrix(path) -> np.ndarray:
    import pandas as pd

    return pd.read_csv(path, sep="\t", index_col=0).to_numpy(dtype=np.int64)


def informative_codes(a) -> np.ndarray:
    """The alignment's codes, (n, informative columns) uint8, input order, for checking the
    pipeline's distances: made here once, untimed (`genotile run` keeps no codes of an alignment:
    its store is the workflow's, store/append.py)."""
    from genotile.store import stage as store_stage

    path = Path(a.outdir) / "bench_codes.npy"
    if not path.exists():
        store_stage.ingest(a.fasta, "nucleotide", path, path.with_suffix(".json"))
    return np.load(path)


def phase_baseline(a) -> dict:
    codes = informative_codes(a)  # (n, informative) uint8
    n = codes.shape[0]
    total = n * (n - 1) // 2
    rng = np.random.default_rng(a.seed + 1)
    k = min(a.baseline_pairs, total)
    if k == total:
        i, j = np.triu_indices(n, 1)
    else:  # k distinct random pairs i < j
        chosen = set()
        while len(chosen) < k:
            x, y = rng.integers(0, n, size=(2, 2 * k))
            chosen.update(zip(np.minimum(x, y)[x != y].tolist(), np.maximum(x, y)[x != y].tolist(), strict=True))
        i, j = (np.array(v, dtype=np.int64) for v in zip(*sorted(chosen)[:k], strict=True))
        order = rng.permutation(k)
        i, j = i[order], j[order]
    rows = [codes[r] for r in range(n)]
    out = np.empty(k, dtype=np.int64)
    t0 = time.perf_counter()
    for p in range(k):  # Algorithm 1, one pair at a time, numpy over the informative columns
        x, y = rows[i[p]], rows[j[p]]
        out[p] = np.count_nonzero((x != MISSING) & (y != MISSING) & (x != y))
    seconds = time.perf_counter() - t0
    matrix = read_matrix(Path(a.outdir) / "snp" / "matrix.tsv")
    agree = int(np.count_nonzero(matrix[i, j] == out))
    return {
        "seconds_sample": seconds,
        "pairs_sample": k,
        "pairs_total": total,
        "seconds": seconds / k * total,
        "n_kept": codes.shape[1],
        "agree": agree,
    }


def _best(fn, repeats: int, cpu: dict | None = None, key: str = "") -> float:
    """The best wall time of `repeats` calls; its CPU seconds (every thread of this process:
    robust to other load on the machine) go to cpu[key]."""
    best = None
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall, used = time.perf_counter() - t0, time.process_time() - c0
        if best is None or wall < best[0]:
            best = (wall, used)
    if cpu is not None:
        cpu.setdefault(key, []).append(best[1])
    return best[0]


def _child_cpu(cmd) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall, CPU seconds of the child and its descendants, the completed process)."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), proc


def _old_matrix_tsv(out_path, ids, matrix):
    """matrix.tsv as genotile wrote it before io/matrix_tsv.py: one Python string a cell."""
    from genotile.io.tsvgz import format_rows
    from genotile.util.atomic import atomic_path

    with atomic_path(out_path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("\t".join(["", *ids]) + "\n")
        for name, row in zip(ids, format_rows(matrix), strict=True):
            fh.write(name + "\t" + row + "\n")


def phase_stages(a) -> dict:
    """Ingest, pack and matrix.tsv timed the old way and the new, alternately, in this process on
    the same files (page cache warm for both): ingest by the streaming reader's two passes
    against the one pass over a memory map; pack with a bincount of every (column, code) against
    symbol_counts' compares; matrix.tsv with one Python string a cell against io/matrix_tsv.py.
    Each pair of outputs must be byte-identical."""
    from unittest import mock

    from genotile.core import encode
    from genotile.io import fasta_mmap, matrix_tsv
    from genotile.io.planfile import read_plan
    from genotile.pairs import stage as pairs_stage
    from genotile.store import pack as pack_module
    from genotile.store import stage as store_stage

    work = Path(a.outdir) / "stages"
    work.mkdir(parents=True, exist_ok=True)
    out = {}

    def ingest(tag):
        return lambda: store_stage.ingest(a.fasta, "nucleotide", work / f"{tag}.codes.npy", work / f"{tag}.json")

    def ingest_old():
        with mock.patch.object(fasta_mmap, "open_regular", lambda path: None):
            ingest("old")()

    cpu: dict = {}
    out["ingest"] = (_best(ingest_old, a.repeats, cpu, "ingest"), _best(ingest("new"), a.repeats, cpu, "ingest"))
    same = (work / "old.codes.npy").read_bytes() == (work / "new.codes.npy").read_bytes()
    store_stage.plan(work / "new.json", a.block_size, a.seed, work / "plan.json", work / "perm.npy")

    def pack(tag):
        return lambda: store_stage.pack(
            work / "new.codes.npy",
            work / "new.json",
            work / "plan.json",
            work / "perm.npy",
            work / f"{tag}.planes.npy",
            work / f"{tag}.store.json",
        )

    def old_counts(codes, chunk_columns=4096):
        return encode._bincount_counts(codes, np.arange(codes.shape[1]), chunk_columns)

    def pack_old():
        with mock.patch.object(pack_module, "symbol_counts", old_counts):
            pack("old")()

    out["pack"] = (_best(pack_old, a.repeats, cpu, "pack"), _best(pack("new"), a.repeats, cpu, "pack"))
    same &= (work / "old.planes.npy").read_bytes() == (work / "new.planes.npy").read_bytes()
    store = Path(a.outdir) / "store" / "nucleotide"
    plan = read_plan(store / "plan.json")
    tiles = pairs_stage.tile_paths(Path(a.outdir) / "snp" / "pairs", plan)

    def matrix(tag):
        return lambda: pairs_stage.matrix(tiles, store / "manifest.json", "snp", work / f"{tag}.matrix.tsv")

    def matrix_old():
        with mock.patch.object(matrix_tsv, "write_matrix_tsv", _old_matrix_tsv):  # merge imports it per call
            matrix("old")()

    out["matrix"] = (_best(matrix_old, a.repeats, cpu, "matrix"), _best(matrix("new"), a.repeats, cpu, "matrix"))
    same &= (work / "old.matrix.tsv").read_bytes() == (work / "new.matrix.tsv").read_bytes()
    return {"stages": out, "cpu": cpu, "identical": bool(same), "fasta_bytes": Path(a.fasta).stat().st_size}


def phase_run(a) -> dict:
    """`genotile run` (CLI, one process, default settings) on the FASTA, threshold as (2)."""
    cmd = [sys.executable, "-m", "genotile.cli", "run", str(a.fasta), "--outdir", str(Path(a.outdir) / "run")]
    cmd += ["--metric", "snp"] + ([] if a.threshold is None else ["--threshold", f"snp={a.threshold}"])
    wall, cpu, proc = _child_cpu(cmd)
    if proc.returncode != 0:
        raise RuntimeError(f"genotile run failed:\n{proc.stderr[-3000:]}")
    return {"seconds": wall, "cpu": cpu}


HAMMINGDIST = """
import sys, time, json, numpy as np, hammingdist
path, out, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
data = hammingdist.from_fasta_large(path)
t1 = time.perf_counter()
data.dump_lower_triangular(out)
t2 = time.perf_counter()
lt = np.asarray(data.lt_array)  # not timed: a sample of distances to check against genotile's
n = int(round((1 + (1 + 8 * lt.size) ** 0.5) / 2))
rng = np.random.default_rng(0)
i = rng.integers(1, n, pairs)
j = (rng.random(pairs) * i).astype(np.int64)
print(json.dumps({"compute": t1 - t0, "write": t2 - t1, "i": i.tolist(), "j": j.tolist(),
                  "d": lt[i * (i - 1) // 2 + j].astype(int).tolist()}))
"""


def phase_hammingdist(a) -> dict:
    """hammingdist CPU (PyPI): from_fasta_large (file read included) and its lower triangle
    written (dump_lower_triangular), as the issue measured it; a sample of its distances is
    compared with the pipeline's matrix.tsv."""
    wall, cpu, proc = _child_cpu(
        [sys.executable, "-c", HAMMINGDIST, str(a.fasta), str(Path(a.outdir) / "hd.lt"), "2000"]
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    codes = informative_codes(a)
    x, y = codes[got["i"]], codes[got["j"]]
    ours = np.count_nonzero((x != MISSING) & (y != MISSING) & (x != y), axis=1)
    return {
        "seconds": got["compute"] + got["write"],
        "compute": got["compute"],
        "write": got["write"],
        "process": wall,
        "cpu": cpu,
        "agree": int(np.count_nonzero(ours == np.asarray(got["d"]))),
        "sampled": len(got["d"]),
    }


def phase_make(a) -> dict:
    aln = make_alignment(a.n, a.length, a.informative, a.seed, a.acgt)
    write_fasta(aln, Path(a.fasta))
    return {"bytes": Path(a.fasta).stat().st_size}


PHASES = {
    "make": phase_make,
    "pipeline": phase_pipeline,
    "kernel": phase_kernel,
    "ceiling": phase_ceiling,
    "baseline": phase_baseline,
    "stages": phase_stages,
    "run": phase_run,
    "hammingdist": phase_hammingdist,
}


def run_child(cmd, log_path, env=None) -> tuple[int, float, int]:
    """Run cmd; (exit code, wall seconds, max RSS in KiB of it and its waited-for descendants)."""
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, wall, usage.ru_maxrss


def phase(name, a, tmp: Path, env, **extra) -> dict:
    result = tmp / f"{name}-{extra.get('backend', '')}-{extra.get('tag', '')}.json"
    cmd = [
        sys.executable,
        __file__,
        "--phase",
        name,
        "--result",
        str(result),
        "--fasta",
        str(a.fasta),
        "--outdir",
        str(extra.get("outdir", a.outdir)),
        "--block-size",
        str(a.block_size),
        "--seed",
        str(a.seed),
        "--baseline-pairs",
        str(a.baseline_pairs),
        "--n",
        str(a.n),
        "--length",
        str(a.length),
        "--informative",
        str(a.informative),
        "--backend",
        extra.get("backend", "numpy"),
        "--repeats",
        str(a.repeats),
        "--pipeline-backend",
        a.pipeline_backend,
        *(["--acgt"] if a.acgt else []),
    ]
    threshold = extra.get("threshold", a.threshold)
    cmd += ["--threshold", "none" if threshold is None else str(threshold)]
    log = result.with_suffix(".log")
    code, _, maxrss = run_child(cmd, log, env)
    if code != 0:
        sys.exit(f"phase {name} failed ({code}):\n{log.read_text()[-4000:]}")
    out = json.loads(result.read_text())
    out["maxrss_kib"] = maxrss
    return out


# ---------------------------------------------------------------- report


def fmt_rate(x) -> str:
    if x is None:
        return "–"
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g}"


def fmt_mem(kib) -> str:
    return "–" if kib is None else f"{kib / 1024:.0f} MiB"


def machine() -> str:
    model = platform.processor() or "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} cores"


def git_head() -> str:
    try:
        return (
            subprocess.run(
                ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
            or "?"
        )
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="sequences")
    ap.add_argument("--length", type=int, default=30000, help="alignment columns")
    ap.add_argument("--informative", type=int, default=3000, help="about this many columns with 2-4 bases")
    ap.add_argument("--block-size", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--threshold",
        type=_threshold,
        default=20,
        help="snp threshold of runs (1)-(3), 'none' keeps every pair (default: 20, the config's)",
    )
    ap.add_argument("--baseline-pairs", type=int, default=50000, help="pairs timed for the baseline")
    ap.add_argument("--cores", type=int, default=2, help="snakemake --cores")
    ap.add_argument("--repeats", type=int, default=3, help="passes over the tiles in (1); the fastest counts")
    ap.add_argument("--out", help="also write the markdown table here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    # internal: one measurement in a child process
    ap.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--fasta", help=argparse.SUPPRESS)
    ap.add_argument("--outdir", help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="numpy", help=argparse.SUPPRESS)
    ap.add_argument("--backends", default="numba,numpy,numpy-popcount", help="backends timed in (1), comma-separated")
    ap.add_argument("--pipeline-backend", default="auto", help="backend of (2) and (3)")
    ap.add_argument("--smoke", action="store_true", help="a small quick run of every phase (CI)")
    ap.add_argument("--no-all-pairs", action="store_true", help="skip (2) without a threshold (every pair written)")
    ap.add_argument(
        "--acgt", action="store_true", help="upper-case ACGT only (no N, gaps, lower case), as issue 16's cases"
    )
    a = ap.parse_args()
    if a.smoke and not a.phase:
        a.n, a.length, a.informative, a.repeats, a.baseline_pairs = 60, 500, 80, 1, 300
        a.backends = "numpy"

    if a.phase:
        Path(a.result).write_text(json.dumps(PHASES[a.phase](a)))
        return

    tmp = Path(tempfile.mkdtemp(prefix="bench_snp."))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}
    try:
        report = run(a, tmp, env)
    finally:
        if a.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(report)
    if a.out:
        Path(a.out).write_text(report)


def _threshold(text):
    return None if text.lower() in ("none", "null") else int(text)


def say(msg):
    print(f"[bench_snp {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(a, tmp: Path, env) -> str:
    a.load_before = os.getloadavg()[0]
    say(f"alignment {a.n} x {a.length}, ~{a.informative} informative, seed {a.seed}")
    # every step runs in a child, the alignment is made in one too: a child's ru_maxrss starts
    # from its parent's at the fork (Linux records the old image's high-water mark at exec),
    # so this process stays small
    a.fasta = tmp / "bench.aln.fa"
    a.outdir = tmp / "inproc"
    phase("make", a, tmp, env)

    say("(2) pipeline in-process, threshold")
    pipe = phase("pipeline", a, tmp, env, tag="thr")
    pipe_all = None
    if not a.no_all_pairs:
        say("(2') pipeline in-process, no threshold")
        pipe_all = phase("pipeline", a, tmp, env, outdir=tmp / "inproc_all", threshold=None, tag="all")
    kernels = {}
    for backend in a.backends.split(","):
        say(f"(1) tile kernel, {backend}")
        kernels[backend] = phase("kernel", a, tmp, env, backend=backend)
        ceiling = phase("ceiling", a, tmp, env, backend=backend, tag="ceiling")
        kernels[backend].update(ceiling=ceiling["ceiling"], ceiling_what=ceiling["ceiling_what"])
    say("(4) baseline (Algorithm 1, numpy per pair)")
    base = phase("baseline", a, tmp, env)

    say("stages: ingest, pack, matrix.tsv before / after (issue 16)")
    stages = phase("stages", a, tmp, env)
    say("genotile run (one process)")
    whole = phase("run", a, tmp, env)
    say("hammingdist CPU (from_fasta_large, lower triangle written)")
    hd = phase("hammingdist", a, tmp, env)

    n_kept, pairs = pipe["n_kept"], pipe["pairs"]
    smk = snakemake_run(a, tmp, env)
    sd = snp_dists(a, tmp, pipe["pairs"])

    elements = pairs * n_kept
    rows = []  # (what, seconds, element comps/s, bit-MAC/s, % of ceiling, peak memory, note)
    for backend, k in kernels.items():
        rate = k["bit_macs"] / k["seconds"]
        rows.append(
            (
                f"(1) tile kernel, `{backend}` ({k['tiles']} tile(s), compute_tile, best of {a.repeats})",
                k["seconds"],
                k["pairs"] * k["n_kept"] / k["seconds"],
                rate,
                f"{100 * rate / k['ceiling']:.0f}%",
                k["maxrss_kib"],
            )
        )
    rows.append(
        (
            f"(2) pipeline in-process (`pipeline.run_all`), threshold {a.threshold}",
            pipe["seconds"],
            elements / pipe["seconds"],
            None,
            None,
            pipe["maxrss_kib"],
        )
    )
    if pipe_all is not None:
        rows.append(
            (
                f"(2) pipeline in-process, no threshold ({pipe_all['pairs_passing']:,} pairs written)",
                pipe_all["seconds"],
                elements / pipe_all["seconds"],
                None,
                None,
                pipe_all["maxrss_kib"],
            )
        )
    if smk.get("seconds") is not None:
        rows.append(
            (
                f"(3) Snakemake, `--cores {a.cores}`, threshold {a.threshold} (wall, incl. startup)",
                smk["seconds"],
                elements / smk["seconds"],
                None,
                None,
                smk["maxrss_kib"],
            )
        )
    else:
        rows.append((f"(3) Snakemake: pending ({smk['why']})", None, None, None, None, None))
    rows.append(
        (
            f"(4) baseline: Algorithm 1, numpy per pair (extrapolated from {base['pairs_sample']:,} pairs)",
            base["seconds"],
            elements / base["seconds"],
            None,
            None,
            base["maxrss_kib"],
        )
    )
    if sd.get("measured"):
        rows.append(
            (
                "snp-dists 0.8.2 (measured, all columns)",
                sd["seconds"],
                elements / sd["seconds"],
                None,
                None,
                sd["maxrss_kib"],
            )
        )
    else:
        rows.append(
            (
                f"snp-dists 0.8.2: ESTIMATE, not a measurement ({pairs:,} pairs x {a.length:,} columns "
                f"/ assumed {ASSUMED_SNP_DISTS_RATE:.0e} char comparisons/s)",
                sd["seconds"],
                elements / sd["seconds"],
                None,
                None,
                None,
            )
        )

    lines = [
        f"Alignment: {a.n:,} sequences x {a.length:,} columns, {n_kept:,} informative (kept) columns, "
        f"{pairs:,} unique pairs; block size {a.block_size}, seed {a.seed}, "
        f"backend of (2) and (3): {a.pipeline_backend} (the tiles of (2) ran on {', '.join(pipe['backends'])}).",
        f"Run {datetime.date.today().isoformat()} on {machine()}, genotile {git_head()}, numpy {np.__version__}, "
        f"Python {platform.python_version()}; load average before / after: {a.load_before:.2f} / "
        f"{os.getloadavg()[0]:.2f}.",
        "",
        "| measurement | seconds | element comparisons/s | bit-MAC/s | % of ceiling | peak RSS | "
        "speed-up vs baseline | vs snp-dists" + (" (est.)" if not sd.get("measured") else "") + " |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for what, sec, el, bm, pct, mem in rows:
        if sec is None:
            lines.append(f"| {what} | pending | – | – | – | – | – | – |")
            continue
        lines.append(
            f"| {what} | {sec:.3g} | {fmt_rate(el)} | {fmt_rate(bm)} | {pct or '–'} | {fmt_mem(mem)} | "
            f"{base['seconds'] / sec:.3g}x | {sd['seconds'] / sec:.3g}x |"
        )
    lines += [
        "",
        "Ceilings measured in this run (each in a child process, right after its kernel): "
        + "; ".join(f"`{b}`: {fmt_rate(k['ceiling'])} {k['ceiling_what']}" for b, k in kernels.items())
        + ".",
        "Kernel counts alone (`count_matrices`, inside compute_tile): "
        + ", ".join(f"`{b}` {k['seconds_counts']:.3g} s" for b, k in kernels.items())
        + f"; planes: {next(iter(kernels.values()))['words']} words per sequence.",
        f"Baseline: {base['pairs_sample']:,} random pairs timed in {base['seconds_sample']:.3g} s, extrapolated "
        f"x {base['pairs_total'] / base['pairs_sample']:.4g} to all {base['pairs_total']:,} pairs; its counts equal "
        f"the pipeline's matrix.tsv on {base['agree']:,} of {base['pairs_sample']:,} pairs.",
    ]
    for label, p in (("threshold", pipe), ("no threshold", pipe_all)):
        if p is None:
            continue
        lines.append(
            f"Pipeline stages ({label}): "
            + ", ".join(f"{k} {v:.3g} s" for k, v in p["stages"].items())
            + " (tile = compute_tile + writing the tile file; matrix = matrix.tsv; merge = pairs.tsv.gz "
            "+ summary.json)."
        )
    if smk.get("seconds") is not None:
        lines.append(
            f"Snakemake: {smk['jobs']}; matrix.tsv and pairs.tsv.gz byte-identical to the in-process "
            f"run: {smk['identical']}. Peak RSS = largest single process (wait4)."
        )
    if not sd.get("measured"):
        lines.append(
            f"snp-dists is not on PATH (no Debian package; no network to build it): its row is an "
            f"ESTIMATE, {pairs:,} x {a.length:,} / {ASSUMED_SNP_DISTS_RATE:.0e} = {sd['seconds']:.3g} s, "
            f"not a measurement."
        )
    lines.append("Peak RSS: ru_maxrss of the measuring child process (Python + numpy included).")
    lines += stage_table(a, stages, whole, hd, smk)
    if base["agree"] != base["pairs_sample"]:
        lines.append(
            f"**MISMATCH: the baseline disagrees with the pipeline on {base['pairs_sample'] - base['agree']} pairs.**"
        )
    return "\n".join(lines) + "\n"


def stage_table(a, stages: dict, whole: dict, hd: dict, smk: dict) -> list[str]:
    """Issue 16's rows: ingest, pack and matrix.tsv before / after, and the whole run against
    hammingdist CPU."""
    mb = stages["fasta_bytes"] / 1e6
    lines = [
        "",
        f"Stages before / after (issue 16), best of {a.repeats}, same process and files; outputs byte-identical: "
        f"{stages['identical']}.",
        "",
        "| stage | before (s) | after (s) | speed-up | CPU s before / after | CPU speed-up | after, MB/s of FASTA |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    what = {
        "ingest": "ingest (streaming, two passes -> one pass over a memory map)",
        "pack": "pack (bincount symbol counts -> compares)",
        "matrix": f"matrix.tsv ({a.n:,} x {a.n:,}; a string a cell -> numpy byte tables)",
    }
    for key, (old, new) in stages["stages"].items():
        rate = f"{mb / new:,.0f}" if key == "ingest" else "–"
        c_old, c_new = stages.get("cpu", {}).get(key, (float("nan"), float("nan")))
        lines.append(
            f"| {what[key]} | {old:.3g} | {new:.3g} | {old / new:.2f}x | {c_old:.3g} / {c_new:.3g} | "
            f"{c_old / c_new:.2f}x | {rate} |"
        )
    lines += ["", "| whole run | seconds | CPU s | hammingdist / genotile (wall) |", "|---|---:|---:|---:|"]
    if "error" in hd:
        lines.append(f"| hammingdist CPU: not run ({hd['error']}) | – | – | – |")
        return lines
    lines.append(
        f"| hammingdist CPU 1.5 (`from_fasta_large` {hd['compute']:.3g} s + lower triangle written "
        f"{hd['write']:.3g} s) | {hd['seconds']:.3g} | {hd.get('cpu', float('nan')):.3g} | 1 |"
    )
    lines.append(
        f"| `genotile run` (one process, defaults, threshold {a.threshold}, matrix.tsv written) | "
        f"{whole['seconds']:.3g} | {whole.get('cpu', float('nan')):.3g} | {hd['seconds'] / whole['seconds']:.2f}x |"
    )
    if smk.get("seconds") is not None:
        lines.append(
            f"| Snakemake `--cores {a.cores}` (block size {a.block_size}) | {smk['seconds']:.3g} | – | "
            f"{hd['seconds'] / smk['seconds']:.2f}x |"
        )
    lines.append(
        f"hammingdist's distances equal genotile's on {hd['agree']:,} of {hd['sampled']:,} sampled pairs "
        "(they agree on upper-case ACGT, `--acgt`; hammingdist counts N against a base as a difference)."
    )
    return lines


def snakemake_run(a, tmp: Path, env) -> dict:
    exe = shutil.which("snakemake")
    snakefile = REPO / "Snakefile"
    if exe is None or not snakefile.exists():
        return {"why": "snakemake not on PATH" if exe is None else "no Snakefile in the repo yet"}
    import yaml

    work = tmp / "smk"
    work.mkdir()
    cfg = work / "bench.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "datasets": {"bench": {"input": str(a.fasta), "metrics": ["snp"]}},
                "thresholds": {"snp": a.threshold},
                "block_size": a.block_size,
                "dense_max": 20000,
                "seed": a.seed,
                "backend": a.pipeline_backend,
            }
        )
    )
    say(f"(3) snakemake --cores {a.cores}")
    cmd = [exe, "-s", str(snakefile), "--directory", str(work), "--configfile", str(cfg), "--cores", str(a.cores), "-q"]
    code, wall, maxrss = run_child(cmd, tmp / "snakemake.log", env)
    if code != 0:
        log = (tmp / "snakemake.log").read_text()[-3000:]
        return {"why": f"snakemake failed with exit code {code}: {log.splitlines()[-1] if log else ''}"}
    res, ref = work / "results" / "bench" / "snp", Path(a.outdir) / "snp"
    identical = all((res / f).read_bytes() == (ref / f).read_bytes() for f in ("matrix.tsv", "pairs.tsv.gz"))
    n_tiles = len(list((res / "pairs").glob("tile_*.npz")))
    return {
        "seconds": wall,
        "maxrss_kib": maxrss,
        "identical": identical,
        "jobs": f"{n_tiles} tile job(s) plus ingest, plan, pack, matrix, merge",
    }


def snp_dists(a, tmp: Path, pairs: int) -> dict:
    exe = shutil.which("snp-dists")
    if exe is None:
        return {"measured": False, "seconds": pairs * a.length / ASSUMED_SNP_DISTS_RATE}
    say("snp-dists")
    out = tmp / "snp-dists.tsv"
    with open(out, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen([exe, "-q", str(a.fasta)], stdout=fh, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        return {"measured": False, "seconds": pairs * a.length / ASSUMED_SNP_DISTS_RATE}
    return {"measured": True, "seconds": wall, "maxrss_kib": usage.ru_maxrss}


if __name__ == "__main__":
    main()
