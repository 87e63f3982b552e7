import json

from genotile import report
from genotile.runtime.rule import run_rule


def clusters(sm):
    with open(sm.input.manifest) as fh:
        ids = json.load(fh)["ids"]
    report.clusters(sm.input.pairs, ids, sm.output[0])


run_rule(snakemake, clusters)
