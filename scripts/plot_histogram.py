from pathlib import Path

from genotile.runtime import prestart
from genotile.runtime.rule import run_rule


def plot(sm):
    # the threshold the results were computed with: summary.json, written beside histogram.tsv by the merge
    summary = Path(sm.input[0]).parent / "summary.json"
    # drawn by the run's tile worker where an append started one (runtime/prestart.py), its
    # imports made while the tiles were merged: the same code, environment and bytes
    if prestart.plot_histogram(sm.input[0], sm.wildcards.metric, sm.output[0], summary):
        return
    from genotile import report

    report.plot_histogram(sm.input[0], sm.wildcards.metric, sm.output[0], report.run_threshold(summary))


run_rule(snakemake, plot)
