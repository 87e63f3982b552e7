import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.runtime.gpu_slots import slot_for_backend  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402
from genotile.screen import steps  # noqa: E402


def tile(sm):
    # Pin this job to one GPU before anything initialises CUDA.
    with slot_for_backend(sm.params.backend):
        steps.tile(
            Path(sm.input.manifest).parent,
            int(sm.wildcards.i),
            int(sm.wildcards.j),
            backend=sm.params.backend,
            tile_out=sm.output[0],
        )


run_rule(snakemake, tile)
