"""One ccc3 job: block triple (I, J, K), one stage of the middle block J (numpy only).

Rows are permuted store rows. Inside a block triple each unique triple is computed once:
row_i < row_j when I == J, row_j < row_k when J == K. For every middle row j of the stage the
masked block (ccc3.mask_block) meets block K in the 8 counts, several j stacked into one
count_matrices call; then the epilogue, the threshold, and the passing triples leave in original
vector indices, sorted per triple (a < b < c) with the 2x2x2 table permuted to match.
GPU backends with `triples_device` (cupy_ccc3) do the same on the device.
"""

import time

import numpy as np

from genotile import backends
from genotile.core import ccc3

BATCH_ROWS = 2048  # masked rows per count_matrices call on the CPU


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
) -> tuple[dict, dict]:
    """(arrays, meta) for tilefile.write_tile: a, b, c (original indices) and ccc_000 .. ccc_111."""
    t0 = time.perf_counter()
    ccc3.check_layout(layout)
    backend_name = backends.resolve(backend)
    module = backends.get(backend_name)
    rows = [plan.block(b) for b in (bi, bj, bk)]
    blocks = [np.asarray(planes[rows[0]])]
    blocks.append(blocks[0] if bj == bi else np.asarray(planes[rows[1]]))
    blocks.append(blocks[1] if bk == bj else np.asarray(planes[rows[2]]))
    stats = [ccc3.vector_stats(b, layout) for b in blocks]
    perms = [perm[r] for r in rows]
    n_i, n_k = blocks[0].shape[0], blocks[2].shape[0]
    if hasattr(module, "triples_device"):
        found = module.triples_device(blocks, stats, layout, plan, params, (bi, bj, bk), stage, threshold)
        t_counts = t0 + found.seconds_counts
        ti, tj, tk, values = found.ti, found.tj, found.tk, found.values
    else:
        terms = ccc3.count_terms(layout)
        parts = []
        for batch in _middle_batches(plan, bi, bj, bk, stage, n_i, n_k, BATCH_ROWS):
            per_j = [j if bi == bj else n_i for j in batch]
            k0 = batch[0] + 1 if bj == bk else 0  # columns k > min j (rows of larger j masked below)
            masked = ccc3.mask_block(blocks[0], blocks[1][batch], layout.words, per_j)
            counts = module.count_matrices(masked, blocks[2][k0:], terms)
            row_i = np.concatenate([np.arange(n) for n in per_j])
            row_j = np.repeat(np.asarray(batch), per_j)
            col_k = np.arange(k0, n_k)
            vals = ccc3.epilogue(
                counts,
                (stats[0][0][row_i, None], stats[0][1][row_i, None]),
                (stats[1][0][row_j, None], stats[1][1][row_j, None]),
                (stats[2][0][None, k0:], stats[2][1][None, k0:]),
                params,
            )
            keep = ccc3.passes(vals, threshold)
            if bj == bk:
                keep &= col_k[None, :] > row_j[:, None]
            r, c = np.nonzero(keep)
            parts.append((row_i[r], row_j[r], col_k[c], np.stack([vals[col][r, c] for col in ccc3.COLUMNS], axis=1)))
        t_counts = time.perf_counter()
        if parts:
            ti, tj, tk, values = (np.concatenate([p[x] for p in parts]) for x in range(4))
        else:
            ti = tj = tk = np.zeros(0, dtype=np.int64)
            values = np.zeros((0, 8), dtype=np.float64)
    ids = np.stack([perms[0][ti], perms[1][tj], perms[2][tk]], axis=1).astype(np.int64)
    ids, values = ccc3.to_input_order(ids, values)
    order = np.lexsort((ids[:, 2], ids[:, 1], ids[:, 0]))  # the same bytes whatever the backend's order
    ids, values = ids[order], values[order]
    arrays = {"a": ids[:, 0].copy(), "b": ids[:, 1].copy(), "c": ids[:, 2].copy()}
    for k, col in enumerate(ccc3.COLUMNS):
        arrays[col] = np.ascontiguousarray(values[:, k], dtype=np.float64)
    meta = {
        "tile": [bi, bj, bk],
        "stage": stage,
        "metric": ccc3.NAME,
        "backend": backend_name,
        "threshold": threshold,
        "params": {"multiplier": params.multiplier, "param": params.param},
        "plan3": {"block_size": plan.block_size, "stages": plan.stages},
        "triples_computed": job_triples(plan, bi, bj, bk, stage),
        "triples_passing": int(ids.shape[0]),
        "seconds_counts": t_counts - t0,
        "seconds_total": time.perf_counter() - t0,
    }
    return arrays, meta
