# Every item has the one label key `result`, so that the report lists a subcategory as one
# column (items with different keys get a column each, mostly empty; a second key with two
# values, each on half of the items, becomes a toggle that hides half of them).


# from the tiles (the histogram the merge writes, counted again), so that it runs beside the merge
rule plot_histogram:
    input:
        tiles=tile_files,
        manifest=store_file("manifest.json"),
    output:
        report(
            "results/{dataset}/{metric}/report/histogram.png",
            caption="report/histogram.rst",
            category="{dataset}",
            subcategory="{metric}",
            labels={"result": "histogram over all pairs"},
        ),
    log:
        "logs/{dataset}/{metric}/plot_histogram.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/plot_histogram.tsv"
    # a cluster job, not the login node's: it reads every tile's histograms
    conda:
        "../envs/report.yaml"
    params:
        # the threshold and params the merge records in summary.json, which the tiles must carry
        config=summary_config,
    script:
        "../scripts/plot_histogram.py"


rule plot_heatmap:
    input:
        "results/{dataset}/{metric}/matrix.tsv",
        # after the merge: no plot runs before the metric's outputs are written
        pairs="results/{dataset}/{metric}/pairs.tsv.gz",
    output:
        report(
            "results/{dataset}/{metric}/report/heatmap.png",
            caption="report/heatmap.rst",
            category="{dataset}",
            subcategory="{metric}",
            labels={"result": "clustered heatmap"},
        ),
    log:
        "logs/{dataset}/{metric}/plot_heatmap.log",
    benchmark:
        "benchmarks/{dataset}/{metric}/plot_heatmap.tsv"
    conda:
        "../envs/report.yaml"
    params:
        max_vectors=config["report_heatmap_max"],
    script:
        "../scripts/plot_heatmap.py"


rule plot_king:
    input:
        pairs="results/{dataset}/king/pairs.tsv.gz",
        # every pair's spread, sampled from the store (pairs/sampled.py)
        planes=store_file("planes.npy", "king"),
        manifest=store_file("manifest.json", "king"),
    output:
        report(
            "results/{dataset}/king/report/kinship_ibs0.png",
            caption="report/king.rst",
            category="{dataset}",
            subcategory="king",
            labels={"result": "kinship against IBS0"},
        ),
    log:
        "logs/{dataset}/king/plot_king.log",
    benchmark:
        "benchmarks/{dataset}/king/plot_king.tsv"
    conda:
        "../envs/report.yaml"
    script:
        "../scripts/plot_king.py"


rule clusters:
    input:
        # the passing pairs from the tiles (not pairs.tsv.gz's text), their store and settings
        # checked as the merge checks them (params): the job runs beside the merge
        tiles=snp_tile_files,
        manifest="results/{dataset}/store/nucleotide/manifest.json",
    output:
        report(
            "results/{dataset}/snp/report/clusters.tsv",
            caption="report/clusters.rst",
            category="{dataset}",
            subcategory="snp",
            labels={"result": "clusters within the threshold (TSV table)"},
        ),
    log:
        "logs/{dataset}/snp/clusters.log",
    benchmark:
        "benchmarks/{dataset}/snp/clusters.tsv"
    conda:
        "../envs/report.yaml"
    params:
        # the threshold and params the merge records in summary.json, which the tiles must carry
        config=snp_summary_config,
    script:
        "../scripts/clusters.py"


rule plot_screen:
    input:
        matches="results/{screen}/screen/matches.tsv.gz",
        manifest="results/{screen}/screen/store/manifest.json",
        summary="results/{screen}/screen/summary.json",
    output:
        plot=report(
            "results/{screen}/screen/report/screen.png",
            caption="report/screen.rst",
            category="{screen}",
            subcategory="screen",
            labels={"result": "samples matched per signature"},
        ),
        table=report(
            "results/{screen}/screen/report/hits.tsv",
            caption="report/screen_hits.rst",
            category="{screen}",
            subcategory="screen",
            labels={"result": "samples matched per signature (TSV table)"},
        ),
    log:
        "logs/{screen}/screen/plot_screen.log",
    benchmark:
        "benchmarks/{screen}/screen/plot_screen.tsv"
    conda:
        "../envs/report.yaml"
    params:
        max_vectors=config["report_heatmap_max"],
    script:
        "../scripts/plot_screen.py"


rule run_summary:
    input:
        summaries=summary_files(),
        # one row per screen after the datasets' (none without screens)
        screens=expand("results/{screen}/screen/summary.json", screen=config["screens"]),
    output:
        report(
            "results/run_summary.tsv",
            caption="report/run_summary.rst",
            category="run",
            labels={"result": "run summary (TSV table)"},
        ),
    log:
        "logs/run_summary.log",
    benchmark:
        "benchmarks/run_summary.tsv"
    # light: runs on the login node, not as a cluster job
    localrule: True
    conda:
        "../envs/report.yaml"
    params:
        # each metric's store (its benchmark file's name): the job then imports no numpy
        encodings={name: facts.encoding for name, facts in REGISTRY.items()},
    script:
        "../scripts/run_summary.py"
