from pathlib import Path

from genotile.runtime.gpu_slots import slot_for_backend
from genotile.runtime.rule import run_rule
from genotile.screen import stage


def tile(sm):
    # Pin this job to one GPU before anything initialises CUDA.
    with slot_for_backend(sm.params.backend):
        stage.tile(
            Path(sm.input.manifest).parent,
            int(sm.wildcards.i),
            int(sm.wildcards.j),
            backend=sm.params.backend,
            tile_out=sm.output[0],
        )


run_rule(snakemake, tile)
