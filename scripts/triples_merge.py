import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.runtime.rule import run_rule  # noqa: E402
from genotile.triples import steps as steps3  # noqa: E402

run_rule(
    snakemake,
    lambda sm: steps3.merge(
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
