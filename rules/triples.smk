# ccc3 (CoMet's 3-way CCC): one job per block triple I <= J <= K and stage of the middle block,
# over the genotype_t store that ccc2 reads; then one merge into triples.tsv.gz and summary.json.


rule triples:
    input:
        planes=store_file("planes.npy", metric="ccc3"),
        manifest=store_file("manifest.json", metric="ccc3"),
        perm=store_file("perm.npy", metric="ccc3"),
        plan=store_file("plan.json", metric="ccc3"),
    output:
        "results/{dataset}/ccc3/triples/triples_{i}_{j}_{k}_{stage}.npz",
    log:
        "logs/{dataset}/ccc3/tile_{i}_{j}_{k}_{stage}.log",
    benchmark:
        "benchmarks/{dataset}/ccc3/tile_{i}_{j}_{k}_{stage}.tsv"
    wildcard_constraints:
        k=r"\d+",
        stage=r"\d+",
    # on a cluster, config `tiles_per_job` jobs form one (triple_group; locally, ignored)
    group:
        triple_group
    conda:
        tile_env()
    threads: config["tile_threads"]
    resources:
        gpu=tile_gpus,
    params:
        # genotile.settings.triple_settings: a ccc3 job's settings, built once
        threshold=TRIPLE_SETTINGS["threshold"],
        block_size=TRIPLE_SETTINGS["block_size"],
        stages=TRIPLE_SETTINGS["stages"],
        null_max=TRIPLE_SETTINGS["null_max"],
        backend=TRIPLE_SETTINGS["backend"],
        ccc=TRIPLE_SETTINGS["params"],
    script:
        "../scripts/triples.py"


rule triples_merge:
    input:
        triples=lambda wildcards: ccc3_files(wildcards.dataset),
        manifest=store_file("manifest.json", metric="ccc3"),
    output:
        triples="results/{dataset}/ccc3/triples.tsv.gz",
        summary="results/{dataset}/ccc3/summary.json",
    log:
        "logs/{dataset}/ccc3/merge.log",
    benchmark:
        "benchmarks/{dataset}/ccc3/merge.tsv"
    conda:
        "../envs/cpu.yaml"
    params:
        block_size=TRIPLE_SETTINGS["block_size"],
        stages=TRIPLE_SETTINGS["stages"],
        ccc=TRIPLE_SETTINGS["params"],
        # recorded in summary.json (genotile.settings.summary_config)
        config=summary_config,
    script:
        "../scripts/triples_merge.py"
