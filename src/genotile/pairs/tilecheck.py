"""What a pairs merge checks in each tile before trusting it, beyond its checksum (tilefile.py)
and the checks every merge makes (io/mergecheck.py).

A tile's SHA-256 proves it was read whole, not that it belongs here: a tile computed under
another threshold or other metric parameters, or one whose indices lie outside its blocks
(edited, or written by a buggy backend), would be merged into results that state the current
settings. Each check names the tile file and what differs.
"""

import numpy as np

from genotile.core.keys import has_repeats
from genotile.core.metrics import Metric, get_metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.util.readback import RERUN


def expected_settings(metric_name: str, config: dict) -> dict:
    """{threshold, params} a merge expects its tiles to carry, from its config (keys present only)."""
    out = {}
    if "threshold" in config:
        out["threshold"] = config["threshold"]
    if "params" in config:
        out["params"] = get_metric(metric_name, **(config["params"] or {})).params
    return out


def check_pair_tile(
    path, arrays: dict, meta: dict, plan: Plan, metric: Metric, blocks: np.ndarray, perm, repeats: bool = True
) -> None:
    """Index ranges of a pairs tile: 0 <= a < b < n, one of each pair in block I and the other in
    block J, no pair twice, as many pairs as the tile says, every one passing its threshold; its
    dense block (if any) over exactly the vectors of blocks I and J. `repeats=False` leaves out
    the pair-twice check (a sort of the tile's keys) for a caller that sorts them anyway and
    checks them there (merge.merge_pairs)."""
    bi, bj = meta["tile"]
    names = ("a", "b", *metric.columns)
    absent = [k for k in names if k not in arrays]
    if absent:
        raise GenotileError(f"tile {path}: no {', '.join(absent)} array(s); {RERUN}")
    a, b = arrays["a"], arrays["b"]
    size = meta.get("pairs_passing")
    if any(arrays[k].ndim != 1 or arrays[k].shape != a.shape for k in names) or a.shape != (size,):
        raise GenotileError(f"tile {path}: its arrays do not all hold its {size} pairs; {RERUN}")
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        raise GenotileError(f"tile {path}: indices of type {a.dtype}/{b.dtype}, not integers; {RERUN}")
    n = plan.n_vectors
    bad = (a < 0) | (b >= n) | (a >= b)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise GenotileError(
            f"tile {path}: pair ({a[k]}, {b[k]}) is not 0 <= a < b < {n} (indices out of range); {RERUN}"
        )
    if plan.n_blocks > 1:  # with one block, every index in range is in it
        ka, kb = blocks[a], blocks[b]
        wrong = ~(((ka == bi) & (kb == bj)) | ((ka == bj) & (kb == bi)))
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            raise GenotileError(
                f"tile {path}: pair ({a[k]}, {b[k]}) lies in blocks ({ka[k]}, {kb[k]}), not in this tile's "
                f"blocks ({bi}, {bj}); {RERUN}"
            )
    if repeats and has_repeats(a * n + b):
        raise GenotileError(f"tile {path}: a pair is listed twice; {RERUN}")
    threshold = meta.get("threshold")
    if threshold is not None and a.size and not metric.passes({c: arrays[c] for c in metric.columns}, threshold).all():
        raise GenotileError(f"tile {path}: holds pairs that do not pass its threshold {threshold}; {RERUN}")
    if "dense" in arrays:
        rows, cols = arrays.get("dense_rows"), arrays.get("dense_cols")
        want_rows, want_cols = perm[plan.block(bi)], perm[plan.block(bj)]
        if (
            rows is None
            or cols is None
            or not np.array_equal(rows, want_rows)
            or not np.array_equal(cols, want_cols)
            or arrays["dense"].shape != (want_rows.size, want_cols.size)
        ):
            raise GenotileError(f"tile {path}: its dense block is not over blocks ({bi}, {bj}) of this plan; {RERUN}")
