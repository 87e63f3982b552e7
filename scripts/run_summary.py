from pathlib import Path

from genotile.report_table import run_summary
from genotile.runtime.rule import run_rule

# the benchmark files of every job upstream of the summaries exist by now; the metrics' stores
# from the rule's params (report_table.py: no numpy in this job)
run_rule(
    snakemake,
    lambda sm: run_summary(
        sm.input.summaries,
        sorted(Path("benchmarks").rglob("*.tsv")),
        sm.output[0],
        sm.input.screens,
        dict(sm.params.encodings),
    ),
)
