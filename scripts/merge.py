from genotile.pairs import stage
from genotile.runtime.rule import run_rule

run_rule(
    snakemake,
    lambda sm: stage.merge(
        sm.input.tiles,
        sm.input.manifest,
        sm.wildcards.metric,
        sm.output.pairs,
        sm.output.summary,
        config=dict(sm.params.config),
        matrix_path=sm.input.matrix or None,
        histogram_out=sm.output.histogram,
    ),
)
