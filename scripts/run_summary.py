from pathlib import Path

from genotile import report
from genotile.runtime.rule import run_rule

# the benchmark files of every job upstream of the summaries exist by now
run_rule(
    snakemake,
    lambda sm: report.run_summary(
        sm.input.summaries, sorted(Path("benchmarks").rglob("*.tsv")), sm.output[0], sm.input.screens
    ),
)
