from genotile import report
from genotile.runtime.rule import run_rule

run_rule(snakemake, lambda sm: report.plot_histogram(sm.input[0], sm.wildcards.metric, sm.output[0]))
