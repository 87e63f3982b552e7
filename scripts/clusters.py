import json

from genotile.pairs import clusters
from genotile.runtime.rule import run_rule


def write_clusters(sm):
    with open(sm.input.manifest) as fh:
        ids = json.load(fh)["ids"]
    clusters.clusters(sm.input.pairs, ids, sm.output[0])


run_rule(snakemake, write_clusters)
