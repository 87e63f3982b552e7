import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.runtime.rule import run_rule  # noqa: E402
from genotile.screen import steps  # noqa: E402

run_rule(
    snakemake,
    lambda sm: steps.ingest(
        sm.input.samples,
        sm.input.signatures,
        Path(sm.output.manifest).parent,
        sample_block=sm.params.sample_block,
        signature_block=sm.params.signature_block,
    ),
)
