import sys

# The job's threads (the hash of its input below, CuPy's import or numba's start warmed beside
# the ingest: pairs/early.py) hold the GIL for long stretches, while the ingest's numpy calls
# release and take it back a few hundred times: each took up to the 5 ms switch interval to get
# it back (the 2,000 new records' counts 0.13 s alone, 2.9 s beside a thread that holds the GIL,
# 0.30 s with a 0.2 ms interval)
DEFAULT_SWITCH = sys.getswitchinterval()
sys.setswitchinterval(0.0002)  # until a fresh store is packed (after_pack)

from genotile.pairs import early  # noqa: E402  (the standard library only)


def granted_gpus(sm) -> int:
    """The GPUs the job was granted (rules/common.smk store_gpus)."""
    return int(getattr(sm.resources, "gpu", 0))


def one_gpu_worker(sm):
    """An append's or a query's worker on one GPU (early.one_gpu_worker), made first: forked before the job starts
    a thread or imports CuPy, it imports CuPy and makes the CUDA context while the job hashes and
    reads its input (spawned after the job's imports, it was ready ~0.6 s after the job's read on
    the H100 machine: bench/RESULTS.md "Session 24"); a query's store (`against:`) too. None where
    no worker starts (the tiles are then counted in the job, as before).
    The job is granted a GPU only for a store of 2-way metrics that may compute its tiles
    (rules/common.smk store_gpus)."""
    gpus = granted_gpus(sm)
    may = gpus > 0 and sm.config["tiles_in_store"] is not False
    store_dir = sm.output.plan.rsplit("/", 1)[0]
    try:  # the worker's warm-up tile (early.WarmTile): none where the config is not as expected
        metrics = tuple(sm.config["datasets"][sm.wildcards.dataset]["metrics"])
        warm = early.WarmTile(store_dir, sm.wildcards.encoding, metrics, lambda m, plan: warm_settings(sm, m, plan))
    except Exception:  # noqa: BLE001 -- a warm-up only
        warm = None
    try:
        return early.one_gpu_worker(store_dir, sm.input.data, gpus, may, query=bool(sm.input.against), warm=warm)
    except Exception as exc:  # noqa: BLE001 -- a head start only: the job counts its tiles itself
        print(f"genotile: the tile worker did not start ({exc!r}): the store job counts its tiles", file=sys.stderr)
        return None


def warm_settings(sm, metric: str, plan) -> dict:
    """A tile's settings (the tile rule's params), for the worker's warm-up tile (early.WarmTile):
    imported there, after the fork."""
    from genotile.settings import tile_settings

    return tile_settings(sm.config, metric, plan)


ONE_GPU_WORKER = one_gpu_worker(snakemake)

from genotile.store.sources import hash_ahead  # noqa: E402

# each input file the workflow's fingerprints left to this job (grown, or new: store/sources.py)
# is hashed on threads from here on, while the job's modules are imported. The rule's input, not
# the config's: a module's `prefix:` moves relative paths there; a list, of one file too
# (rules/common.smk dataset_input).
for path in [snakemake.input.data] if isinstance(snakemake.input.data, str) else snakemake.input.data:
    hash_ahead(path)

import contextlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
from pathlib import Path  # noqa: E402

from genotile.core.registry import REGISTRY  # noqa: E402


def gpu_slots():
    """runtime/gpu_slots, imported where the job was granted a GPU: it imports every backend
    (genotile.backends), which a store job on the CPU does not use."""
    from genotile.runtime import gpu_slots

    return gpu_slots


def tiles_of(sm) -> tuple[list[str], list[str], int, bool]:
    """The job's metrics of this store, those of pairs among them, the GPUs it was granted
    (rules/common.smk store_gpus) and whether it may compute tiles (config `tiles_in_store`,
    pairs/early.py: in `auto`, where it was granted a GPU)."""
    dataset = sm.config["datasets"][sm.wildcards.dataset]
    of_store = [m for m in dataset["metrics"] if REGISTRY[m].encoding == sm.wildcards.encoding]
    pairs = [m for m in of_store if REGISTRY[m].workload == "pairs"]
    gpus, mode = granted_gpus(sm), sm.config["tiles_in_store"]
    return of_store, pairs, gpus, bool(pairs) and (mode is True or (mode == "auto" and gpus > 0))


from genotile.runtime.rule import run_rule  # noqa: E402
from genotile.settings import ccc3_null_max, tile_settings  # noqa: E402
from genotile.store import resident  # noqa: E402
from genotile.store.inputs import given  # noqa: E402

log = logging.getLogger("genotile")


def store(sm):
    # the input as the store takes it: its file, or a list input's files in their order
    input_ = given(sm.input.data)
    of_store, pairs, gpus, may = tiles_of(sm)
    # the bounds on output (limits.check_plan), as `genotile run` applies them
    bounds = {
        "metrics": of_store,
        "thresholds": sm.config["thresholds"],
        "pairs_max": sm.config["pairs_max"],
        "ccc3_null_max": ccc3_null_max(sm.config),
        "where": f"dataset {sm.wildcards.dataset}: ",
    }
    store_dir = sm.output.plan.rsplit("/", 1)[0]
    early.clear(store_dir)
    # config `tiles_in_store` (pairs/early.py): the job may compute the tiles itself where it was
    # granted a GPU (rules/common.smk, store_gpus); CuPy and the CUDA context are then made ready
    # on a thread while the input is read, or in a worker process (an append on one GPU, above)
    mode = sm.config["tiles_in_store"]
    granted = gpus > 0
    backend = sm.config["backend"]
    # granted every GPU of the host (rules/common.smk store_gpus): a worker each, started now
    devices = gpu_slots().visible_gpus() if may and gpus > 1 else []
    pool = early.DevicePool(devices[:gpus]) if len(devices) > 1 else ONE_GPU_WORKER
    one_worker = pool is not None and pool is ONE_GPU_WORKER

    def after_pack(p):
        # a fresh store's tiles (a thread a GPU) trade the GIL far more often at 0.2 ms: the default
        # back (2 x H200, 1M x 20k: GPU 1's five tiles 13.43 s against GPU 0's 11.97 at 0.2 ms); an
        # append's few tiles keep it, beside the warm-up threads that may still hold the GIL
        if not p.segments:
            sys.setswitchinterval(DEFAULT_SWITCH)
        # shown on the console too, before any tile job is scheduled
        what = f"{sm.wildcards.dataset} ({sm.wildcards.encoding})"
        behind = resident.writing_manifests()  # a store made on the GPU: its manifests come after its first tiles
        if not behind:
            report_left_out(what)
        print(f"genotile plan for {what}: {p.describe()}", file=sys.stderr)
        try:
            early_tiles(p)
        finally:
            resident.settle_manifests()
        if behind:
            report_left_out(what)

    def report_left_out(what):
        from genotile.io.readers.vcf import left_out

        skipped = left_out(json.loads(Path(sm.output.ingest).read_text()).get("counts") or {})
        if skipped:  # records the genotype rules left out, counted in summary.json too
            log.info("ingest: %s", skipped)
            print(f"genotile ingest for {what}: {skipped}", file=sys.stderr)

    def early_tiles(p):
        # an appended plan's earlier tiles are kept: only its new ones are computed; in `auto` the
        # store job computes them itself on any backend (store/append.py: a few tiles of the new
        # vectors, each of which would pay a process start and numba's in its own job)
        tiles = p.appended_tiles()
        appended = (
            bool(p.segments) and bool(pairs) and mode == "auto" and early.few_appended(store_dir, p, tiles, len(pairs))
        )
        if appended or (may and not p.segments and early.wanted(mode, granted, len(tiles))):
            # the tile rule's params (rules/tiles.smk takes them from the same function): a tile
            # job adopts a tile recorded with all of its params, with these values (pairs/early.py)
            settings = {m: tile_settings(sm.config, m, p) for m in pairs}
            gpu_only = mode == "auto" and not appended
            seconds = early.compute_tiles(store_dir, p, settings, gpu_only=gpu_only, pool=pool, tiles=tiles)
            # one line a benchmark reads (bench/bench_e2e.py), as the store stages'
            done = len(tiles) * len(pairs) if seconds else 0
            log.info("store tiles (s): %.3f for %d tile(s)", seconds, done)

    # a whole .bed's store made on the GPU and held there for the job's tiles, its file written
    # behind them (store/resident.py); with several GPUs written before they are shared out
    with (
        gpu_slots().slot_for_backend(backend)
        if granted and (pool is None or one_worker)
        else contextlib.nullcontext() as slot,
        resident.on_device(may and granted),
    ):
        if one_worker and not early.on_slot(pool, slot):  # the append's worker on another GPU than the job's slot
            pool.close()
            pool, one_worker = None, False
        warming = early.warm_gpu() if may and granted and not one_worker else None
        if warming is None and not one_worker and pairs and mode == "auto" and backend in ("auto", "numba"):
            warming = early.warm_numba_for_append(store_dir)
        try:
            # the store's encoding, files and plan settings, as both stages take them
            common = (sm.wildcards.encoding, sm.output.ingest, store_dir, sm.params.block_size, sm.params.seed)
            kwargs = {"options": sm.params.options, "bounds": bounds, "after_pack": after_pack}

            def say(line):
                print(f"genotile store for {sm.wildcards.dataset} ({sm.wildcards.encoding}): {line}", file=sys.stderr)
                log.info("%s", line)

            if sm.input.against:  # query mode: the input's vectors, then the FILE's (a grown FILE appended)
                from genotile.store import query

                # FILE: its path, or a list's files in their order (store/query.read_side)
                query.query_store(
                    input_, given(sm.input.against), *common, metrics=of_store, backend=backend, **kwargs, say=say
                )
            else:  # records appended to a FASTA, or a file to a list: only their pairs computed (store/append.py)
                from genotile.store import append, listed

                of_input = listed.store if isinstance(input_, list) else append.store
                of_input(
                    input_,
                    *common,
                    collapse_duplicates=sm.params.collapse,
                    **sm.params.auto,
                    **kwargs,
                    say=say,
                )
        finally:
            if warming is not None:  # not left importing CuPy as the interpreter shuts down
                warming.join()
            if pool is not None:
                pool.close()


run_rule(snakemake, store)
