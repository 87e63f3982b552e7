from genotile.pairs import early
from genotile.runtime.rule import run_rule


def tile(sm):
    i, j = int(sm.wildcards.i), int(sm.wildcards.j)
    settings = {
        "threshold": sm.params.threshold,
        "dense": sm.params.dense,
        "backend": sm.params.backend,
        "metric_params": sm.params.metric_params,
    }
    # the store job may have computed this tile already (config tiles_in_store): then nothing
    # more is imported
    if early.adopt(sm.input.manifest, sm.wildcards.metric, i, j, settings, sm.output[0]):
        return
    from genotile import backends
    from genotile.pairs import steps
    from genotile.runtime.gpu_slots import slot_for_backend

    backends.limit_threads(sm.threads)  # the CPU backends use the job's threads, no more
    # Pin this job to one GPU before anything initialises CUDA.
    with slot_for_backend(sm.params.backend):
        steps.tile(
            sm.input.planes,
            sm.input.manifest,
            sm.input.perm,
            sm.wildcards.metric,
            i,
            j,
            threshold=sm.params.threshold,
            dense=sm.params.dense,
            backend=sm.params.backend,
            tile_out=sm.output[0],
            metric_params=sm.params.metric_params,
        )


run_rule(snakemake, tile)
