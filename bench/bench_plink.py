#!/usr/bin/env python3
"""PLINK input benchmark (issue 17): genotile's .bed ingest against `plink2 --bfile B --make-pgen`.

    PYTHONPATH=src python3 bench/bench_plink.py [--samples 2000] [--variants 100000]
        [--p-missing 0.02] [--seed 1] [--repeats 3] [--threads 2] [--out TABLE.md] [--smoke]

Makes a PLINK 1 fileset of random genotypes (allele frequencies ~ Beta(0.5, 0.5), calls missing
with probability p_missing), written straight as .bed/.bim/.fam. Then, in this one run, `repeats`
times interleaved (medians reported; the machine is shared, so ratios are taken in one run):

  ours:  genotile ingest of the .bed for ibs / king (`genotype`: samples x variants codes, the
         matrix the store is packed from), in a child process: the ingest call's own time and
         the child's wall time (Python and imports included); pack (codes -> bit planes) is
         reported beside it, not in the ratio.
  peer:  `plink2 --bfile B --make-pgen --threads T` (wall time of the process): PLINK 2's own
         conversion of the same fileset into its native format.
  Both also in CPU seconds (all threads; ours the ingest call's, plink2's its whole process),
  which a loaded shared machine disturbs less than wall time.

Every run's codes are checked against the genotypes written (a wrong read stops the bench).
`--smoke` runs a tiny size once (what CI runs, tests/io/test_plink.py); without plink2 on PATH
it times genotile alone.
"""

import argparse
import json
import os
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


def write_bed(prefix: Path, n: int, m: int, p_missing: float, seed: int) -> np.ndarray:
    """A .bed/.bim/.fam of random ALT counts; returns the (samples, variants) codes (255 missing)."""
    rng = np.random.default_rng(seed)
    freq = rng.beta(0.5, 0.5, size=m)
    g = rng.binomial(2, freq[:, None], size=(m, n)).astype(np.uint8)  # variants x samples
    g[rng.random(g.shape) < p_missing] = 3
    # .bed 2-bit codes, A1 (= ALT) counted: 2 -> 00, 1 -> 10, 0 -> 11, missing -> 01
    two_bit = np.array([3, 2, 0, 1], dtype=np.uint8)[g]
    width = -(-n // 4)
    padded = np.zeros((m, 4 * width), dtype=np.uint8)
    padded[:, :n] = two_bit
    quads = padded.reshape(m, width, 4)
    packed = quads[..., 0] | (quads[..., 1] << 2) | (quads[..., 2] << 4) | (quads[..., 3] << 6)
    with open(f"{prefix}.bed", "wb") as fh:
        fh.write(b"\x6c\x1b\x01")
        fh.write(packed.tobytes())
    Path(f"{prefix}.bim").write_text("".join(f"1\trs{v}\t0\t{v + 1}\tT\tA\n" for v in range(m)))
    Path(f"{prefix}.fam").write_text("".join(f"0\ts{i}\t0\t0\t0\t-9\n" for i in range(n)))
    codes = g.T.copy()
    codes[codes == 3] = 255
    return codes


def phase_ingest(a) -> dict:
    from genotile.pairs import steps

    out = Path(a.workdir)
    t0, c0 = time.perf_counter(), time.process_time()
    m = steps.ingest(a.bed, "genotype", out / "codes.npy", out / "ingest.json")
    t1, c1 = time.perf_counter(), time.process_time()
    steps.plan(out / "ingest.json", 4096, 1, out / "plan.json", out / "perm.npy")
    steps.pack(
        out / "codes.npy", out / "ingest.json", out / "plan.json", out / "perm.npy", out / "planes.npy", out / "m.json"
    )
    t2 = time.perf_counter()
    truth = np.load(a.truth, mmap_mode="r")
    ok = bool(np.array_equal(np.load(out / "codes.npy", mmap_mode="r"), truth))
    return {
        "ingest": t1 - t0,
        "ingest_cpu": c1 - c0,
        "pack": t2 - t1,
        "ok": ok,
        "samples": m["n_vectors"],
        "variants": m["n_fields"],
    }


def child(a, **extra) -> dict:
    args = [sys.executable, __file__, "--phase", "ingest"]
    for key, value in extra.items():
        args += [f"--{key}", str(value)]
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ingest phase failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if not result["ok"]:
        raise SystemExit("genotile's codes differ from the genotypes written: the benchmark stops")
    result["wall"] = wall
    return result


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


PEER_CPU: list[float] = []  # CPU seconds of each plink2 run (less sensitive to a loaded machine than wall time)


def plink2(bfile: Path, out: Path, threads: int) -> float:
    cmd = ["plink2", "--bfile", str(bfile), "--make-pgen", "--threads", str(threads), "--out", str(out)]
    t0, c0 = time.perf_counter(), children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    PEER_CPU.append(children_cpu() - c0)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}")
    return wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--variants", type=int, default=100_000)
    p.add_argument("--p-missing", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None)
    p.add_argument("--smoke", action="store_true", help="a tiny size once (CI)")
    p.add_argument("--phase", help=argparse.SUPPRESS)
    p.add_argument("--bed", help=argparse.SUPPRESS)
    p.add_argument("--truth", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.phase:
        print(json.dumps(phase_ingest(a)))
        return
    if a.smoke:
        a.samples, a.variants, a.repeats = 37, 301, 1
    tmp = Path(tempfile.mkdtemp(prefix="bench_plink."))
    try:
        prefix = tmp / "data"
        t0 = time.perf_counter()
        np.save(tmp / "truth.npy", write_bed(prefix, a.samples, a.variants, a.p_missing, a.seed))
        print(f"# made {a.samples} x {a.variants} .bed in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        has_peer = shutil.which("plink2") is not None
        ours, theirs = [], []
        for k in range(a.repeats):
            if has_peer:
                theirs.append(plink2(prefix, tmp / f"pgen{k}", a.threads))
            work = tmp / f"ingest{k}"
            work.mkdir()
            ours.append(child(a, bed=f"{prefix}.bed", truth=tmp / "truth.npy", workdir=work))
            shutil.rmtree(work)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ingest = statistics.median(r["ingest"] for r in ours)
    wall = statistics.median(r["wall"] for r in ours)
    pack = statistics.median(r["pack"] for r in ours)
    cpu = statistics.median(r["ingest_cpu"] for r in ours)
    peer_cpu = statistics.median(PEER_CPU) if PEER_CPU else float("nan")
    peer = statistics.median(theirs) if theirs else float("nan")
    lines = [
        f"PLINK input: {a.samples} samples x {a.variants} variants, {a.p_missing:.0%} missing, "
        f"{os.cpu_count()} CPUs, --threads {a.threads}, medians of {a.repeats} interleaved runs",
        "",
        "| measurement | genotile (s) | `plink2 --bfile --make-pgen` (s) | genotile / plink2 | notes |",
        "|---|---|---|---|---|",
        f"| .bed -> codes (ingest) | {ingest:.3f} | {peer:.3f} | {ingest / peer:.2f} | child wall {wall:.2f} s "
        f"(imports included); pack {pack:.2f} s after it; codes checked |",
        f"| .bed -> codes, CPU seconds | {cpu:.3f} | {peer_cpu:.3f} | {cpu / peer_cpu:.2f} | all threads; "
        "plink2's whole process |",
        "",
        f"runs (s): genotile {[round(r['ingest'], 3) for r in ours]}, plink2 {[round(x, 3) for x in theirs]}",
    ]
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        Path(a.out).write_text(table)


if __name__ == "__main__":
    main()
