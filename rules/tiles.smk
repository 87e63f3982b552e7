# The store's files are `ancient`: a store made again reruns a tile through its `store` param (the
# key of the store part the tile is computed from), so that a store appended to (store/append.py)
# reruns only the tiles of the new part, not the earlier ones, whose key it keeps.
rule tile:
    input:
        planes=ancient(store_file("planes.npy")),
        manifest=ancient(store_file("manifest.json")),
        perm=ancient(store_file("perm.npy")),
        # params.dense reads the plan; a job run elsewhere (SLURM) evaluates params again, which
        # Snakemake allows only when the checkpoint's output is an input of the rule
        plan=ancient(store_file("plan.json")),
    output:
        "results/{dataset}/{metric}/pairs/tile_{i}_{j}.npz",
    log:
        "logs/{dataset}/{metric}/tile_{i}_{j}.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/tile_{i}_{j}.tsv"
    # on a cluster, config `tiles_per_job` tiles form one job (tile_group; locally, ignored)
    group:
        tile_group
    conda:
        tile_env()
    threads: config["tile_threads"]
    resources:
        # one GPU per tile job where one exists or config `tile_gpu` asks (rules/common.smk)
        gpu=tile_gpus,
    # the tile stage's keyword arguments (genotile.settings.tile_settings), each its own param
    params:
        store=tile_store,
        threshold=tile_setting("threshold"),
        dense=tile_setting("dense"),
        backend=tile_setting("backend"),
        metric_params=tile_setting("metric_params"),
    script:
        "../scripts/tile.py"
