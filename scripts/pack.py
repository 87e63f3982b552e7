import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.pairs import steps  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402

run_rule(
    snakemake,
    lambda sm: steps.pack(
        sm.input.codes, sm.input.manifest, sm.input.plan, sm.input.perm, sm.output.planes, sm.output.manifest
    ),
)
