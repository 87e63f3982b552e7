"""The pipeline's stages as plain functions over paths: what each Snakemake rule
runs, and what `genotile run` chains in one process."""

import json
import logging
import time
from pathlib import Path

from genotile.core.blocks import AUTO, auto_block_size, device_memory_bytes, gpu_tiles, words_per_vector
from genotile.core.limits import PAIRS_MAX, check_plan, check_threshold
from genotile.core.metrics import METRICS, get_metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.planfile import read_plan, write_plan
from genotile.store.manifest import STORE_KEYS, store_identity
from genotile.store.sources import differences, sources
from genotile.util.progress import Progress
from genotile.util.readback import load_json, load_permutation

log = logging.getLogger("genotile")


def _load_json(path, keys=("n_vectors", "n_fields", "ids")) -> dict:
    """A manifest (ingest's by default), refused by name when damaged or incomplete."""
    return load_json(path, "manifest", keys)


def ingest(input_path, encoding, codes_out, manifest_out, **options) -> dict:
    """Stage 1: read an input and write its codes matrix and manifest (store/ingest.py).

    Parameters
    ----------
    input_path : str or os.PathLike
        FASTA alignment or VCF/BCF.
    encoding : str
        "nucleotide", "categorical" (alignments), "genotype" or "genotype_t" (VCF).
    codes_out, manifest_out : str or os.PathLike
        The codes (.npy, uint8 (vectors, kept fields), input order) and the manifest (.json).
    **options
        The VCF reader's options (multiallelic, filter_pass, samples, regions).

    Returns
    -------
    dict
        The manifest: input and its SHA-256, n_vectors, n_fields, n_kept, ids, ...
    """
    from genotile.store.ingest import ingest as ingest_input  # each stage imports only its own code (job start-up)

    m = ingest_input(input_path, encoding, codes_out, manifest_out, **options)
    _log_ingest(m, encoding)
    return m


def _log_ingest(m: dict, encoding: str) -> None:
    log.info(
        "ingest: %d vectors x %d fields, %d informative (%s)", m["n_vectors"], m["n_fields"], m["n_kept"], encoding
    )


def ingest_bed(input_path, encoding, manifest_out, options: dict | None = None, collapse_duplicates: bool = False):
    """Stage 1 of the store job for a whole .bed: its calls held in memory as bits, no codes
    matrix written (store/ingest_bed.py); the same ingest manifest as `ingest`.

    Returns
    -------
    numpy.ndarray or None
        uint64 (samples, 2, words), for `pack`'s `bits`; None, with nothing written, where the
        input is not one (then `ingest` writes the codes).
    """
    from genotile.store import ingest_bed as held  # each stage imports only its own code (job start-up)

    if not held.takes(input_path, encoding, options):
        return None
    m, bits = held.ingest_bed(
        input_path, encoding, manifest_out, collapse_duplicates=collapse_duplicates, **(options or {})
    )
    _log_ingest(m, encoding)
    return bits


def ingest_held(input_path, encoding, codes_out, manifest_out, options=None, collapse_duplicates=False, hold=True):
    """Stage 1 of the store job: `ingest`, but (`hold`) a regular alignment that fits in memory is
    held there, no codes written (store/ingest.py ingest_holding).

    Returns
    -------
    HeldAlignment or None
        For `pack`'s `held`; None where the codes were written to `codes_out`.
    """
    from genotile.store.ingest import ingest_holding  # each stage imports only its own code (job start-up)

    m, held = ingest_holding(
        input_path, encoding, codes_out, manifest_out, collapse_duplicates, hold=hold, **(options or {})
    )
    _log_ingest(m, encoding)
    return held


def plan(
    ingest_manifest,
    block_size,
    seed: int,
    plan_out,
    perm_out,
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
    ingest_manifest : str or os.PathLike
        The ingest manifest (its n_vectors).
    block_size : int or "auto"
        Vectors per block.
    seed : int
        Seed of the permutation.
    plan_out, perm_out : str or os.PathLike
        plan.json and perm.npy (int64, shape (n_vectors,)).
    bounds : dict, optional
        limits.check_plan's keywords (metrics, thresholds, pairs_max, ccc3_null_max, where):
        a run past them is refused before the plan is written.

    Returns
    -------
    Plan
    """
    manifest = _load_json(ingest_manifest)
    if block_size == AUTO:
        block_size = resolve_auto_block_size(manifest, metrics, backend, dense_max)
    elif isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise GenotileError(f"block_size must be a positive integer or 'auto', not {block_size!r}")
    p = plan_of_manifest(manifest, int(block_size), int(seed))
    if bounds is not None:  # a run past the bounds on output stops here, before any tile job
        check_plan(p.input_vectors, **bounds)  # output is over the input vectors
    write_plan(p, plan_out, perm_out)
    log.info("tile plan: %s", p.describe())
    return p


def plan_of_manifest(manifest: dict, block_size: int, seed: int) -> Plan:
    """The plan of an ingest manifest's vectors: its distinct ones where identical vectors were
    collapsed (store/duplicates.py; n_input then records every input vector)."""
    if "n_distinct" in manifest:
        return Plan(int(manifest["n_distinct"]), block_size, seed, n_input=int(manifest["n_vectors"]))
    return Plan(int(manifest["n_vectors"]), block_size, seed)


def resolve_auto_block_size(manifest: dict, metrics, backend: str, dense_max=None) -> int:
    """`block_size: auto` for the store an ingest manifest describes (core/blocks.py)."""
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
        # (steps.tile, duplicates.weigh_tile), so a GPU tile must hold it
        dense=(dense_max is not None and manifest["n_vectors"] <= dense_max) or "n_distinct" in manifest,
    )
    log.info("block_size auto: %d (%s tiles)", size, "GPU" if gpu else "CPU")
    return size


def pack(codes, ingest_manifest, plan_path, perm_path, planes_out, manifest_out, *, bits=None, held=None) -> dict:
    """Stage 3: the codes as bit planes in permuted row order (store/pack.py).

    Parameters
    ----------
    codes, ingest_manifest : str or os.PathLike
        Ingest's outputs.
    plan_path, perm_path : str or os.PathLike
        The plan's outputs.
    planes_out, manifest_out : str or os.PathLike
        planes.npy (uint64 (n_vectors, total words); row r holds vector perm[r]) and the store
        manifest (layout, plan, ids, input checksum).
    bits : numpy.ndarray, optional
        A whole .bed's calls held as bits (`ingest_bed`), packed in place of the codes (then
        unused, and not made).
    held : HeldAlignment, optional
        An alignment held in memory (`ingest_held`), packed in place of the codes (then unused,
        and not made).

    Returns
    -------
    dict
        The store manifest.
    """
    p = read_plan(plan_path)
    perm = load_permutation(perm_path, p.n_vectors)
    from genotile.store.pack import layout_from_json, pack_bits, pack_held, pack_store

    if bits is not None:
        m = pack_bits(bits, _load_json(ingest_manifest), p, perm, planes_out, manifest_out)
    elif held is not None:
        m = pack_held(held, _load_json(ingest_manifest), p, perm, planes_out, manifest_out)
    else:
        m = pack_store(codes, _load_json(ingest_manifest), p, perm, planes_out, manifest_out)
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
) -> Plan:
    """Stages 1-3 in one process, the workflow's `store` job: ingest, plan and pack.

    One job, not three: each would pay a process start, its imports and a trip through the
    scheduler (a checkpoint in between), and the codes would be written for another process to
    read back. The codes go to `codes_out` when given (`genotile run` keeps them, to replan
    without reading the input again), else to a temporary file in `store_dir`, removed once the
    planes are packed; a whole .bed's calls are then held in memory as bits instead, and a
    regular alignment that fits its folded bytes, and no codes are written (`ingest_bed`,
    `ingest_held`: the same files).

    Parameters
    ----------
    input_path : str or os.PathLike
        FASTA alignment, VCF/BCF or PLINK fileset.
    encoding : str
        The store's encoding (core/encode.py, core/genotype.py).
    ingest_manifest_out : str or os.PathLike
        The ingest manifest (.json).
    store_dir : str or os.PathLike
        Gets plan.json, perm.npy, planes.npy and manifest.json (`plan` and `pack`).
    block_size, seed, metrics, backend, dense_max, bounds
        As `plan`.
    options : dict, optional
        The VCF reader's options (multiallelic, filter_pass, samples, regions).
    collapse_duplicates : bool
        As `ingest`.

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
        # a whole .bed whose codes would be temporary: held as bits instead, no codes written
        bits = (
            None
            if codes_out is not None
            else ingest_bed(input_path, encoding, ingest_manifest_out, options, collapse_duplicates)
        )
        held = None
        if bits is None:  # an alignment whose codes would be temporary: held in memory where it fits
            held = ingest_held(
                input_path, encoding, codes, ingest_manifest_out, options, collapse_duplicates, hold=codes_out is None
            )
        t1 = time.perf_counter()
        p = plan(
            ingest_manifest_out,
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
            codes,
            ingest_manifest_out,
            store_dir / "plan.json",
            store_dir / "perm.npy",
            store_dir / "planes.npy",
            store_dir / "manifest.json",
            bits=bits,
            held=held,
        )
        seconds = {"ingest": t1 - t0, "plan": t2 - t1, "pack": time.perf_counter() - t2}
    finally:
        if codes_out is None:
            codes.unlink(missing_ok=True)
    # one line a benchmark reads (bench/bench_e2e.py): the job's benchmark file has only the total
    log.info("store stages (s): %s", ", ".join(f"{k} {v:.3f}" for k, v in seconds.items()))
    return p


def tile(
    planes,
    manifest_path,
    perm_path,
    metric_name,
    bi,
    bj,
    *,
    threshold,
    dense: bool,
    backend,
    tile_out,
    metric_params=None,
) -> dict:
    """Stage 4: one tile (bi, bj) of a metric, written as a checksummed tile file.

    Parameters
    ----------
    planes, manifest_path, perm_path : str or os.PathLike
        The packed store (planes.npy, manifest.json, perm.npy).
    metric_name : str
        A 2-way metric.
    bi, bj : int
        Blocks of the tile, bi <= bj.
    threshold : float or None
        Pairs kept (None: all).
    dense : bool
        Keep the tile's whole block of the matrix column (for matrix.tsv).
    backend : str
        "auto" or a backend name (backends.resolve).
    tile_out : str or os.PathLike
        The tile file (io/tilefile.py: a, b, value columns, hist_*, dense*, meta, SHA-256).
    metric_params : dict, optional
        The epilogue's parameters (ccc2: multiplier, param).

    Returns
    -------
    dict
        The tile's meta (pairs computed and passing, backend, seconds, store identity).
    """
    check_threshold(threshold, f"threshold of {metric_name}")
    from genotile.pairs.tile import compute_tile
    from genotile.store.pack import open_store

    planes_mm, manifest, layout = open_store(planes, manifest_path)
    p = Plan.from_json(manifest["plan"])
    perm = load_permutation(perm_path, p.n_vectors)
    metric = get_metric(metric_name, **(metric_params or {}))
    rows_i, rows_j = p.block(int(bi)), p.block(int(bj))
    log.info(
        "tile (%d, %d) of %s: %d x %d vectors, %d plane words each, counting...",
        bi,
        bj,
        metric_name,
        rows_i.stop - rows_i.start,
        rows_j.stop - rows_j.start,
        layout.total_words,
    )
    weights = copies(manifest)
    if weights is None:
        arrays, meta = compute_tile(planes_mm, layout, perm, p, metric, int(bi), int(bj), threshold, dense, backend)
    else:  # rows stand for their copies: the dense block gives the weighted histogram (duplicates.py)
        from genotile.store.duplicates import weigh_tile

        arrays, meta = compute_tile(
            planes_mm, layout, perm, p, metric, int(bi), int(bj), threshold, True, backend, histograms=False
        )
        w_i, w_j = weights[perm[rows_i]], weights[perm[rows_j]]
        weigh_tile(arrays, meta, planes_mm[rows_i], metric, layout, w_i, w_j, bi == bj, threshold)
        if not dense:
            for key in ("dense", "dense_rows", "dense_cols"):
                del arrays[key]
    log.info(
        "tile (%d, %d): counts in %.3f s on %s; epilogue and threshold done, writing %s",
        bi,
        bj,
        meta["seconds_counts"],
        meta["backend"],
        tile_out,
    )
    meta["store"] = store_identity(manifest)  # lets the merge refuse a tile of another input or plan
    meta["params"] = metric.params  # ... or of other metric parameters (pairs/tilecheck.py)
    if "dense" in arrays:
        # integer values in the narrowest type that holds them (snp: uint16 where int64 took 4x
        # the bytes to write, hash and read back in the merges); the values are unchanged
        from genotile.core.keys import narrowest

        arrays["dense"] = narrowest(arrays["dense"])
    from genotile.io.tilefile import write_tile  # the tile stage's own code (job start-up)

    write_tile(tile_out, arrays, meta)
    log.info(
        "tile (%d, %d) of %s: %d pairs, %d pass, %.3f s in all",
        bi,
        bj,
        metric_name,
        meta["pairs_computed"],
        meta["pairs_passing"],
        meta["seconds_total"],
    )
    return meta


def copies(manifest: dict):
    """(distinct vectors,) int64 copies of each distinct vector of a collapsed store, else None."""
    if "distinct_index" not in manifest:
        return None
    import numpy as np

    return np.bincount(np.asarray(manifest["distinct_index"], dtype=np.int64), minlength=manifest["n_distinct"])


def tile_paths(pairs_dir, plan: Plan) -> list[Path]:
    """`pairs_dir/tile_I_J.npz` for every tile of the plan, in `plan.tiles()` order."""
    return [Path(pairs_dir) / f"tile_{i}_{j}.npz" for i, j in plan.tiles()]


def matrix(tiles, manifest_path, metric_name, matrix_out) -> None:
    """Stage 5: matrix.tsv (n x n, input order) from every tile's dense block.

    Parameters
    ----------
    tiles : sequence of str or os.PathLike
        Every tile file of the plan (refused when one is missing, foreign or damaged).
    manifest_path : str or os.PathLike
        The store manifest (IDs, plan); perm.npy beside it.
    metric_name : str
    matrix_out : str or os.PathLike
    """
    manifest = _load_json(manifest_path, STORE_KEYS)
    p = Plan.from_json(manifest["plan"])
    perm = load_permutation(Path(manifest_path).parent / "perm.npy", p.n_vectors)
    from genotile.pairs.merge import merge_matrix

    merge_matrix(
        tiles,
        manifest["ids"],
        p,
        get_metric(metric_name),
        matrix_out,
        store_identity(manifest),
        perm,
        distinct_index=manifest.get("distinct_index"),
    )
    log.info("matrix: %d x %d written to %s", len(manifest["ids"]), len(manifest["ids"]), matrix_out)


def merge(
    tiles, manifest_path, metric_name, pairs_out, summary_out, config: dict, matrix_path=None, histogram_out=None
) -> dict:
    """Stage 6: pairs.tsv.gz, histogram.tsv and summary.json from every tile of the plan.

    Parameters
    ----------
    tiles : sequence of str or os.PathLike
        Every tile file of the plan (docs/pipeline.md: the merge contract).
    manifest_path : str or os.PathLike
        The store manifest.
    metric_name : str
    pairs_out, summary_out : str or os.PathLike
    config : dict
        The settings recorded in summary.json (threshold, params, block_size, ...).
    matrix_path : str or os.PathLike, optional
        matrix.tsv, when it was written (its checksum goes into the summary).
    histogram_out : str or os.PathLike, optional

    Returns
    -------
    dict
        The summary written.
    """
    from genotile.io.stale import remove_stale_files, remove_stale_matrix  # the merge's own code (job start-up)
    from genotile.pairs import tilecheck

    started = time.perf_counter()
    manifest = _load_json(manifest_path, STORE_KEYS)
    p = Plan.from_json(manifest["plan"])
    metric = get_metric(metric_name)
    if matrix_path is None:  # a matrix.tsv of an earlier, larger dense_max must not look current
        remove_stale_matrix(Path(pairs_out).parent)
    perm = load_permutation(Path(manifest_path).parent / "perm.npy", p.n_vectors)
    expect = tilecheck.expected_settings(metric_name, config)
    from genotile.pairs.merge import merge_pairs, write_histograms, write_summary

    merged = merge_pairs(
        tiles,
        manifest["ids"],
        p,
        metric,
        pairs_out,
        store_identity(manifest),
        perm,
        expect,
        distinct_index=manifest.get("distinct_index"),
    )
    outputs = {"pairs": pairs_out, **({"matrix": matrix_path} if matrix_path else {})}
    if histogram_out is not None:
        pairs_computed = sum(t["pairs_computed"] for t in merged["tiles"])
        write_histograms(histogram_out, metric, merged["histograms"], pairs_computed)
        outputs["histogram"] = histogram_out
    summary = write_summary(
        summary_out,
        manifest=manifest,
        plan=p,
        metric=metric,
        merged=merged,
        outputs=outputs,
        config=config,
        started=started,
    )
    log.info("merge: %d of %d pairs pass", summary["pairs_passing"], summary["pairs_computed"])
    if tiles:  # tiles of an earlier plan (another block size or input)
        remove_stale_files(Path(tiles[0]).parent, r"tile_\d+_\d+\.npz", tiles)
    return summary


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


def _recorded(path) -> dict | None:
    """A JSON record of an earlier run, or None where it is missing or damaged (then recomputed)."""
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def current_store(
    input_path,
    encoding,
    outdir,
    block_size,
    seed,
    vcf_options=None,
    *,
    metrics=(),
    backend="auto",
    dense_max=None,
    collapse_duplicates=False,
) -> None:
    """Ingest, plan and pack into `outdir`, reusing each stage's files only where they were made
    from the same input content, options, option files and settings (store/sources.py); what
    changed is logged, and the stage and all after it are recomputed."""
    outdir = Path(outdir)
    codes, imani = outdir / "ingest" / f"{encoding}.codes.npy", outdir / "ingest" / f"{encoding}.json"
    store = outdir / "store" / encoding
    recorded = _recorded(imani)
    changed = []
    if recorded is not None and codes.exists():
        changed = differences(recorded.get("sources"), sources(input_path, vcf_options))
        if bool(recorded.get("collapse_duplicates")) != wants_collapse(encoding, collapse_duplicates):
            changed.append("collapse_duplicates")
        if changed:
            log.info("ingest (%s): recomputing, changed since the last run: %s", encoding, "; ".join(changed))
    if recorded is None or not codes.exists() or changed:
        recorded = ingest(
            input_path, encoding, codes, imani, collapse_duplicates=collapse_duplicates, **(vcf_options or {})
        )
        changed = changed or ["the ingest"]
    files = ("plan.json", "perm.npy", "planes.npy", "manifest.json")
    built = _recorded(store / "manifest.json")
    if block_size == AUTO:
        block_size = resolve_auto_block_size(recorded, metrics, backend, dense_max)
    if built is not None and not changed and all((store / f).exists() for f in files):
        want = plan_of_manifest(recorded, int(block_size), int(seed)).to_json()
        have = built.get("plan") or {}
        changed = [
            f"{k} ({have.get(k)} -> {want.get(k)})"
            for k in ("n_vectors", "block_size", "seed", "n_input")
            if have.get(k) != want.get(k)
        ]
        if (built.get("input_sha256"), built.get("sources")) != (recorded["input_sha256"], recorded.get("sources")):
            changed.append("the ingest it was packed from")
        if not changed:
            return
        log.info("plan and pack (%s): recomputing, changed since the last run: %s", encoding, "; ".join(changed))
    plan(imani, block_size, seed, store / "plan.json", store / "perm.npy")
    pack(codes, imani, store / "plan.json", store / "perm.npy", store / "planes.npy", store / "manifest.json")


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
) -> dict:
    """Every stage in this process, with the same file layout as the workflow.

    vcf_options: the VCF reader's options (multiallelic, filter_pass, samples, regions);
    metric_params: {metric: {parameter: value}}, e.g. {"ccc2": {"multiplier": 4.5}}.

    Parameters
    ----------
    input_path : str or os.PathLike
        FASTA alignment or VCF/BCF.
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

    Returns
    -------
    dict of str to dict
        {metric: its summary.json}.
    """
    from genotile.io import peer_formats  # the opt-in outputs' checks (not the store job's)

    outdir = Path(outdir)
    thresholds, metric_params, opt_in = thresholds or {}, metric_params or {}, opt_in or {}
    peer_formats.check_dataset(str(input_path), {**opt_in, "metrics": list(metrics)}, thresholds.get("king"))
    summaries = {}
    for metric_name in metrics:
        metric = get_metric(metric_name, **metric_params.get(metric_name, {}))
        enc = metric.encoding
        store = outdir / "store" / enc
        same_store = [m for m in metrics if get_metric(m).encoding == enc]
        current_store(
            input_path,
            enc,
            outdir,
            block_size,
            seed,
            vcf_options,
            metrics=same_store,
            backend=backend,
            dense_max=dense_max,
            collapse_duplicates=collapse_wanted(collapse_duplicates, gpu_tiles(backend)),
        )
        p = read_plan(store / "plan.json")
        # the plan's bounds on output, also where the store was planned by an earlier run
        check_plan(
            p.input_vectors,
            [m for m in metrics if get_metric(m).encoding == enc],
            thresholds,
            pairs_max=pairs_max,
            where=f"{input_path}: ",
        )
        mdir = outdir / metric_name
        paths = tile_paths(mdir / "pairs", p)
        progress = Progress(f"{metric_name}: tiles", total=len(paths))
        for k, ((bi, bj), path) in enumerate(zip(p.tiles(), paths, strict=True), start=1):
            tile(
                store / "planes.npy",
                store / "manifest.json",
                store / "perm.npy",
                metric_name,
                bi,
                bj,
                threshold=thresholds.get(metric_name),
                dense=p.input_vectors <= dense_max,
                backend=backend,
                tile_out=path,
                metric_params=metric_params.get(metric_name),
            )
            progress.update(k)
        progress.finish(len(paths))
        matrix_path = None
        if p.input_vectors <= dense_max:
            matrix_path = mdir / "matrix.tsv"
            matrix(paths, store / "manifest.json", metric_name, matrix_path)
        config = {
            "threshold": thresholds.get(metric_name),
            "block_size": block_size,
            "seed": seed,
            "dense_max": dense_max,
            "backend": backend,
            "params": metric.params,
        }
        summaries[metric_name] = merge(
            paths,
            store / "manifest.json",
            metric_name,
            mdir / "pairs.tsv.gz",
            mdir / "summary.json",
            config,
            matrix_path,
            mdir / "histogram.tsv",
        )
        names, dense = peer_formats.output_files(opt_in, metric_name)
        if dense:
            peer_formats.refuse_past_dense_max(str(input_path), opt_in, metric_name, p.input_vectors, dense_max)
        if names:
            from genotile.pairs import peers  # the opt-in outputs' code, only when asked for

            peers.write_outputs(
                paths,
                store / "manifest.json",
                metric_name,
                [mdir / name for name in names],
                king_cutoff=opt_in.get("king_cutoff"),
            )
    return summaries
