from pathlib import Path

from genotile import report
from genotile.pairs.sampled import sample_pairs
from genotile.runtime.rule import run_rule


def plot(sm):
    # histogram.tsv (every pair's kinship) and summary.json (the threshold) are written with
    # pairs.tsv.gz by the merge; every pair's spread is sampled from the store (pairs/sampled.py)
    folder = Path(sm.input.pairs).parent
    sampled = sample_pairs(sm.input.planes, sm.input.manifest, "king")
    report.plot_king(
        sm.input.pairs,
        sm.output[0],
        folder / "histogram.tsv",
        report.run_threshold(folder / "summary.json"),
        sampled,
    )


run_rule(snakemake, plot)
