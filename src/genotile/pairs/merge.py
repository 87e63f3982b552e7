"""Merge: check every tile, then write pairs.tsv.gz, matrix.tsv and summary.json.

Outputs are in original vector IDs and input order whatever the permutation
seed or block size, so they are byte-identical across those choices.
"""

import json
import logging
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from genotile.core import histogram
from genotile.core.keys import count_distinct, narrowest
from genotile.core.metrics import Metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.mergecheck import block_of, check_settings
from genotile.io.summary import input_provenance, output_records, versions
from genotile.io.tilefile import read_tile
from genotile.io.tsvgz import Cells, Table, rows_per_block, text_column, write_blocks
from genotile.pairs import splice, tilecheck
from genotile.util.atomic import write_text
from genotile.util.cpus import usable_cpus
from genotile.util.progress import Progress
from genotile.util.readback import RERUN

log = logging.getLogger("genotile")

GATHER_CELLS = 1 << 20  # cells gathered into input order at a time (dense_values)
GATHER_THREADS = 16  # threads gathering them, at most


def read_tiles(
    tile_paths, plan: Plan, metric: Metric, store=None, perm=None, expect=None, skip=(), repeats=True, light=()
):
    """Yield (path, arrays, meta, sha256) for every tile, without its arrays named in `skip`
    (tilefile.read_tile); refuse a missing, foreign or repeated one, one of other settings
    (`expect`: threshold, params) and, given the permutation, one whose indices or dense block
    are not its blocks' (pairs/tilecheck.py; `repeats=False`: a pair listed twice is left to the
    caller). The tiles whose file names are in `light` are read and checked against their digests
    as any other, but their indices are not checked against the plan: the caller holds their
    pairs already, checked when they were merged, where the file's digest is the one it knows
    (pairs/splice.py)."""
    expected = set(plan.tiles())
    blocks = None if perm is None else block_of(plan, perm)
    seen = set()
    progress = Progress(f"{metric.name}: tiles read", total=len(expected))
    for path in tile_paths:
        held = Path(path).name in light
        arrays, meta, digest = read_tile(path, skip)
        tile = tuple(meta["tile"])
        if meta["metric"] != metric.name or tile not in expected:
            raise GenotileError(f"tile {path}: holds {meta['metric']} tile {tile}, not one of this plan's")
        # `store`: the identity tiles record, or tile -> those accepted (an appended store's
        # earlier tiles were computed from the store as it was: manifest.tile_identities)
        if store is not None and meta.get("store") not in (store(tile) if callable(store) else [store]):
            raise GenotileError(
                f"tile {path}: computed from another input or plan than this store; delete it and rerun"
            )
        if tile in seen:
            raise GenotileError(f"tile {path}: tile {tile} given twice")
        check_settings(path, meta, expect or {})
        if blocks is not None and not held:
            tilecheck.check_pair_tile(path, arrays, meta, plan, metric, blocks, perm, repeats)
        seen.add(tile)
        progress.update(len(seen))
        yield path, arrays, meta, digest
    progress.finish(len(seen))
    missing = sorted(expected - seen)
    if missing:
        raise GenotileError(f"{len(missing)} tile(s) missing, e.g. {missing[:5]}: rerun the tile jobs")


def sort_pairs(a: np.ndarray, b: np.ndarray, n: int, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(keys, order): the pair keys a * n + b (0 <= a, b < n) in increasing order, and the
    permutation that sorts them (keys == (a * n + b)[order]; among equal keys, the first first).

    Each key and its position are one int64, key above position, sorted by value: 0.03 s for 2M
    pairs where np.argsort of the keys took 0.25 s (2 CPU cores, numpy 2.4); argsort where they
    do not fit in 63 bits. From SORT_SPLIT_MIN to SORT_SPLIT_MAX pairs, with several threads
    (`threads`, else every usable CPU), ranges of a are sorted on threads (`_sort_in_ranges`):
    the same values.

    >>> keys, order = sort_pairs(np.array([2, 0, 0]), np.array([1, 2, 1]), 3)
    >>> keys.tolist(), order.tolist()
    ([1, 2, 7], [2, 1, 0])
    """
    keys = a.astype(np.int64) * n + b.astype(np.int64, copy=False)
    shift = max(1, (keys.size - 1).bit_length())
    if (n * n - 1).bit_length() + shift > 63:
        order = np.argsort(keys, kind="stable")
        return keys[order], order
    keys <<= shift
    keys |= np.arange(keys.size)
    threads = usable_cpus() if threads is None else threads
    if threads > 1 and SORT_SPLIT_MIN <= keys.size <= SORT_SPLIT_MAX:
        keys = _sort_in_ranges(keys, a, n, threads)
    else:
        keys.sort()
    order = keys & ((1 << shift) - 1)
    keys >>= shift
    return keys, order


SORT_SPLIT_MIN = 1 << 20  # pairs from which sort_pairs sorts ranges of them on threads
# ... and up to which: the ranges' gather takes 16 bytes a pair more at its peak than one sort
# in place (an index and a copy: 2 GiB here; helper-37's review)
SORT_SPLIT_MAX = 1 << 27
SORT_RANGES = 4  # ranges a thread (pool.map hands them out as threads come free)


def _sort_in_ranges(packed: np.ndarray, a: np.ndarray, n: int, threads: int) -> np.ndarray:
    """np.sort(packed), where packed's values rise with `a` (a * n + b above a position): the
    values put in ranges of a of about equal counts (each a's range number from a table, then
    one radix argsort of the 8-bit numbers), each range then sorted in place on a thread (numpy's
    sort releases the GIL). 9.9M pairs (2-core VM): 0.92 s of CPU in one sort, 0.68 s in 64
    ranges, the ranges made in about 0.15 s of it."""
    from concurrent.futures import ThreadPoolExecutor

    ranges = min(255, SORT_RANGES * threads)
    a = np.asarray(a)
    per_a = np.bincount(a, minlength=n)
    before = np.cumsum(per_a) - per_a  # the pairs of a lesser a
    cuts = (np.arange(1, ranges, dtype=np.int64) * a.size) // ranges
    # a's range: how many of the equal-count cuts lie at or below the pairs before a
    range_of = np.searchsorted(cuts, before, side="right").astype(np.uint8)
    number = range_of[a]
    packed = packed[np.argsort(number, kind="stable")]
    starts = np.zeros(ranges + 1, dtype=np.int64)
    np.cumsum(np.bincount(number, minlength=ranges), out=starts[1:])

    def one(k: int) -> None:
        packed[starts[k] : starts[k + 1]].sort()

    with ThreadPoolExecutor(threads, thread_name_prefix="genotile-sort") as pool:
        list(pool.map(one, range(ranges)))
    return packed


def merge_pairs(
    tile_paths,
    ids: list[str],
    plan: Plan,
    metric: Metric,
    out_path,
    store=None,
    perm=None,
    expect=None,
    distinct_index=None,
    keep_dir=None,
) -> dict:
    """pairs.tsv.gz from every tile; `distinct_index` (each input vector's distinct row, where
    identical vectors were collapsed): the tiles' pairs of distinct rows and self pairs expanded
    to the input pairs (store/duplicates.py). `keep_dir` (the store's folder): the file written
    is kept there for the next append's merge, and an earlier merge's kept file gives this one,
    its new pairs' rows spliced in, where it is provably the merge of the tiles kept since
    (pairs/splice.py); else, and in a query, every tile's pairs are merged."""
    if keep_dir is None or plan.n_against:
        return _merge_full(tile_paths, ids, plan, metric, out_path, store, perm, expect, distinct_index, None)
    kept = splice.load(keep_dir, metric, expect, ids, distinct_index)
    if kept is not None:
        try:
            return _merge_spliced(kept, tile_paths, ids, plan, metric, out_path, store, perm, expect, distinct_index)
        except splice.NotKept as why:
            log.info("merge: the earlier pairs.tsv.gz kept beside the store is not used: %s", why)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # a kept record or file damaged past what load() checks: the full merge (which
            # refuses, by name, what is wrong with a tile itself)
            log.info("merge: the earlier pairs.tsv.gz kept beside the store is not used: damaged (%r)", exc)
    return _merge_full(tile_paths, ids, plan, metric, out_path, store, perm, expect, distinct_index, keep_dir)


class _Tiles(NamedTuple):
    """What the merge read of the tiles: the pairs (and self pairs) of those it read whole, with
    their paths; every tile's summary entry, the histograms' sums; the file name and digest of
    every tile."""

    parts: list[dict]
    paths: list
    selves: list[dict]
    tiles: list[dict]
    hist: dict
    digests: dict[str, str]


def _read_all(tile_paths, plan: Plan, metric: Metric, store, perm, expect, collapsed: bool, light: dict) -> _Tiles:
    """Every tile, checked (read_tiles); the pairs of those not named in `light` (file name ->
    digest), whose digest must be the one named there (else splice.NotKept)."""
    got = _Tiles([], [], [], [], {}, {})
    if collapsed:
        from genotile.store import duplicates  # collapsed stores only (job start-up)
    # the dense block (GBs for 20,000 vectors) is matrix.tsv's, not read here. A pair listed twice
    # in a tile is found by the sort of all pairs below, not by a sort per tile (tilecheck), where
    # the tiles' pairs are the ones sorted: not where a collapsed store's pairs are expanded
    read = read_tiles(tile_paths, plan, metric, store, perm, expect, skip=("dense",), repeats=collapsed, light=light)
    for path, arrays, meta, digest in read:
        name = Path(path).name
        if name in light and light[name] != digest:
            raise splice.NotKept(f"tile {path} is not the file merged then")
        if name not in light:
            got.parts.append({k: arrays[k] for k in ("a", "b", *metric.columns)})
            got.paths.append(path)
            if collapsed:
                got.selves.append(duplicates.self_pairs(path, arrays, metric, plan))
        histogram.add(got.hist, arrays)
        got.tiles.append({"tile": meta["tile"], "file": str(path), "sha256": digest, **meta})
        got.digests[name] = digest
    return got


def _sorted_pairs(got: _Tiles, ids: list[str], plan: Plan, metric: Metric, distinct_index, kinds=None):
    """(a, b, columns, kinds): the pairs of the tiles read whole, expanded where collapsed,
    sorted by a then b; the table's columns (Cells); each value column's text kind. `kinds`:
    the value columns' where no tile was read whole."""
    parts, collapsed = got.parts, distinct_index is not None
    if not parts:
        empty = {"a": np.zeros(0, np.int64), "b": np.zeros(0, np.int64)}
        parts = [{**empty, **{c: np.zeros(0, _KIND_DTYPES[k]) for c, k in zip(metric.columns, kinds, strict=True)}}]
    merged = parts[0] if len(parts) == 1 else {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if collapsed and got.parts:  # (no tile read whole: no pair to expand)
        from genotile.store import duplicates

        merged = duplicates.expand_merged(merged, got.selves, np.asarray(distinct_index), plan.n_vectors, metric)
    keys, order = sort_pairs(merged["a"], merged["b"], len(ids))
    if not collapsed:
        _refuse_repeats(keys, order, [p["a"].size for p in got.parts], got.paths)
    a, b = np.divmod(keys, len(ids))
    columns = [Cells(ids, a), Cells(ids, b)] + [_sorted_text(merged[c], order) for c in metric.columns]
    return a, b, columns, [_text_kind(merged[c].dtype) for c in metric.columns]


_KIND_DTYPES = {"int": np.int64, "float": np.float64}


def _text_kind(dtype: np.dtype) -> str:
    """What a column's values' text depends on besides each value: integers in decimal whatever
    their width, floats as the float64 they widen to (tsvgz.text_column), anything else its dtype."""
    return "int" if dtype.kind in "iu" else "float" if dtype.kind == "f" else dtype.str


def _merge_full(tile_paths, ids, plan, metric, out_path, store, perm, expect, distinct_index, keep_dir) -> dict:
    """pairs.tsv.gz from every tile's pairs; kept in `keep_dir` (if given) for the next append."""
    got = _read_all(tile_paths, plan, metric, store, perm, expect, distinct_index is not None, {})
    a, _, columns, kinds = _sorted_pairs(got, ids, plan, metric, distinct_index)
    table = Table(columns, out_path)
    index: list | None = None if keep_dir is None else []
    write_blocks(out_path, ("id1", "id2", *metric.columns), table.blocks(), index=index)
    if keep_dir is not None:
        rows_end = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(a, minlength=len(ids)), out=rows_end[1:])
        row_ends = np.zeros(a.size + 1, dtype=np.int64)
        np.cumsum(table.row_lengths(), out=row_ends[1:])
        head = splice.identity(metric, expect, ids, distinct_index, plan.n_vectors)
        columns_kept = {"words": table.words[2:], "kinds": kinds}
        splice.save(keep_dir, head, out_path, got.digests, columns_kept, (rows_end, row_ends[rows_end]), index or [])
    return {"pairs_passing": int(a.size), "tiles": got.tiles, "histograms": got.hist}


def _merge_spliced(kept, tile_paths, ids, plan, metric, out_path, store, perm, expect, distinct_index) -> dict:
    """pairs.tsv.gz as the kept text of the earlier merge with the new tiles' rows spliced in
    (pairs/splice.py); splice.NotKept where it does not apply, before anything is written."""
    # the kept groups checked before the tiles are read: a damaged or missing file gives the full
    # merge without reading every tile twice
    old_bytes = sum(int(t) for t, _, _ in kept.record["text"]["blocks"][1:])
    rows_end, bytes_end = splice.groups(kept, old_bytes)
    got = _read_all(tile_paths, plan, metric, store, perm, expect, distinct_index is not None, kept.tiles)
    gone = sorted(set(kept.tiles) - set(got.digests))
    if gone:
        raise splice.NotKept(f"it was merged from tiles no longer in the plan, e.g. {gone[0]}")
    recorded = kept.record["cells"]
    a, b, columns, kinds = _sorted_pairs(got, ids, plan, metric, distinct_index, recorded["kinds"])
    if b.size and int(b.min()) < kept.n:
        raise splice.NotKept("a tile merged since holds a pair of two earlier vectors")
    if kinds != recorded["kinds"]:
        raise splice.NotKept(f"its values were {recorded['kinds']}, the new ones {kinds}")
    table = Table(columns, out_path)
    words = table.words[:2] + [max(w, int(r)) for w, r in zip(table.words[2:], recorded["words"], strict=True)]
    row_ends = np.cumsum(table.row_lengths())
    buf = splice.inflate(kept, int(row_ends[-1]) if row_ends.size else 0)
    buf[old_bytes:] = np.frombuffer(table.text(0, table.n), dtype=np.uint8)
    grown = splice.Splice(buf, rows_end, bytes_end, a, row_ends, len(ids))
    index: list = []
    write_blocks(out_path, ("id1", "id2", *metric.columns), grown.blocks(rows_per_block(words)), index=index)
    log.info("merge: %d earlier rows kept, %d new rows spliced in", int(rows_end[-1]), a.size)
    head = splice.identity(metric, expect, ids, distinct_index, plan.n_vectors)
    ends = (grown.rows_end, grown.bytes_end)
    splice.save(kept.store_dir, head, out_path, got.digests, {"words": words[2:], "kinds": kinds}, ends, index)
    return {"pairs_passing": grown.n_rows, "tiles": got.tiles, "histograms": got.hist}


def _sorted_text(values: np.ndarray, order: np.ndarray) -> Cells:
    """text_column(values[order]), the values' texts made in tile order and their codes (each
    value's text's position) put in `order`: narrowed first, the codes are gathered from a
    few MB of memory, where the values would be gathered at random from the tile's memory-mapped
    column (4x the time for 1M pairs)."""
    column = text_column(values)
    return Cells(column.texts, narrowest(np.asarray(column.codes))[order])


def _refuse_repeats(keys: np.ndarray, order: np.ndarray, sizes: list[int], paths: list) -> None:
    """A pair listed twice, named by the tile that holds it (a pair is in one tile's blocks only,
    so a repeat is within one tile: tilecheck's check, made on the merge's sorted keys)."""
    twice = np.flatnonzero(keys[1:] == keys[:-1])
    if twice.size:
        part = int(np.searchsorted(np.cumsum(sizes), order[twice[0]], side="right"))
        raise GenotileError(f"tile {paths[part]}: a pair is listed twice; {RERUN}")


def histogram_rows(metric: Metric, histograms: dict, pairs_computed: int, where) -> list[tuple]:
    """histogram.tsv's rows (column, low, high, count: core/histogram.rows) of the tiles' summed
    histograms, every column's counts checked to add up to all pairs; `where` names the output."""
    out: list[tuple] = []
    for column in metric.histogram_columns:
        counts = histograms.get(f"hist_{column}")
        if counts is None:
            raise GenotileError(f"{where}: the tiles carry no {column} histogram (computed by an older genotile?)")
        if int(counts.sum()) != pairs_computed:
            raise GenotileError(
                f"{where}: the tiles' {column} histogram counts {int(counts.sum())} pairs, "
                f"but they computed {pairs_computed}"
            )
        out += histogram.rows(metric, column, counts)
    return out


def write_histograms(out_path, metric: Metric, histograms: dict, pairs_computed: int) -> None:
    """histogram.tsv: column, low, high, count; every column's counts add up to all pairs."""
    lines = ["column\tlow\thigh\tcount"]
    lines += ["\t".join(map(str, row)) for row in histogram_rows(metric, histograms, pairs_computed, out_path)]
    write_text(out_path, "\n".join(lines) + "\n")


def tile_histograms(tile_paths, plan: Plan, metric: Metric, store=None, expect=None) -> tuple[dict, int]:
    """(the histograms summed, the pairs computed) of every tile: what the merge counts into
    histogram.tsv, read without the tiles' pairs and dense blocks, the tiles checked as the merge
    checks them but for their pairs' indices (read_tiles without the permutation)."""
    hist: dict = {}
    computed = 0
    skip = ("a", "b", *metric.columns, "dense", "dense_rows", "dense_cols")
    for _path, arrays, meta, _digest in read_tiles(tile_paths, plan, metric, store, expect=expect, skip=skip):
        histogram.add(hist, arrays)
        computed += int(meta["pairs_computed"])
    return hist, computed


def dense_values(
    tile_paths, plan: Plan, metric: Metric, store=None, perm=None, where="", distinct_index=None
) -> np.ndarray:
    """(n, n) the metric's dense column for every pair (matrix.tsv's values), from the tiles'
    dense blocks; the diagonal is what the diagonal tiles hold. `distinct_index`: a collapsed
    store's, the matrix of distinct vectors indexed by each input vector's (store/duplicates.py);
    `where` names the output in the error when a cell was in no tile.

    The blocks are copied whole into the matrix in block order (the permuted order, where each
    block is a contiguous range), then the rows and columns are gathered into input order a few
    rows at a time: scattering each tile through its row and column indices took 8 of the 10 s
    of a 10,000-vector matrix.tsv. Every tile's dense block must be over the same vectors of its
    blocks as every other tile's; with every tile present (read_tiles), the blocks' vectors
    covering each vector once means every cell was written.
    """
    if plan.n_against:
        return _query_dense_values(tile_paths, plan, metric, store, perm, where)
    n = plan.n_vectors
    blocks = []
    block_rows: dict[int, np.ndarray] = {}
    for path, arrays, meta, _digest in read_tiles(tile_paths, plan, metric, store, perm):
        if "dense" not in arrays:
            raise GenotileError(f"tile {path}: has no dense block (was it computed with a larger dense_max?)")
        dense = arrays["dense"]
        bi, bj = meta["tile"]
        for block, vectors in ((bi, arrays["dense_rows"]), (bj, arrays["dense_cols"])):
            span = plan.block(block)
            known = block_rows.setdefault(block, vectors)
            if vectors.shape != (span.stop - span.start,) or not np.array_equal(known, vectors):
                raise GenotileError(f"tile {path}: its dense block is not over the vectors of block {block}")
        if dense.shape != (block_rows[bi].size, block_rows[bj].size):
            raise GenotileError(f"tile {path}: its dense block is {dense.shape}, not its blocks' sizes")
        dense = narrowest(dense)  # counts in the narrowest type: gathers 4x faster
        blocks.append((plan.block(bi), plan.block(bj), dense))
    if not blocks:
        raise GenotileError(f"{where}: {n * n} matrix cells were in no tile")
    if len(blocks) == 1:  # one tile: its block is the whole matrix in block order, no copy
        blockwise = blocks[0][2]
    else:
        blockwise = np.zeros((n, n), dtype=np.result_type(*(d.dtype for *_, d in blocks)))
        for rows, cols, dense in blocks:
            blockwise[rows, cols] = dense
            if rows != cols:  # a diagonal tile's block is symmetric: written once
                blockwise[cols, rows] = dense.T
    del blocks
    order = np.concatenate([block_rows.get(k, np.zeros(0, np.int64)) for k in range(plan.n_blocks)])
    covered = count_distinct(order[(order >= 0) & (order < n)])
    if order.size != n or covered != n:
        raise GenotileError(f"{where}: {n * n - covered * covered} matrix cells were in no tile")
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)  # each input vector's row in `blockwise`
    if distinct_index is not None:
        position = position[np.asarray(distinct_index, dtype=np.int64)]
    matrix = np.empty((position.size, position.size), dtype=blockwise.dtype)
    step = max(1, GATHER_CELLS // max(1, position.size))

    def gather(r0: int) -> None:  # numpy's gathers release the GIL: bands of rows on threads
        np.take(np.take(blockwise, position[r0 : r0 + step], axis=0), position, axis=1, out=matrix[r0 : r0 + step])

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(usable_cpus(GATHER_THREADS), thread_name_prefix="genotile-gather") as pool:
        list(pool.map(gather, range(0, position.size, step)))
    return matrix


def _query_dense_values(tile_paths, plan: Plan, metric: Metric, store, perm, where: str) -> np.ndarray:
    """dense_values of a query plan: (n_query, n_against), rows the input's vectors and columns
    the FILE's, each in its file's order (core/plan.py: every tile is an input block x a FILE
    block, so every cell is in exactly one tile)."""
    n, r = plan.n_query, plan.n_against
    block_rows: dict[int, np.ndarray] = {}
    blockwise = None
    for path, arrays, meta, _digest in read_tiles(tile_paths, plan, metric, store, perm):
        if "dense" not in arrays:
            raise GenotileError(f"tile {path}: has no dense block (was it computed with a larger dense_max?)")
        bi, bj = meta["tile"]
        rows, cols = plan.block(bi), plan.block(bj)
        for block, vectors in ((bi, arrays["dense_rows"]), (bj, arrays["dense_cols"])):
            span = plan.block(block)
            known = block_rows.setdefault(block, vectors)
            if vectors.shape != (span.stop - span.start,) or not np.array_equal(known, vectors):
                raise GenotileError(f"tile {path}: its dense block is not over the vectors of block {block}")
        dense = narrowest(arrays["dense"])
        if dense.shape != (rows.stop - rows.start, cols.stop - cols.start):
            raise GenotileError(f"tile {path}: its dense block is {dense.shape}, not its blocks' sizes")
        if blockwise is None:
            blockwise = np.zeros((n, r), dtype=dense.dtype)
        elif dense.dtype != blockwise.dtype:
            blockwise = blockwise.astype(np.result_type(blockwise, dense))
        blockwise[rows, cols.start - n : cols.stop - n] = dense
    if blockwise is None:
        raise GenotileError(f"{where}: {n * r} matrix cells were in no tile")
    empty = np.zeros(0, np.int64)
    row_order = np.concatenate([block_rows.get(k, empty) for k in range(plan.query_blocks)])
    col_order = np.concatenate([block_rows.get(k, empty) for k in range(plan.query_blocks, plan.n_blocks)]) - n
    if not (np.array_equal(np.sort(row_order), np.arange(n)) and np.array_equal(np.sort(col_order), np.arange(r))):
        raise GenotileError(f"{where}: some matrix cells were in no tile")
    position_r, position_c = np.empty(n, np.int64), np.empty(r, np.int64)
    position_r[row_order], position_c[col_order] = np.arange(n), np.arange(r)
    return np.take(np.take(blockwise, position_r, axis=0), position_c, axis=1)


def merge_matrix(
    tile_paths,
    ids: list[str],
    plan: Plan,
    metric: Metric,
    out_path,
    store=None,
    perm=None,
    distinct_index=None,
) -> None:
    """matrix.tsv from every tile's dense block; `distinct_index`: the matrix of distinct rows,
    indexed by each input vector's distinct row (store/duplicates.py)."""
    from genotile.io.matrix_tsv import write_matrix_tsv  # the matrix job's, not the merge's (job start-up)

    matrix = dense_values(tile_paths, plan, metric, store, perm, where=str(out_path), distinct_index=distinct_index)
    if plan.n_against:  # a query's rectangle: rows the input's vectors, columns the FILE's
        write_matrix_tsv(out_path, ids[: plan.n_query], matrix, columns=ids[plan.n_query :])
    else:
        write_matrix_tsv(out_path, ids, matrix)


def write_summary(
    out_path,
    *,
    manifest: dict,
    plan: Plan,
    metric: Metric,
    merged: dict,
    outputs: dict,
    config: dict,
    started: float | None = None,
) -> dict:
    tiles = merged["tiles"]
    pairs_computed = sum(t["pairs_computed"] for t in tiles)
    seconds_counts = sum(t["seconds_counts"] for t in tiles)
    fields = manifest["n_kept"]
    summary = {
        "metric": metric.name,
        "columns": list(metric.columns),
        "n_vectors": manifest["n_vectors"],
        "n_fields": manifest["n_fields"],
        "n_fields_kept": fields,
        "pairs_computed": pairs_computed,
        "pairs_passing": merged["pairs_passing"],
        "threshold": config.get("threshold"),
        "keep": metric.keep,
        "backend": sorted({t["backend"] for t in tiles}),
        "plan": plan.to_json(),
        **input_provenance(manifest),
        # a query (issue 27): the pairs are the input's vectors against the FILE's, no others
        **({"query": {**manifest["query"], "pairs": plan.n_pairs}} if "query" in manifest else {}),
        "outputs": output_records(outputs),
        "tiles": [
            {
                "tile": t["tile"],
                "file": t["file"],
                "sha256": t["sha256"],
                "pairs_passing": t["pairs_passing"],
                "seconds": t["seconds_total"],
            }
            for t in tiles
        ],
        "timings": {
            "tile_seconds_total": sum(t["seconds_total"] for t in tiles),
            "tile_seconds_counts": seconds_counts,
            "element_comparisons_per_s_counts": pairs_computed * fields / seconds_counts if seconds_counts else None,
            "merge_seconds": None if started is None else time.perf_counter() - started,
        },
        "config": config,
        "versions": versions(),
    }
    write_text(out_path, json.dumps(summary, indent=1) + "\n")
    return summary
