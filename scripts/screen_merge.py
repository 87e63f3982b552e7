import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.runtime.rule import run_rule  # noqa: E402
from genotile.screen import steps  # noqa: E402

run_rule(
    snakemake,
    lambda sm: steps.merge(
        sm.input.tiles,
        Path(sm.input.manifest).parent,
        min_score=sm.params.min_score,
        matches_out=sm.output.matches,
        summary_out=sm.output.summary,
        config=dict(sm.params.config),
    ),
)
