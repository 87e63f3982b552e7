import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.runtime import report  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402

run_rule(snakemake, lambda sm: report.plot_king(sm.input[0], sm.output[0]))
