from genotile.pairs import steps
from genotile.runtime.rule import run_rule

run_rule(
    snakemake,
    lambda sm: steps.ingest(
        sm.input.data,
        sm.wildcards.encoding,
        sm.output.codes,
        sm.output.manifest,
        collapse_duplicates=sm.params.collapse,
        **sm.params.options,
    ),
)
