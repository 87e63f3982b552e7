"""The store stage: an input read (ingest), planned (plan) and packed as bit planes (pack).

What the workflow's store job runs (scripts/store.py: `store`), what `genotile run` runs
(store/reuse.py `current_store`, reusing what an earlier run made from the same input and
settings) and what the API runs (`ingest`, `plan`, `pack`). Every workload (pairs, triples, screen) reads the
store; this stage imports none of them: work the store job does once its planes are packed (the
pairs workload's early tiles, pairs/early.py) is handed in as `after_pack`.
"""

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from genotile.core.blocks import AUTO, auto_block_size, device_memory_bytes, gpu_tiles, words_per_vector
from genotile.core.limits import check_plan
from genotile.core.metrics import METRICS
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.planfile import read_plan, write_plan
from genotile.util.readback import load_json, load_permutation

log = logging.getLogger("genotile")

STORE_FILES = ("plan.json", "perm.npy", "planes.npy", "manifest.json")  # a store's, under store/<encoding>/


def _load_json(path, keys=("n_vectors", "n_fields", "ids")) -> dict:
    """An ingest manifest, refused by name when damaged or incomplete."""
    return load_json(path, "manifest", keys)


def ingest(input_path, encoding, codes_out, manifest_out, *, collapse_duplicates=False, hold=False, **options):
    """Stage 1: read an input with its reader (io/readers/) for a store of `encoding`, and write
    the ingest manifest (store/ingest.py, the one ingest).

    Parameters
    ----------
    input_path : str or os.PathLike
        FASTA alignment, VCF/BCF, PLINK fileset or VCF-Zarr directory.
    encoding : str
        The store's encoding (core/encodings.py).
    codes_out, manifest_out : str or os.PathLike
        The codes (.npy, uint8 (vectors, kept fields), input order) and the manifest (.json).
    collapse_duplicates : bool
        Record which vectors are identical (store/duplicates.py).
    hold : bool
        The codes would be temporary (the store job): the input is held in memory in its
        reader's form where it can be (a regular alignment that fits), or left to the pack (a
        whole .bed: the returned manifest is then `pending`), and no codes are written.
    **options
        The genotype readers' options (multiallelic, filter_pass, samples, regions).

    Returns
    -------
    Ingested
        The manifest (`.manifest`) and what `pack` packs (`.stored`: `codes_out`, written, or
        the input held).
    """
    from genotile.store.ingest import ingest as ingest_input  # each stage imports only its own code (job start-up)

    made = ingest_input(input_path, encoding, codes_out, manifest_out, collapse_duplicates, hold=hold, **options)
    m = made.manifest
    log.info(
        "ingest: %d vectors x %d fields, %d informative (%s)", m["n_vectors"], m["n_fields"], m["n_kept"], encoding
    )
    return made


def plan(
    ingest_manifest,
    block_size,
    seed: int,
    plan_out=None,
    perm_out=None,
    *,
    metrics=(),
    backend="auto",
    dense_max=None,
    bounds: dict | None = None,
) -> Plan:
    """The tile plan; `block_size` "auto" sizes blocks by the work and memory of a tile
    (core/blocks.py) from the store's size, `metrics` (names reading it), `backend` and
    `dense_max` (whether tiles keep their dense block).

    Parameters
    ----------
    ingest_manifest : str or os.PathLike or dict
        The ingest manifest (its n_vectors), or the manifest itself (the Python API's, in memory).
    block_size : int or "auto"
        Vectors per block.
    seed : int
        Seed of the permutation.
    plan_out, perm_out : str or os.PathLike, optional
        plan.json and perm.npy (int64, shape (n_vectors,)); None: not written (the permutation
        is Plan.permutation()).
    bounds : dict, optional
        limits.check_plan's keywords (metrics, thresholds, pairs_max, ccc3_null_max, where):
        a run past them is refused before the plan is written.

    Returns
    -------
    Plan
    """
    manifest = ingest_manifest if isinstance(ingest_manifest, dict) else _load_json(ingest_manifest)
    if block_size == AUTO:
        block_size = resolve_auto_block_size(manifest, metrics, backend, dense_max)
    elif isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise GenotileError(f"block_size must be a positive integer or 'auto', not {block_size!r}")
    p = plan_of_manifest(manifest, int(block_size), int(seed))
    if bounds is not None:  # a run past the bounds on output stops here, before any tile job
        check_plan(p.input_vectors, **bounds)  # output is over the input vectors
    if plan_out is not None:
        write_plan(p, plan_out, perm_out)
    log.info("tile plan: %s", p.describe())
    return p


def plan_of_manifest(manifest: dict, block_size: int, seed: int) -> Plan:
    """The plan of an ingest manifest's vectors: its distinct ones where identical vectors were
    collapsed (store/duplicates.py; n_input then records every input vector)."""
    if "n_distinct" in manifest:
        return Plan(int(manifest["n_distinct"]), block_size, seed, n_input=int(manifest["n_vectors"]))
    return Plan(int(manifest["n_vectors"]), block_size, seed)


def resolve_auto_block_size(manifest: dict, metrics, backend: str, dense_max=None, *, quiet: bool = False) -> int:
    """`block_size: auto` for the store an ingest manifest describes (core/blocks.py); logged in
    one line unless `quiet` (an append asking what a fresh plan would take: store/append.py
    `planned_afresh`)."""
    n = manifest.get("n_distinct", manifest["n_vectors"])
    names = [m for m in metrics if m in METRICS] or ["snp"]
    encoding = METRICS[names[0]].encoding
    gpu = gpu_tiles(backend)
    size = auto_block_size(
        n,
        words_per_vector(encoding, manifest.get("n_kept", manifest["n_fields"])),
        names,
        gpu=gpu,
        device_bytes=device_memory_bytes() if gpu else None,
        # a collapsed store's tiles keep their dense block too: it weighs their histograms
        # (pairs/stage.tile, duplicates.weigh_tile), so a GPU tile must hold it
        dense=(dense_max is not None and manifest["n_vectors"] <= dense_max) or "n_distinct" in manifest,
    )
    if not quiet:
        log.info("block_size auto: %d (%s tiles)", size, "GPU" if gpu else "CPU")
    return size


def pack(stored, ingest_manifest, plan_path, perm_path, planes_out, manifest_out) -> dict:
    """Stage 3: the codes as bit planes in permuted row order (store/pack.py).

    Parameters
    ----------
    stored : str or os.PathLike or HeldAlignment or HeldBits or BedFile
        What ingest made: the codes (.npy), or the input held in memory (`ingest`'s `hold`), or
        a whole .bed to read.
    ingest_manifest : str or os.PathLike or dict
        The ingest manifest (a plain .bed's, `ingest`'s `pending`: the manifest itself, which
        the pack completes and writes).
    plan_path, perm_path : str or os.PathLike
        The plan's outputs.
    planes_out, manifest_out : str or os.PathLike
        planes.npy (uint64 (n_vectors, total words); row r holds vector perm[r]) and the store
        manifest (layout, plan, ids, input checksum).

    Returns
    -------
    dict
        The store manifest.
    """
    p = read_plan(plan_path)
    perm = load_permutation(perm_path, p.n_vectors)
    from genotile.store.pack import layout_from_json
    from genotile.store.pack import pack as pack_stored

    manifest = ingest_manifest if isinstance(ingest_manifest, dict) else _load_json(ingest_manifest)
    m, _ = pack_stored(stored, manifest, p, perm, planes_out, manifest_out)
    words = layout_from_json(m["layout"]).total_words
    log.info("pack: %d vectors x %d words of planes per vector", m["n_vectors"], words)
    return m


def store(
    input_path,
    encoding,
    ingest_manifest_out,
    store_dir,
    block_size,
    seed: int,
    *,
    options: dict | None = None,
    collapse_duplicates: bool = False,
    metrics=(),
    backend="auto",
    dense_max=None,
    bounds: dict | None = None,
    codes_out=None,
    after_pack: Callable[[Plan], None] | None = None,
    on_ingest: Callable | None = None,
) -> Plan:
    """Stages 1-3 in one process, the workflow's `store` job: ingest, plan and pack.

    One job, not three: each would pay a process start, its imports and a trip through the
    scheduler (a checkpoint in between), and the codes would be written for another process to
    read back. The codes go to `codes_out` when given (`genotile run` keeps them, to replan
    without reading the input again), else to a temporary file in `store_dir`, removed once the
    planes are packed; a regular alignment that fits is then held in memory instead (its folded
    bytes), and a whole .bed is read by the pack, in one pass straight into its store that also
    counts its calls (the ingest manifest written then; the plan made from its sizes first), and
    no codes are written (`ingest`'s `hold`: the same files).

    Parameters
    ----------
    input_path : str or os.PathLike
        FASTA alignment, VCF/BCF, PLINK fileset or VCF-Zarr directory.
    encoding : str
        The store's encoding (core/encodings.py).
    ingest_manifest_out : str or os.PathLike
        The ingest manifest (.json).
    store_dir : str or os.PathLike
        Gets plan.json, perm.npy, planes.npy and manifest.json (`plan` and `pack`).
    block_size, seed, metrics, backend, dense_max, bounds
        As `plan`.
    options : dict, optional
        The genotype readers' options (multiallelic, filter_pass, samples, regions).
    collapse_duplicates : bool
        As `ingest`.
    after_pack : callable, optional
        Called with the plan once the planes are packed and the codes removed: the store job's
        own work on the packed store (scripts/store.py: the plan shown, the early tiles of
        pairs/early.py), which this stage does not import.
    on_ingest : callable, optional
        Called with what `ingest` made (store/ingest.Ingested), before the plan: what an append
        keeps of it (store/append.py: an alignment's column counts).

    Returns
    -------
    Plan
    """
    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    codes = Path(codes_out) if codes_out is not None else store_dir / "codes.partial.npy"
    seconds = {}
    try:
        t0 = time.perf_counter()
        # codes that would be temporary: the input held in memory instead where its reader can
        made = ingest(
            input_path,
            encoding,
            codes,
            ingest_manifest_out,
            collapse_duplicates=collapse_duplicates,
            hold=codes_out is None,
            **(options or {}),
        )
        if on_ingest is not None:
            on_ingest(made)
        # a plain .bed is read by the pack, in one pass that also counts its calls: the ingest
        # manifest is written then, the plan made from it as it is so far
        ingested = made.manifest if made.pending else ingest_manifest_out
        t1 = time.perf_counter()
        p = plan(
            ingested,
            block_size,
            seed,
            store_dir / "plan.json",
            store_dir / "perm.npy",
            metrics=metrics,
            backend=backend,
            dense_max=dense_max,
            bounds=bounds,
        )
        t2 = time.perf_counter()
        pack(
            made.stored,
            ingested,
            store_dir / "plan.json",
            store_dir / "perm.npy",
            store_dir / "planes.npy",
            store_dir / "manifest.json",
        )
        seconds = {"ingest": t1 - t0, "plan": t2 - t1, "pack": time.perf_counter() - t2}
    finally:
        if codes_out is None:
            codes.unlink(missing_ok=True)
    # one line a benchmark reads (bench/bench_e2e.py): the job's benchmark file has only the total
    log.info("store stages (s): %s", ", ".join(f"{k} {v:.3f}" for k, v in seconds.items()))
    from genotile.store import resident

    try:
        if after_pack is not None:
            after_pack(p)
    finally:  # a store made on the GPU: its manifests, written behind the job's tiles, are in
        resident.settle_manifests()
    return p


def collapse_wanted(collapse_duplicates, gpu: bool) -> bool:
    """`collapse_duplicates` resolved: "auto" collapses where tiles run on the CPU, not on a GPU.

    A collapsed store's tiles keep their dense block to weigh their histograms by the copies
    (store/duplicates.weigh_tile): on the CPU that costs less than the pairs it saves; on a GPU,
    whose counting is nearly free, moving and weighing the dense block costs more (200,000
    SARS-CoV-2-like sequences, 87,905 distinct: 71 s collapsed against 54 s not, one H100).

    >>> collapse_wanted("auto", gpu=False), collapse_wanted("auto", gpu=True), collapse_wanted(True, gpu=True)
    (True, False, True)
    """
    if collapse_duplicates == "auto":
        return not gpu
    return bool(collapse_duplicates)


def wants_collapse(encoding: str, collapse_duplicates: bool) -> bool:
    """Whether an ingest of this encoding records duplicates (store/duplicates.COLLAPSIBLE)."""
    from genotile.store.duplicates import COLLAPSIBLE

    return bool(collapse_duplicates) and encoding in COLLAPSIBLE


def read_recorded(path) -> dict | None:
    """A JSON record of an earlier run, or None where it is missing or damaged (then recomputed)."""
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None
