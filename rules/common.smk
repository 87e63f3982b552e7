import glob as _glob
import json
import sys
from pathlib import Path

from snakemake.exceptions import IncompleteCheckpointException
from snakemake.utils import min_version

min_version("9.0")

# genotile is installed where Snakemake runs (pip install -e . from a clone; README), and in the
# rules' conda envs (envs/*.yaml, from $GENOTILE_SOURCE), not reached through a checkout's src/,
# which a module deployed from git does not have.

from genotile.core.encodings import GENOTYPE_ENCODINGS  # noqa: E402
from genotile.core.metrics import METRICS  # noqa: E402
from genotile.core.registry import REGISTRY  # noqa: E402
from genotile.backends import registry as _backend_registry  # noqa: E402
from genotile.core.plan import Plan  # noqa: E402
from genotile.io.planfile import read_plan  # noqa: E402
from genotile.io.readers import base as _readers_base  # noqa: E402
from genotile.triples import stage as _triples  # noqa: E402
from genotile.store import stage as _store  # noqa: E402
from genotile import settings as _settings  # noqa: E402
from genotile.runtime import gpu_request as _gpu_request  # noqa: E402
from genotile.runtime import gpu_slots as _gpu_slots  # noqa: E402
from genotile.store import sources as _sources  # noqa: E402
from genotile.store import inputs as _inputs  # noqa: E402
from genotile.store import manifest as _store_manifest  # noqa: E402
from genotile.core import limits as _limits  # noqa: E402
from genotile.runtime.rule import (
    cancel_scheduler_timers,
    exit_without_teardown,
    skip_frame_imports,
)  # noqa: E402, F401 (Snakefile's onsuccess)
from genotile.pairs.early import clear_all as clear_early_tiles  # noqa: E402, F401
from genotile.pairs import early as _early  # noqa: E402
from genotile.runtime.workflow import (
    hold_run_lock,
    one_line,
    one_line_errors,
    validate_config,
)  # noqa: E402, F401 (Snakefile's onstart)

# Snakemake's process records and passes on the jobs' params without importing pandas, while
# none of them can be a data frame (runtime/rule.py): from the DAG's first params check on
skip_frame_imports()

# Every user error met while the workflow is parsed or its DAG built is one `genotile error:`
# line and exit status 1 (runtime/workflow.py): the checks below run inside one_line_errors,
# the rules' input, params and resources functions that can refuse are `one_line`.
with one_line_errors():
    # as snakemake.utils.validate(config, schema=...): defaults set, a refusal in one line; the
    # YAML schema read once per content of its file (runtime/workflow.py validate_config)
    if not workflow.modifier.skip_validation:
        validate_config(
            config, workflow.source_path("../config/schema/config.schema.yaml")
        )
    # NaN passes a JSON schema's number type (YAML `.nan`): refused here, with infinity
    _limits.check_config_thresholds(config)
    # each dataset's input kind (FASTA, VCF/BCF, PLINK fileset, VCF-Zarr) against its metrics and options
    _inputs.check_datasets(config)


wildcard_constraints:
    dataset=r"[A-Za-z0-9_][A-Za-z0-9_.-]*",
    encoding=r"[a-z_]+",
    metric="|".join(METRICS),
    i=r"\d+",
    j=r"\d+",


def input_files_of(dataset):
    """A dataset's input as the list of its files: its one file, or those of a list input in
    their order (store/listed.py)."""
    return _inputs.files_of(config["datasets"][dataset]["input"])


def dataset_input(wildcards):
    return input_files_of(wildcards.dataset)


def dataset_fileset(wildcards):
    """The other files of each PLINK fileset (.bim + .fam, .pvar + .psam; none for other inputs)
    of the input and of a query's FILE: inputs of the ingest, so that a missing one is named and
    an edit reruns it."""
    return [
        str(p)
        for path in dataset_input(wildcards) + dataset_against(wildcards)
        for p in _inputs.input_files(path)[1:]
    ]


def against_files_of(dataset):
    """Query mode (`against:`, store/query.py): the FILE, or each file of a FILE given as a list,
    in its order; none for an all-pairs dataset."""
    against = config["datasets"][dataset].get("against")
    return [] if against is None else _inputs.files_of(against)


def dataset_against(wildcards):
    """The files of a query's FILE (`against_files_of`), inputs of the store (their filesets'
    other files: `dataset_fileset`); none for an all-pairs dataset (its DAG and records
    unchanged)."""
    return against_files_of(wildcards.dataset)


def encoding_of(wildcards):
    return METRICS[wildcards.metric].encoding


def store_file(name, metric=None):
    """A file of the packed store that the metric's encoding reads (the `metric` wildcard's, or `metric`)."""

    def path(wildcards):
        encoding = REGISTRY[metric].encoding if metric else encoding_of(wildcards)
        return f"results/{wildcards.dataset}/store/{encoding}/{name}"

    return path


_PLANS = {}


def plan_for(dataset, metric) -> Plan:
    """The tile plan, once the store checkpoint has run for this dataset and encoding; read once
    per version of plan.json (its stat the key: a store replanned in the run is read again), not
    once for each of a tile's params."""
    encoding = METRICS[metric].encoding
    path = checkpoints.store.get(dataset=dataset, encoding=encoding).output.plan
    st = Path(path).stat()
    key = (path, st.st_ino, st.st_mtime_ns, st.st_size)
    if key not in _PLANS:
        _PLANS[key] = read_plan(path)
    return _PLANS[key]


_MANIFESTS = {}


def store_part_keys(dataset, metric) -> list:
    """The key of each part of the store (store/manifest.py part_keys: one, or one per append),
    once the store checkpoint has run; read once per version of manifest.json."""
    encoding = METRICS[metric].encoding
    path = checkpoints.store.get(dataset=dataset, encoding=encoding).output.manifest
    st = Path(path).stat()
    key = (path, st.st_ino, st.st_mtime_ns, st.st_size)
    if key not in _MANIFESTS:
        _MANIFESTS[key] = _store_manifest.part_keys(json.loads(Path(path).read_text()))
    return _MANIFESTS[key]


@one_line
def tile_store(wildcards) -> str:
    """The tile rule's `store` param: the key of the store part the tile is computed from. The
    tile's store files are `ancient` inputs (rules/tiles.smk): a store made again reruns the
    tiles whose part changed (this param), not those of the earlier parts of a store appended to
    (store/append.py), which keep their key."""
    keys = store_part_keys(wildcards.dataset, wildcards.metric)
    return keys[plan_of(wildcards).part_of_block(int(wildcards.j))]


def tile_env() -> str:
    """The conda env of the rules that run a backend: CuPy's unless the config pins a CPU one
    (genotile.backends.registry)."""
    return (
        "../envs/cpu.yaml"
        if _backend_registry.is_cpu(config["backend"])
        else "../envs/gpu.yaml"
    )


@one_line
def tile_gpus(wildcards) -> int:
    """The `gpu` resource (0 or 1) of the rules that run a backend: config `tile_gpu`
    (runtime/gpu_request.py). A function, so that it is asked once the executor is known: on
    SLURM, `auto` asks `sinfo` whether the tile jobs' partition has GPUs. A tile the store job
    computed (pairs/early.py) takes none: its job only moves the file into place, and the
    tile jobs of a run on one GPU would otherwise wait for it in turn (~0.24 s each)."""
    if {"i", "j", "metric"} <= set(wildcards.keys()) and _early.left(
        store_file("")(wildcards), wildcards.metric, int(wildcards.i), int(wildcards.j)
    ):
        return 0
    return _gpu_request.tile_gpus(
        config["tile_gpu"],
        config["backend"],
        on_cluster=workflow.non_local_exec,
        partition=tile_partition(),
    )


def tile_partition():
    """The SLURM partition of tile jobs: `slurm_partition` of the tile rule in set-resources, else
    in default-resources (profiles), else None (the cluster's default partition)."""
    settings = workflow.resource_settings
    for resources in (
        settings.overwrite_resources.get("tile") or {},
        settings.default_resources or {},
    ):
        if "slurm_partition" in resources:
            return str(resources["slurm_partition"].raw).strip("'\"") or None
    return None


@one_line
def store_gpus(wildcards) -> int:
    """The store job's `gpu` resource: the GPUs of a local run whose tile jobs take one, for a
    store that 2-way metrics read, where it may compute its tiles itself (config
    `tiles_in_store`, pairs/early.py: at most EARLY_TILES_MAX tiles, shared out among them);
    else 0. The job decides once its plan is made.
    """
    if (
        config["tiles_in_store"] is False
        or workflow.non_local_exec
        or _backend_registry.is_cpu(config["backend"])
    ):
        return 0
    metrics = config["datasets"][wildcards.dataset]["metrics"]
    if not any(
        REGISTRY[m].encoding == wildcards.encoding and REGISTRY[m].workload == "pairs"
        for m in metrics
    ):
        return 0
    # every GPU of the run's bound: the job shares its tiles out among them (pairs/early.py)
    bound = workflow.global_resources["gpu"].value
    return tile_gpus(wildcards) and _gpu_slots.store_job_gpus(bound)


@one_line
def store_collapse(wildcards) -> bool:
    """config `collapse_duplicates` resolved (store/stage.collapse_wanted): `auto` collapses
    identical vectors where the tile jobs run on the CPU (tile_gpus), not on a GPU."""
    return _store.collapse_wanted(
        config["collapse_duplicates"], bool(tile_gpus(wildcards))
    )


def auto_block_params(wildcards) -> dict:
    """What `block_size: auto` sizes a store's blocks by (genotile.core.blocks): every metric of
    the encoding (not the dataset's list, so adding a metric replans nothing), the backend and
    dense_max; nothing for a fixed block size, so that changing these reruns no plan."""
    if config["block_size"] != "auto":
        return {}
    return {
        "metrics": [m for m in METRICS if METRICS[m].encoding == wildcards.encoding],
        "backend": config["backend"],
        "dense_max": config["dense_max"],
    }


def job_group(kind: str, name: str, rank: int) -> str:
    """The Snakemake group of a tile-like job: `tiles_per_job` jobs of one kind and name.

    `rank` numbers the jobs of one name 0, 1, 2, ... without needing the plan; runs of
    `tiles_per_job` ranks get their own group id, registered as a member of the group `tiles`, so
    one `--group-components tiles=<large>` (profiles/slurm) lets every id span its jobs. A single
    shared id would not do: Snakemake merges group components again at every DAG update (after
    each checkpoint), so the groups of one id grow past any component count.
    """
    group = f"{kind}_{name}_{rank // config['tiles_per_job']}"
    workflow.parent_groupids[group] = "tiles"
    return group


def tile_group(wildcards) -> str:
    i, j = int(wildcards.i), int(wildcards.j)  # i <= j: rank j(j+1)/2 + i
    return job_group(
        "tiles", f"{wildcards.dataset}_{wildcards.metric}", j * (j + 1) // 2 + i
    )


def triple_group(wildcards) -> str:
    i, j, k = int(wildcards.i), int(wildcards.j), int(wildcards.k)  # i <= j <= k
    rank = k * (k + 1) * (k + 2) // 6 + j * (j + 1) // 2 + i
    stage = int(wildcards.stage)
    return job_group(
        "tiles", f"{wildcards.dataset}_ccc3", rank * TRIPLE_SETTINGS["stages"] + stage
    )


def screen_group(wildcards) -> str:
    i, j = int(wildcards.i), int(wildcards.j)  # any i, j: Cantor's pairing
    return job_group(
        "tiles", f"{wildcards.screen}_screen", (i + j) * (i + j + 1) // 2 + j
    )


def tiles_for(dataset, metric):
    return [
        f"results/{dataset}/{metric}/pairs/tile_{i}_{j}.npz"
        for i, j in plan_for(dataset, metric).tiles()
    ]


def plan_of(wildcards) -> Plan:
    return plan_for(wildcards.dataset, wildcards.metric)


@one_line
def tile_files(wildcards):
    return tiles_for(wildcards.dataset, wildcards.metric)


@one_line
def snp_tile_files(wildcards):
    return tiles_for(wildcards.dataset, "snp")


def dense_wanted(wildcards) -> bool:
    return _settings.dense_wanted(config, plan_of(wildcards))


@one_line
def matrix_if_dense(wildcards):
    if dense_wanted(wildcards):
        return f"results/{wildcards.dataset}/{wildcards.metric}/matrix.tsv"
    return []


# the genotype readers' options (io/readers/base.py)
VCF_OPTIONS = _readers_base.GENOTYPE_OPTIONS


def ingest_options(wildcards):
    """The genotype readers' options of a dataset (alignments take none)."""
    if wildcards.encoding not in GENOTYPE_ENCODINGS:
        return {}
    spec = config["datasets"][wildcards.dataset]
    # `chromosomes` always given (the readers' default where the config has none), so that a
    # store made before genotile left non-autosomal variants out is made again
    return {"chromosomes": "autosomes"} | {
        key: spec[key] for key in VCF_OPTIONS if key in spec
    }


def dataset_options(dataset) -> dict:
    """The genotype readers' options of a dataset as written in the config."""
    spec = config["datasets"][dataset]
    return {key: spec[key] for key in VCF_OPTIONS if key in spec}


def ingest_option_files(wildcards):
    """Files besides the input that the ingest reads: the `samples:` list, a `regions:` file and,
    with regions, the VCF's index; inputs of the rule, so an edit (newer mtime) reruns it.
    """
    options = dataset_options(wildcards.dataset)
    files = [str(p) for p in _sources.option_files(options).values()]
    if isinstance(options.get("samples"), str) and options["samples"] not in files:
        # missing: Snakemake names it before any job runs
        files.append(options["samples"])
    if options.get("regions") is not None:
        files += [
            str(p)
            for path in dataset_input(wildcards)
            for p in _sources.index_files(path)
        ]
    return files


# Fingerprints live beside Snakemake's own records, not in results/: they are written when the
# workflow is parsed, so a dry run or a refused config must not leave files among the results.
# The store job reads its input's digest from them (store/sources.py, recorded_digest).
FINGERPRINTS = _sources.FINGERPRINTS.as_posix()


def named_fingerprint(name, *parts, k=1):
    """The fingerprint `name`+part+...(+k): `name` a dataset's or a screen's, the parts what it
    stands for (none: a dataset's input), `k` which file of a list (the first unnumbered). The
    parts are joined by `+`, which no dataset or screen name holds (the schema's pattern): never
    another's fingerprint, whatever the names (a `.` would let dataset `x.against` take dataset
    `x`'s FILE's)."""
    numbered = [str(k)] if k > 1 else []
    return f"{FINGERPRINTS}/{'+'.join([name, *parts, *numbered])}.json"


def dataset_fingerprint(dataset, k=1):
    """The fingerprint of the `k`th file of a dataset's input (1: its only or first file):
    `<dataset>.json`, `<dataset>+2.json`, ..."""
    return named_fingerprint(dataset, k=k)


def dataset_fingerprints(dataset):
    """The fingerprint of each file of a dataset's input, in its order."""
    return [
        dataset_fingerprint(dataset, k)
        for k in range(1, len(input_files_of(dataset)) + 1)
    ]


def screen_fingerprint(screen, kind):
    return named_fingerprint(screen, "screen", kind)


def fingerprint(out, path, options=None):
    """`out`, a record of the content (SHA-256) of `path` and its option files, rewritten (new
    mtime) only when that content changes (store/sources.py); as an input of the rule that reads
    them, it reruns the rule on a change of content that no mtime shows (a file restored with
    `cp -p`). Written when the workflow is parsed (`write_fingerprints`, below), before Snakemake
    takes stock of the files; [] while `path` is missing (Snakemake then names it)."""
    return out if Path(path).exists() else []


def against_fingerprint(dataset, k=1):
    """The fingerprint of the `k`th file of a query's FILE (1: its only or first file):
    `<dataset>+against.json`, `<dataset>+against+2.json`, ..."""
    return named_fingerprint(dataset, "against", k=k)


def against_fingerprints(dataset):
    """The fingerprint of each file of a query's FILE, in its order (none without `against:`)."""
    return [
        against_fingerprint(dataset, k)
        for k in range(1, len(against_files_of(dataset)) + 1)
    ]


def dataset_sources(wildcards):
    """The fingerprint of each file of the input (and of each file of the FILE of a query): a
    list's further file, its own fingerprint new, reruns the store (an append of its vectors).
    """
    pairs = [
        *zip(dataset_fingerprints(wildcards.dataset), dataset_input(wildcards)),
        *zip(against_fingerprints(wildcards.dataset), dataset_against(wildcards)),
    ]
    # a missing file has none ([]): Snakemake names the file itself
    return [out for out, path in pairs if fingerprint(out, path)]


def screen_sources(wildcards):
    spec = config["screens"][wildcards.screen]
    return [
        fingerprint(screen_fingerprint(wildcards.screen, kind), spec[kind])
        for kind in ("samples", "signatures")
    ]


def write_fingerprints():
    """Bring every dataset's and screen's fingerprint up to date (files are hashed again only
    when their stat changed since the last hashes: cheap when nothing changed). A dataset's
    input whose content changed for certain (a new fingerprint, another size: records appended)
    is not hashed here but by its store job, which reruns on it, beside its own work (`defer`,
    store/sources.py)."""
    for dataset, spec in config["datasets"].items():
        for out, path in zip(dataset_fingerprints(dataset), input_files_of(dataset)):
            if Path(path).exists():
                _sources.write_fingerprint(
                    out, path, dataset_options(dataset), defer=True
                )
        drop_fingerprints_past(dataset, len(input_files_of(dataset)))
        for out, path in zip(against_fingerprints(dataset), against_files_of(dataset)):
            if Path(path).exists():
                _sources.write_fingerprint(out, path, dataset_options(dataset))
        drop_fingerprints_past(
            dataset, len(against_files_of(dataset)), against_fingerprint
        )
    for screen, spec in (config.get("screens") or {}).items():
        for kind in ("samples", "signatures"):
            if Path(spec[kind]).is_file():
                _sources.write_fingerprint(screen_fingerprint(screen, kind), spec[kind])


def drop_fingerprints_past(dataset, n, named=dataset_fingerprint):
    """Remove the fingerprints of the files past the `n` a dataset's input (or, `named`
    against_fingerprint, its FILE: none without `against:`) now lists (a list made shorter):
    none is then left to stand for a file no longer listed, past a gap too (a run stopped while
    it removed them)."""
    first = Path(named(dataset, 1))
    if n < 1 and first.exists():
        first.unlink()
    # `<name>+...+`, then a file's number
    numbered = Path(named(dataset, 2)).name.removesuffix("2.json")
    for path in first.parent.glob(_glob.escape(numbered) + "*.json"):
        k = path.name[len(numbered) : -len(".json")]
        if k.isdigit() and int(k) > n:
            path.unlink()


with one_line_errors():
    write_fingerprints()


_TILE_SETTINGS = {}


def tile_setting(name):
    """One of a tile's settings (genotile.settings.tile_settings) as a param of the tile rule: its
    params are the tile stage's keyword arguments, each its own param, as the store job's early
    tiles record them (pairs/early.py). Built once per dataset, metric and plan, not four times
    a tile (keyed by the plan too, so a store replanned in the same run is never given another
    plan's settings)."""

    @one_line
    def param(wildcards):
        plan = plan_of(wildcards)
        key = (wildcards.dataset, wildcards.metric, plan)
        if key not in _TILE_SETTINGS:
            _TILE_SETTINGS[key] = _settings.tile_settings(
                config, wildcards.metric, plan
            )
        return _TILE_SETTINGS[key][name]

    return param


@one_line
def summary_config(wildcards):
    """What a merge records in summary.json under `config` (genotile.settings.summary_config);
    the triples merge's has no `metric` wildcard: ccc3's."""
    metric = wildcards.get("metric", "ccc3")
    return _settings.summary_config(config, metric, wildcards.dataset, CCC3_GPUS)


@one_line
def snp_summary_config(wildcards):
    """summary_config of a dataset's snp metric (the clusters rule has no `metric` wildcard)."""
    return _settings.summary_config(config, "snp", wildcards.dataset, CCC3_GPUS)


def threshold_of(wildcards):
    return summary_config(wildcards)["threshold"]


def summary_files():
    return [
        f"results/{dataset}/{metric}/summary.json"
        for dataset, spec in config["datasets"].items()
        for metric in spec["metrics"]
    ]


def report_files(dataset, metric):
    """The report's plots and tables of one dataset and metric."""
    out = [f"results/{dataset}/{metric}/report/histogram.png"]
    # a query (against:) has cross pairs only: no square matrix to cluster for a heatmap, and
    # no pairs within either set to link clusters by
    query = config["datasets"][dataset].get("against") is not None
    if not query and _settings.dense_wanted(config, plan_for(dataset, metric)):
        out.append(f"results/{dataset}/{metric}/report/heatmap.png")
    out += [
        f"results/{dataset}/{metric}/report/{f}"
        for f in METRICS[metric].report_files
        if not (query and f == "clusters.tsv")
    ]
    return out


@one_line
def all_outputs_of_this_run(wildcards):
    """The default target's inputs, the run lock taken first (runtime/workflow.py): as the DAG is built,
    before Snakemake looks for files a running job has marked incomplete"""
    if workflow.is_main_process and workflow.executor_plugin and not workflow.dryrun:
        hold_run_lock(workflow.execution_settings.lock)
    return all_outputs(wildcards)


def all_outputs(wildcards):
    """Every merged output and report piece, and every tile: a lost tile is recomputed on the next run."""
    # the run summary has a row per dataset and metric, and one per screen
    outputs = ["results/run_summary.tsv"] if config["report"] else []
    for dataset, spec in config["datasets"].items():
        for metric in spec["metrics"]:
            # ccc3 (3-way): rules/triples.smk; no matrix, histogram or plots
            if REGISTRY[metric].workload == "triples":
                outputs += [
                    f"results/{dataset}/ccc3/{n}"
                    for n in ("triples.tsv.gz", "summary.json")
                ]
                try:
                    outputs += ccc3_files(dataset)
                except IncompleteCheckpointException as e:
                    outputs.append(e.targetfile)
                continue
            outputs += [
                f"results/{dataset}/{metric}/{name}"
                for name in ("pairs.tsv.gz", "summary.json", "histogram.tsv")
            ]
            try:
                outputs += tiles_for(dataset, metric)
                outputs += peer_files(dataset, metric)  # rules/merge.smk
                if config["report"]:
                    outputs += report_files(dataset, metric)
            except IncompleteCheckpointException as e:
                # No plan yet: ask for it and go on, so that every dataset's store runs
                # at once, not one checkpoint after another (each a trip through a cluster
                # queue). Snakemake evaluates this list again as each plan completes.
                outputs.append(e.targetfile)
    return outputs + screen_outputs()


# -- ccc3 (rules/triples.smk) --

_CCC3_SHOWN = set()


# ccc3's GPU defaults (blocks by the store's planes, a stage a GPU: genotile.settings) where this
# process plans and runs the jobs on its own host; on a cluster the head and each job (which
# parses this file again on its node) take the CPU's, so that all of them plan the same jobs
CCC3_GPUS = None if workflow.local_exec and not workflow.remote_exec else 0

# a ccc3 job's settings (genotile.settings.triple_settings): the triples rules' params, the plan's bound
with one_line_errors():
    TRIPLE_SETTINGS = _settings.triple_settings(config, CCC3_GPUS)


def ccc3_plan(dataset):
    """The ccc3 plan once the genotype_t store checkpoint has run; a null threshold past 2,000
    vectors, or whose triples would not fit the free disk, is refused here, before any triple
    job is scheduled."""
    store = checkpoints.store.get(dataset=dataset, encoding=REGISTRY["ccc3"].encoding)
    s = TRIPLE_SETTINGS
    threshold = s["threshold"]
    plan = _triples.plan_triples(
        read_plan(store.output.plan),
        s["block_size"],
        s["stages"],
        threshold,
        words=_triples.store_words(store.output.manifest),
        null_max=s["null_max"],
        where=f"dataset {dataset}: ",
    )
    _triples.check_output_room(
        plan, threshold, f"results/{dataset}/ccc3", f"dataset {dataset}: "
    )
    if dataset not in _CCC3_SHOWN:
        _CCC3_SHOWN.add(dataset)
        # a null threshold in the config's word, as genotile plan and every console line say it
        # (run_summary.tsv leaves the cell empty, summary.json writes null), not Python's None
        shown = "null" if threshold is None else threshold
        print(
            f"genotile plan for {dataset}: {plan.describe()}; threshold {shown}",
            file=sys.stderr,
        )
    return plan


@one_line
def ccc3_files(dataset):
    return [
        f"results/{dataset}/ccc3/triples/triples_{i}_{j}_{k}_{s}.npz"
        for i, j, k, s in ccc3_plan(dataset).jobs()
    ]


# -- opt-in outputs of a dataset: peer formats and relatedness (rules/merge.smk) --

from genotile.io import peer_formats as _peer_formats  # noqa: E402

with one_line_errors():
    for _name, _spec in config["datasets"].items():
        _peer_formats.check_dataset(_name, _spec, config["thresholds"].get("king"))
        # formats holding every pair, past dense_max: refused here where the input's vectors are
        # known before its store (a FASTA's records, a VCF's or .fam's samples), else in peer_files
        _inputs.refuse_dense_formats(
            _name,
            _spec,
            config["dense_max"],
            dataset_fingerprints(_name),
            against_fingerprints(_name),
        )


def peer_files(dataset, metric):
    """The opt-in outputs of a dataset and metric; those holding every pair are refused past
    dense_max (needs the plan: raises IncompleteCheckpointException before it), where the
    vectors were not known at parse time (store/inputs.py refuse_dense_formats)."""
    spec = config["datasets"][dataset]
    names, dense = _peer_formats.output_files(spec, metric)
    if dense:
        n = plan_for(dataset, metric).input_vectors
        _peer_formats.refuse_past_dense_max(
            dataset, spec, metric, n, config["dense_max"]
        )
    return [f"results/{dataset}/{metric}/{name}" for name in names]
