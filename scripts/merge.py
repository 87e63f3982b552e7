from genotile.pairs import steps
from genotile.runtime.rule import run_rule

run_rule(
    snakemake,
    lambda sm: steps.merge(
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
