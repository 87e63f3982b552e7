# Screening: every sample of a FASTQ against every signature of a FASTA, N a wildcard.
#   screen_ingest (checkpoint: store + tile plan) -> screen_tile (sample block x signature block)
#   -> screen_merge (matches.tsv.gz, summary.json)


include: "screen_common.smk"


checkpoint screen_ingest:
    input:
        samples=lambda wildcards: screen_spec(wildcards)["samples"],
        signatures=lambda wildcards: screen_spec(wildcards)["signatures"],
        # content of both files, whatever their mtimes (rules/common.smk)
        sources=screen_sources,
    output:
        manifest="results/{screen}/screen/store/manifest.json",
        arrays=expand("results/{{screen}}/screen/store/{name}.npy", name=SCREEN_ARRAYS),
    log:
        "logs/{screen}/screen/ingest.log",
    benchmark:
        "benchmarks/{screen}/screen/ingest.tsv"
    conda:
        "../envs/cpu.yaml"
    params:
        sample_block=lambda wildcards: screen_spec(wildcards)["sample_block"],
        signature_block=lambda wildcards: screen_spec(wildcards)["signature_block"],
    script:
        "../scripts/screen_ingest.py"


rule screen_tile:
    input:
        manifest="results/{screen}/screen/store/manifest.json",
        arrays=expand("results/{{screen}}/screen/store/{name}.npy", name=SCREEN_ARRAYS),
    output:
        "results/{screen}/screen/tiles/tile_{i}_{j}.npz",
    log:
        "logs/{screen}/screen/tile_{i}_{j}.log",
    benchmark:
        "benchmarks/{screen}/screen/tile_{i}_{j}.tsv"
    # on a cluster, config `tiles_per_job` tiles form one job (screen_group; locally, ignored)
    group:
        screen_group
    conda:
        tile_env()
    resources:
        # one GPU per tile job where one exists or config `tile_gpu` asks (rules/common.smk)
        gpu=tile_gpus,
    params:
        backend=config["backend"],
    script:
        "../scripts/screen_tile.py"


rule screen_merge:
    input:
        tiles=lambda wildcards: screen_tiles_for(wildcards.screen),
        manifest="results/{screen}/screen/store/manifest.json",
    output:
        matches="results/{screen}/screen/matches.tsv.gz",
        summary="results/{screen}/screen/summary.json",
    log:
        "logs/{screen}/screen/merge.log",
    benchmark:
        "benchmarks/{screen}/screen/merge.tsv"
    conda:
        "../envs/cpu.yaml"
    params:
        min_score=lambda wildcards: screen_spec(wildcards).get("min_score"),
        config=lambda wildcards: {
            "screen": wildcards.screen,
            **screen_spec(wildcards),
            "backend": config["backend"],
        },
    script:
        "../scripts/screen_merge.py"
