"""Running the stages: Snakemake rule glue, GPU slots, CPU counts, progress, report plots."""
