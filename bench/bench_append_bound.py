#!/usr/bin/env python3
"""The store job of an input past the in-memory bound (issue 27): a fresh store, then an append,
timed in this process (append.store, as the workflow's store job runs it, less the process).

    python3 bench/bench_append_bound.py [--n 16000] [--added 200] [--repeats 3] [--tmp DIR]

bench_e2e's generator (20 kb, 2,000 variable columns, 200 clusters); every input read as one too
large to be held (io/readers/fasta.HOLD_BYTES set to 0), so that 16,000 x 20 kb takes the path of
a 6 GB file. Each repeat: a fresh store of the first n records, then the added ones appended to
it. The appended store's files are checked, byte for byte, against the same append made from the
whole grown input (store/extend.earlier turned off).
Run against another source tree (PYTHONPATH=that/src) to time it before a change: its store job
is what the fresh store column shows.
"""

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_append import split_at  # noqa: E402
from bench_e2e import Case, write_fasta  # noqa: E402

FILES = ("plan.json", "perm.npy", "planes.npy", "manifest.json")
OUTPUTS = ("ingest.json", *(f"store/{name}" for name in FILES))


def store(work: Path) -> tuple[float, list[str]]:
    """append.store of work/data.fa into work/store, named from `work` (so that two folders' files
    compare), Snakemake's outputs removed first: seconds, the lines said."""
    from genotile.store import append

    for name in FILES:
        (work / "store" / name).unlink(missing_ok=True)
    said: list[str] = []
    with contextlib.chdir(work):
        t0 = time.perf_counter()
        append.store("data.fa", "nucleotide", "ingest.json", "store", 2048, 1, say=said.append)
        return time.perf_counter() - t0, said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16_000)
    ap.add_argument("--added", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tmp", type=Path, default=None)
    args = ap.parse_args()
    from genotile.io.readers import fasta
    from genotile.store import extend

    fasta.HOLD_BYTES = 0  # the path of an input too large to be held
    root = Path(tempfile.mkdtemp(prefix="bench_bound_", dir=args.tmp))
    try:
        grown = root / "grown.fa"
        write_fasta(grown, Case("fasta", args.n + args.added, 20_000, 10, variable=2_000, clusters=200))
        earlier = root / "earlier.fa"
        split_at(grown, earlier, args.n)
        reference = root / "reference"
        reference.mkdir()
        shutil.copyfile(earlier, reference / "data.fa")
        store(reference)
        extend.earlier, kept_files = (lambda store_dir, record: (None, "off")), extend.earlier
        shutil.copyfile(grown, reference / "data.fa")
        store(reference)
        extend.earlier = kept_files
        fresh, appended = [], []
        for k in range(args.repeats):
            work = root / f"work{k}"
            work.mkdir()
            data = work / "data.fa"
            shutil.copyfile(earlier, data)
            fresh.append(store(work)[0])
            shutil.copyfile(grown, data)
            seconds, said = store(work)
            appended.append(seconds)
            same = all((work / f).read_bytes() == (reference / f).read_bytes() for f in OUTPUTS)
            print(f"repeat {k}: fresh {fresh[-1]:.3f} s, append {seconds:.3f} s, files identical: {same}; {said}")
            kept = json.loads((work / "store" / "append.json").read_text()).get("kept")
            print(f"  kept for the next append: {kept is not None}")
        print(f"fresh store job: min {min(fresh):.3f} s, median {sorted(fresh)[len(fresh) // 2]:.3f} s")
        print(f"append store job: min {min(appended):.3f} s, median {sorted(appended)[len(appended) // 2]:.3f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
