checkpoint plan:
    input:
        manifest="results/{dataset}/ingest/{encoding}.json",
    output:
        plan="results/{dataset}/store/{encoding}/plan.json",
        perm="results/{dataset}/store/{encoding}/perm.npy",
    log:
        "logs/{dataset}/plan.{encoding}.log",
    # light: runs on the login node, not as a cluster job
    localrule: True
    conda:
        "../envs/cpu.yaml"
    params:
        block_size=config["block_size"],
        seed=config["seed"],
        # what `block_size: auto` sizes blocks by (none of it reruns a plan of a fixed size)
        auto=auto_block_params,
    script:
        "../scripts/plan.py"


rule pack:
    input:
        codes="results/{dataset}/ingest/{encoding}.codes.npy",
        manifest="results/{dataset}/ingest/{encoding}.json",
        plan="results/{dataset}/store/{encoding}/plan.json",
        perm="results/{dataset}/store/{encoding}/perm.npy",
    output:
        planes="results/{dataset}/store/{encoding}/planes.npy",
        manifest="results/{dataset}/store/{encoding}/manifest.json",
    log:
        "logs/{dataset}/pack.{encoding}.log",
    benchmark:
        "benchmarks/{dataset}/pack.{encoding}.tsv"
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/pack.py"
