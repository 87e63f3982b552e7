import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile import backends  # noqa: E402
from genotile.pairs import steps  # noqa: E402
from genotile.runtime.gpu_slots import slot_for_backend  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402


def tile(sm):
    backends.limit_threads(sm.threads)  # the CPU backends use the job's threads, no more
    # Pin this job to one GPU before anything initialises CUDA.
    with slot_for_backend(sm.params.backend):
        steps.tile(
            sm.input.planes,
            sm.input.manifest,
            sm.input.perm,
            sm.wildcards.metric,
            int(sm.wildcards.i),
            int(sm.wildcards.j),
            threshold=sm.params.threshold,
            dense=sm.params.dense,
            backend=sm.params.backend,
            tile_out=sm.output[0],
            metric_params=sm.params.metric_params,
        )


run_rule(snakemake, tile)
