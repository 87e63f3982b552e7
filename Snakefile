# genotile: all-pairs comparisons of genomic vectors as bit-plane GEMM tiles.
#
#   store (checkpoint, one job: ingest -> plan of n vectors, blocks, tiles -> pack) -> tile (one job per I <= J)
#   -> matrix (if n <= dense_max) -> merge (pairs.tsv.gz, summary.json, histogram.tsv) -> report plots


from genotile.runtime.deploy import export_package_source


configfile: "config/config.yaml"


# --sdm conda: the rules' envs (envs/*.yaml) pip-install genotile from $GENOTILE_SOURCE, set
# here to this workflow's own source: its clone or module path, or its git repository and ref.
export_package_source(workflow.current_basedir)


# --sdm apptainer: every job runs in config `container`, an image built from Apptainer.def
# (none by default; README, Deployment).
container: config.get("container")


# A `--resources gpu=N` bound holds within each submitted (group) job: the workflow profile
# (profiles/default) sets gpu=1, so a group of tiles runs them one after another on the one GPU
# its job asks SLURM for.
resource_scopes:
    gpu="local",


include: "rules/common.smk"
include: "rules/store.smk"
include: "rules/tiles.smk"
include: "rules/merge.smk"
include: "rules/screen.smk"
include: "rules/triples.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_outputs,


onstart:
    clear_early_tiles()
    warm_scheduler_imports()


onsuccess:
    cancel_scheduler_timers()


onerror:
    cancel_scheduler_timers()
