# genotile: all-pairs comparisons of genomic vectors as bit-plane GEMM tiles.
#
#   store (checkpoint, one job: ingest -> plan of n vectors, blocks, tiles -> pack) -> tile (one job per I <= J)
#   -> matrix (if n <= dense_max) -> merge (pairs.tsv.gz, summary.json, histogram.tsv) -> report plots


from snakemake.resources import Resource

from genotile.core.blocks import prefetch_host_gpus, share_host_gpus
from genotile.runtime.deploy import export_package_source
from genotile.runtime.gpu_slots import default_gpu_bound


configfile: "config/config.yaml"


# --sdm conda: the rules' envs (envs/*.yaml) pip-install genotile from $GENOTILE_SOURCE, set
# here to this workflow's own source: its clone or module path, or its git repository and ref.
export_package_source(workflow.current_basedir)


# --sdm apptainer: every job runs in config `container`, an image built from Apptainer.def
# (none by default; README, Deployment).
container: config.get("container")


# A `--resources gpu=N` bound holds within each submitted (group) job, so a group of tiles runs
# them one after another on the one GPU its job asks SLURM for. Where the command line gives no
# bound, a local run takes every GPU it may see, one tile job each (runtime/gpu_slots.py).
resource_scopes:
    gpu="local",


# (nvidia-smi, for that bound, runs while the rules below are read: core/blocks.py; the bound
# is set after them)
if "gpu" not in workflow.global_resources and not workflow.non_local_exec:
    prefetch_host_gpus()


include: "rules/common.smk"
include: "rules/store.smk"
include: "rules/tiles.smk"
include: "rules/merge.smk"
include: "rules/screen.smk"
include: "rules/triples.smk"
include: "rules/report.smk"


if "gpu" not in workflow.global_resources:
    workflow.register_resource(
        "gpu", Resource("gpu", default_gpu_bound(local=not workflow.non_local_exec))
    )


rule all:
    default_target: True
    input:
        all_outputs_of_this_run,


# one run per directory (runtime/workflow.py): the lock first (taken already where the target's
# inputs were asked for), before the hook below removes files
onstart:
    hold_run_lock(workflow.execution_settings.lock)
    clear_early_tiles()
    # the GPUs this process read with nvidia-smi (the gpu bound, the jobs' resources), handed to
    # the jobs it starts on this host, which need not read them again (core/blocks.py)
    share_host_gpus()


onsuccess:
    cancel_scheduler_timers()
    exit_without_teardown()


onerror:
    cancel_scheduler_timers()
