#!/usr/bin/env python3
"""The output stages alone (issue 16): tiles read and checked, pairs.tsv.gz, matrix.tsv.

    PYTHONPATH=src python3 bench/bench_output.py [--case NAME ...] [--matrix NAME[:N] ...] [--repeats 3]
        [--out TABLE.md] [--smoke]

Each case writes a FASTA alignment (bench_e2e.write_fasta), runs `genotile run` on it in this
process (pipeline.run_all; not timed) for the tiles, then times, best of --repeats, each stage on
those tiles as the workflow's jobs run it:
  read      merge.read_tiles: every tile loaded, its checksum and contents checked;
  pairs     pairs/stage.merge: pairs.tsv.gz, histogram.tsv, summary.json (the tiles read again);
  matrix    pairs/stage.matrix: matrix.tsv (the tiles' dense blocks; cases with one only).
Per stage: wall seconds, CPU seconds of this process (all its threads), the uncompressed output
in MB and MB/s of it, and the SHA-256 of the uncompressed output, so two commits' runs show
the outputs identical. Cases (scaled to a 2-core machine; issue 16 names the full sizes):
  near_dup  snp_200k-like: 40,000 x 2,000, 300 variable columns, 200 clusters, half exact
            copies (collapse_duplicates: pairs expanded in the merge), threshold 2;
  clusters  snp_40k-like: 10,000 x 2,000, 2,000 variable, 100 clusters, 1% N, threshold 20;
  dense     10,000 x 3,000, 300 variable, threshold 10, every distance in matrix.tsv.
Matrices (`--matrix`, stage `write`): io/matrix_tsv.write_matrix_tsv alone on a synthetic
symmetric matrix (numba's start, where the writer uses it, included: the matrix job pays it
too), NAME:N for another size:
  snp_ints     10,000 x 10,000 uint16 distances 0..2999 (a snp matrix.tsv, 10^8 cells);
  king_floats  2,000 x 2,000 kinship-like floats (a - 2b) / 2c (repr per cell).
Each write runs in a new process (the matrix job's own), the matrix made there untimed.
"""

import argparse
import datetime
import gzip
import hashlib
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from bench_e2e import Case, write_fasta  # noqa: E402
from bench_snp import git_head, machine  # noqa: E402

CASES = {
    "near_dup": (Case("fasta", 40_000, 2_000, 2, variable=300, clusters=200, n_fraction=0.01, copies=0.5), False),
    "clusters": (Case("fasta", 10_000, 2_000, 20, variable=2_000, clusters=100, n_fraction=0.01), False),
    "dense": (Case("fasta", 10_000, 3_000, 10, variable=300, clusters=200), True),
}
MATRICES = {"snp_ints": 10_000, "king_floats": 2_000}
SMOKE_MATRICES = {"snp_ints": 300, "king_floats": 200}
SMOKE = {
    "near_dup": (replace(CASES["near_dup"][0], n=400, length=400, variable=60, clusters=8), True),
    "clusters": (replace(CASES["clusters"][0], n=300, length=300, variable=300, clusters=5), True),
}


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(fn, repeats: int) -> tuple[float, float]:
    """(wall, cpu) seconds of the fastest of `repeats` calls."""
    runs = []
    for _ in range(repeats):
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0, cpu_seconds() - c0))
    return min(runs)


def content(path: Path, gz: bool) -> tuple[int, str]:
    """(bytes, sha256) of a file's uncompressed content."""
    data = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def run_case(name: str, case: Case, dense: bool, root: Path, repeats: int) -> list[dict]:
    from genotile import pipeline
    from genotile.core.metrics import get_metric
    from genotile.core.plan import Plan
    from genotile.pairs import stage
    from genotile.pairs.merge import read_tiles
    from genotile.store.manifest import store_identity
    from genotile.util.readback import load_json, load_permutation

    work = root / name
    work.mkdir()
    fasta = work / "in.fa"
    write_fasta(fasta, case)
    t0 = time.perf_counter()
    pipeline.run_all(fasta, work / "run", ["snp"], thresholds={"snp": case.threshold}, dense_max=case.n if dense else 0)
    print(f"{name}: genotile run {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    store = work / "run" / "store" / "nucleotide"
    manifest_path = store / "manifest.json"
    manifest = load_json(manifest_path, "store manifest")
    plan = Plan.from_json(manifest["plan"])
    perm = load_permutation(store / "perm.npy", plan.n_vectors)
    tiles = sorted((work / "run" / "snp" / "pairs").glob("tile_*.npz"))
    metric = get_metric("snp")
    out = work / "out"
    out.mkdir()
    tile_mb = sum(p.stat().st_size for p in tiles) / 1e6
    rows = []

    def read():
        for _ in read_tiles(tiles, plan, metric, store_identity(manifest), perm):
            pass

    wall, cpu = best(read, repeats)
    rows.append({"stage": "read", "wall": wall, "cpu": cpu, "mb": tile_mb, "sha": f"{len(tiles)} tiles"})

    pairs = out / "pairs.tsv.gz"
    config = {"threshold": case.threshold}
    wall, cpu = best(lambda: stage.merge(tiles, manifest_path, "snp", pairs, out / "summary.json", config), repeats)
    size, sha = content(pairs, gz=True)
    rows.append({"stage": "pairs", "wall": wall, "cpu": cpu, "mb": size / 1e6, "sha": sha[:16]})
    rows[-1]["gz_mb"] = pairs.stat().st_size / 1e6

    if dense:
        matrix = out / "matrix.tsv"
        wall, cpu = best(lambda: stage.matrix(tiles, manifest_path, "snp", matrix), repeats)
        size, sha = content(matrix, gz=False)
        rows.append({"stage": "matrix", "wall": wall, "cpu": cpu, "mb": size / 1e6, "sha": sha[:16]})
    label = f"{name} ({case.n:,} x {case.length:,}, thr {case.threshold}, {len(tiles)} tiles)"
    return [{"case": label, **r} for r in rows]


def synthetic(name: str, n: int):
    """The symmetric matrix of a --matrix case (seeded)."""
    import numpy as np

    rng = np.random.default_rng(0)
    if name == "snp_ints":
        m = rng.integers(0, 3000, (n, n), dtype=np.uint16)
    else:  # int16 draws and in-place steps: 20,000 x 20,000 fits in ~7 GB
        a, b = (rng.integers(0, 3000, (n, n), dtype=np.int16) for _ in range(2))
        a -= 2 * b
        del b
        m = a / (2.0 * (rng.integers(0, 3000, (n, n), dtype=np.int16) + 1))
        del a
    for i in range(n):  # symmetric: the upper triangle mirrored (numpy buffers the overlap)
        m[i, : i + 1] = 0
    m += m.T
    return m


def write_once(name: str, n: int, out: str) -> None:
    """One timed write_matrix_tsv in this (fresh) process: prints "wall cpu"."""
    from genotile.io.matrix_tsv import write_matrix_tsv

    matrix = synthetic(name, n)
    ids = [f"sample{k}" for k in range(n)]
    c0, t0 = cpu_seconds(), time.perf_counter()
    write_matrix_tsv(out, ids, matrix)
    print(time.perf_counter() - t0, cpu_seconds() - c0)


def run_matrix(name: str, n: int, root: Path, repeats: int) -> list[dict]:
    """Best of `repeats` writes, each in a new process as the matrix job is (numba's import and
    kernel load, where the writer uses numba, are counted)."""
    import subprocess

    out = root / f"{name}_{n}.tsv"
    runs = []
    for _ in range(repeats):
        args = [sys.executable, __file__, "--write-once", name, str(n), str(out)]
        done = subprocess.run(args, check=True, capture_output=True, text=True)
        runs.append(tuple(map(float, done.stdout.split()[-2:])))
    wall, cpu = min(runs)
    size, sha = content(out, gz=False)
    out.unlink()
    label = f"{name} ({n:,} x {n:,} {'uint16' if name == 'snp_ints' else 'float64'})"
    return [{"case": label, "stage": "write", "wall": wall, "cpu": cpu, "mb": size / 1e6, "sha": sha[:16]}]


def table(rows: list[dict], meta: str) -> str:
    lines = [
        meta,
        "",
        "| case | stage | wall s | CPU s | output MB | MB/s | uncompressed sha256 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mb = f"{r['mb']:.1f}" + (f" ({r['gz_mb']:.1f} gz)" if "gz_mb" in r else "")
        what = "tiles" if r["stage"] == "read" else "text"  # write: matrix.tsv alone
        lines.append(
            f"| {r['case']} | {r['stage']} | {r['wall']:.2f} | {r['cpu']:.2f} | {mb} {what} | "
            f"{r['mb'] / r['wall']:.0f} | {r['sha']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="repeat; default: all")
    ap.add_argument("--matrix", action="append", help="NAME or NAME:N, repeat; default: all (none with --case)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="also write the table to this file")
    ap.add_argument("--tmp", help="folder for the inputs and outputs (default: a temporary one)")
    ap.add_argument("--smoke", action="store_true", help="small cases, one repeat (CI)")
    ap.add_argument("--write-once", nargs=3, metavar=("NAME", "N", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.write_once:
        write_once(a.write_once[0], int(a.write_once[1]), a.write_once[2])
        return 0
    if a.smoke:
        cases, matrices = SMOKE, SMOKE_MATRICES
    else:
        cases = {k: CASES[k] for k in (a.case or ([] if a.matrix else CASES))}
        matrices = {k: MATRICES[k] for k in ([] if a.case and not a.matrix else MATRICES)}
        if a.matrix:
            picked = [m.split(":") for m in a.matrix]
            if any(p[0] not in MATRICES for p in picked):
                ap.error(f"--matrix: one of {sorted(MATRICES)}, optionally :N")
            matrices = {p[0]: int(p[1]) if len(p) > 1 else MATRICES[p[0]] for p in picked}
    repeats = 1 if a.smoke else a.repeats
    rows = []
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        for name, (case, dense) in cases.items():
            rows += run_case(name, case, dense, Path(tmp), repeats)
        for name, n in matrices.items():
            rows += run_matrix(name, n, Path(tmp), repeats)
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    text = table(rows, f"bench_output.py, {when}, {machine()}, commit {git_head()}, best of {repeats}")
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
