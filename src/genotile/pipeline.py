"""Every stage in one process, with the workflow's file layout: what `genotile run` runs.

The stages are the rules' own (store/stage.py, pairs/stage.py, triples/stage.py), run with the
settings the rules take from the workflow config (settings.py): `run_config` builds a config of
that shape from a run's arguments, so that the rules and a run in one process cannot drift apart.
"""

import logging
from pathlib import Path

from genotile import settings
from genotile.core import ccc3
from genotile.core.blocks import gpu_tiles
from genotile.core.limits import PAIRS_MAX, check_plan
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.core.registry import REGISTRY
from genotile.io.planfile import read_plan
from genotile.io.readers.base import list_label
from genotile.pairs import early
from genotile.pairs import stage as pairs_stage
from genotile.store import reuse
from genotile.store import stage as store_stage
from genotile.store.inputs import files_of, given
from genotile.store.manifest import STORE_KEYS
from genotile.triples import stage as triples_stage
from genotile.util.atomic import renamed_together
from genotile.util.progress import Progress
from genotile.util.readback import load_json

log = logging.getLogger("genotile")


def run_config(
    *,
    block_size=4096,
    seed=1,
    thresholds=None,
    dense_max=20000,
    backend="auto",
    metric_params=None,
    collapse_duplicates="auto",
    pairs_max=PAIRS_MAX,
    ccc3_settings=None,
) -> dict:
    """A workflow config (config/config.yaml's keys) of a run's arguments, for settings.py.

    Parameters
    ----------
    block_size, seed, thresholds, dense_max, backend, collapse_duplicates, pairs_max
        The config keys of these names (thresholds: {metric: value}).
    metric_params : dict, optional
        {metric: {parameter: value}}, each metric's under its config section (ccc2's and ccc3's:
        `ccc`); the parameters given only, no defaults.
    ccc3_settings : dict, optional
        The `ccc3:` section: block_size, stages, null_threshold_max (those given only).

    Returns
    -------
    dict
    """
    config = {
        "thresholds": dict(thresholds or {}),
        "block_size": block_size,
        "seed": seed,
        "dense_max": dense_max,
        "backend": backend,
        "collapse_duplicates": collapse_duplicates,
        "pairs_max": pairs_max,
        "ccc3": dict(ccc3_settings or {}),
    }
    for metric, params in (metric_params or {}).items():
        section = REGISTRY[metric].params_section
        if section:  # a metric without parameters refuses any (get_metric)
            config[section] = dict(params)
    return config


def run_all(
    input_path,
    outdir,
    metrics,
    *,
    block_size=4096,
    seed=1,
    thresholds=None,
    dense_max=20000,
    backend="auto",
    vcf_options=None,
    metric_params=None,
    collapse_duplicates="auto",
    pairs_max=PAIRS_MAX,
    opt_in=None,
    against=None,
) -> dict:
    """Every stage of the 2-way metrics in this process, with the same file layout as the workflow.

    vcf_options: the genotype readers' options (multiallelic, filter_pass, samples, regions);
    metric_params: {metric: {parameter: value}}, e.g. {"ccc2": {"multiplier": 4.5}}.

    Parameters
    ----------
    input_path : str, os.PathLike or list of them
        FASTA alignment, VCF/BCF, PLINK fileset (its .bed or .pgen) or VCF-Zarr directory; or a
        list of such files of one kind, read as one input in their order (store/listed.py): a
        further file appended to the list computes only its vectors' pairs.
    outdir : str or os.PathLike
        Gets ingest/, store/<encoding>/ and <metric>/ as results/<dataset>/ does.
    metrics : sequence of str
        2-way metrics to compute.
    block_size, seed, thresholds, dense_max, backend, pairs_max
        As the workflow's config keys (thresholds: {metric: value}); a run past the plan's bounds
        on output (limits.check_plan) is refused as the workflow's plan refuses it.
    opt_in : dict, optional
        A dataset's opt-in outputs, as its config keys: {"formats": [...], "king_degrees": bool,
        "king_cutoff": value} (README, Peer formats and Relatedness), written beside each metric.
    against : str, os.PathLike or list of them, optional
        Query mode (the config's `against:`): every vector of the input against every vector of
        this FILE, the cross pairs only (store/query.py); a list: files of one kind read as one
        FILE in their order, a further FASTA file appended computing only its vectors' cross pairs.

    Returns
    -------
    dict of str to dict
        {metric: its summary.json}.
    """
    from genotile.io import peer_formats  # the opt-in outputs' checks (not the store job's)

    config = run_config(
        block_size=block_size,
        seed=seed,
        thresholds=thresholds,
        dense_max=dense_max,
        backend=backend,
        metric_params=metric_params,
        collapse_duplicates=collapse_duplicates,
        pairs_max=pairs_max,
    )
    input_path, outdir = given(input_path), Path(outdir)  # a one-file list: that file
    against = None if against is None else given(against)
    # the input in the run's messages: a list input's files joined, as its store's manifest names it
    label = list_label(files_of(input_path))
    thresholds, opt_in = config["thresholds"], opt_in or {}
    peer_formats.check_dataset(label, {**opt_in, "metrics": list(metrics), "against": against}, thresholds.get("king"))
    if against is not None:
        from genotile.store.inputs import check_against

        check_against(input_path, against, metrics, vcf_options)
    summaries = {}
    warming: list = []  # CuPy's or numba's start on threads (below), joined before the run returns
    try:
        for metric_name in metrics:
            # its parameters checked before anything is read
            enc = get_metric(metric_name, **(metric_params or {}).get(metric_name, {})).encoding
            store = outdir / "store" / enc
            same_store = [m for m in metrics if get_metric(m).encoding == enc]
            # as the store job (scripts/store.py), while the input is read: where tiles take a GPU,
            # CuPy's import and the CUDA context on a thread; on the CPU, where the store may be
            # appended to, numba's start, so that `auto` counts the new vectors' few tiles with
            # numba, its start paid (2 cores, 200 sequences appended to 15,800: numpy took 0.62 s).
            # Once a store, and only where it may be made again (a rerun of nothing counts nothing)
            if same_store[0] == metric_name and _store_may_change(store, input_path, against):
                if gpu_tiles(backend):
                    warming.append(early.warm_gpu())
                elif backend in ("auto", "numba"):
                    warming.append(early.warm_numba_for_append(store))
            if against is None:
                reuse.current_store(
                    input_path,
                    enc,
                    outdir,
                    block_size,
                    seed,
                    vcf_options,
                    metrics=same_store,
                    backend=backend,
                    dense_max=dense_max,
                    collapse_duplicates=store_stage.collapse_wanted(collapse_duplicates, gpu_tiles(backend)),
                )
            else:  # a query store: the input's vectors, then the FILE's (store/query.py)
                from genotile.store import query

                query.current_query_store(
                    input_path, against, enc, outdir, block_size, seed, vcf_options, metrics=same_store, backend=backend
                )
            p = read_plan(store / "plan.json")
            # the plan's bounds on output, also where the store was planned by an earlier run
            if p.n_against:
                query.check_query_bound(p, same_store, thresholds, pairs_max, where=f"{label}: ")
            else:
                check_plan(p.input_vectors, same_store, thresholds, pairs_max=pairs_max, where=f"{label}: ")
            mdir = outdir / metric_name
            paths = pairs_stage.tile_paths(mdir / "pairs", p)
            tile_kwargs = settings.tile_settings(config, metric_name, p)
            # the tiles an earlier run computed from this store, or from its part before records were
            # appended (store/append.py; a query's FILE grown, store/query_append.py), with these
            # settings are kept
            todo = pairs_stage.tiles_to_compute(mdir / "pairs", store / "manifest.json", p, tile_kwargs)
            if len(todo) < len(paths):
                log.info(
                    "%s: %d of %d tiles to compute, the rest kept from the last run", metric_name, len(todo), len(paths)
                )
            progress = Progress(f"{metric_name}: tiles", total=len(todo))
            tiles = p.tiles()
            for k, index in enumerate(todo, start=1):
                bi, bj = tiles[index]
                pairs_stage.tile(
                    store / "planes.npy",
                    store / "manifest.json",
                    store / "perm.npy",
                    metric_name,
                    bi,
                    bj,
                    tile_out=paths[index],
                    **tile_kwargs,
                )
                progress.update(k)
            progress.finish(len(todo))
            pairs_stage.record_tiles(mdir / "pairs", store / "manifest.json", tile_kwargs)
            names, dense = peer_formats.output_files(opt_in, metric_name)
            if dense:
                peer_formats.refuse_past_dense_max(label, opt_in, metric_name, p.input_vectors, dense_max)
            # the metric's results land together (issue 27: a run killed while it updates them leaves
            # the earlier ones whole): each written under its temporary name, renamed once all are,
            # summary.json last (it names the others by their digests)
            with renamed_together(mdir, last="summary.json"):
                summaries[metric_name] = _results(config, opt_in, metric_name, p, paths, store, mdir, names)
    finally:
        for thread in warming:  # not left running as the process goes on (or ends)
            if thread is not None:
                thread.join()
    return summaries


def _results(config: dict, opt_in: dict, metric_name: str, p: Plan, paths, store: Path, mdir: Path, names) -> dict:
    """A metric's results in `mdir` from its tiles `paths`: matrix.tsv where dense, pairs.tsv.gz,
    histogram.tsv and summary.json (returned), then the opt-in files `names`."""
    matrix_path = None
    if settings.dense_wanted(config, p):
        matrix_path = mdir / "matrix.tsv"
        pairs_stage.matrix(paths, store / "manifest.json", metric_name, matrix_path)
    summary = pairs_stage.merge(
        paths,
        store / "manifest.json",
        metric_name,
        mdir / "pairs.tsv.gz",
        mdir / "summary.json",
        settings.summary_config(config, metric_name),
        matrix_path,
        mdir / "histogram.tsv",
    )
    if names:
        from genotile.pairs import peers  # the opt-in outputs' code, only when asked for

        peers.write_outputs(
            paths,
            store / "manifest.json",
            metric_name,
            [mdir / name for name in names],
            king_cutoff=opt_in.get("king_cutoff"),
        )
    return summary


def _store_may_change(store: Path, input_path, against) -> bool:
    """Whether `run_all` may make the store at `store` again or grow it, so count tiles: it has no
    manifest yet, or an input file (or FILE's) is as new as it or newer (written since: grown,
    edited, replaced). Two stats a file, no read; a file copied with its old time counts as
    unchanged, and only a warm-up is then missed (the store's own checks decide what is kept)."""
    try:
        made = (store / "manifest.json").stat().st_mtime_ns
        files = [*files_of(input_path), *([] if against is None else files_of(against))]
        return any(Path(f).stat().st_mtime_ns >= made for f in files)
    except OSError:
        return True


def run_ccc3(
    store_dir,
    outdir,
    *,
    block_size,
    stages=1,
    threshold=None,
    params=None,
    backend="auto",
    null_max: int = ccc3.NULL_THRESHOLD_MAX,
) -> dict:
    """Every ccc3 job of a packed store, then the merge, in this process (files as the workflow's).

    Parameters
    ----------
    store_dir : str or os.PathLike
        A packed genotype_t store (planes.npy, manifest.json, perm.npy).
    outdir : str or os.PathLike
        Gets triples/, triples.tsv.gz and summary.json.
    block_size, stages, threshold, params, backend, null_max
        As triples/stage.triple_job.

    Returns
    -------
    dict
        The summary.
    """
    config = run_config(
        block_size=block_size,
        thresholds={ccc3.NAME: threshold},
        backend=backend,
        metric_params={ccc3.NAME: params or {}},
        ccc3_settings={"block_size": block_size, "stages": stages},
    )
    store_dir, outdir = Path(store_dir), Path(outdir)
    manifest = load_json(store_dir / "manifest.json", "store manifest", STORE_KEYS)
    store_plan = Plan.from_json(manifest["plan"])
    words = int(manifest["layout"]["words"])
    plan = triples_stage.plan_triples(store_plan, block_size, stages, threshold, words=words, null_max=null_max)
    triples_stage.check_output_room(plan, threshold, outdir)
    paths = triples_stage.triple_paths(outdir / "triples", plan)
    progress = Progress("ccc3: jobs", total=len(paths))
    for n, (job, path) in enumerate(zip(plan.jobs(), paths, strict=True), start=1):
        triples_stage.triple_job(
            store_dir / "planes.npy",
            store_dir / "manifest.json",
            store_dir / "perm.npy",
            *job,
            block_size=block_size,
            stages=stages,
            threshold=threshold,
            params=params,
            backend=backend,
            out=path,
            null_max=null_max,
        )
        progress.update(n)
    progress.finish(len(paths))
    with renamed_together(outdir, last="summary.json"):  # as run_all's metrics' results
        return triples_stage.merge(
            paths,
            store_dir / "manifest.json",
            block_size=block_size,
            stages=stages,
            triples_out=outdir / "triples.tsv.gz",
            summary_out=outdir / "summary.json",
            config=settings.summary_config(config, ccc3.NAME),
            params=params,
        )
