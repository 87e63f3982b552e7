from pathlib import Path

from genotile import report
from genotile.runtime.rule import run_rule


def plot(sm):
    # histogram.tsv (every pair's kinship) and summary.json (the threshold) are written with
    # pairs.tsv.gz by the merge
    folder = Path(sm.input[0]).parent
    report.plot_king(sm.input[0], sm.output[0], folder / "histogram.tsv", report.run_threshold(folder / "summary.json"))


run_rule(snakemake, plot)
