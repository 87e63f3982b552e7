#!/usr/bin/env python3
"""A query (issue 27, point 3: `against: FILE`) where FILE's all-pairs store exists, against the
same query made by reading both files (no store of FILE beside it), whole Snakemake runs, same
machine, same run; the outputs compared byte for byte.

    python3 bench/bench_query.py [--n 16000] [--added 300] [--cores 2] [--tmp DIR] [--out FILE]
    python3 bench/bench_query.py --gpu [--cores 16]   # the issue's case: 2,000 against 200,000 x 30 kb
    python3 bench/bench_query.py --gpu --n 16000 --added 300  # its generator, the CPU's sizes
    python3 bench/bench_query.py --smoke               # tiny sizes, seconds

The CPU case: bench_append's (bench_e2e's generator: 20 kb, 2,000 variable columns, 200
clusters), its first `--n` sequences FILE, the next `--added` the query's input; snp threshold 10,
`dense_max: 0`, no report. `--gpu`: bench_append's GPU case (SARS-CoV-2-like, 30 kb, 300
variable columns, 2,000 lineages, half copies, 1% N; threshold 2). One workflow folder runs FILE
as a dataset of its own (all pairs: not timed against anything, it makes FILE's store), then
with the query dataset added (store/against.py: FILE's store reused); another runs the query
alone (both files read, as before). Per run: the wall time, the query's store job (`s` of its
Snakemake benchmark file) and its stages (the job's log), and what the job said.
"""

import argparse
import gzip
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_append import report, split_at  # noqa: E402
from bench_e2e import REPO, Case, timed, write_fasta  # noqa: E402

OUTPUTS = ("pairs.tsv.gz", "histogram.tsv")


def run(work: Path, datasets: dict, threshold: float, cores: int) -> dict:
    """A Snakemake run of `datasets` in `work`: its wall time, the query's store job (seconds,
    stages and the line on FILE's store) where the query dataset `q` ran."""
    work.mkdir(parents=True, exist_ok=True)
    config = {"datasets": datasets, "thresholds": {"snp": threshold}, "dense_max": 0, "report": False}
    (work / "config.yaml").write_text(json.dumps(config))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work)]
    cmd += ["--configfile", str(work / "config.yaml"), "--cores", str(cores)]
    t0 = time.time()
    wall = timed(cmd, log=work / f"snakemake.{int(t0)}.log")
    out: dict = {"wall": wall, "store": None, "stages": "", "said": ""}
    bench = work / "benchmarks" / "q" / "store.nucleotide.tsv"
    if "q" in datasets and bench.exists() and bench.stat().st_mtime >= t0:
        out["store"] = float(bench.read_text().splitlines()[1].split("\t")[0])
        log = (work / "logs" / "q" / "store.nucleotide.log").read_text()
        stages = re.findall(r"store stages \(s\): (.*)", log)
        said = re.findall(r"query store \(nucleotide\): (.*)", log)
        out["stages"], out["said"] = (stages or [""])[-1], (said or [""])[-1]
    return out


def outputs(work: Path) -> dict:
    folder = work / "results" / "q" / "snp"
    out = {name: (folder / name).read_bytes() for name in OUTPUTS}
    out["pairs.tsv.gz"] = gzip.decompress(out["pairs.tsv.gz"])
    summary = json.loads((folder / "summary.json").read_text())
    out["summary"] = {k: summary[k] for k in ("pairs_computed", "pairs_passing", "query")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, help="FILE's sequences (16,000; --gpu 200,000)")
    ap.add_argument("--added", type=int, help="the input's sequences (300; --gpu 2,000)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--tmp", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--gpu", action="store_true", help="the issue's GPU case (2,000 against 200,000 x 30 kb)")
    args = ap.parse_args()
    big = args.gpu and not args.smoke
    args.n, args.added = args.n or (200_000 if big else 16_000), args.added or (2_000 if big else 300)
    if args.gpu:  # its generator at any size (--n, --added): SARS-CoV-2-like
        case = Case("fasta", args.n + args.added, 30_000, 2, gpu=True, variable=300, clusters=2_000,
                    n_fraction=0.01, copies=0.5)  # fmt: skip
    elif args.smoke:
        args.n, args.added = 300, 8  # every variable column variable in FILE already: its store reused
        case = Case("fasta", args.n + args.added, 400, 10, variable=20, clusters=5)
    else:
        case = Case("fasta", args.n + args.added, 20_000, 10, variable=2_000, clusters=200)
    root = Path(args.tmp or tempfile.mkdtemp(prefix="bench_query."))
    root.mkdir(parents=True, exist_ok=True)
    grown, file, new = root / "grown.fa", root / "file.fa", root / "new.fa"
    write_fasta(grown, case)
    split_at(grown, file, args.n)
    new.write_bytes(grown.read_bytes()[file.stat().st_size :])
    db = {"input": str(file), "metrics": ["snp"]}
    q = {"input": str(new), "against": str(file), "metrics": ["snp"]}
    first = run(root / "reuse", {"db": db}, case.threshold, args.cores)
    today = run(root / "today", {"q": q}, case.threshold, args.cores)
    reused = run(root / "reuse", {"db": db, "q": q}, case.threshold, args.cores)
    same = outputs(root / "reuse") == outputs(root / "today")
    lines = [
        f"query: {args.added} sequences against {args.n} x {case.length} ({case.variable} variable columns), "
        f"snp threshold {case.threshold}, dense_max 0, {args.cores} cores",
        "",
        "| run | wall (s) | store job (s) | store stages (s) |",
        "|---|---|---|---|",
        f"| FILE's all-pairs run (makes its store) | {first['wall']:.2f} | | |",
        f"| query, both files read | {today['wall']:.2f} | {today['store']:.2f} | {today['stages']} |",
        f"| query, FILE's store reused | {reused['wall']:.2f} | {reused['store']:.2f} | {reused['stages']} |",
        "",
        f"outputs identical: {'yes' if same else 'NO   <<< MISMATCH'}; store job said: {reused['said']}",
    ]
    report(lines, args.out)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
