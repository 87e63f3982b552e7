import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.core import ccc3, limits  # noqa: E402
from genotile.core.metrics import METRICS  # noqa: E402
from genotile.pairs import steps  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402


def plan(sm):
    p = steps.plan(sm.input.manifest, sm.params.block_size, sm.params.seed, sm.output.plan, sm.output.perm)
    # shown on the console too, before any tile job is scheduled
    print(f"genotile plan for {sm.wildcards.dataset} ({sm.wildcards.encoding}): {p.describe()}", file=sys.stderr)
    if sm.wildcards.encoding == "genotype_t" and "ccc3" in sm.config["datasets"][sm.wildcards.dataset]["metrics"]:
        ccc3.check_null_threshold(
            p.n_vectors,
            sm.config["thresholds"].get("ccc3"),
            f"dataset {sm.wildcards.dataset}: ",
            (sm.config.get("ccc3") or {}).get("null_threshold_max", ccc3.NULL_THRESHOLD_MAX),
        )
    null = [
        m
        for m in sm.config["datasets"][sm.wildcards.dataset]["metrics"]
        if m in METRICS and METRICS[m].encoding == sm.wildcards.encoding and sm.config["thresholds"].get(m) is None
    ]
    limits.check_pairs_bound(p.n_vectors, null, sm.config["pairs_max"], f"dataset {sm.wildcards.dataset}: ")


run_rule(snakemake, plan)
