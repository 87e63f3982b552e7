import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.pairs import steps  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402

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
