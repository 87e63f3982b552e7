from genotile.runtime import prestart

# where an append started the run's tile worker (runtime/prestart.py), it imports what the
# histogram's plot needs now, beside this merge, for the plot job after it
if snakemake.config.get("report"):
    prestart.warm_plots()

from genotile.pairs import stage  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402

run_rule(
    snakemake,
    lambda sm: stage.merge(
        sm.input.tiles,
        sm.input.manifest,
        sm.wildcards.metric,
        sm.output.pairs,
        sm.output.summary,
        config=dict(sm.params.config),
        matrix_path=sm.input.matrix or None,
        histogram_out=sm.output.histogram,
    ),
)
