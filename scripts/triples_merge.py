from genotile.runtime.rule import run_rule
from genotile.triples import stage

run_rule(
    snakemake,
    lambda sm: stage.merge(
        sm.input.triples,
        sm.input.manifest,
        block_size=sm.params.block_size,
        stages=sm.params.stages,
        triples_out=sm.output.triples,
        summary_out=sm.output.summary,
        config=dict(sm.params.config),
        params=sm.params.ccc,
    ),
)
