#!/usr/bin/env python3
"""The merge of an append rerun (issue 27, pairs/splice.py): the earlier pairs.tsv.gz kept beside
the store with the new rows spliced in, against the full merge of every tile, on the same tiles.

    python3 bench/bench_merge_splice.py [--n 60000] [--added 600] [--repeat 3] [--tmp DIR]

bench_e2e's snp_200k generator scaled down (lineages of about 100 sequences, half of them copies,
1% N, snp threshold 2; 3 kb with its 300 variable columns): `genotile run` on the first n
sequences, the kept text set aside, then on all n + added (its merge spliced). Then, in this
process, the merge (pairs/stage.merge: tiles read, pairs.tsv.gz, histogram.tsv, summary.json)
timed `--repeat` times each way, alternating: spliced (the earlier kept text put back first),
full (nothing kept: the full merge, which then keeps its text) and unkept (the merge as before
the kept text: nothing looked for or kept); the files compared byte for byte.
"""

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_e2e import Case, write_fasta  # noqa: E402

from genotile.cli import main as genotile  # noqa: E402
from genotile.pairs import merge as merge_module  # noqa: E402
from genotile.pairs import stage  # noqa: E402


def split_records(path: Path, n: int, out: Path) -> None:
    """The first n records of a two-line-a-record FASTA."""
    with open(path, "rb") as src, open(out, "wb") as dst:
        for _ in range(2 * n):
            dst.write(src.readline())


def run(fasta: Path, out: Path) -> None:
    assert genotile(["run", str(fasta), "--outdir", str(out), "--metric=snp", "--threshold", "snp=2"]) == 0


def kept(store: Path) -> list[Path]:
    return sorted(store.glob("merged-snp*"))


def merge(out: Path, pairs: Path, keep: bool = True) -> float:
    """stage.merge of every tile in `out` into `pairs`, its seconds; `keep=False`: the merge as
    it was before the kept text (nothing looked for, nothing kept)."""
    config = json.loads((out / "snp" / "summary.json").read_text())["config"]
    tiles = sorted(str(p) for p in (out / "snp" / "pairs").glob("tile_*.npz"))
    manifest = out / "store" / "nucleotide" / "manifest.json"
    full = merge_module.merge_pairs
    if not keep:
        merge_module.merge_pairs = lambda *a, **k: full(*a, **{**k, "keep_dir": None})
    try:
        t0 = time.perf_counter()
        stage.merge(
            tiles, manifest, "snp", pairs, pairs.with_suffix(".json"), config, histogram_out=pairs.with_suffix(".h")
        )
        return time.perf_counter() - t0
    finally:
        merge_module.merge_pairs = full


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60_000)
    ap.add_argument("--added", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tmp", type=Path, default=None)
    args = ap.parse_args()
    case = Case("fasta", args.n + args.added, 3_000, 2, variable=300, clusters=max(1, args.n // 100),
                n_fraction=0.01, copies=0.5)  # fmt: skip
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        work = Path(tmp)
        grown, earlier, out = work / "grown.fa", work / "data.fa", work / "out"
        write_fasta(grown, case)
        split_records(grown, args.n, earlier)
        run(earlier, out)
        store = out / "store" / "nucleotide"
        aside = work / "aside"
        aside.mkdir()
        for p in kept(store):
            shutil.copy2(p, aside / p.name)
        shutil.copy2(grown, earlier)
        run(earlier, out)
        summary = json.loads((out / "snp" / "summary.json").read_text())
        print(f"{args.n} + {args.added} sequences: {summary['pairs_passing']:,} pairs pass")
        times: dict[str, list[float]] = {"spliced": [], "full": [], "unkept": []}
        for _ in range(args.repeat):
            for way in times:
                for p in kept(store):
                    p.unlink()
                if way == "spliced":
                    for p in aside.iterdir():
                        shutil.copy2(p, store / p.name)
                times[way].append(merge(out, work / f"{way}.tsv.gz", keep=way != "unkept"))
        same = len({(work / f"{way}.tsv.gz").read_bytes() for way in times}) == 1
        size = (work / "full.tsv.gz").stat().st_size
        for way, t in times.items():
            print(f"merge {way}: " + " ".join(f"{s:.3f}" for s in t) + " s")
        print(f"pairs.tsv.gz {size:,} bytes; spliced == full == unkept: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
