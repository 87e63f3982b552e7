#!/usr/bin/env python3
"""Appends (issue 27): records added at the end of a FASTA, the rerun against a fresh run on the
grown file, whole Snakemake runs, same machine, same run; the outputs compared byte for byte.

    python3 bench/bench_append.py [--n 15800] [--added 200] [--cores 2] [--tmp DIR] [--out FILE]
    python3 bench/bench_append.py --gpu [--cores 16]   # the issue's GPU case, and its query
    python3 bench/bench_append.py --smoke      # tiny sizes, seconds (tests/workflow/test_bench_smoke.py)
    python3 bench/bench_append.py --repeat 5   # 5 appends and 5 fresh runs in turn: the ratio's median
    python3 bench/bench_append.py --as-list    # the new records as a further file of a list input
    python3 bench/bench_append.py --gpu --query-grows   # and the query's FILE grown, then rerun
    python3 bench/bench_append.py --cli        # every run as `genotile run` (one process) instead

The issue's case: 15,800 sequences x 20 kb, 2,000 variable columns, 200 clusters (bench_e2e's
generator), snp threshold 10, `dense_max: 0`, `report: true` (clusters.tsv and plots), then 200
sequences appended. Three runs: the earlier file (not timed against anything: it makes the
store and tiles the append reuses), the append rerun, a fresh run on the grown file in another
directory. Per stage: the `s` column of Snakemake's benchmark files summed per rule; "Snakemake"
is the rest of the wall time. The goal: append / fresh <= 0.3. `--repeat K`: the append rerun K
times, each from a copy of the workflow folder as the first run left it (the copy not timed), in
turn with K fresh runs (each in the emptied fresh folder): the ratio pair by pair and its median,
as a small machine's run-to-run spread (a fresh run of the issue's case 6.3-7.5 s on the 2-core VM)
moves one pair's ratio by +-0.05.

`--as-list`: the records added as a further file instead (`input: [data.fa, added.fa]` after
`input: data.fa`: store/listed.py), the fresh run still on the grown file; with `--query-grows`,
the query's FILE grown by a further file of its list too (`against: [earlier.fa, further.fa]`,
the fresh query against the same list).

`--gpu`: the issue's GPU goals: bench_e2e's snp_200k (200,000 SARS-CoV-2-like sequences x 30 kb,
300 variable columns, 2,000 lineages, half the sequences copies, 1% N; snp threshold 2) plus 2,000
appended (goal: the rerun <= 4 s), and a query run in a workflow folder of its own: the 2,000 new
sequences as a dataset's input `against:` the 200,000 (goal <= 4 s; its store is made from both
files), its pairs checked against the append's cross pairs (the pairs of an appended sequence with
an earlier one, ids and distances).

`--cli`: every run as `genotile run` (one process, the same settings: `--metric snp --threshold
snp=T --dense-max 0 --threads CORES`, `--against` for the query), its files where the workflow's
are; no report (clusters, plots) on either side. Per stage: the store's stages and the tiles from
its log, the merge from summary.json; "the rest" is the process's start and the other work.
"""

import argparse
import gzip
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_e2e import REPO, Case, timed, write_fasta  # noqa: E402

RESULTS = ("pairs.tsv.gz", "histogram.tsv", "matrix.tsv", "report/clusters.tsv")
HEADER = "| run | wall (s) | per rule (s) | Snakemake and the rest (s) |"
SUMMARY = ("n_vectors", "n_fields", "n_fields_kept", "pairs_computed", "pairs_passing", "threshold")


def run(
    work: Path, data: Path | list[Path], threshold: float, cores: int, against: Path | list[Path] | None = None
) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    dataset: dict = {"input": [str(p) for p in data] if isinstance(data, list) else str(data), "metrics": ["snp"]}
    if against is not None:
        dataset["against"] = [str(p) for p in against] if isinstance(against, list) else str(against)
    config = {
        "datasets": {"bench": dataset},
        "thresholds": {"snp": threshold},
        "dense_max": 0,
        "report": True,
    }
    (work / "config.yaml").write_text(json.dumps(config))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work)]
    cmd += ["--configfile", str(work / "config.yaml"), "--cores", str(cores)]
    t0 = time.time()
    wall = timed(cmd, log=work / f"snakemake.{int(t0)}.log")
    rules: dict[str, float] = {}
    for f in (work / "benchmarks").rglob("*.tsv"):
        if f.stat().st_mtime < t0:  # a job of an earlier run
            continue
        rule = f.name.split(".")[0].split("_")[0]
        lines = f.read_text().splitlines()
        if len(lines) > 1:
            rules[rule] = rules.get(rule, 0.0) + float(lines[1].split("\t")[0])
    log = (work / f"snakemake.{int(t0)}.log").read_text()
    said = [line.split("genotile store for ")[1] for line in log.splitlines() if "genotile store for " in line]
    return {"wall": wall, "rules": rules, "said": said}


def run_cli(
    work: Path, data: Path | list[Path], threshold: float, cores: int, against: Path | list[Path] | None = None
) -> dict:
    """`run`'s runs as `genotile run` (one process), writing where the workflow would
    (results/bench/)."""
    work.mkdir(parents=True, exist_ok=True)
    files = [str(f) for f in data] if isinstance(data, list) else [str(data)]
    cmd = [sys.executable, "-m", "genotile.cli", "run", *files, "--outdir", str(work / "results" / "bench")]
    cmd += ["--metric", "snp", "--threshold", f"snp={threshold}", "--dense-max", "0", "--threads", str(cores)]
    for f in [] if against is None else against if isinstance(against, list) else [against]:
        cmd += ["--against", str(f)]
    t0 = time.time()
    wall = timed(cmd, log=work / f"genotile.{int(t0)}.log")
    log = (work / f"genotile.{int(t0)}.log").read_text()
    stages: dict[str, float] = {}
    for line in log.splitlines():
        if "store stages (s): " in line:  # ingest X (...), plan Y, pack Z
            numbers = re.findall(r"(?:ingest|plan|pack) ([0-9.]+)", line)
            stages["store"] = stages.get("store", 0.0) + sum(map(float, numbers))
        elif re.search(r"snp: tiles: \d+ done in ", line):
            stages["tiles"] = float(line.rsplit(" in ", 1)[1].split()[0])
    timings = json.loads((work / "results" / "bench" / "snp" / "summary.json").read_text()).get("timings") or {}
    stages["merge"] = float(timings.get("merge_seconds") or 0.0)
    said = [line.split("store (nucleotide): ")[1] for line in log.splitlines() if "store (nucleotide): " in line]
    return {"wall": wall, "rules": stages, "said": said}


def outputs(work: Path) -> dict:
    folder = work / "results" / "bench" / "snp"
    out = {}
    for name in RESULTS:
        path = folder / name
        if path.exists():
            out[name] = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    summary = json.loads((folder / "summary.json").read_text())
    out["summary"] = {k: summary[k] for k in SUMMARY}
    return out


def split_at(grown: Path, earlier: Path, n: int) -> None:
    """`earlier`: the first n records of `grown`, byte for byte (a prefix of the file)."""
    data = grown.read_bytes()
    at, seen = 0, -1
    while True:
        at = data.find(b">", at)
        seen += 1
        if seen == n or at < 0:
            break
        at += 1
    earlier.write_bytes(data[:at] if at >= 0 else data)


def pair_rows(work: Path, new_ids: set | None = None) -> set:
    """The (id1, id2, snp) rows of a run's pairs.tsv.gz, each pair's ids in sorted order; with
    `new_ids`, only the pairs of one new and one earlier sequence (the query's cross pairs)."""
    text = gzip.decompress((work / "results" / "bench" / "snp" / "pairs.tsv.gz").read_bytes()).decode()
    out = set()
    for line in text.splitlines()[1:]:
        a, b, value = line.split("\t")[:3]
        if new_ids is None or ((a in new_ids) != (b in new_ids)):
            out.add((min(a, b), max(a, b), value))
    return out


def record_ids(path: Path) -> set:
    return {line[1:].split()[0] for line in path.read_text().splitlines() if line.startswith(">")}


def row(name: str, r: dict) -> str:
    rules = " ".join(f"{k} {v:.2f}" for k, v in sorted(r["rules"].items()))
    rest = r["wall"] - sum(r["rules"].values())
    return f"| {name} | {r['wall']:.2f} | {rules} | {rest:.2f} |"


def report(lines: list[str], out: Path | None) -> None:
    """A benchmark's lines printed, and written to `out` where given."""
    text = "\n".join(lines)
    print(text)
    if out:
        out.write_text(text + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=15_800)
    ap.add_argument("--added", type=int, default=200)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--tmp", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="appends and fresh runs, in turn (the ratio's median)")
    ap.add_argument("--gpu", action="store_true", help="the issue's GPU case (200,000 + 2,000) and a query run")
    ap.add_argument("--as-list", action="store_true", help="the new records as a further file of a list input")
    ap.add_argument("--query-grows", action="store_true", help="with --gpu: the query's FILE grown, then rerun")
    ap.add_argument("--cli", action="store_true", help="every run as `genotile run` (one process)")
    args = ap.parse_args()
    run_ = run_cli if args.cli else run
    if args.gpu:
        args.n, args.added = (200_000, 2_000) if args.n == 15_800 else (args.n, args.added)
        case = Case("fasta", args.n + args.added, 30_000, 2, gpu=True, variable=300, clusters=2_000,
                    n_fraction=0.01, copies=0.5)  # fmt: skip
    elif args.smoke:
        case = Case("fasta", 60 + 8, 400, 10, variable=150, clusters=5)
        args.n, args.added = 60, 8
    else:
        case = Case("fasta", args.n + args.added, 20_000, 10, variable=2_000, clusters=200)
    root = Path(args.tmp or tempfile.mkdtemp(prefix="bench_append."))
    root.mkdir(parents=True, exist_ok=True)
    grown = root / "grown.fa"
    write_fasta(grown, case)
    appended, fresh = root / "append", root / "fresh"
    appended.mkdir(exist_ok=True)
    fresh.mkdir(exist_ok=True)
    data = appended / "data.fa"
    split_at(grown, data, args.n)
    first = run_(appended, data, case.threshold, args.cores)
    snapshot = root / "append.first"
    if args.repeat > 1:  # the folder as the first run left it, for each append after the first
        shutil.rmtree(snapshot, ignore_errors=True)
        shutil.copytree(appended, snapshot, symlinks=True)
    (fresh / "data.fa").write_bytes(grown.read_bytes())
    agains, fulls, same = [], [], True
    for k in range(max(1, args.repeat)):
        if k:
            shutil.rmtree(appended)
            shutil.copytree(snapshot, appended, symlinks=True)
            for name in ("results", "logs", "benchmarks", ".snakemake"):
                shutil.rmtree(fresh / name, ignore_errors=True)
        if args.as_list:  # the records added as a further file of the list
            (appended / "added.fa").write_bytes(grown.read_bytes()[data.stat().st_size :])
            agains.append(run_(appended, [data, appended / "added.fa"], case.threshold, args.cores))
        else:
            data.write_bytes(grown.read_bytes())  # the records added at the end
            agains.append(run_(appended, data, case.threshold, args.cores))
        fulls.append(run_(fresh, fresh / "data.fa", case.threshold, args.cores))
        same = same and outputs(appended) == outputs(fresh)
    header = "| run | wall (s) | per stage (s) | the rest (s) |" if args.cli else HEADER
    how = "`genotile run`" if args.cli else "report"
    ratios = [a["wall"] / f["wall"] for a, f in zip(agains, fulls, strict=True)]
    ratio = statistics.median(ratios)
    query_lines: list[str] = []
    if args.gpu:  # the new sequences against the earlier file, whose store the first run built
        earlier, added = root / "earlier.fa", root / "query" / "added.fa"
        split_at(grown, earlier, args.n)
        added.parent.mkdir(exist_ok=True)
        added.write_bytes(grown.read_bytes()[earlier.stat().st_size :])
        query = run_(root / "query", added, case.threshold, args.cores, against=earlier)  # a workflow folder of its own
        q_pairs = pair_rows(root / "query")
        want = pair_rows(appended, record_ids(added))
        query_lines = [
            row(f"query {args.added} against {args.n} (its store made from both files)", query),
            "",
            f"query pairs equal the append's cross pairs: {'yes' if q_pairs == want else 'NO   <<< MISMATCH'} "
            f"({len(q_pairs)} pairs)",
        ]
        same = same and q_pairs == want
        if args.query_grows:  # the FILE grown by records at its end: only their cross pairs computed
            tail = grown.read_bytes()[: earlier.stat().st_size]
            at = tail.find(b">", 1)
            extra = tail[at : at + (len(tail) - at) * args.added // args.n]
            extra = extra[: extra.rfind(b"\n>") + 1]  # whole records only, renamed below
            extra = extra.replace(b">", b">grown_")
            grown_file: Path | list[Path] = earlier
            if args.as_list:  # a further file of the FILE list (`against: [earlier.fa, further.fa]`)
                (root / "further.fa").write_bytes(extra)
                grown_file = [earlier, root / "further.fa"]
            else:
                with open(earlier, "ab") as fh:
                    fh.write(extra)
            grows = run_(root / "query", added, case.threshold, args.cores, against=grown_file)
            fresh_q = root / "query_fresh"
            fresh_q.mkdir(exist_ok=True)
            full = run_(fresh_q, added, case.threshold, args.cores, against=grown_file)
            equal = pair_rows(root / "query") == pair_rows(fresh_q)
            query_lines += [
                "",
                header,
                "|---|---|---|---|",
                row(
                    f"query after the FILE grew by {extra.count(b'>'):,} records"
                    + (" (a further file of its list)" if args.as_list else ""),
                    grows,
                ),
                row("fresh query on the grown FILE", full),
                "",
                f"grown query's pairs equal the fresh query's: {'yes' if equal else 'NO   <<< MISMATCH'}; "
                f"store said: {'; '.join(grows['said'])}",
            ]
            same = same and equal
    lines = [
        f"appends{' (a further file of a list)' if args.as_list else ''}: {args.n} + {args.added} sequences "
        f"x {case.length} ({case.variable} variable columns), "
        f"snp threshold {case.threshold}, dense_max 0, {how}, {args.cores} cores",
        "",
        header,
        "|---|---|---|---|",
        row(f"first {args.n}", first),
        *[
            line
            for k, (a, f) in enumerate(zip(agains, fulls, strict=True))
            for line in (
                row(f"append {args.added}" + (f" ({k + 1})" if k else ""), a),
                row(f"fresh {args.n + args.added}" + (f" ({k + 1})" if k else ""), f),
            )
        ],
        "",
        f"append / fresh: {ratio:.3f}{f' (median of {len(ratios)} pairs)' if len(ratios) > 1 else ''} (goal <= 0.3); "
        f"outputs identical: {'yes' if same else 'NO   <<< MISMATCH'}",
        *(
            [
                f"append / fresh, pair by pair: {', '.join(f'{r:.3f}' for r in ratios)}; "
                f"median {ratio:.3f}; median walls: append "
                f"{statistics.median(a['wall'] for a in agains):.2f} s, fresh "
                f"{statistics.median(f['wall'] for f in fulls):.2f} s"
            ]
            if len(ratios) > 1
            else []
        ),
        f"store said: {'; '.join(line for a in agains for line in a['said'])}",  # each append's
        *query_lines,
    ]
    report(lines, args.out)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
