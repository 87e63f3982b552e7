"""`genotile` command line: the pipeline without Snakemake, and the tile plan."""

import argparse
import json
import logging
import math
import sys

from genotile import __version__, backends
from genotile.core.metrics import METRICS
from genotile.core.plan import Plan
from genotile.core.registry import REGISTRY
from genotile.errors import GenotileError
from genotile.io.atomic import DISK_ERRORS, disk_error


def _threshold(text: str) -> tuple[str, float | None]:
    metric, sep, value = text.partition("=")
    if not sep or metric not in METRICS:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE with METRIC one of {', '.join(METRICS)}: {text!r}")
    if value.lower() in ("null", "none", ""):
        return metric, None
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the value is not a number") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"{text!r}: a threshold must be a finite number (or null)")
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

    plan = sub.add_parser("plan", help="what a run costs: tiles, jobs, memory, output, time (reads no input)")
    plan.add_argument("--vectors", type=int, required=True, help="number of vectors (samples, sequences or SNPs)")
    plan.add_argument("--fields", type=int, required=True, help="fields per vector (variants, columns or samples)")
    plan.add_argument("--metric", choices=sorted(REGISTRY), required=True)
    plan.add_argument("--stages", type=int, default=1, help="ccc3: parts of the middle block, one job each")
    plan.add_argument("--block-size", type=int, default=4096)
    plan.add_argument("--density", type=float, default=1.0, help="fraction of pairs passing the threshold")
    plan.add_argument("--gpus", type=int, default=1, help="devices working at once")
    plan.add_argument("--tiles-per-job", type=int, default=1)
    plan.add_argument("--backend", default="cupy-b1", help="whose measured rate to use (default cupy-b1)")
    plan.add_argument("--complete", action="store_true", help="no missing data (fewer plane products)")
    plan.add_argument("--dense-max", type=int, default=20000)
    plan.add_argument("--rates", help="JSON of measured rates (default: the packaged bench/RESULTS.md rates)")
    plan.add_argument("--read-gbps", type=float, default=2.0, help="storage read rate per device, GB/s")
    plan.add_argument("--tiles", action="store_true", help="also list every tile (I, J)")

    sub.add_parser("backends", help="list the backends available on this machine")
    return ap


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    try:
        if args.command == "run":
            from genotile.pairs.steps import run_all

            summaries = run_all(
                args.input,
                args.outdir,
                args.metric,
                block_size=args.block_size,
                seed=args.seed,
                thresholds=dict(args.threshold),
                dense_max=args.dense_max,
                backend=args.backend,
            )
            for name, s in summaries.items():
                print(f"{name}: {s['pairs_passing']} of {s['pairs_computed']} pairs pass -> {args.outdir}/{name}/")
        elif args.command == "plan" and REGISTRY[args.metric].workload == "triples":
            from genotile.triples.estimate import describe

            print(
                describe(
                    args.vectors,
                    args.fields,
                    block_size=args.block_size,
                    stages=args.stages,
                    density=args.density,
                    missing=not args.complete,
                )
            )
        elif args.command == "plan":
            from genotile.pairs.estimate import estimate, load_rates

            est = estimate(
                METRICS[args.metric],
                args.vectors,
                args.fields,
                block_size=args.block_size,
                density=args.density,
                devices=args.gpus,
                tiles_per_job=args.tiles_per_job,
                backend=args.backend,
                missing=not args.complete,
                dense_max=args.dense_max,
                rates=load_rates(args.rates),
                read_gbps=args.read_gbps,
            )
            print(est.describe())
            if args.tiles:
                print(json.dumps(Plan(args.vectors, args.block_size, 0).tiles()))
        elif args.command == "backends":
            print("\n".join(backends.available()))
    except GenotileError as exc:
        print(f"genotile error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        print(f"genotile error: {disk_error(exc)}", file=sys.stderr)  # disk full, quota, read-only
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
