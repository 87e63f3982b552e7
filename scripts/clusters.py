from genotile.pairs import clusters
from genotile.runtime.rule import run_rule


def write_clusters(sm):
    # the tiles of the merge's settings (rules/report.smk params), checked as the merge checks them
    clusters.clusters_of_tiles(list(sm.input.tiles), sm.input.manifest, sm.output[0], config=dict(sm.params.config))


run_rule(snakemake, write_clusters)
