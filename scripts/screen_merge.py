from pathlib import Path

from genotile.runtime.rule import run_rule
from genotile.screen import stage

run_rule(
    snakemake,
    lambda sm: stage.merge(
        sm.input.tiles,
        Path(sm.input.manifest).parent,
        min_score=sm.params.min_score,
        matches_out=sm.output.matches,
        summary_out=sm.output.summary,
        config=dict(sm.params.config),
    ),
)
