from genotile.pairs import steps
from genotile.runtime.rule import run_rule

run_rule(
    snakemake,
    lambda sm: steps.matrix(sm.input.tiles, sm.input.manifest, sm.wildcards.metric, sm.output[0]),
)
