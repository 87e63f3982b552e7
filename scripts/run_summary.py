import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.runtime import report  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402

# the benchmark files of every job upstream of the summaries exist by now
run_rule(
    snakemake,
    lambda sm: report.run_summary(sm.input.summaries, sorted(Path("benchmarks").rglob("*.tsv")), sm.output[0]),
)
