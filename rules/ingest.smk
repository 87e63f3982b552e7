rule ingest:
    input:
        data=dataset_input,
        fileset=dataset_fileset,
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
        # identical vectors computed once (genotile.store.duplicates; not for genotype_t)
        collapse=config["collapse_duplicates"],
    script:
        "../scripts/ingest.py"
