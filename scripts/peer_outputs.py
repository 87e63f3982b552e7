from genotile.pairs import peers
from genotile.runtime.rule import run_rule

run_rule(
    snakemake,
    lambda sm: peers.write_outputs(
        sm.input.tiles,
        sm.input.manifest,
        sm.wildcards.metric,
        list(sm.output),
        king_cutoff=sm.params.get("king_cutoff"),
    ),
)
