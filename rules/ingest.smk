rule ingest:
    input:
        data=dataset_input,
        option_files=ingest_option_files,
        # content of the input and option files, whatever their mtimes (rules/common.smk)
        sources=dataset_sources,
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
