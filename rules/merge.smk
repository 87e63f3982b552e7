rule matrix:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
    output:
        "results/{dataset}/{metric}/matrix.tsv",
    log:
        "logs/{dataset}/{metric}/matrix.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/matrix.tsv"
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/matrix.py"


rule merge:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
        matrix=matrix_if_dense,
    output:
        pairs="results/{dataset}/{metric}/pairs.tsv.gz",
        summary="results/{dataset}/{metric}/summary.json",
        histogram="results/{dataset}/{metric}/histogram.tsv",
    log:
        "logs/{dataset}/{metric}/merge.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/merge.tsv"
    conda:
        "../envs/cpu.yaml"
    params:
        threshold=threshold_of,
        config=lambda wildcards: {
            "dataset": wildcards.dataset,
            # the dataset's own settings, not its metric list: adding a metric reruns no other merge
            **{
                k: v
                for k, v in config["datasets"][wildcards.dataset].items()
                if k != "metrics"
            },
            "threshold": config["thresholds"].get(wildcards.metric),
            "params": metric_params(wildcards),
            **{k: config[k] for k in ("block_size", "dense_max", "seed", "backend")},
        },
    script:
        "../scripts/merge.py"
