from genotile.pairs import steps
from genotile.runtime.rule import run_rule

run_rule(
    snakemake,
    lambda sm: steps.pack(
        sm.input.codes, sm.input.manifest, sm.input.plan, sm.input.perm, sm.output.planes, sm.output.manifest
    ),
)
