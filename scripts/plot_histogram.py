from pathlib import Path

from genotile import report
from genotile.runtime.rule import run_rule

# the threshold the results were computed with: summary.json, written beside histogram.tsv by the merge
run_rule(
    snakemake,
    lambda sm: report.plot_histogram(
        sm.input[0], sm.wildcards.metric, sm.output[0], report.run_threshold(Path(sm.input[0]).parent / "summary.json")
    ),
)
