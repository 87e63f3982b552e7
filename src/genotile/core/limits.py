"""Planning-time bounds on output: a run that would write without limit stops before any tile.

A 2-way metric with a null threshold keeps every pair: n(n-1)/2 rows of pairs.tsv.gz,
all held by the merge at once. Past `pairs_max` pairs (config, default 200,000,000) the
plan refuses it with the numbers, before a tile job is scheduled. (matrix.tsv is bounded
by `dense_max`; ccc3 by ccc3.check_null_threshold.) `check_plan` applies both bounds; the plan
steps call it (store/stage.plan: the workflow's store job and `genotile run`;
triples/stage.plan_triples: every ccc3 run), so every way of running refuses the same runs.
"""

import math

from genotile.core import ccc3
from genotile.core.registry import REGISTRY
from genotile.errors import GenotileError

BYTES_PER_PAIR = 40  # about a row of pairs.tsv.gz text, uncompressed
PAIRS_MAX = 200_000_000  # config `pairs_max`'s default (config/schema: checked by a test)


def check_pairs_bound(n_vectors: int, null_metrics: list[str], pairs_max: int, where: str = "") -> None:
    """Refuse metrics with a null threshold when all their pairs are more than pairs_max."""
    pairs = n_vectors * (n_vectors - 1) // 2
    if null_metrics and pairs > pairs_max:
        raise GenotileError(
            f"{where}{', '.join(null_metrics)} with a null threshold would write every one of the {pairs:,} "
            f"pairs of {n_vectors:,} vectors (about {pairs * BYTES_PER_PAIR / 1e9:,.0f} GB of text, held in "
            f"memory by the merge); pairs_max is {pairs_max:,}: set a threshold or raise pairs_max"
        )


def check_plan(
    n_vectors: int,
    metrics,
    thresholds: dict,
    *,
    pairs_max: int = PAIRS_MAX,
    ccc3_null_max: int | None = None,
    where: str = "",
) -> None:
    """The bounds on output a plan over `n_vectors` vectors is held to, before any tile job.

    Parameters
    ----------
    n_vectors : int
        Vectors of the store.
    metrics : sequence of str
        The run's metrics that read this store (core/registry.py names).
    thresholds : dict
        {metric: threshold}; a metric missing or None keeps every pair (triple).
    pairs_max : int, optional
        2-way metrics with a null threshold: refused past this many pairs (config `pairs_max`).
    ccc3_null_max : int or None, optional
        ccc3 with a null threshold: refused past this many vectors (`ccc3: null_threshold_max`;
        None: ccc3.NULL_THRESHOLD_MAX).
    where : str, optional
        Prefix of the error (e.g. "dataset d: ").
    """
    null = [m for m in metrics if thresholds.get(m) is None]
    check_pairs_bound(n_vectors, [m for m in null if REGISTRY[m].workload == "pairs"], pairs_max, where)
    if any(REGISTRY[m].workload == "triples" for m in null):
        null_max = ccc3.NULL_THRESHOLD_MAX if ccc3_null_max is None else ccc3_null_max
        ccc3.check_null_threshold(n_vectors, None, where, null_max)


def check_threshold(value, what: str) -> None:
    """A threshold or min_score: null or a finite number. NaN would keep nothing (every
    comparison false) and infinity everything or nothing, each silently: refused by name."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GenotileError(f"{what} must be a finite number or null, not {value!r}")


def check_config_thresholds(config: dict) -> None:
    """Every threshold and screen min_score of a workflow config (after schema validation)."""
    for metric, value in (config.get("thresholds") or {}).items():
        check_threshold(value, f"thresholds: {metric}")
    for screen, spec in (config.get("screens") or {}).items():
        check_threshold(spec.get("min_score"), f"screens: {screen}: min_score")
