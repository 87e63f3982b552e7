"""What every merge (pairs, triples) checks in each file it reads, beyond its checksum
(tilefile.py): that it was computed under the current threshold and metric parameters, and, with
the block of each vector, that its indices lie in its blocks (the workloads' own checks:
pairs/tilecheck.py, triples/merge.py)."""

import numpy as np

from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.util.readback import RERUN


def same_number(a, b) -> bool:
    """Thresholds as recorded: None, or numbers equal as numbers (20 == 20.0)."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def block_of(plan: Plan, perm: np.ndarray) -> np.ndarray:
    """(n,) block number of each original vector index."""
    out = np.empty(plan.n_vectors, dtype=np.int64)
    for k in range(plan.n_blocks):
        out[perm[plan.block(k)]] = k
    return out


def check_settings(path, meta: dict, expect: dict, what: str = "tile") -> None:
    """The threshold and metric parameters the tile was computed with are the current ones."""
    if "threshold" in expect and not same_number(meta.get("threshold"), expect["threshold"]):
        raise GenotileError(
            f"{what} {path}: computed with threshold {meta.get('threshold')}, not the current "
            f"{expect['threshold']}; {RERUN}"
        )
    if "params" in expect and (meta.get("params") or {}) != expect["params"]:
        raise GenotileError(
            f"{what} {path}: computed with metric parameters {meta.get('params') or {}}, not the current "
            f"{expect['params']}; {RERUN}"
        )
