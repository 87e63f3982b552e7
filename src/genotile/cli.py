"""`genotile` command line: the pipeline without Snakemake, and the tile plan."""

import argparse
import json
import logging
import sys

from . import __version__, backends
from .errors import GenotileError
from .metrics import METRICS
from .plan import Plan


def _threshold(text: str) -> tuple[str, float | None]:
    metric, sep, value = text.partition("=")
    if not sep or metric not in METRICS:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE with METRIC one of {', '.join(METRICS)}: {text!r}")
    if value.lower() in ("null", "none", ""):
        return metric, None
    number = float(value)
    return metric, int(number) if number.is_integer() else number


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="genotile", description=__doc__)
    ap.add_argument("--version", action="version", version=f"genotile {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="ingest, pack, compute every tile and merge, in this process")
    run.add_argument("input", help="FASTA alignment (plain or gzip)")
    run.add_argument("--outdir", required=True, help="output folder (like results/<dataset>)")
    run.add_argument("--metric", action="append", choices=sorted(METRICS), required=True)
    run.add_argument("--threshold", action="append", type=_threshold, default=[], metavar="METRIC=VALUE")
    run.add_argument("--block-size", type=int, default=4096)
    run.add_argument("--dense-max", type=int, default=20000)
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--backend", default="auto")

    plan = sub.add_parser("plan", help="print the tile plan for N vectors (no input is read)")
    plan.add_argument("n_vectors", type=int)
    plan.add_argument("--block-size", type=int, default=4096)
    plan.add_argument("--seed", type=int, default=1)
    plan.add_argument("--tiles", action="store_true", help="list every tile")

    sub.add_parser("backends", help="list the backends available on this machine")
    return ap


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    try:
        if args.command == "run":
            from .steps import run_all

            summaries = run_all(args.input, args.outdir, args.metric, block_size=args.block_size, seed=args.seed,
                                thresholds=dict(args.threshold), dense_max=args.dense_max, backend=args.backend)
            for name, s in summaries.items():
                print(f"{name}: {s['pairs_passing']} of {s['pairs_computed']} pairs pass -> {args.outdir}/{name}/")
        elif args.command == "plan":
            if args.n_vectors < 0 or args.block_size < 1:
                raise GenotileError("n_vectors must be >= 0 and --block-size >= 1")
            p = Plan(args.n_vectors, args.block_size, args.seed)
            print(p.describe())
            if args.tiles:
                print(json.dumps(p.tiles()))
        elif args.command == "backends":
            print("\n".join(backends.available()))
    except GenotileError as exc:
        print(f"genotile error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
