from genotile.pairs import clusters
from genotile.runtime.rule import run_rule


def write_clusters(sm):
    clusters.clusters_of_tiles(list(sm.input.tiles), sm.input.manifest, sm.output[0])


run_rule(snakemake, write_clusters)
