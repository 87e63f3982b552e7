# Helpers of rules/screen.smk (screens: FASTQ samples against FASTA signatures).

SCREEN_ARRAYS = ("seq", "qual", "offsets", "sig_seq", "sig_offsets")


wildcard_constraints:
    screen=r"[A-Za-z0-9_][A-Za-z0-9_.-]*",


def screen_spec(wildcards):
    return config["screens"][wildcards.screen]


def screen_manifest(screen):
    return checkpoints.screen_ingest.get(screen=screen).output.manifest


def screen_tiles_for(screen):
    with open(screen_manifest(screen)) as fh:
        m = json.load(fh)
    return [
        f"results/{screen}/screen/tiles/tile_{i}_{j}.npz"
        for i in range(m["sample_blocks"])
        for j in range(m["signature_blocks"])
    ]


def screen_outputs():
    """Every screen's merged outputs, report pieces and tiles (or its ingest, before the plan exists)."""
    outputs = []
    for screen in config["screens"]:
        outputs += [
            f"results/{screen}/screen/{name}"
            for name in ("matches.tsv.gz", "summary.json")
        ]
        if config["report"]:  # rules/report.smk
            outputs += [
                f"results/{screen}/screen/report/{name}"
                for name in ("screen.png", "hits.tsv")
            ]
        try:
            outputs += screen_tiles_for(screen)
        except IncompleteCheckpointException as e:
            outputs.append(e.targetfile)
    return outputs
