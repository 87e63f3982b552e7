"""`genotile` command line: the pipeline without Snakemake, and the tile plan."""

import argparse
import json
import logging
import math
import sys
from pathlib import Path
from typing import NoReturn

from genotile import backends
from genotile.backends import registry as backend_registry
from genotile.core.limits import PAIRS_MAX
from genotile.core.metrics import METRICS
from genotile.core.plan import Plan
from genotile.core.rates import STORE, STORE_ALIASES, THRESHOLDS, TILES
from genotile.core.registry import REGISTRY
from genotile.errors import GenotileError
from genotile.io.peer_formats import FORMATS
from genotile.io.regions import CHROMOSOMES
from genotile.util.atomic import DISK_ERRORS, disk_error
from genotile.version import __version__


def _threshold(text: str) -> tuple[str, float | None]:
    metric, sep, value = text.partition("=")
    if not sep or metric not in REGISTRY:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE with METRIC one of {', '.join(REGISTRY)}: {text!r}")
    return metric, _threshold_value(value, text)


def _threshold_value(value: str, text: str | None = None) -> float | None:
    """A threshold's value: a finite number, or null (also none or empty) for every pair."""
    if value.lower() in ("null", "none", ""):
        return None
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text or value!r}: the value is not a number") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"{text or value!r}: a threshold must be a finite number (or null)")
    return int(number) if number.is_integer() else number


def _block_size(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or auto: {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0: {text!r}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1: {text!r}")
    return value


def _vectors(text: str) -> int:
    value = _non_negative(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 2 (a pair needs two vectors): {text!r}")
    return value


def _fraction(text: str) -> float:
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1: {text!r}")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number: {text!r}")
    return value


RUN_METRICS = sorted(REGISTRY)  # the config's metrics: 2-way ones and ccc3
GENOTYPE_OPTIONS = {  # CLI flag -> the config key of a dataset (and the readers' option)
    "--samples": "samples",
    "--regions": "regions",
    "--filter-pass": "filter_pass",
    "--multiallelic": "multiallelic",
    "--chromosomes": "chromosomes",
}


def _run_parser(sub) -> None:
    run = sub.add_parser(
        "run",
        help="ingest, pack, compute every tile and merge, in this process (no Snakemake)",
        description=(
            "Compute one or more metrics of one input in this process, writing the files a workflow "
            "dataset gets under results/<dataset>/. INPUT is a FASTA alignment (.fa/.fasta/.fna/.aln, "
            "plain or gzip: snp, hamming), a VCF/BCF (.vcf, .vcf.gz, .bcf), a PLINK fileset named by "
            "its .bed (PLINK 1) or .pgen (PLINK 2), or a VCF-Zarr directory (.vcz) (ibs, king, ccc2, ccc3); "
            "or several files of one kind, read as one input in their order (config: a list as input). "
            "Options mirror the config keys (config/config.yaml); a rerun reuses what is still current."
        ),
    )
    run.add_argument(
        "input",
        nargs="+",
        help="FASTA alignment, VCF/BCF, PLINK fileset (.bed or .pgen; the .bim/.fam or .pvar/.psam beside it) "
        "or VCF-Zarr directory (.vcz); several: files of one kind read as one input, the first file's vectors "
        "first (FASTA alignments of one length, or genotypes with the same variants), a further one appended "
        "to an earlier run's list computing only its vectors' pairs",
    )
    run.add_argument("--outdir", required=True, help="output folder (like results/<dataset>)")
    run.add_argument(
        "--against",
        metavar="FILE",
        action="append",
        help="query mode (config: datasets.<name>.against): compare every vector of INPUT with every vector "
        "of FILE (of INPUT's kind: the same alignment length, or the same variants), the cross pairs only; "
        "repeat for several (--against a.fa --against b.fa): files of one kind read as one FILE in their "
        "order, a further FASTA file appended to an earlier run's list computing only its vectors' cross pairs",
    )
    run.add_argument(
        "--metric",
        action="append",
        choices=RUN_METRICS,
        required=True,
        help="metric to compute; repeat for several (config: datasets.<name>.metrics). snp, hamming: "
        "FASTA; ibs, king, ccc2, ccc3: VCF/BCF, PLINK or VCF-Zarr",
    )
    run.add_argument(
        "--threshold",
        action="append",
        type=_threshold,
        default=[],
        metavar="METRIC=VALUE",
        help="keep pairs with METRIC <= VALUE (snp, hamming, ibs) or >= VALUE (king; ccc2, ccc3: any "
        "column); METRIC must be one of --metric; null keeps every pair (config: thresholds)",
    )
    run.add_argument(
        "--backend",
        default="auto",
        choices=list(backend_registry.NAMES),
        help="tile backend (config: backend; default auto: the fastest available); all give the same numbers",
    )
    run.add_argument(
        "--threads",
        type=_positive,
        default=None,
        help="CPU threads of the numba and numpy backends (config: tile_threads; default: all usable)",
    )
    run.add_argument(
        "--block-size",
        type=_block_size,
        default="auto",
        help="vectors per tile block, or auto (default; config: block_size); no effect on the numbers",
    )
    run.add_argument(
        "--no-collapse-duplicates",
        dest="collapse_duplicates",
        action="store_false",
        default="auto",
        help="tile identical vectors one by one (config: collapse_duplicates, default auto: collapsed where tiles "
        "run on the CPU; the outputs are the same)",
    )
    run.add_argument(
        "--dense-max",
        type=_non_negative,
        default=20000,
        help="write matrix.tsv only up to this many vectors (config: dense_max; default 20000)",
    )
    run.add_argument(
        "--seed", type=_non_negative, default=1, help="seed of the vector permutation (config: seed; default 1)"
    )
    run.add_argument(
        "--pairs-max",
        type=_non_negative,
        default=PAIRS_MAX,
        help="a 2-way metric with a null threshold is refused past this many pairs, as the workflow's plan "
        "refuses it (config: pairs_max; default 200000000)",
    )
    vcf = run.add_argument_group("genotype input (VCF/BCF, PLINK, VCF-Zarr; config: the dataset's keys of these names)")
    vcf.add_argument(
        "--samples", metavar="FILE", help="file of sample IDs, one per line: select and order samples (bcftools -S)"
    )
    vcf.add_argument(
        "--regions",
        action="append",
        metavar="REGION",
        help="CHROM[:BEG[-END]] (repeat for several), or a file of them (BED if named .bed); a VCF needs an index",
    )
    vcf.add_argument(
        "--filter-pass",
        action="store_true",
        default=None,
        help="keep only records whose FILTER is PASS or '.' (default: keep all, as PLINK does)",
    )
    vcf.add_argument(
        "--multiallelic",
        choices=["skip", "split"],
        help="multi-allelic records: skip (default) or split into one ALT-vs-rest variant per ALT",
    )
    vcf.add_argument(
        "--chromosomes",
        choices=CHROMOSOMES,
        help="autosomes (default): variants on contigs 1-22 only (with or without chr), as PLINK's ibs and king "
        "count; all: every contig",
    )
    ccc = run.add_argument_group("ccc2 and ccc3 (config: ccc, ccc3)")
    ccc.add_argument("--ccc-multiplier", type=_number, help="CoMet's CCC multiplier (default 4.5)")
    ccc.add_argument("--ccc-param", type=_number, help="CoMet's CCC param (default 2/3)")
    ccc.add_argument(
        "--ccc3-block-size", type=_positive, help="SNPs per ccc3 block (default: --block-size, or 4096 when auto)"
    )
    ccc.add_argument(
        "--ccc3-stages", type=_positive, default=None, help="parts of the middle block, one job each (default 1)"
    )
    ccc.add_argument(
        "--ccc3-null-threshold-max",
        type=_positive,
        default=None,
        help="a null ccc3 threshold is refused past this many SNPs (default 2000)",
    )
    peers = run.add_argument_group(
        "peer formats and relatedness (config: the dataset's formats, king_degrees, king_cutoff)"
    )
    peers.add_argument(
        "--format",
        dest="formats",
        action="append",
        choices=list(FORMATS),
        help="also write the metric's outputs in a peer tool's format (repeat for several): "
        + "; ".join(f"{f.name} ({f.peer}; {' or '.join(f.metrics)})" for f in FORMATS.values()),
    )
    peers.add_argument(
        "--king-degrees",
        action="store_true",
        default=None,
        help="king: write degrees.tsv.gz, each pair's degree of relationship by KING's cut-offs",
    )
    peers.add_argument(
        "--king-cutoff",
        type=_number,
        metavar="KINSHIP",
        help="king: write a maximal set of samples with no pair's kinship above KINSHIP (strictly, as plink2): "
        "king.unrelated.in.id / .out.id, in plink2 --king-cutoff's form; plink2's own set where its greedy "
        "finds one as large, else larger",
    )
    run.add_argument("--quiet", "-q", action="store_true", help="print only errors and the one-line results")


class _Parser(argparse.ArgumentParser):
    """An argument error as one `genotile error:` line and where to read more, not the whole
    usage first (the usage of `genotile run` alone is 16 lines; the one that matters is last).
    Subparsers are made of this class too (argparse takes the parent's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"genotile error: {message}\nsee: {self.prog} --help\n")

    def parse_args(self, args=None, namespace=None):
        """Arguments no parser took are refused naming the command's help (`genotile run
        --help`), not the top level's: argparse leaves them to the top-level parser."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, "command", None)
            where = f"{self.prog} {command}" if command else self.prog
            self.exit(2, f"genotile error: unrecognized arguments: {' '.join(extras)}\nsee: {where} --help\n")
        return parsed


WORKFLOW_DEFAULT = ("the workflow's default",)  # not a string: argparse would parse it as a value


def _plan_parser(sub) -> None:
    plan = sub.add_parser(
        "plan",
        help="what a run costs: tiles, jobs, memory, output, time by stage (reads no input)",
        description=(
            "Predict what a workflow run of this size costs, with the workflow's defaults: block_size auto, "
            "the metric's default threshold and the fraction of pairs assumed to pass it, this host's GPUs "
            "and CPU cores. Time = start + store + tiles + merge, from the rates measured in bench/RESULTS.md "
            "(src/genotile/core/rates.py)."
        ),
    )
    plan.add_argument(
        "--vectors", type=_vectors, required=True, help="number of vectors (samples, sequences or SNPs), >= 2"
    )
    plan.add_argument(
        "--fields", type=_positive, required=True, help="fields per vector (variants, columns or samples)"
    )
    plan.add_argument("--metric", choices=sorted(REGISTRY), required=True, help="the metric to plan")
    plan.add_argument(
        "--stages",
        type=_positive,
        default=None,
        help="ccc3: parts of the middle block, one job each (default: as the workflow's, one a GPU on GPUs)",
    )
    plan.add_argument(
        "--block-size",
        type=_block_size,
        default="auto",
        help="vectors per tile block, or auto (default, sized as the store job sizes it; ccc3: 4096)",
    )
    plan.add_argument(
        "--threshold",
        type=_threshold_value,
        default=WORKFLOW_DEFAULT,
        metavar="VALUE",
        help="the metric's threshold, or null for every pair (default: the workflow's, "
        + ", ".join(f"{m} {'null' if v is None else v}" for m, v in THRESHOLDS.items())
        + ")",
    )
    plan.add_argument(
        "--pass-fraction",
        "--density",
        dest="pass_fraction",
        type=_fraction,
        default=None,
        help="fraction of pairs (triples) passing the threshold (default: 1 for null, else the one assumed "
        "for the metric's default threshold, printed with its reason)",
    )
    plan.add_argument(
        "--gpus", type=_non_negative, default=None, help="GPUs the tiles spread over (default: this host's; 0: CPU)"
    )
    plan.add_argument("--cores", type=_positive, default=None, help="CPU cores of the host (default: this process's)")
    plan.add_argument(
        "--input",
        dest="input_kind",
        choices=sorted([*STORE, *STORE_ALIASES]),
        help="the input's format, for the store's rate (default: bed for genotype metrics, fasta for alignments)",
    )
    plan.add_argument(
        "--tiles-per-job", type=_positive, default=1, help="tiles run one after another in one job (default 1)"
    )
    plan.add_argument(
        "--backend",
        default="auto",
        choices=["auto", *TILES],
        help="whose measured rate to use (default auto: cupy-b1 with a GPU, numba without)",
    )
    plan.add_argument("--complete", action="store_true", help="no missing data (fewer plane products)")
    plan.add_argument(
        "--dense-max", type=_non_negative, default=20000, help="matrix.tsv up to this many vectors (default 20000)"
    )
    plan.add_argument(
        "--pairs-max",
        type=_non_negative,
        default=PAIRS_MAX,
        help="a null threshold past this many pairs is refused by the workflow (default 200000000)",
    )
    plan.add_argument("--rates", help="JSON {backend: {metric: element comparisons/s}} replacing measured tile rates")
    plan.add_argument("--tiles", action="store_true", help="also list every tile (I, J)")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="genotile", description=__doc__)
    ap.add_argument("--version", action="version", version=f"genotile {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    _run_parser(sub)

    _plan_parser(sub)
    sub.add_parser("backends", help="list the backends available on this machine")
    return ap


def _check_peer_options(args, metrics: list[str]) -> None:
    """A peer format or relatedness output whose metric is not computed is refused by its flag."""
    for fmt in args.formats or []:
        if not set(FORMATS[fmt].metrics) & set(metrics):
            raise GenotileError(
                f"--format {fmt} is written for --metric {' or '.join(FORMATS[fmt].metrics)}, "
                f"not for {', '.join(metrics)}"
            )
    king = [f for f, v in (("--king-degrees", args.king_degrees), ("--king-cutoff", args.king_cutoff)) if v is not None]
    if king and "king" not in metrics:
        raise GenotileError(f"{', '.join(king)} apply to --metric king, not to {', '.join(metrics)}")


def _check_outdir(outdir: str) -> None:
    """--outdir must be a folder or a path that can become one: a file on the way is refused by
    name (else the first write ends in NotADirectoryError, after the input was read)."""
    path = Path(outdir)
    for place in (path, *path.parents):
        if place.exists():
            if not place.is_dir():
                where = "is a file" if place == path else f"is under {place}, a file"
                raise GenotileError(f"--outdir {outdir} {where}, not a folder")
            return


def _check_run(args) -> tuple[list[str], bool]:
    """(the run's metrics, whether the input is genotypes); an option that does not apply to them
    or to the input is refused by its flag."""
    from genotile.core.encodings import ENCODINGS
    from genotile.io.readers.base import list_label
    from genotile.store.inputs import check_input, files_of, inputs_of, metric_encoding

    metrics = list(dict.fromkeys(args.metric))
    thresholds: dict[str, float | None] = {}
    for metric, value in args.threshold:
        if metric not in metrics:
            raise GenotileError(f"--threshold {metric}=...: {metric} is not one of --metric ({', '.join(metrics)})")
        if metric in thresholds:  # keeping the last one silently would hide a typo in a script
            first, second = ("null" if v is None else v for v in (thresholds[metric], value))
            raise GenotileError(f"--threshold {metric} is given twice ({first} and {second}): give it once")
        thresholds[metric] = value
    _check_outdir(args.outdir)
    genotype = {m for m in metrics if ENCODINGS[metric_encoding(m)].genotypes}
    if genotype and len(genotype) < len(metrics):
        others = [m for m in metrics if m not in genotype]
        raise GenotileError(
            f"--metric {', '.join(others)} need a FASTA alignment and --metric {', '.join(sorted(genotype))} "
            f"genotypes ({inputs_of('genotypes')}): run them on their own inputs"
        )
    kind = check_input(args.input, metrics)
    shown = list_label(files_of(args.input))
    given = [flag for flag, key in GENOTYPE_OPTIONS.items() if getattr(args, key) is not None]
    if given and (not genotype or kind == "fasta"):
        raise GenotileError(
            f"{', '.join(given)} apply to genotype input ({inputs_of('genotypes')}), not to the alignment {shown} "
            f"(--metric {', '.join(metrics)})"
        )
    ccc = [f for f, v in (("--ccc-multiplier", args.ccc_multiplier), ("--ccc-param", args.ccc_param)) if v is not None]
    if ccc and not {"ccc2", "ccc3"} & set(metrics):
        raise GenotileError(f"{', '.join(ccc)} apply to --metric ccc2 or ccc3, not to {', '.join(metrics)}")
    ccc3 = [
        flag
        for flag, v in (
            ("--ccc3-block-size", args.ccc3_block_size),
            ("--ccc3-stages", args.ccc3_stages),
            ("--ccc3-null-threshold-max", args.ccc3_null_threshold_max),
        )
        if v is not None
    ]
    if ccc3 and "ccc3" not in metrics:
        raise GenotileError(f"{', '.join(ccc3)} apply to --metric ccc3, not to {', '.join(metrics)}")
    _check_peer_options(args, metrics)
    if args.against is not None:
        from genotile.io.peer_formats import check_dataset
        from genotile.store.inputs import check_against

        check_against(args.input, args.against, metrics)
        spec = {"metrics": metrics, "against": args.against, "formats": args.formats, "king_cutoff": args.king_cutoff}
        check_dataset(shown, spec, None)
    return metrics, bool(genotype) and kind != "fasta"


def _run(args) -> None:
    """`genotile run`: the 2-way metrics through pipeline.run_all, ccc3 through pipeline.run_ccc3."""
    import os

    from genotile import settings
    from genotile.pipeline import run_all, run_ccc3, run_config
    from genotile.store import inputs
    from genotile.store.reuse import current_store

    # INPUT's (and FILE's) files as the store takes them: a path, or a list of two or more (store/listed.py)
    args.input = inputs.given(args.input)
    if args.against is not None:
        args.against = inputs.given(args.against)
    metrics, genotypes = _check_run(args)
    if args.threads is not None:
        backends.limit_threads(args.threads)
    thresholds = dict(args.threshold)
    options = {key: getattr(args, key) for key in GENOTYPE_OPTIONS.values() if getattr(args, key) is not None}
    if genotypes:
        # `chromosomes` always given, as the workflow gives it (rules/common.smk ingest_options): a
        # store made before genotile left other contigs out is made again
        options = {"chromosomes": "autosomes"} | options
    if options.get("regions") and len(options["regions"]) == 1 and os.path.isfile(options["regions"][0]):
        options["regions"] = options["regions"][0]  # a file of regions
    params = {k: v for k, v in (("multiplier", args.ccc_multiplier), ("param", args.ccc_param)) if v is not None}
    two_way = [m for m in metrics if m in METRICS]
    if two_way:
        summaries = run_all(
            args.input,
            args.outdir,
            two_way,
            block_size=args.block_size,
            seed=args.seed,
            thresholds=thresholds,
            dense_max=args.dense_max,
            backend=args.backend,
            vcf_options=options or None,
            pairs_max=args.pairs_max,
            metric_params={"ccc2": params} if params else None,
            collapse_duplicates=args.collapse_duplicates,
            opt_in={
                key: value
                for key, value in (
                    ("formats", args.formats),
                    ("king_degrees", args.king_degrees),
                    ("king_cutoff", args.king_cutoff),
                )
                if value is not None
            },
            against=args.against,
        )
        for name, s in summaries.items():
            print(f"{name}: {s['pairs_passing']} of {s['pairs_computed']} pairs pass -> {args.outdir}/{name}/")
    if "ccc3" in metrics:
        ccc3_store = REGISTRY["ccc3"].encoding
        current_store(
            args.input,
            ccc3_store,
            args.outdir,
            args.block_size,
            args.seed,
            options or None,
            metrics=["ccc2"],
            backend=args.backend,
            dense_max=args.dense_max,
        )
        # the `ccc3:` section of a workflow config, of the options given
        given = (
            ("block_size", args.ccc3_block_size),
            ("stages", args.ccc3_stages),
            ("null_threshold_max", args.ccc3_null_threshold_max),
        )
        config = run_config(block_size=args.block_size, ccc3_settings={k: v for k, v in given if v})
        block_size, stages = settings.ccc3_plan_settings(config)
        s = run_ccc3(
            Path(args.outdir) / "store" / ccc3_store,
            Path(args.outdir) / "ccc3",
            block_size=block_size,
            stages=stages,
            threshold=thresholds.get("ccc3"),
            params=params or None,
            backend=args.backend,
            null_max=settings.ccc3_null_max(config),
        )
        print(f"ccc3: {s['triples_passing']} of {s['triples_computed']} triples pass -> {args.outdir}/ccc3/")


def _plan(args) -> None:
    """`genotile plan`: the workflow's defaults where a flag is not given (this host's GPUs and
    cores, block_size auto, the metric's default threshold), then the estimate of its workload."""
    from genotile.core.blocks import device_memory_bytes
    from genotile.runtime.gpu_slots import visible_gpus
    from genotile.util.cpus import usable_cpus

    if REGISTRY[args.metric].workload == "triples":
        from genotile import settings
        from genotile.core.blocks import visible_gpu_count
        from genotile.pairs.estimate import pass_fraction_for
        from genotile.triples.estimate import describe

        # the GPUs the workflow's ccc3 stages count (settings.ccc3_plan_settings), not nvidia-smi's
        gpus = visible_gpu_count() if args.gpus is None else args.gpus
        block_size, stages = settings.ccc3_plan_settings(
            {"block_size": args.block_size, "ccc3": {"stages": args.stages}}, gpus=gpus
        )
        threshold = THRESHOLDS["ccc3"] if args.threshold is WORKFLOW_DEFAULT else args.threshold
        fraction, why = pass_fraction_for("ccc3", threshold, args.pass_fraction)
        print(
            describe(
                args.vectors,
                args.fields,
                block_size=block_size,
                stages=stages,
                density=fraction,
                missing=not args.complete,
                gpus=gpus,
            )
        )
        print(
            f"  threshold {'null' if threshold is None else threshold}: assumed {fraction:.3g} of triples pass ({why})"
        )
        return
    from genotile.pairs.estimate import estimate

    gpus = len(visible_gpus()) if args.gpus is None else args.gpus  # the GPUs a local run shares its tiles over
    rates = None
    if args.rates:
        try:
            with open(args.rates) as fh:
                rates = json.load(fh)
        except (OSError, ValueError) as exc:
            raise GenotileError(f"--rates {args.rates}: {exc}") from None
    est = estimate(
        METRICS[args.metric],
        args.vectors,
        args.fields,
        block_size=args.block_size,
        threshold="default" if args.threshold is WORKFLOW_DEFAULT else args.threshold,
        pass_fraction=args.pass_fraction,
        gpus=gpus,
        cores=usable_cpus() if args.cores is None else args.cores,
        backend=args.backend,
        input_kind=args.input_kind,
        tiles_per_job=args.tiles_per_job,
        missing=not args.complete,
        dense_max=args.dense_max,
        pairs_max=args.pairs_max,
        device_bytes=device_memory_bytes() if gpus else None,
        rates=rates,
    )
    print(est.describe())
    if args.tiles:
        print(json.dumps(Plan(args.vectors, est.block_size, 0).tiles()))


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    quiet = getattr(args, "quiet", False)
    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr
    )
    try:
        if args.command == "run":
            _run(args)
        elif args.command == "plan":
            _plan(args)
        elif args.command == "backends":
            print("\n".join(backends.available()))
    except GenotileError as exc:
        print(f"genotile error: {exc}", file=sys.stderr)
        return 1
    except (PermissionError, NotADirectoryError, IsADirectoryError) as exc:  # a path the user gave
        print(f"genotile error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        print(f"genotile error: {disk_error(exc)}", file=sys.stderr)  # disk full, quota, read-only
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
