"""One ccc3 job: block triple (I, J, K), one stage of the middle block J, as chunks of passing
triples (`iter_triples`; triples/runs.py writes them, `compute_triples` holds them all).

Rows are permuted store rows. Inside a block triple each unique triple is computed once:
row_i < row_j when I == J, row_j < row_k when J == K. The numpy backends: for every middle row j
of the stage the masked block (ccc3.mask_block) meets block K in the 8 counts, several j
stacked into one count_matrices call; then the epilogue and the threshold. numba runs all of it
fused (backends/cpu/numba_ccc3.py), GPU backends with `triples_device` (cupy_ccc3) on the device.
The passing triples leave in original vector indices, sorted per triple (a < b < c) with the
2x2x2 table permuted to match.
"""

import time
from collections.abc import Iterable, Iterator

import numpy as np

from genotile import backends
from genotile.core import ccc3
from genotile.errors import GenotileError

BATCH_ROWS = 2048  # masked rows per count_matrices call on the CPU (numpy backends)
BATCH_ELEMENTS = 1 << 21  # (row, column) places per epilogue there: ~40 arrays of 16 MB
ROW_BYTES = 3 * 8 + 8 * 8  # a passing triple in memory and in a job file: a, b, c and 8 values


class TooManyTriples(GenotileError):
    """More triples pass than `compute_triples` was allowed to hold."""


def job_triples(plan: ccc3.Plan3, bi: int, bj: int, bk: int, stage: int) -> int:
    """Unique triples a job computes."""
    n_i = plan.block(bi).stop - plan.block(bi).start
    n_k = plan.block(bk).stop - plan.block(bk).start
    total = 0
    for j in plan.stage_rows(bj, stage):
        total += (j if bi == bj else n_i) * (n_k - j - 1 if bj == bk else n_k)
    return total


def _middle_batches(plan, bi, bj, bk, stage, n_i, n_k, batch_rows):
    """Lists of middle rows j whose masked blocks go into one GEMM (about batch_rows rows)."""
    batch, rows = [], 0
    for j in plan.stage_rows(bj, stage):
        n = j if bi == bj else n_i
        if n == 0 or (bj == bk and j >= n_k - 1):
            continue  # no row i < j, or no column k > j
        batch.append(j)
        rows += n
        if rows >= batch_rows:
            yield batch
            batch, rows = [], 0
    if batch:
        yield batch


def iter_triples(
    planes,
    layout,
    perm: np.ndarray,
    plan: ccc3.Plan3,
    params: ccc3.Params,
    bi: int,
    bj: int,
    bk: int,
    stage: int,
    threshold=None,
    backend: str = "auto",
    info: dict | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The job's passing triples, a chunk at a time: (ids int64 (t, 3), original indices
    a < b < c; values float64 (t, 8), COLUMNS in their order), in no particular order. On the
    CPU a chunk holds at most numba_ccc3.CAPACITY triples (numba) or BATCH_ELEMENTS (numpy), on a
    GPU cupy_ccc3.MAX_CAPACITY (one readback), whatever the threshold lets through.

    `info`, when given, gets "backend" at the start and "seconds_counts" once the last chunk is
    out (counting, epilogue and threshold: all but the caller's sorting and writing; on a GPU
    the device's counting, as triples_device reports it).
    """
    t0 = time.perf_counter()
    ccc3.check_layout(layout)
    backend_name = backends.resolve(backend)
    module = backends.get(backend_name)
    info = {} if info is None else info
    info["backend"] = backend_name
    rows = [plan.block(b) for b in (bi, bj, bk)]
    blocks = [np.asarray(planes[rows[0]])]
    blocks.append(blocks[0] if bj == bi else np.asarray(planes[rows[1]]))
    blocks.append(blocks[1] if bk == bj else np.asarray(planes[rows[2]]))
    stats = [ccc3.vector_stats(b, layout) for b in blocks]
    perms = [perm[r] for r in rows]
    device: dict = {}
    if hasattr(module, "triples_device"):  # chunks of at most cupy_ccc3.MAX_CAPACITY
        chunks: Iterable = module.triples_device(
            blocks, stats, layout, plan, params, (bi, bj, bk), stage, threshold, info=device
        )
    elif hasattr(module, "ccc3_kernel"):  # numba: counts, epilogue and threshold fused
        from genotile.backends.cpu import numba_ccc3

        chunks = numba_ccc3.triples_chunks(blocks, stats, layout, plan, params, (bi, bj, bk), stage, threshold)
    else:
        chunks = _numpy_chunks(module, blocks, stats, layout, plan, params, (bi, bj, bk), stage, threshold)
    for ti, tj, tk, values in chunks:
        ids = np.stack([perms[0][ti], perms[1][tj], perms[2][tk]], axis=1).astype(np.int64)
        yield ccc3.to_input_order(ids, values)
    # a GPU job's counting is the device generator's own time, the caller's between chunks left out
    info["seconds_counts"] = device["seconds_counts"] if device else time.perf_counter() - t0


def _numpy_chunks(module, blocks, stats, layout, plan, params, block_ids, stage, threshold):
    """The 2-way backends' path: masked rows against block K through count_matrices, then
    ccc3.epilogue, on at most BATCH_ELEMENTS (row, column) places at a time."""
    bi, bj, bk = block_ids
    n_i, n_k = blocks[0].shape[0], blocks[2].shape[0]
    terms = ccc3.count_terms(layout)
    for batch in _middle_batches(plan, bi, bj, bk, stage, n_i, n_k, BATCH_ROWS):
        per_j = [j if bi == bj else n_i for j in batch]
        k_first = batch[0] + 1 if bj == bk else 0  # columns k > min j (rows of larger j masked below)
        masked = ccc3.mask_block(blocks[0], blocks[1][batch], layout.words, per_j)
        row_i = np.concatenate([np.arange(n) for n in per_j])
        row_j = np.repeat(np.asarray(batch), per_j)
        step = max(1, BATCH_ELEMENTS // masked.shape[0])
        for k0 in range(k_first, n_k, step):
            k1 = min(n_k, k0 + step)
            counts = module.count_matrices(masked, blocks[2][k0:k1], terms)
            col_k = np.arange(k0, k1)
            vals = ccc3.epilogue(
                counts,
                (stats[0][0][row_i, None], stats[0][1][row_i, None]),
                (stats[1][0][row_j, None], stats[1][1][row_j, None]),
                (stats[2][0][None, k0:k1], stats[2][1][None, k0:k1]),
                params,
            )
            keep = ccc3.passes(vals, threshold)
            if bj == bk:
                keep &= col_k[None, :] > row_j[:, None]
            r, c = np.nonzero(keep)
            yield row_i[r], row_j[r], col_k[c], np.stack([vals[col][r, c] for col in ccc3.COLUMNS], axis=1)


def sort_triples(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows by (a, b, c): the same bytes whatever the backend's or the chunks' order."""
    order = np.lexsort((ids[:, 2], ids[:, 1], ids[:, 0]))
    return ids[order], values[order]


def job_meta(plan: ccc3.Plan3, params: ccc3.Params, block_ids, stage: int, threshold, info: dict) -> dict:
    """A job file's meta (triples_passing and seconds_total added by the caller)."""
    return {
        "tile": list(block_ids),
        "stage": stage,
        "metric": ccc3.NAME,
        "backend": info["backend"],
        "threshold": threshold,
        "params": {"multiplier": params.multiplier, "param": params.param},
        "plan3": {"block_size": plan.block_size, "stages": plan.stages},
        "triples_computed": job_triples(plan, block_ids[0], block_ids[1], block_ids[2], stage),
        "seconds_counts": info["seconds_counts"],
    }


def compute_triples(
    planes,
    layout,
    perm: np.ndarray,
    plan: ccc3.Plan3,
    params: ccc3.Params,
    bi: int,
    bj: int,
    bk: int,
    stage: int,
    threshold=None,
    backend: str = "auto",
    max_rows: int | None = None,
) -> tuple[dict, dict]:
    """(arrays, meta) of a whole job in memory: a, b, c (original indices) and ccc_000 .. ccc_111,
    sorted by (a, b, c). More than `max_rows` passing triples: GenotileError (the API's bound)."""
    t0 = time.perf_counter()
    info: dict = {}
    ids_parts, value_parts, held = [], [], 0
    for ids, values in iter_triples(planes, layout, perm, plan, params, bi, bj, bk, stage, threshold, backend, info):
        held += ids.shape[0]
        if max_rows is not None and held > max_rows:
            raise TooManyTriples(
                f"ccc3: more than {max_rows:,} triples pass (held in memory): raise the threshold, or run "
                "`genotile run`, which streams them to a file"
            )
        ids_parts.append(ids)
        value_parts.append(values)
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros((0, 3), np.int64)
    values = np.concatenate(value_parts) if value_parts else np.zeros((0, 8), np.float64)
    del ids_parts, value_parts
    ids, values = sort_triples(ids, values)
    arrays = columns(ids, values)
    meta = job_meta(plan, params, (bi, bj, bk), stage, threshold, info)
    meta["triples_passing"] = int(ids.shape[0])
    meta["seconds_total"] = time.perf_counter() - t0
    return arrays, meta


def columns(ids: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """{a, b, c, ccc_000 .. ccc_111}: a job file's arrays, each contiguous (t,)."""
    arrays = {"a": ids[:, 0].copy(), "b": ids[:, 1].copy(), "c": ids[:, 2].copy()}
    for k, col in enumerate(ccc3.COLUMNS):
        arrays[col] = np.ascontiguousarray(values[:, k], dtype=np.float64)
    return arrays
