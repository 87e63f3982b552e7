"""Relatedness outputs of king: KING degrees, and the unrelated set against brute force (small
graphs) and against `plink2 --king-cutoff` on simulated pedigrees (skips without plink2)."""

import gzip
import itertools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from genodata import MISSING, vcf_text

from genotile import pipeline
from genotile.core.metrics import get_metric
from genotile.io import peer_formats
from genotile.io.planfile import read_plan
from genotile.pairs import peers, relatedness


def test_degrees_at_kings_cut_offs():
    kinship = np.array([0.5, 0.3541, 0.354, 0.2, 0.177, 0.1769, 0.0884, 0.0883, 0.0442, 0.0441, -0.3, -np.inf, np.nan])
    assert relatedness.degree(kinship).tolist() == [
        "duplicate/MZ",
        "duplicate/MZ",
        "1st",
        "1st",
        "1st",
        "2nd",
        "2nd",
        "3rd",
        "3rd",
        "unrelated",
        "unrelated",
        "unrelated",
        "unknown",
    ]


def random_graph(rng, n: int, p: float):
    """All pairs of n samples with kinship 0.3 (related) with probability p, else 0.01."""
    a, b = np.triu_indices(n, 1)
    kinship = np.where(rng.random(a.size) < p, 0.3, 0.01)
    return a, b, kinship


def related(a, b, kinship, cutoff):
    return {(int(i), int(j)) for i, j, k in zip(a, b, kinship, strict=True) if k > cutoff}


def assert_independent_and_maximal(keep, edges):
    kept = set(np.flatnonzero(keep).tolist())
    assert not any(i in kept and j in kept for i, j in edges), "two kept samples are related"
    for v in set(range(keep.size)) - kept:
        assert any((min(v, w), max(v, w)) in edges for w in kept), f"sample {v} could be added"


def brute_force_maximum(n: int, edges) -> int:
    for size in range(n, 0, -1):
        for subset in itertools.combinations(range(n), size):
            chosen = set(subset)
            if not any(i in chosen and j in chosen for i, j in edges):
                return size
    return 0


@pytest.mark.parametrize("seed", range(40))
def test_unrelated_set_is_maximum_on_small_graphs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    a, b, kinship = random_graph(rng, n, float(rng.uniform(0.1, 0.7)))
    edges = related(a, b, kinship, 0.1)
    keep = relatedness.unrelated_set(n, a, b, kinship, 0.1)
    assert_independent_and_maximal(keep, edges)
    assert keep.sum() == brute_force_maximum(n, edges)
    theirs = relatedness.plink2_unrelated_set(n, a, b, kinship, 0.1)
    assert keep.sum() >= theirs.sum()
    if keep.sum() == theirs.sum():  # as large: PLINK 2's own samples, not another set of that size
        assert np.array_equal(keep, theirs)


@pytest.mark.parametrize("seed", range(20))
def test_greedy_fallback_is_maximal_and_never_below_plink2(seed, monkeypatch):
    """Groups too large for the exact search (EXACT_MAX 0 here) take the better greedy."""
    monkeypatch.setattr(relatedness, "EXACT_MAX", 0)
    rng = np.random.default_rng(100 + seed)
    n = 60
    a, b, kinship = random_graph(rng, n, float(rng.uniform(0.02, 0.2)))
    keep = relatedness.unrelated_set(n, a, b, kinship, 0.1)
    assert_independent_and_maximal(keep, related(a, b, kinship, 0.1))
    assert keep.sum() >= relatedness.plink2_unrelated_set(n, a, b, kinship, 0.1).sum()


def test_between_sets_of_one_size_plink2s_is_kept():
    """The exact search finds {0, 1, 5}; PLINK 2's greedy {3, 4, 5}, as large: its samples are kept
    (issue 28: the lists were another set of plink2's size, siblings kept for parents)."""
    relatives = [{2, 3, 4}, {3, 4}, {0, 5}, {0, 1}, {0, 1}, {2}]
    group = list(range(6))
    assert relatedness.exact_max_unrelated(group, relatives) == {0, 1, 5}
    assert relatedness.plink2_prune(group, relatives) == {3, 4, 5}
    a = np.array([i for i, r in enumerate(relatives) for j in r if i < j])
    b = np.array([j for i, r in enumerate(relatives) for j in r if i < j])
    keep = relatedness.unrelated_set(6, a, b, np.full(a.size, 0.25), 0.0884)
    assert np.flatnonzero(keep).tolist() == [3, 4, 5]


def test_exact_search_gives_up_past_its_steps():
    rng = np.random.default_rng(5)
    a, b, kinship = random_graph(rng, 40, 0.3)
    relatives = relatedness.related_lists(40, a, b, kinship, 0.1)
    group = list(range(40))
    assert relatedness.exact_max_unrelated(group, relatives, steps=3) is None
    assert relatedness.exact_max_unrelated(group, relatives) is not None


def test_plink2_greedy_drops_the_partner_of_a_lone_relative():
    # path 0 - 1 - 2 - 3: sample 0 has one relative, so 1 goes; then 3 (the partner of 2) goes
    relatives = [{1}, {0, 2}, {1, 3}, {2}]
    assert relatedness.plink2_prune([0, 1, 2, 3], relatives) == {0, 2}
    # a triangle: every sample has 2 relatives, so the lowest index goes; then 1 has one
    # relative left, and its partner 2 goes
    assert relatedness.plink2_prune([0, 1, 2], [{1, 2}, {0, 2}, {0, 1}]) == {1}


def test_nan_and_inf_kinship_are_unrelated():
    a, b = np.array([0, 0, 1]), np.array([1, 2, 2])
    keep = relatedness.unrelated_set(3, a, b, np.array([np.nan, -np.inf, 0.5]), 0.0884)
    assert keep.tolist() == [True, True, False]


# -- against plink2 on pedigrees ----------------------------------------------------------


def pedigree_genotypes(rng, n_snps: int, n_families: int) -> np.ndarray:
    """(samples, SNPs) ALT counts of three-generation families (founders, children, spouses,
    grandchildren; unlinked SNPs) and unrelated samples, shuffled, 2% of calls missing."""
    freq = rng.uniform(0.05, 0.95, n_snps)
    cols = np.arange(n_snps)

    def founder():
        return (rng.random((2, n_snps)) < freq).astype(np.uint8)

    def child(p, q):
        return np.stack([p[rng.integers(0, 2, n_snps), cols], q[rng.integers(0, 2, n_snps), cols]])

    people = []
    for _ in range(n_families):
        parents = [founder(), founder()]
        kids = [child(*parents) for _ in range(int(rng.integers(2, 5)))]
        spouses = [founder() for _ in kids]
        grandkids = [child(k, s) for k, s in zip(kids, spouses, strict=True) for _ in range(int(rng.integers(1, 4)))]
        people += parents + kids + spouses + grandkids
    people += [founder() for _ in range(n_families)]
    g = np.array([people[i].sum(axis=0) for i in rng.permutation(len(people))], dtype=np.uint8)
    g[rng.random(g.shape) < 0.02] = MISSING
    return g


@pytest.fixture(scope="module")
def pedigree_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("pedigree")
    g = pedigree_genotypes(np.random.default_rng(0), 3000, 8)
    vcf = root / "p.vcf"
    vcf.write_text(vcf_text(g, seed=1))
    pipeline.run_all(vcf, root / "g", ["king"], block_size=50, thresholds={"king": 0.0442})
    return root, vcf, [f"s{i}" for i in range(g.shape[0])]


def genotile_king(root: Path, names, king_cutoff=None) -> Path:
    mdir = root / "g" / "king"
    tiles = sorted((mdir / "pairs").glob("tile_*.npz"))
    manifest = root / "g" / "store" / "genotype" / "manifest.json"
    peers.write_outputs(tiles, manifest, "king", [mdir / n for n in names], king_cutoff=king_cutoff)
    return mdir


def plink2_king_cutoff(vcf: Path, cutoff: float, out: Path) -> list[str]:
    if shutil.which("plink2") is None:
        pytest.skip("plink2 is not installed (Debian: apt-get install -y plink2)")
    cmd = ["plink2", "--vcf", str(vcf), "--vcf-half-call", "m", "--king-cutoff", str(cutoff), "--threads", "1"]
    subprocess.run([*cmd, "--out", str(out)], check=True, capture_output=True)
    return Path(f"{out}.king.cutoff.in.id").read_text().splitlines()[1:]


@pytest.mark.peers  # needs plink2 / plink1.9
def test_unrelated_set_against_plink2(pedigree_run, tmp_path):
    """Our port of PLINK 2's greedy keeps exactly its samples (so `unrelated_set`, which takes
    it as a candidate, never keeps fewer); the set is independent, maximal, plink2's own where as
    large, and larger than PLINK 2's on these pedigrees at some cut-off."""
    root, vcf, ids = pedigree_run
    mdir = root / "g" / "king"
    tiles = sorted((mdir / "pairs").glob("tile_*.npz"))
    plan = read_plan(root / "g" / "store" / "genotype" / "plan.json")
    pairs = peers.passing_pairs(tiles, plan, get_metric("king"))
    sizes = []
    for cutoff in (0.0442, 0.0884, 0.177):
        theirs = plink2_king_cutoff(vcf, cutoff, tmp_path / f"p{cutoff}")
        reference = relatedness.plink2_unrelated_set(len(ids), pairs["a"], pairs["b"], pairs["kinship"], cutoff)
        assert [ids[i] for i in np.flatnonzero(reference)] == theirs
        keep = relatedness.unrelated_set(len(ids), pairs["a"], pairs["b"], pairs["kinship"], cutoff)
        assert_independent_and_maximal(keep, related(pairs["a"], pairs["b"], pairs["kinship"], cutoff))
        assert keep.sum() >= len(theirs)
        if keep.sum() == len(theirs):
            assert [ids[i] for i in np.flatnonzero(keep)] == theirs
        sizes.append((int(keep.sum()), len(theirs)))
    assert any(ours > theirs for ours, theirs in sizes), sizes


@pytest.mark.peers  # needs plink2 / plink1.9
def test_king_cutoff_files_in_plink2_form(pedigree_run, tmp_path):
    """The .in.id / .out.id: written for PLINK 2's own set they are its bytes; ours partition the samples."""
    root, vcf, ids = pedigree_run
    theirs = set(plink2_king_cutoff(vcf, 0.0884, tmp_path / "p"))
    keep = np.array([i in theirs for i in ids])
    peer_formats.write_king_cutoff_ids(tmp_path / "in.id", tmp_path / "out.id", ids, keep)
    for kind in ("in", "out"):
        assert (tmp_path / f"{kind}.id").read_bytes() == (tmp_path / f"p.king.cutoff.{kind}.id").read_bytes()
    mdir = genotile_king(root, list(peer_formats.KING_CUTOFF_FILES), king_cutoff=0.0884)
    kept, dropped = (
        (mdir / name).read_text().splitlines() for name in ("king.unrelated.in.id", "king.unrelated.out.id")
    )
    assert kept[0] == dropped[0] == "#IID"
    assert sorted(kept[1:] + dropped[1:]) == sorted(ids) and len(kept) - 1 > len(theirs)


def test_degrees_file(pedigree_run):
    root, _vcf, _ids = pedigree_run
    mdir = genotile_king(root, ["degrees.tsv.gz"])
    with gzip.open(mdir / "pairs.tsv.gz", "rt") as fh:
        pairs = [line.rstrip("\n").split("\t") for line in fh]
    with gzip.open(mdir / "degrees.tsv.gz", "rt") as fh:
        degrees = [line.rstrip("\n").split("\t") for line in fh]
    assert degrees[0] == ["id1", "id2", "kinship", "degree", "ibs0", "relationship"]
    assert [row[:3] for row in degrees[1:]] == [[p[0], p[1], p[5]] for p in pairs[1:]]
    expected = relatedness.degree(np.array([float(p[5]) for p in pairs[1:]]))
    assert [row[3] for row in degrees[1:]] == expected.tolist()
    assert {"1st", "2nd", "3rd"} <= set(expected.tolist())  # the pedigrees reach each degree
    # the types refine the degrees: 1st splits into PO and FS, the others keep their names
    types = [row[5] for row in degrees[1:]]
    assert {t for t, d in zip(types, expected, strict=True) if d == "1st"} == {"PO", "FS"}
    assert all(t == d for t, d in zip(types, expected, strict=True) if d != "1st")
