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
        threshold=lambda wildcards: config["thresholds"].get("ccc3"),
        block_size=ccc3_settings()[0],
        stages=ccc3_settings()[1],
        null_max=ccc3_null_max(),
        backend=config["backend"],
        ccc=dict(config["ccc"]),
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
        block_size=ccc3_settings()[0],
        stages=ccc3_settings()[1],
        ccc=dict(config["ccc"]),
        # recorded in summary.json (genotile.settings.summary_config)
        config=summary_config,
    script:
        "../scripts/triples_merge.py"
