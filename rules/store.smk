# The store of a dataset and encoding, in one job: ingest (read the input, keep the informative
# fields), plan (checkpoint: blocks and tiles) and pack (bit planes in permuted order). One job,
# not three: each would pay a process start and its imports, and the codes would be written to
# disk for the next job to read back (store/stage.store).


checkpoint store:
    input:
        data=dataset_input,
        # query mode: the FILE compared against, or each file of a list (none for all pairs; store/query.py)
        against=dataset_against,
        fileset=dataset_fileset,
        option_files=ingest_option_files,
        # content of the input and option files, whatever their mtimes (rules/common.smk)
        sources=dataset_sources,
    output:
        # plan.json first: a cluster job whose params read the plan (tile) must have the
        # checkpoint's first output among its inputs (Snakemake checks it on the node)
        plan="results/{dataset}/store/{encoding}/plan.json",
        perm="results/{dataset}/store/{encoding}/perm.npy",
        planes="results/{dataset}/store/{encoding}/planes.npy",
        manifest="results/{dataset}/store/{encoding}/manifest.json",
        ingest="results/{dataset}/ingest/{encoding}.json",
    log:
        "logs/{dataset}/store.{encoding}.log",
    benchmark:
        "benchmarks/{dataset}/store.{encoding}.tsv"
    conda:
        # the tile jobs' env (a superset of the CPU rules'): the job may compute tiles (config
        # tiles_in_store); one env whatever the host, so that no rerun follows a change of host
        tile_env()
    resources:
        # a GPU where the job computes its tiles itself (config tiles_in_store, pairs/early.py)
        gpu=store_gpus,
    params:
        options=ingest_options,
        # identical vectors computed once (genotile.store.duplicates; not for genotype_t)
        collapse=store_collapse,
        block_size=config["block_size"],
        seed=config["seed"],
        # what `block_size: auto` sizes blocks by (none of it reruns a store of a fixed size)
        auto=auto_block_params,
    script:
        "../scripts/store.py"
