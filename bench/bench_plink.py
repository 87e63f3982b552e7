#!/usr/bin/env python3
"""PLINK input benchmark (issues 17, 26): genotile's .bed -> store against `plink2 --bfile B --make-pgen`.

    PYTHONPATH=src python3 bench/bench_plink.py [--samples 2000] [--variants 100000]
        [--p-missing 0.02] [--seed 1] [--repeats 5] [--threads 2] [--out TABLE.md]
        [--before codes] [--before pgenlib] [--before digest] [--smoke]
    PYTHONPATH=src python3 bench/bench_plink.py --bfile DIR/x [--repeats 5] [--threads 2] ...

Makes a PLINK 1 fileset of random genotypes (allele frequencies ~ Beta(0.5, 0.5), calls missing
with probability p_missing), written straight as .bed/.bim/.fam; or, with --bfile, takes an
existing one as it is (e.g. `bench/bench_biobank.py --generate-only DIR/x --samples 480000
--variants 10000`: biobank sizes, whose genotypes this script would hold in memory). Then, in this
one run, `repeats` times interleaved (medians reported; the machine is shared, so ratios are taken
in one run):

  ours:  the workflow's fused "store" job for ibs / king (store/stage.store, no `samples` or
         `regions`, its codes temporary): the .bed read in one pass straight into the store's
         bits (io/readers/bed.py write_streamed; no codes matrix, memory bounded by the slab of
         samples held, not by the .bed), its calls counted in the same pass, the plan made first:
         the .bed turned into a store ready for tiling, in one child process (this script, calling
         store_stage.store with its stages wrapped in timers). As in the workflow, the input's
         content digest is recorded beforehand (the fingerprint the workflow writes as it parses,
         store/sources.write_fingerprint, untimed: the store job takes it from there); the job
         still hashes the .bed's SHA-256, alongside the pass. Its wall time from the parent
         (interpreter start, imports included) is the measure; the child also reports each
         stage's wall and CPU and its peak RSS.
  peer:  `plink2 --bfile B --make-pgen --threads T` (wall time of the process): PLINK 2's own
         conversion of the same fileset into its native format.
  before: with --before codes, ours again through the codes (session 5's store job: the numpy
         .bed reader writes the codes matrix, the 5 planes are packed from the .bed); with
         --before pgenlib, the path before the numpy .bed reader (pgenlib reads the .bed, the
         planes are packed from the codes); with --before digest, ours without the fingerprint
         (the job computes the .bed's content digest too, as a store job outside the workflow
         does); interleaved too.
  All also in CPU seconds (all threads, whole processes), which a loaded shared machine
  disturbs less than wall time. Where the machine has more CPUs than --threads, both
  processes run under `taskset` on the first --threads of them.

The child's bytecode (and numba's cache of the compiled transposer) is in place before the timing
(one untimed import and call first), as an installed package has it.
Every run's store and ingest counts are checked after the timing (a wrong read stops the bench):
against the genotypes written, or, with --bfile, the counts of missing calls and a spot check of
2,000 samples' bits against the .bed's own bytes. `--smoke` runs a tiny size once (what CI runs,
tests/io/test_plink.py); without plink2 on PATH it times genotile alone.
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
STAGES = ("imports", "ingest", "plan", "pack")


def write_bed(prefix: Path, n: int, m: int, p_missing: float, seed: int, chunk: int = 8192) -> np.ndarray:
    """A .bed/.bim/.fam of random ALT counts; returns the (samples, variants) codes (255 missing).

    Made a chunk of variants at a time (two float32 draws per call against the variant's allele
    frequency), so that large sizes take seconds and bounded memory."""
    rng = np.random.default_rng(seed)
    freq = rng.beta(0.5, 0.5, size=m).astype(np.float32)
    codes = np.empty((n, m), dtype=np.uint8)
    width = -(-n // 4)
    # .bed 2-bit codes, A1 (= ALT) counted: 2 -> 00, 1 -> 10, 0 -> 11, missing -> 01
    to_bed = np.array([3, 2, 0, 1], dtype=np.uint8)
    with open(f"{prefix}.bed", "wb") as fh:
        fh.write(b"\x6c\x1b\x01")
        for v0 in range(0, m, chunk):
            f = freq[v0 : v0 + chunk, None]
            g = (rng.random((f.shape[0], n), dtype=np.float32) < f).astype(np.uint8)  # variants x samples
            g += rng.random(g.shape, dtype=np.float32) < f
            g[rng.random(g.shape, dtype=np.float32) < p_missing] = 3
            padded = np.zeros((g.shape[0], 4 * width), dtype=np.uint8)
            padded[:, :n] = to_bed[g]
            quads = padded.reshape(g.shape[0], width, 4)
            fh.write((quads[..., 0] | (quads[..., 1] << 2) | (quads[..., 2] << 4) | (quads[..., 3] << 6)).tobytes())
            g[g == 3] = 255
            codes[:, v0 : v0 + chunk] = g.T
    Path(f"{prefix}.bim").write_text("".join(f"1\trs{v}\t0\t{v + 1}\tT\tA\n" for v in range(m)))
    Path(f"{prefix}.fam").write_text("".join(f"0\ts{i}\t0\t0\t0\t-9\n" for i in range(n)))
    return codes


def phase_store(a) -> dict:
    """The fused store job (store_stage.store, its codes temporary), timed stage by stage (wall, and
    CPU of all threads) by wrapping the stages it calls; run in `a.workdir` (the fingerprints'
    folder, store/sources.FINGERPRINTS, is relative to it)."""
    t0, c0 = time.perf_counter(), time.process_time()
    from genotile.store import stage as store_stage

    if a.path in ("codes", "pgenlib"):  # through the codes (session 5's store job); pgenlib: not numpy either
        from genotile.io.readers.bed import BedReader

        BedReader.held_bits = lambda self, threads=2: None
    if a.path == "pgenlib":  # pgenlib reads the .bed, the planes are packed from the codes
        from genotile.io.readers.bed import BedReader
        from genotile.store import pack

        BedReader.plain = property(lambda self: False)
        pack.plain_bed = lambda *args: None
    times = {"imports": (time.perf_counter() - t0, time.process_time() - c0)}
    for stage, name in (("ingest", "ingest"), ("plan", "plan"), ("pack", "pack")):
        setattr(store_stage, name, _timed(getattr(store_stage, name), stage, times))
    out = Path(a.workdir)
    os.chdir(out)
    store_stage.store(a.bed, "genotype", out / "ingest.json", out, 4096, 1)
    times = {stage: times.get(stage, (0.0, 0.0)) for stage in STAGES}
    m = json.loads((out / "ingest.json").read_text())
    return {"stages": times, "samples": m["n_vectors"], "variants": m["n_fields"], "peak_rss": peak_rss()}


def peak_rss() -> int:
    """This process's peak resident memory, bytes: /proc's VmHWM, this program's own (ru_maxrss
    would carry the high-water mark of the process it was forked from, the benchmark's, on Linux)."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def fingerprint(workdir: Path, bed: Path) -> None:
    """The input's fingerprint as the workflow writes it while it parses (store/sources.py): the
    store job run in `workdir` takes the .bed's content digest from it."""
    from genotile.store import sources

    here = Path.cwd()
    os.chdir(workdir)
    try:
        sources.write_fingerprint(sources.FINGERPRINTS / "bench.json", bed)
    finally:
        os.chdir(here)


def _timed(fn, stage: str, times: dict):
    """fn, adding its wall and CPU seconds to times[stage]."""

    def run(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            wall, cpu = times.get(stage, (0.0, 0.0))
            times[stage] = (wall + time.perf_counter() - t0, cpu + time.process_time() - c0)

    return run


def check(workdir: Path, truth_path: Path) -> None:
    """The store's planes and ingest counts against the genotypes written (after the timing)."""
    from genotile.core.encode import MISSING
    from genotile.core.genotype import genotype_planes
    from genotile.store.pack import open_store

    truth = np.load(truth_path, mmap_mode="r")
    if list(workdir.glob("*codes*")) or list(workdir.glob(".genotile-bits.*")):
        raise SystemExit("the store job left a codes file: the benchmark stops")
    counts = json.loads((workdir / "ingest.json").read_text())["counts"]
    missing = sum(int(np.count_nonzero(truth[r0 : r0 + 256] == MISSING)) for r0 in range(0, truth.shape[0], 256))
    if counts["missing_calls"] != missing or counts["variants"] != truth.shape[1]:
        raise SystemExit(f"genotile's ingest counts {counts} differ from the genotypes written: the benchmark stops")
    planes, _, layout = open_store(workdir / "planes.npy", workdir / "manifest.json")
    perm = np.load(workdir / "perm.npy")
    for r0 in range(0, perm.size, 256):
        if not np.array_equal(planes[r0 : r0 + 256], genotype_planes(truth[perm[r0 : r0 + 256]], layout)):
            raise SystemExit("genotile's planes differ from the genotypes written: the benchmark stops")


SPOT_SAMPLES = 2000  # samples of an existing fileset whose bits are checked against its .bed


def check_bed(workdir: Path, bed: Path, n: int, m: int, seed: int) -> None:
    """The store of an existing fileset (--bfile) against its .bed, after the timing: the missing
    calls counted from the .bed's bytes, and the bits of SPOT_SAMPLES samples (a store row
    each: its lo words, then its hi words) as the .bed's records hold them."""
    if list(workdir.glob("*codes*")) or list(workdir.glob(".genotile-bits.*")):
        raise SystemExit("the store job left a codes file: the benchmark stops")
    width = -(-n // 4)
    records = np.memmap(bed, dtype=np.uint8, mode="r", offset=3, shape=(m, width))
    counts = json.loads((workdir / "ingest.json").read_text())["counts"]
    missing = 0
    for v0 in range(0, m, 256):  # fields 01 (missing) of the samples, not the last byte's padding
        block = np.asarray(records[v0 : v0 + 256])
        fields = np.stack([(block >> (2 * k)) & 3 for k in range(4)], axis=2).reshape(block.shape[0], -1)[:, :n]
        missing += int(np.count_nonzero(fields == 1))
    if counts["missing_calls"] != missing or counts["variants"] != m:
        raise SystemExit(f"genotile's ingest counts {counts} differ from the .bed's: the benchmark stops")
    stored = np.load(workdir / "planes.npy", mmap_mode="r")
    perm = np.load(workdir / "perm.npy")
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, SPOT_SAMPLES), replace=False))
    samples = perm[rows]
    fields = (np.asarray(records[:, samples // 4]) >> (2 * (samples % 4)).astype(np.uint8)) & 3  # (m, spot)
    words = -(-m // 64)
    for h in range(2):  # lo, hi
        bits = np.zeros((samples.size, 64 * words), dtype=np.uint8)
        bits[:, :m] = ((fields >> h) & 1).T
        want = np.packbits(bits, axis=1, bitorder="little").view("<u8")
        if not np.array_equal(np.asarray(stored[rows, h * words : (h + 1) * words]), want):
            raise SystemExit("genotile's bits differ from the .bed's: the benchmark stops")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env=None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall, CPU seconds of the whole process, the finished process) of one command."""
    t0, c0 = time.perf_counter(), children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, children_cpu() - c0, proc


def ours(a, bed: Path, truth: Path | None, workdir: Path, path: str = "streamed") -> dict:
    given = a.pgen if path == "pgen" else bed  # the input of the store job (checked against the .bed)
    if path != "digest":  # the workflow's fingerprint, written as the workflow parses: untimed
        fingerprint(workdir, given)
    args = [sys.executable, __file__, "--phase", "store", "--bed", str(given), "--workdir", str(workdir)]
    args += ["--path", path]
    wall, cpu, proc = timed(pinned(a.threads) + args, child_env(a))
    if proc.returncode != 0:
        raise SystemExit(f"store phase failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if truth is not None:
        check(workdir, truth)
    else:
        check_bed(workdir, bed, result["samples"], result["variants"], a.seed)
    return {**result, "wall": wall, "cpu": cpu}


def child_env(a) -> dict:
    """The child's environment: genotile from src/, its bytecode cached in the bench's folder
    (as an installed package has it; PYTHONDONTWRITEBYTECODE would recompile every changed module
    in every run)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONPYCACHEPREFIX=str(a.pycache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def warm_up(a, bed: Path, tmp: Path) -> None:
    """One untimed store job of a tiny fileset: the child's bytecode and numba's cache of the
    compiled transposer are then in place (as an installed package has them after its first run)."""
    from genotile.io.readers.bed_words import MAGIC

    prefix = tmp / "warm"
    Path(f"{prefix}.bed").write_bytes(MAGIC + bytes(64 * 16))
    Path(f"{prefix}.bim").write_text("".join(f"1\tw{v}\t0\t{v + 1}\tT\tA\n" for v in range(64)))
    Path(f"{prefix}.fam").write_text("".join(f"0\tw{i}\t0\t0\t0\t-9\n" for i in range(64)))
    work = tmp / "warm_store"
    work.mkdir()
    args = [sys.executable, __file__, "--phase", "store", "--bed", f"{prefix}.bed", "--workdir", str(work)]
    subprocess.run(args, env=child_env(a), check=True, capture_output=True)
    shutil.rmtree(work)


def pinned(threads: int) -> list[str]:
    """`taskset -c CPUS` limiting a command to `threads` CPUs, where this process has more."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) <= threads or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", ",".join(map(str, cpus[:threads]))]


def plink2(bfile: Path, out: Path, threads: int) -> dict:
    cmd = [*pinned(threads), "plink2", "--bfile", str(bfile), "--make-pgen", "--threads", str(threads)]
    cmd += ["--out", str(out)]
    wall, cpu, proc = timed(cmd)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}")
    return {"wall": wall, "cpu": cpu}


BEFORE = {
    "codes": "through the codes (session 5: the numpy .bed reader writes them, planes packed from the .bed)",
    "pgenlib": "before the numpy .bed reader (pgenlib reads the .bed, planes packed from the codes)",
    "digest": "no fingerprint: the job computes the .bed's content digest too",
    "pgen": "the .pgen `plink2 --make-pgen` made of the .bed (made once, untimed): pgenlib's counts "
    "made into records, the .bed's pass",
}


def before_rows(before: dict[str, list[dict]], p_wall: float, p_cpu: float) -> list[str]:
    """Rows of the earlier paths (--before), where timed."""
    med = statistics.median
    rows = []
    for path, runs in before.items():
        wall, cpu = med(r["wall"] for r in runs), med(r["cpu"] for r in runs)
        what = ".pgen -> store" if path == "pgen" else f".bed -> store, {path}"
        rows += [
            f"| {what}, wall | {wall:.3f} | {p_wall:.3f} | {wall / p_wall:.2f} | {BEFORE[path]} |",
            f"| {what}, CPU seconds | {cpu:.3f} | {p_cpu:.3f} | {cpu / p_cpu:.2f} | |",
        ]
    return rows


def stage_rows(paths: dict[str, list[dict]]) -> list[str]:
    """Each stage's median wall / CPU seconds, a column per path; then what is outside them."""
    med = statistics.median
    head = "| genotile stage, wall / CPU (s) | " + " | ".join(paths) + " |"
    rows = [head, "|---|" + "---|" * len(paths)]
    for s in STAGES:
        cells = [
            f"{med(r['stages'][s][0] for r in runs):.3f} / {med(r['stages'][s][1] for r in runs):.3f}"
            for runs in paths.values()
        ]
        rows.append(f"| {s} | " + " | ".join(cells) + " |")
    # per run, then the median: the child's wall outside its stages
    outside = [
        f"{med(r['wall'] - sum(w for w, _ in r['stages'].values()) for r in runs):.3f}" for runs in paths.values()
    ]
    rows.append("| interpreter start, numpy, exit (child wall - stages) | " + " | ".join(outside) + " |")
    return rows


def table(a, mine: list[dict], peer: list[dict], before: dict[str, list[dict]]) -> str:
    med = statistics.median
    nan = float("nan")
    wall, cpu = med(r["wall"] for r in mine), med(r["cpu"] for r in mine)
    p_wall = med(r["wall"] for r in peer) if peer else nan
    p_cpu = med(r["cpu"] for r in peer) if peer else nan
    what = f"{a.bfile}.bed as it is" if a.bfile else f"{a.p_missing:.0%} missing"
    rss = {name: max(r["peak_rss"] for r in runs) / 2**30 for name, runs in {"streamed": mine, **before}.items()}
    lines = [
        f"PLINK input: {a.samples} samples x {a.variants} variants ({what}), "
        f"{os.cpu_count()} CPUs, --threads {a.threads} (both sides), medians of {a.repeats} interleaved runs",
        "",
        "| measurement | genotile (s) | `plink2 --bfile --make-pgen` (s) | genotile / plink2 | notes |",
        "|---|---|---|---|---|",
        f"| .bed -> store, wall | {wall:.3f} | {p_wall:.3f} | {wall / p_wall:.2f} | whole processes; ours "
        "the store job in one child, the .bed in one pass straight to its bits (no codes); planes and counts checked |",
        f"| .bed -> store, CPU seconds | {cpu:.3f} | {p_cpu:.3f} | {cpu / p_cpu:.2f} | all threads, whole processes |",
        *before_rows(before, p_wall, p_cpu),
        "",
        *stage_rows({"streamed": mine, **before}),
        "",
        "peak RSS of the store job (GiB, its most): " + ", ".join(f"{name} {v:.2f}" for name, v in rss.items()),
        "",
        f"runs, wall (s): genotile {[round(r['wall'], 3) for r in mine]}, plink2 {[round(r['wall'], 3) for r in peer]}"
        + "".join(f", {path} {[round(r['wall'], 3) for r in runs]}" for path, runs in before.items()),
        f"runs, peak RSS (GiB): genotile {[round(r['peak_rss'] / 2**30, 2) for r in mine]}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--variants", type=int, default=100_000)
    p.add_argument("--p-missing", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None)
    p.add_argument("--smoke", action="store_true", help="a tiny size once (CI)")
    p.add_argument("--before", action="append", choices=sorted(BEFORE), default=[], help="also time an earlier path")
    p.add_argument("--bfile", default=None, help="time an existing PLINK 1 fileset PREFIX (.bed/.bim/.fam) as it is")
    p.add_argument("--path", default="streamed", help=argparse.SUPPRESS)
    p.add_argument("--phase", help=argparse.SUPPRESS)
    p.add_argument("--bed", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.phase:
        print(json.dumps(phase_store(a)))
        return
    if a.smoke:
        a.samples, a.variants, a.repeats = 37, 301, 1
    a.threads = max(1, min(a.threads, len(os.sched_getaffinity(0))))
    tmp = Path(tempfile.mkdtemp(prefix="bench_plink."))
    try:
        if a.bfile:  # as it is: its sizes from its .fam and .bim, its store checked against the .bed
            prefix, truth = Path(a.bfile), None
            a.samples = sum(1 for _ in open(f"{prefix}.fam", "rb"))
            a.variants = sum(1 for _ in open(f"{prefix}.bim", "rb"))
        else:
            prefix, truth = tmp / "data", tmp / "truth.npy"
            t0 = time.perf_counter()
            np.save(truth, write_bed(prefix, a.samples, a.variants, a.p_missing, a.seed))
            print(f"# made {a.samples} x {a.variants} .bed in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        a.pycache = tmp / "pycache"
        if "pgen" in a.before:  # the .pgen a PLINK 2 user has of the same genotypes
            if shutil.which("plink2") is None:
                raise SystemExit("--before pgen needs plink2 on PATH")
            plink2(prefix, tmp / "made", a.threads)
            a.pgen = tmp / "made.pgen"
        warm_up(a, Path(f"{prefix}.bed"), tmp)
        has_peer = shutil.which("plink2") is not None
        mine, peer = [], []
        before: dict[str, list[dict]] = {path: [] for path in a.before}
        for k in range(a.repeats):
            if has_peer:
                peer.append(plink2(prefix, tmp / f"pgen{k}", a.threads))
                for f in tmp.glob(f"pgen{k}.*"):
                    f.unlink()
            work = tmp / f"store{k}"
            work.mkdir()
            mine.append(ours(a, Path(f"{prefix}.bed"), truth, work))
            shutil.rmtree(work)
            for path, runs in before.items():
                work.mkdir()
                runs.append(ours(a, Path(f"{prefix}.bed"), truth, work, path))
                shutil.rmtree(work)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = table(a, mine, peer, before)
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
