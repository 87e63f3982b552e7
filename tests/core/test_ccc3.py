"""ccc3 (CoMet 3-way CCC) as masked plane products: every triple equal to brute force, bit for bit."""

import itertools
import math

import numpy as np
import pytest
from ccc3ref import reference, run_jobs
from cpu_backends import CPU_BACKEND_PARAMS
from genodata import random_genotypes
from reference import ccc3_triple

from genotile.core import ccc3
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.errors import GenotileError
from genotile.triples.tile import job_triples


@pytest.fixture(scope="module")
def data():
    # SNP vectors (rows) x samples: 70 samples (not a multiple of 64), 10% missing, corner cases
    # planted (monomorphic SNPs, an all-missing SNP, an all-missing sample, a duplicate)
    missing = np.ascontiguousarray(random_genotypes(70, 23, p_missing=0.1, seed=11).T)
    complete = np.ascontiguousarray(random_genotypes(70, 19, p_missing=0.0, seed=12, special=False).T)
    return {"missing": (missing, reference(missing)), "complete": (complete, reference(complete))}


@pytest.mark.parametrize("kind", ["missing", "complete"])
@pytest.mark.parametrize("backend", CPU_BACKEND_PARAMS)
@pytest.mark.parametrize(("block_size", "stages"), [(100, 1), (7, 1), (5, 3), (6, 4)])
def test_every_triple_equals_brute_force(data, kind, backend, block_size, stages):
    g, ref = data[kind]
    found, layout = run_jobs(g, block_size=block_size, stages=stages, backend=backend)
    assert layout.complete is (kind == "complete")
    assert found.keys() == ref.keys()
    bad = [k for k in ref if found[k] != ref[k]]  # the same IEEE operations in the same order
    assert not bad, (bad[:3], [found[k] for k in bad[:3]], [ref[k] for k in bad[:3]])


def test_threshold_keeps_triples_with_any_entry_at_least(data):
    g, full = data["missing"]
    threshold = float(np.quantile([max(v) for v in full.values()], 0.8))  # about a fifth pass
    ref = reference(g, threshold=threshold)
    assert 0 < len(ref) < len(full)
    found, _ = run_jobs(g, block_size=6, stages=2, threshold=threshold)
    assert found == ref


def test_parameters_reach_the_epilogue(data):
    g, _ = data["missing"]
    found, _ = run_jobs(g, block_size=9, stages=1, params=ccc3.Params(3.0, 0.5))
    assert found == reference(g, multiplier=3.0, param=0.5)


def test_tallies_follow_the_definition():
    # r(a,b,c) from the 8 counts, on one random triple, against the brute-force tallies
    rng = np.random.default_rng(2)
    g = rng.integers(0, 3, size=(3, 200)).astype(np.uint8)
    g[rng.random(g.shape) < 0.2] = 255
    layout = genotype_layout(g, "genotype_t")
    planes = genotype_planes(g, layout)
    masked = ccc3.mask_block(planes[:1], planes[1:2], layout.words)
    from genotile.backends.cpu import numpy_popcount

    counts = numpy_popcount.count_matrices(masked, planes[2:3], ccc3.count_terms(layout))
    r = ccc3.tallies(counts)
    ref = ccc3_triple(*g)
    assert {k: int(v[0, 0]) for k, v in r.items()} == ref["r"]
    assert 8 * int(counts["t"][0, 0]) == ref["c_ijk"]


def test_axes_follow_sorted_ids():
    values = np.arange(8, dtype=np.float64)[None, :].repeat(6, axis=0)  # value = 4a + 2b + c in (i, j, k) bits
    perms = list(itertools.permutations((10, 20, 30)))
    ids, out = ccc3.to_input_order(np.array(perms), values)
    assert (ids == [10, 20, 30]).all()
    for row, p in enumerate(perms):
        for dst, bits in enumerate(itertools.product((0, 1), repeat=3)):
            # sorted place q holds id 10 * (q + 1), which was axis p.index(10 * (q + 1)) of the computation
            src = sum(bits[q] << (2 - p.index(10 * (q + 1))) for q in range(3))
            assert out[row, dst] == src


def test_plan_counts_jobs_and_stages():
    plan = ccc3.Plan3(10, 4, 1, 3)  # 3 blocks: 10 block triples x 3 stages
    assert len(plan.block_triples()) == 10 and len(plan.jobs()) == 30
    assert [list(plan.stage_rows(2, s)) for s in range(3)] == [[], [0], [1]]  # last block: 2 rows
    assert sum(job_triples(plan, *job) for job in plan.jobs()) == math.comb(10, 3) == plan.n_triples
    assert "10 block triple(s) (I <= J <= K) x 3 stage(s) = 30 triple job(s), 120 unique triples" in plan.describe()
    with pytest.raises(GenotileError, match="stages"):
        ccc3.Plan3(10, 4, 1, 0)


def test_null_threshold_refused_beyond_2000_vectors():
    ccc3.check_null_threshold(2000, None)
    ccc3.check_null_threshold(5000, 0.9)
    with pytest.raises(GenotileError, match=r"2,001 vectors.*allowed up to 2,000 vectors"):
        ccc3.check_null_threshold(2001, None)
    ccc3.check_null_threshold(5000, None, max_vectors=5000)
    with pytest.raises(GenotileError, match=r"allowed up to 10 vectors \(ccc3: null_threshold_max\)"):
        ccc3.check_null_threshold(11, None, max_vectors=10)


def test_genotile_plan_for_ccc3(capsys):
    from genotile.cli import main

    assert (
        main(
            [
                "plan",
                "--metric",
                "ccc3",
                "--vectors",
                "10000",
                "--fields",
                "2000",
                "--block-size",
                "4096",
                "--stages",
                "2",
                "--density",
                "1e-6",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "20 triple jobs (10 block triples I <= J <= K x 2 stages); 166,616,670,000 unique triples" in out
    assert "27 plane products a triple" in out and "1.67e+05 passing triples" in out
    # a null threshold (every triple passing) past ccc3's null_threshold_max is refused at the plan;
    # the workflow's default threshold (0.3) is planned
    assert main(["plan", "--metric", "ccc3", "--vectors", "2001", "--fields", "10", "--threshold", "null"]) == 1
    assert "allowed up to 2,000 vectors" in capsys.readouterr().err
    assert main(["plan", "--metric", "ccc3", "--vectors", "2001", "--fields", "10"]) == 0
