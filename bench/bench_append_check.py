#!/usr/bin/env python3
"""The append's check of the earlier bytes (issue 27): the store job of a fresh store, then of the
same file with records added, timed in this process (append.store, as the workflow's store job
runs it, less the process), with the store stages each logs.

    python3 bench/bench_append_check.py [--n 15800] [--added 200] [--length 20000] [--repeats 3]
                                        [--fingerprint] [--tmp DIR]

bench_e2e's generator (2,000 variable columns, 200 clusters). `--fingerprint`: before each store
job the workflow's fingerprint of the input is written (store/sources.write_fingerprint, as the
workflow does when parsed, not timed), so that the store job takes its digest (and pieces) from
it, as in a Snakemake run; without it, as `genotile run`. Run against another source tree
(PYTHONPATH=that/src) to time it before a change. The appended store's files are compared, byte
for byte, with the first repeat's.
"""

import argparse
import contextlib
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_append import split_at  # noqa: E402
from bench_e2e import Case, write_fasta  # noqa: E402

FILES = ("plan.json", "perm.npy", "planes.npy", "manifest.json")


class Lines(logging.Handler):
    """The genotile log's lines that name the store's stages or the check."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        text = record.getMessage()
        if "store stages" in text or "bytes checked" in text:
            self.lines.append(text)


def store(work: Path, fingerprint: bool, lines: Lines) -> tuple[float, float, list[str]]:
    """append.store of work/data.fa into work/store, Snakemake's outputs removed first: seconds,
    CPU seconds (this process, all its threads: the work done, less sensitive to a shared
    machine's load than the wall time), the stage lines logged."""
    from genotile.store import append, sources

    for name in FILES:
        (work / "store" / name).unlink(missing_ok=True)
    with contextlib.chdir(work):
        if fingerprint:
            sources.write_fingerprint(sources.FINGERPRINTS / "bench.json", "data.fa")
        lines.lines.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        append.store("data.fa", "nucleotide", "ingest.json", "store", 2048, 1)
        return time.perf_counter() - t0, time.process_time() - c0, list(lines.lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=15_800)
    ap.add_argument("--added", type=int, default=200)
    ap.add_argument("--length", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fingerprint", action="store_true", help="the workflow's fingerprint written first")
    ap.add_argument("--tmp", type=Path, default=None)
    args = ap.parse_args()
    lines = Lines()
    log = logging.getLogger("genotile")
    log.addHandler(lines)
    log.setLevel(logging.INFO)
    root = Path(tempfile.mkdtemp(prefix="bench_check_", dir=args.tmp))
    try:
        grown = root / "grown.fa"
        write_fasta(grown, Case("fasta", args.n + args.added, args.length, 10, variable=2_000, clusters=200))
        earlier = root / "earlier.fa"
        split_at(grown, earlier, args.n)
        print(f"{args.n} + {args.added} sequences x {args.length}: {earlier.stat().st_size:,} + "
              f"{grown.stat().st_size - earlier.stat().st_size:,} bytes; fingerprint: {args.fingerprint}")  # fmt: skip
        first = None
        for k in range(args.repeats):
            work = root / f"work{k}"
            work.mkdir()
            shutil.copyfile(earlier, work / "data.fa")
            fresh, fresh_cpu, fresh_lines = store(work, args.fingerprint, lines)
            with open(work / "data.fa", "ab") as out, open(grown, "rb") as src:  # the records added at the end
                src.seek(earlier.stat().st_size)
                shutil.copyfileobj(src, out)
            seconds, cpu, said = store(work, args.fingerprint, lines)
            files = {name: (work / "store" / name).read_bytes() for name in FILES}
            first = first or files
            print(f"repeat {k}: fresh store job {fresh:.3f} s, CPU {fresh_cpu:.3f} s ({'; '.join(fresh_lines)})")
            print(f"  append store job {seconds:.3f} s, CPU {cpu:.3f} s ({'; '.join(said)}); "
                  f"files as the first repeat's: {files == first}")  # fmt: skip
            if k:
                shutil.rmtree(work)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
