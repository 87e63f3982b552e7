from genotile import report
from genotile.runtime.rule import run_rule

# the histogram the merge writes, counted from the tiles by this job itself (it runs beside the
# merge), with the threshold the merge records in summary.json (the rule's params)
run_rule(
    snakemake,
    lambda sm: report.plot_histogram_of_tiles(
        list(sm.input.tiles), sm.input.manifest, sm.wildcards.metric, sm.output[0], dict(sm.params.config)
    ),
)
