from genotile import backends
from genotile.runtime.gpu_slots import slot_for_backend
from genotile.runtime.rule import run_rule
from genotile.triples import stage


def job(sm):
    backends.limit_threads(sm.threads)  # the CPU backends use the job's threads, no more
    # Pin this job to one GPU before anything initialises CUDA.
    with slot_for_backend(sm.params.backend):
        stage.triple_job(
            sm.input.planes,
            sm.input.manifest,
            sm.input.perm,
            *(int(sm.wildcards[w]) for w in ("i", "j", "k", "stage")),
            block_size=sm.params.block_size,
            stages=sm.params.stages,
            threshold=sm.params.threshold,
            params=sm.params.ccc,
            backend=sm.params.backend,
            out=sm.output[0],
            null_max=sm.params.null_max,
        )


run_rule(snakemake, job)
