rule ingest:
    input:
        data=dataset_input,
    output:
        codes="results/{dataset}/ingest/{encoding}.codes.npy",
        manifest="results/{dataset}/ingest/{encoding}.json",
    log:
        "logs/{dataset}/ingest.{encoding}.log",
    benchmark:
        "benchmarks/{dataset}/ingest.{encoding}.tsv"
    conda:
        "../envs/cpu.yaml"
    params:
        options=ingest_options,
    script:
        "../scripts/ingest.py"
