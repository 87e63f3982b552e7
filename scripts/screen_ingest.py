from pathlib import Path

from genotile.runtime.rule import run_rule
from genotile.screen import stage

run_rule(
    snakemake,
    lambda sm: stage.ingest(
        sm.input.samples,
        sm.input.signatures,
        Path(sm.output.manifest).parent,
        sample_block=sm.params.sample_block,
        signature_block=sm.params.signature_block,
    ),
)
