rule tile:
    input:
        planes=store_file("planes.npy"),
        manifest=store_file("manifest.json"),
        perm=store_file("perm.npy"),
        # params.dense reads the plan; a job run elsewhere (SLURM) evaluates params again, which
        # Snakemake allows only when the checkpoint's output is an input of the rule
        plan=store_file("plan.json"),
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
        threshold=tile_setting("threshold"),
        dense=tile_setting("dense"),
        backend=tile_setting("backend"),
        metric_params=tile_setting("metric_params"),
    script:
        "../scripts/tile.py"
