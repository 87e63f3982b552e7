import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))
from genotile.runtime import report  # noqa: E402
from genotile.runtime.rule import run_rule  # noqa: E402


def clusters(sm):
    with open(sm.input.manifest) as fh:
        ids = json.load(fh)["ids"]
    report.clusters(sm.input.pairs, ids, sm.output[0])


run_rule(snakemake, clusters)
