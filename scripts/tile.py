from genotile.pairs import early
from genotile.runtime.rule import run_rule


def tile(sm):
    i, j = int(sm.wildcards.i), int(sm.wildcards.j)
    # every other param of the tile rule (rules/tiles.smk) is a keyword of pairs/stage.tile, and a tile the
    # store job computed (config tiles_in_store) is adopted only where its record holds them all,
    # with these values (pairs/early.py): then nothing more is imported
    settings = dict(sm.params.items())
    # the key of the store part the tile is computed from: what reruns it (rules/tiles.smk), no
    # setting of the tile; the store a tile was computed from is in its file (meta `store`)
    settings.pop("store")
    if early.adopt(sm.input.manifest, sm.wildcards.metric, i, j, settings, sm.output[0]):
        return
    from genotile import backends
    from genotile.pairs import stage
    from genotile.runtime.gpu_slots import slot_for_backend

    backends.limit_threads(sm.threads)  # the CPU backends use the job's threads, no more
    # Pin this job to one GPU before anything initialises CUDA.
    with slot_for_backend(settings["backend"]):
        stage.tile(
            sm.input.planes,
            sm.input.manifest,
            sm.input.perm,
            sm.wildcards.metric,
            i,
            j,
            tile_out=sm.output[0],
            **settings,
        )


run_rule(snakemake, tile)
