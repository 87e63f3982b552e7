"""One tile: block I against block J, counts -> epilogue -> threshold.

Rows are permuted store rows; results leave in original vector indices, each
pair as (a, b) with a < b in input order. On a diagonal tile only pairs with
row < column are kept, so each unique pair is written by exactly one tile.
"""

import time

import numpy as np

from genotile import backends
from genotile.core import histogram
from genotile.core.metrics import Metric
from genotile.core.plan import Plan


def compute_tile(
    planes,
    layout,
    perm: np.ndarray,
    plan: Plan,
    metric: Metric,
    bi: int,
    bj: int,
    threshold=None,
    dense: bool = False,
    backend: str = "auto",
) -> tuple[dict, dict]:
    """Returns (arrays, meta) ready for `tilefile.write_tile`."""
    t0 = time.perf_counter()
    rows_i, rows_j = plan.block(bi), plan.block(bj)
    n_i, n_j = rows_i.stop - rows_i.start, rows_j.stop - rows_j.start
    backend_name = backends.resolve(backend, work=n_i * n_j * layout.total_words)
    module = backends.get(backend_name)
    if hasattr(module, "tile_pairs"):
        # optional fast path (GPU backends): counts, epilogue, threshold and compaction on the
        # device, the blocks streamed from the store; the same arrays as the path below
        res = module.tile_pairs(
            planes[rows_i],
            None if bi == bj else planes[rows_j],
            metric,
            layout,
            threshold=threshold,
            diagonal=bi == bj,
            dense=dense,
            perms=(perm[rows_i], perm[rows_j]),
        )
        ri, rj, columns, dense_values = res.ri, res.rj, res.columns, res.dense
        hist = res.histograms
        t_counts = t0 + res.seconds_counts
    else:
        left = np.asarray(planes[rows_i])
        right = left if bi == bj else np.asarray(planes[rows_j])
        counts = module.count_matrices(left, right, metric.counts(layout))
        t_counts = time.perf_counter()
        values = metric.epilogue(counts)
        keep = metric.passes(values, threshold)
        if bi == bj:
            keep &= np.triu(np.ones(keep.shape, dtype=bool), k=1)
        ri, rj = np.nonzero(keep)
        if bi == bj and histogram.symmetric_counts(metric):
            hist = histogram.diagonal_tile_histograms(metric, values)  # no n^2 masks and gathers
        else:
            unique = np.triu(np.ones(keep.shape, dtype=bool), k=1) if bi == bj else np.ones(keep.shape, dtype=bool)
            flipped = perm[rows_i][:, None] > perm[rows_j][None, :]
            hist = histogram.tile_histograms(
                metric, histogram.in_input_order(values, metric.transposed, flipped), unique
            )
        columns = {col: values[col][ri, rj] for col in metric.columns}
        dense_values = values[metric.dense_column] if dense else None
    orig_i, orig_j = perm[rows_i][ri], perm[rows_j][rj]
    arrays = {
        "a": np.minimum(orig_i, orig_j).astype(np.int64),
        "b": np.maximum(orig_i, orig_j).astype(np.int64),
    }
    for col in metric.columns:
        arrays[col] = columns[col]
    # a row reads (a, b) in input order; where the tile saw the pair as (b, a),
    # the columns of an asymmetric metric trade places (ccc2: ccc_01 <-> ccc_10)
    flipped = orig_i > orig_j
    for c1, c2 in metric.transposed:
        v1, v2 = arrays[c1], arrays[c2]
        arrays[c1], arrays[c2] = np.where(flipped, v2, v1), np.where(flipped, v1, v2)
    arrays.update(hist)  # the metric's histogram over every pair of the tile
    if dense:
        arrays["dense_rows"] = perm[rows_i].astype(np.int64)
        arrays["dense_cols"] = perm[rows_j].astype(np.int64)
        arrays["dense"] = dense_values
    pairs = n_i * (n_i - 1) // 2 if bi == bj else n_i * n_j
    meta = {
        "tile": [bi, bj],
        "metric": metric.name,
        "backend": backend_name,
        "threshold": threshold,
        "pairs_computed": pairs,
        "pairs_passing": int(ri.size),
        "seconds_counts": t_counts - t0,
        "seconds_total": time.perf_counter() - t0,
    }
    return arrays, meta
