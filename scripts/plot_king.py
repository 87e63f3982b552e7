from genotile import report
from genotile.runtime.rule import run_rule

run_rule(snakemake, lambda sm: report.plot_king(sm.input[0], sm.output[0]))
