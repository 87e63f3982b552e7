"""ccc3 test helpers: a genotype_t store of SNP vectors, every job of a plan run, and the brute-force triples."""

import itertools
import math

import numpy as np
from reference import ccc3_triple

from genotile.core import ccc3
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.triples.tile import compute_triples, job_triples


def store(g_vectors: np.ndarray, seed: int):
    """(planes in permuted order, layout, perm) of SNP vectors (rows) as the genotype_t store."""
    layout = genotype_layout(g_vectors, "genotype_t")
    perm = np.random.default_rng(seed).permutation(g_vectors.shape[0])
    return genotype_planes(g_vectors[perm], layout), layout, perm


def run_jobs(g_vectors, *, block_size, stages, threshold=None, backend="numpy", seed=1, params=None):
    """{(a, b, c): 8 values} over every job of the plan, and the triples each job claimed."""
    planes, layout, perm = store(g_vectors, seed)
    plan = ccc3.Plan3(g_vectors.shape[0], block_size, seed, stages)
    params = params or ccc3.Params()
    found, computed = {}, 0
    for job in plan.jobs():
        arrays, meta = compute_triples(planes, layout, perm, plan, params, *job, threshold=threshold, backend=backend)
        assert meta["triples_computed"] == job_triples(plan, *job)
        computed += meta["triples_computed"]
        assert np.all((arrays["a"] < arrays["b"]) & (arrays["b"] < arrays["c"]))
        for n, key in enumerate(zip(arrays["a"].tolist(), arrays["b"].tolist(), arrays["c"].tolist(), strict=True)):
            assert key not in found, f"triple {key} written twice"
            found[key] = tuple(float(arrays[col][n]) for col in ccc3.COLUMNS)
    assert computed == math.comb(g_vectors.shape[0], 3)
    return found, layout


def reference(g_vectors, threshold=None, **params) -> dict:
    out = {}
    for a, b, c in itertools.combinations(range(g_vectors.shape[0]), 3):
        ref = ccc3_triple(g_vectors[a], g_vectors[b], g_vectors[c], **params)
        values = tuple(ref[col] for col in ccc3.COLUMNS)
        if threshold is None or any(v >= threshold for v in values):
            out[a, b, c] = values
    return out
