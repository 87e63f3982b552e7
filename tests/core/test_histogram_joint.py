"""king's joint histogram (kinship x IBS0 / NSNP over every unique pair, histogram.JointBins):
the same counts whatever the CPU backend, block size and seed, equal to a pair-by-pair reference;
kinship_ibs0.tsv written by the merge; the GPU's in tests/backends/test_gpu_tile.py."""

import math

import numpy as np
import pytest

from genotile import backends
from genotile.core import histogram
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.pairs.merge import write_joint
from genotile.pairs.tile import compute_tile


def genotypes(n: int, fields: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, size=(n, fields)).astype(np.int8)
    codes[rng.random(codes.shape) < 0.15] = -1
    codes[1] = codes[0]  # a duplicate pair (kinship 0.5, IBS0 0)
    codes[2, :] = -1  # no SNP called: nan kinship and 0 / 0
    return codes


def reference(metric, codes) -> np.ndarray:
    """Bin each pair's values (one tile of every pair) one at a time in Python floats."""
    layout = genotype_layout(codes, metric.encoding)
    planes = genotype_planes(codes, layout)
    n = codes.shape[0]
    plan = Plan(n, n, 0)
    arrays, _ = compute_tile(planes, layout, np.arange(n), plan, metric, 0, 0, None, False, "numpy")
    j = metric.joint
    counts = np.zeros(j.shape, np.int64)

    def index(v: float, low: float, high: float, bins: int) -> int:
        if math.isnan(v):
            return bins + 2
        if v < low:
            return bins
        if v > high:
            return bins + 1
        return min(math.floor((v - low) * (bins / (high - low))), bins - 1)

    assert arrays["a"].size == n * (n - 1) // 2  # no threshold: every pair
    for d, z, k in zip(arrays["nsnp"].tolist(), arrays["ibs0"].tolist(), arrays["kinship"].tolist(), strict=True):
        r = z / d if d else (math.nan if z == 0 else math.inf)
        counts[index(k, *j.bins), index(r, *j.ratio_bins)] += 1
    return counts.ravel()


CPU = [b for b in ("numpy", "numba") if b in backends.available()]


@pytest.mark.parametrize("backend", CPU)
@pytest.mark.parametrize(("block", "seed"), [(5, 1), (8, 2), (40, 3)])
def test_joint_histogram_is_the_same_for_every_backend_block_and_seed(backend, block, seed):
    metric = get_metric("king")
    codes = genotypes(23, 90, 7)
    want = reference(metric, codes)
    assert want.sum() == 23 * 22 // 2
    layout = genotype_layout(codes, metric.encoding)
    plan = Plan(23, block, seed)
    perm = plan.permutation()
    planes = genotype_planes(codes, layout)[perm]
    total: dict = {}
    for bi, bj in plan.tiles():
        arrays, _ = compute_tile(planes, layout, perm, plan, metric, bi, bj, 0.1, False, backend)
        histogram.add(total, arrays)
    got = total["joint_kinship_ibs0"]
    assert got.dtype == np.int64 and got.tobytes() == want.tobytes()
    # the 1-D kinship histogram is the joint one's row sums (bins of 0.01 = 2 of 0.005)
    rows = got.reshape(metric.joint.shape).sum(axis=1)
    assert rows[-3:].tolist() == total["hist_kinship"][-3:].tolist()
    assert rows[:-3].tolist() == total["hist_kinship"][:-3].reshape(-1, 2).sum(axis=1).tolist()


def test_joint_file_rows_add_up_and_header_only_without_counts(tmp_path):
    metric = get_metric("king")
    j = metric.joint
    counts = np.arange(j.shape[0] * j.shape[1], dtype=np.int64)
    out = tmp_path / "kinship_ibs0.tsv"
    write_joint(out, metric, {"joint_kinship_ibs0": counts}, int(counts.sum()))
    lines = out.read_text().splitlines()
    assert lines[0] == "kinship_low\tkinship_high\tibs0_nsnp_low\tibs0_nsnp_high\tcount"
    assert len(lines) == 1 + counts.size
    assert sum(int(x.split("\t")[4]) for x in lines[1:]) == counts.sum()
    assert lines[1] == "-1.0\t-0.99\t0.0\t0.005\t0"
    write_joint(out, metric, {}, 10)  # tiles without it: the header only
    assert out.read_text().splitlines() == lines[:1]
