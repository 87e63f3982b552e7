rule ingest:
    input:
        data=dataset_input,
    output:
        codes="results/{dataset}/ingest/{encoding}.codes.npy",
        manifest="results/{dataset}/ingest/{encoding}.json",
    params:
        options=ingest_options,
    log:
        "logs/{dataset}/ingest.{encoding}.log",
    benchmark:
        "benchmarks/{dataset}/ingest.{encoding}.tsv"
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/ingest.py"
