"""The pairs stage as plain functions over paths: a tile of a metric, then the matrix and the
merge of every tile; what the tile, matrix and merge rules run (scripts/), and what `genotile
run` chains in one process (pipeline.py). The store they read is store/stage.py's."""

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from genotile.core.limits import check_threshold
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.store.manifest import STORE_KEYS, part_key, part_keys, store_identity, tile_identities
from genotile.util.atomic import write_record
from genotile.util.readback import load_json, load_permutation

log = logging.getLogger("genotile")


def _load_manifest(path) -> dict:
    """A store manifest, refused by name when damaged or incomplete."""
    return load_json(path, "manifest", STORE_KEYS)


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
    deferred: list | None = None,
) -> dict:
    """One tile (bi, bj) of a metric, written as a checksummed tile file.

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
    deferred : list, optional
        Where the tile was counted from a provisional manifest (its store job writes the manifest
        behind its tiles, store/resident.py: it waits for the input's SHA-256), the tile's writing
        is appended here (a callable; the arrays of those in the list, at most DEFER_BYTES, held
        till then) rather than waited for: the store job's next tiles are counted meanwhile. The
        caller runs them in order; `tile_out` exists once written.

    Returns
    -------
    dict
        The tile's meta (pairs computed and passing, backend, seconds, store identity).
    """
    check_threshold(threshold, f"threshold of {metric_name}")
    from genotile.pairs.tile import compute_tile
    from genotile.store import resident
    from genotile.store.pack import open_store

    planes_mm, manifest, layout = open_store(planes, manifest_path)
    # a manifest its store job writes behind its tiles (store/resident.py): this one lacks the checksum
    provisional = manifest is resident.manifest_of(manifest_path)
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

    def write() -> None:
        written = resident.final_manifest(manifest_path) if provisional else None
        _write_tile(written or manifest, metric, metric_name, bi, bj, arrays, meta, tile_out)

    later = _Deferred(write, sum(a.nbytes for a in arrays.values()))
    held = sum(getattr(f, "nbytes", 0) for f in deferred or [])
    if deferred is not None and provisional and held + later.nbytes <= DEFER_BYTES:
        deferred.append(later)
    else:
        write()
    return meta


@dataclass
class _Deferred:
    """A tile's writing, deferred (`tile`), and the bytes of the arrays it holds till then."""

    write: Callable[[], None]
    nbytes: int

    def __call__(self) -> None:
        self.write()


DEFER_BYTES = 1 << 30  # tiles' arrays held at most while their store's manifest is written (`tile`'s deferred)


def _write_tile(manifest: dict, metric, metric_name: str, bi, bj, arrays: dict, meta: dict, tile_out):
    """The tile file of `tile`'s arrays and meta, its store named by `manifest` (as written)."""
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


def copies(manifest: dict):
    """(distinct vectors,) int64 copies of each distinct vector of a collapsed store, else None."""
    if "distinct_index" not in manifest:
        return None
    import numpy as np

    return np.bincount(np.asarray(manifest["distinct_index"], dtype=np.int64), minlength=manifest["n_distinct"])


def tile_paths(pairs_dir, plan: Plan) -> list[Path]:
    """`pairs_dir/tile_I_J.npz` for every tile of the plan, in `plan.tiles()` order."""
    return [Path(pairs_dir) / f"tile_{i}_{j}.npz" for i, j in plan.tiles()]


# -- tiles kept by `genotile run` --
#
# Where `genotile run` finds a store made from the same input and settings, or the store of the
# input grown at its end (store/append.py: the earlier tiles hold the same pairs), it computes
# only the tiles it has no file of, computed with the same settings, from this store or an
# earlier part of it. A record beside the tiles says which: the key of the store part they were
# computed from (store/manifest.py `part_keys`) and their settings besides the backend (the
# backends' tiles are the same); it is removed before any tile it speaks for is computed again,
# and written once every tile is.

TILES_RECORD = "tiles.json"


def _tiles_record(manifest: dict, settings: dict) -> dict:
    """What a tiles record holds: the genotile version, the store part key, the tile settings
    (settings.tile_settings) less the backend, as JSON holds them."""
    from genotile.version import __version__

    kept = {k: v for k, v in settings.items() if k != "backend"}
    return json.loads(json.dumps({"genotile": __version__, "store": part_key(manifest), "settings": kept}))


def tiles_to_compute(pairs_dir, manifest_path, plan: Plan, settings: dict, *, keep: bool = True) -> list[int]:
    """The indices (in `plan.tiles()` order) of the tiles `genotile run` computes: those without a
    file of this store, or of an earlier part of it (an all-pairs store appended to, or a query's
    FILE grown), computed with `settings` (the rest are kept); all of them with `keep` False, the
    record then removed.

    Parameters
    ----------
    pairs_dir : str or os.PathLike
        The metric's tiles (tile_paths).
    manifest_path : str or os.PathLike
        The store manifest.
    plan : Plan
        The store's plan.
    settings : dict
        The tiles' settings (settings.tile_settings).
    keep : bool
        Keep the tiles recorded (False: compute every tile).

    Returns
    -------
    list of int
    """
    record_path = Path(pairs_dir) / TILES_RECORD
    tiles = plan.tiles()
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    manifest = _load_manifest(manifest_path)
    keys, want = part_keys(manifest), _tiles_record(manifest, settings)
    same = isinstance(record, dict) and record.get("store") in keys
    if not (keep and same and {**record, "store": None} == {**want, "store": None}):
        record_path.unlink(missing_ok=True)  # before any tile it speaks for is written again
        return list(range(len(tiles)))
    # the record speaks for the tiles of the parts up to its own: the rest are computed
    last = keys.index(record["store"])
    paths = tile_paths(pairs_dir, plan)
    return [k for k, (i, j) in enumerate(tiles) if plan.part_of_block(j) > last or not paths[k].exists()]


def record_tiles(pairs_dir, manifest_path, settings: dict) -> None:
    """The tiles record, once every tile of the store's plan is computed with `settings`."""
    write_record(Path(pairs_dir) / TILES_RECORD, _tiles_record(_load_manifest(manifest_path), settings))


def matrix(tiles, manifest_path, metric_name, matrix_out) -> None:
    """matrix.tsv (n x n, input order) from every tile's dense block.

    Parameters
    ----------
    tiles : sequence of str or os.PathLike
        Every tile file of the plan (refused when one is missing, foreign or damaged).
    manifest_path : str or os.PathLike
        The store manifest (IDs, plan); perm.npy beside it.
    metric_name : str
    matrix_out : str or os.PathLike
    """
    manifest = _load_manifest(manifest_path)
    p = Plan.from_json(manifest["plan"])
    perm = load_permutation(Path(manifest_path).parent / "perm.npy", p.n_vectors)
    from genotile.pairs.merge import merge_matrix

    merge_matrix(
        tiles,
        manifest["ids"],
        p,
        get_metric(metric_name),
        matrix_out,
        tile_identities(manifest),
        perm,
        distinct_index=manifest.get("distinct_index"),
    )
    rows = p.n_query if p.n_against else len(manifest["ids"])  # a query's: input x FILE
    log.info("matrix: %d x %d written to %s", rows, len(manifest["ids"]) - rows or rows, matrix_out)


def merge(
    tiles, manifest_path, metric_name, pairs_out, summary_out, config: dict, matrix_path=None, histogram_out=None
) -> dict:
    """pairs.tsv.gz, histogram.tsv and summary.json from every tile of the plan.

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
    manifest = _load_manifest(manifest_path)
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
        tile_identities(manifest),
        perm,
        expect,
        distinct_index=manifest.get("distinct_index"),
        # beside the store: the text kept for the next append's merge (pairs/splice.py), which
        # Snakemake does not delete before this job runs again, as it does pairs_out
        keep_dir=Path(manifest_path).parent,
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


def tile_histogram_rows(tiles, manifest_path, metric_name, config: dict) -> list[tuple]:
    """histogram.tsv's rows (column, low, high, count) from every tile, as the merge writes them,
    without the merge: the histogram plot's (report.plot_histogram_of_tiles), which then runs
    beside the merge, not after it. The tiles are checked as the merge checks them (settings
    `config`'s threshold and params, the store they were computed from) but for their pairs'
    indices, which this does not read."""
    from genotile.pairs import tilecheck
    from genotile.pairs.merge import histogram_rows, tile_histograms

    manifest = _load_manifest(manifest_path)
    plan, metric = Plan.from_json(manifest["plan"]), get_metric(metric_name)
    expect = tilecheck.expected_settings(metric_name, config)
    hist, computed = tile_histograms(tiles, plan, metric, tile_identities(manifest), expect)
    return histogram_rows(metric, hist, computed, f"the {metric_name} histogram")
