from genotile import report
from genotile.runtime.rule import run_rule


def plot(sm):
    # the table first: it is a result, the picture drawn from the same matches may fail alone
    hits = report.ScreenHits(sm.input.matches, sm.input.manifest)
    report.screen_hits_table(hits, sm.output.table)
    report.plot_screen(hits, sm.input.summary, sm.output.plot, sm.params.max_vectors)


run_rule(snakemake, plot)
