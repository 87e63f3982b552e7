import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.pairs import steps  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402

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
