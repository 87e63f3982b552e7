import sys

from genotile.core.registry import REGISTRY
from genotile.pairs import steps
from genotile.runtime.rule import run_rule


def store(sm):
    dataset = sm.config["datasets"][sm.wildcards.dataset]
    # the bounds on output (limits.check_plan), as `genotile run` applies them
    bounds = {
        "metrics": [m for m in dataset["metrics"] if REGISTRY[m].encoding == sm.wildcards.encoding],
        "thresholds": sm.config["thresholds"],
        "pairs_max": sm.config["pairs_max"],
        "ccc3_null_max": (sm.config.get("ccc3") or {}).get("null_threshold_max"),
        "where": f"dataset {sm.wildcards.dataset}: ",
    }
    p = steps.store(
        sm.input.data,
        sm.wildcards.encoding,
        sm.output.ingest,
        sm.output.plan.rsplit("/", 1)[0],
        sm.params.block_size,
        sm.params.seed,
        options=sm.params.options,
        collapse_duplicates=sm.params.collapse,
        **sm.params.auto,
        bounds=bounds,
    )
    # shown on the console too, before any tile job is scheduled
    print(f"genotile plan for {sm.wildcards.dataset} ({sm.wildcards.encoding}): {p.describe()}", file=sys.stderr)


run_rule(snakemake, store)
