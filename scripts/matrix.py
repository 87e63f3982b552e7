from genotile.pairs import stage
from genotile.runtime.rule import run_rule

run_rule(
    snakemake,
    lambda sm: stage.matrix(sm.input.tiles, sm.input.manifest, sm.wildcards.metric, sm.output[0]),
)
