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
        # recorded in summary.json (genotile.settings.summary_config)
        config=summary_config,
    script:
        "../scripts/merge.py"


# -- opt-in outputs of a dataset (`formats:`, `king_degrees:`, `king_cutoff:`), made from the
# tiles by scripts/peer_outputs.py; all_outputs asks for them through peer_files() (common.smk)


rule kin0:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
    output:
        "results/{dataset}/{metric}/plink2.kin0",
    log:
        "logs/{dataset}/{metric}/kin0.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/kin0.tsv"
    wildcard_constraints:
        metric="king",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/peer_outputs.py"


rule mdist:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
    output:
        mdist="results/{dataset}/{metric}/plink.mdist",
        ids="results/{dataset}/{metric}/plink.mdist.id",
    log:
        "logs/{dataset}/{metric}/mdist.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/mdist.tsv"
    wildcard_constraints:
        metric="ibs",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/peer_outputs.py"


rule snp_dists:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
    output:
        "results/{dataset}/{metric}/snp-dists.{form}",
    log:
        "logs/{dataset}/{metric}/snp-dists.{form}.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/snp-dists.{form}.tsv"
    wildcard_constraints:
        metric="snp|hamming",
        form=r"molten\.tsv|csv",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/peer_outputs.py"


rule king_degrees:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
    output:
        "results/{dataset}/{metric}/degrees.tsv.gz",
    log:
        "logs/{dataset}/{metric}/degrees.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/degrees.tsv"
    wildcard_constraints:
        metric="king",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/peer_outputs.py"


rule king_cutoff:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
    output:
        kept="results/{dataset}/{metric}/king.unrelated.in.id",
        removed="results/{dataset}/{metric}/king.unrelated.out.id",
    log:
        "logs/{dataset}/{metric}/king_cutoff.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/king_cutoff.tsv"
    wildcard_constraints:
        metric="king",
    conda:
        "../envs/cpu.yaml"
    params:
        king_cutoff=lambda wildcards: config["datasets"][wildcards.dataset][
            "king_cutoff"
        ],
    script:
        "../scripts/peer_outputs.py"
