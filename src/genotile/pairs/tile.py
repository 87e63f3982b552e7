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
    histograms: bool = True,
) -> tuple[dict, dict]:
    """Returns (arrays, meta) ready for `tilefile.write_tile`; `histograms=False` leaves the
    CPU path's `hist_*` out (a collapsed tile's are weighed from its dense block instead)."""
    t0 = time.perf_counter()
    rows_i, rows_j = plan.block(bi), plan.block(bj)
    n_i, n_j = rows_i.stop - rows_i.start, rows_j.stop - rows_j.start
    backend_name = backends.resolve(backend, work=n_i * n_j * layout.total_words)
    module = backends.get(backend_name)
    if hasattr(module, "tile_pairs"):
        # optional fast path (GPU backends): counts, epilogue, threshold and compaction on the
        # device, the blocks streamed from the store; the same arrays as the path below
        # a store of bits gives its blocks unmade: the device makes their planes (store/bits.py)
        block = getattr(planes, "block", planes.__getitem__)
        res = module.tile_pairs(
            block(rows_i),
            None if bi == bj else block(rows_j),
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
        ri, rj = passing_pairs(metric, values, threshold, diagonal=bi == bj)
        if not histograms:
            hist = {}
        elif bi == bj and histogram.symmetric_counts(metric):
            hist = histogram.diagonal_tile_histograms(metric, values)  # no n^2 masks and gathers
        else:
            shape = values[metric.dense_column].shape
            unique = np.triu(np.ones(shape, dtype=bool), k=1) if bi == bj else np.ones(shape, dtype=bool)
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


PASS_CELLS = 1 << 22  # cells of a band of rows thresholded at a time


def passing_pairs(metric, values: dict, threshold, diagonal: bool) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) int64 of the cells that pass the threshold, in row-major order, only those
    above the diagonal on a diagonal tile: what np.nonzero of the masked block gives.

    A band of rows at a time, on threads: no block-sized mask (and no (n, n) triangle mask on a
    diagonal tile: a band's cells on or below the diagonal are dropped after np.nonzero, where
    only the passing few are left).

    >>> from genotile.core.metrics import get_metric
    >>> v = {"snp": np.array([[0, 1, 5], [1, 0, 2], [5, 2, 0]])}
    >>> [a.tolist() for a in passing_pairs(get_metric("snp"), v, 2, diagonal=True)]
    [[0, 1], [1, 2]]
    """
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    n_rows, n_cols = values[metric.dense_column].shape
    step = max(1, PASS_CELLS // max(1, n_cols))

    def band(r0: int) -> tuple[np.ndarray, np.ndarray]:
        keep = metric.passes({c: v[r0 : r0 + step] for c, v in values.items()}, threshold)
        r, c = np.nonzero(keep)
        r += r0
        if diagonal:
            above = c > r
            r, c = r[above], c[above]
        return r.astype(np.int64, copy=False), c.astype(np.int64, copy=False)

    with ThreadPoolExecutor(usable_cpus(8), thread_name_prefix="genotile-pass") as pool:
        parts = list(pool.map(band, range(0, n_rows, step)))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate([r for r, _ in parts]), np.concatenate([c for _, c in parts])
