"""KING's relationship types (relatedness.relationship: Dup/MZ, PO, FS, 2nd, 3rd, UN) on
simulated pedigrees whose every pair's relationship is known, and their column in
degrees.tsv.gz."""

import gzip
import itertools

import numpy as np
import pytest

from genotile import pipeline
from genotile.core.metrics import get_metric
from genotile.pairs import peers, relatedness


class Pedigree:
    """Haplotypes of simulated people (unlinked SNPs, allele frequencies uniform in
    [0.05, 0.95]: HWE founders, children by Mendelian transmission) and the known type of
    each related pair; every other pair is unrelated."""

    def __init__(self, rng, n_snps: int):
        self.rng, self.freq = rng, rng.uniform(0.05, 0.95, n_snps)
        self.haplotypes: list[np.ndarray] = []
        self.truth: dict[tuple[int, int], str] = {}

    def founder(self) -> int:
        return self._add((self.rng.random((2, self.freq.size)) < self.freq).astype(np.uint8))

    def child(self, p: int, q: int) -> int:
        cols = np.arange(self.freq.size)
        hp, hq = self.haplotypes[p], self.haplotypes[q]
        pick = self.rng.integers(0, 2, (2, self.freq.size))
        return self._add(np.stack([hp[pick[0], cols], hq[pick[1], cols]]))

    def twin(self, p: int) -> int:
        return self._add(self.haplotypes[p].copy())

    def _add(self, h: np.ndarray) -> int:
        self.haplotypes.append(h)
        return len(self.haplotypes) - 1

    def relate(self, i: int, j: int, kind: str) -> None:
        self.truth[(min(i, j), max(i, j))] = kind

    def genotypes(self) -> np.ndarray:
        return np.array([h.sum(axis=0) for h in self.haplotypes], dtype=np.uint8)


def family(ped: Pedigree) -> None:
    """Three generations: grandparents, two full siblings with their spouses, a child of each
    (first cousins), a second child of one sibling by another partner (half siblings), and a
    monozygotic twin of one grandchild. Each pair's type, as KING names it."""
    g1, g2 = ped.founder(), ped.founder()
    a, b = ped.child(g1, g2), ped.child(g1, g2)
    sa, sb, other = ped.founder(), ped.founder(), ped.founder()
    ca, cb, half = ped.child(a, sa), ped.child(b, sb), ped.child(a, other)
    twin = ped.twin(ca)
    parents = [(g1, a), (g1, b), (g2, a), (g2, b), (a, ca), (sa, ca), (a, twin), (sa, twin), (b, cb), (sb, cb)]
    for parent, kid in [*parents, (a, half), (other, half)]:
        ped.relate(parent, kid, "PO")
    ped.relate(a, b, "FS")
    ped.relate(ca, twin, "Dup/MZ")
    for x, y in [(ca, half), (twin, half)]:
        ped.relate(x, y, "2nd")  # half siblings
    for gp, gc in itertools.product((g1, g2), (ca, cb, half, twin)):
        ped.relate(gp, gc, "2nd")  # grandparent - grandchild
    for uncle, kid in [(b, ca), (b, twin), (b, half), (a, cb)]:
        ped.relate(uncle, kid, "2nd")  # avuncular
    for x in (ca, twin, half):
        ped.relate(x, cb, "3rd")  # first cousins: their parents a and b are full siblings
    # the spouses and the other partner are related to their own children only


def king_values(g: np.ndarray):
    """All pairs' KING-robust kinship and IBS0 proportion, counted here with numpy from the
    genotypes (every call present), through king's own epilogue."""
    het = (g == 1).astype(np.int64)
    hom0, hom2 = (g == 0).astype(np.int64), (g == 2).astype(np.int64)
    counts = {
        "nsnp": np.full((len(g), len(g)), g.shape[1], dtype=np.int64),
        "hethet": het @ het.T,
        "ibs0": hom0 @ hom2.T + hom2 @ hom0.T,
        "het_i": np.repeat(het.sum(axis=1)[:, None], len(g), axis=1),
        "het_j": np.repeat(het.sum(axis=1)[None, :], len(g), axis=0),
    }
    values = get_metric("king").epilogue(counts)
    a, b = np.triu_indices(len(g), 1)
    return a, b, values["kinship"][a, b], relatedness.ibs0_proportion(values["ibs0"][a, b], values["nsnp"][a, b])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_types_of_simulated_pedigrees(seed):
    """Every pair of three families and unrelated people typed as simulated: duplicate/MZ,
    PO and FS apart (same kinship, IBS0 0 against about 0.015), 2nd (half siblings,
    grandparents, avuncular), 3rd (first cousins), UN (all others)."""
    ped = Pedigree(np.random.default_rng(seed), 20_000)
    for _ in range(3):
        family(ped)
    for _ in range(4):
        ped.founder()
    a, b, kinship, ibs0 = king_values(ped.genotypes())
    got = relatedness.relationship(kinship, ibs0)
    want = [ped.truth.get((int(i), int(j)), "UN") for i, j in zip(a, b, strict=True)]
    wrong = [
        (int(i), int(j), w, g, k, z) for i, j, w, g, k, z in zip(a, b, want, got, kinship, ibs0, strict=True) if w != g
    ]
    assert not wrong, wrong[:10]
    assert set(want) == set(relatedness.RELATIONSHIPS)  # every type was simulated
    # the IBS0 split is what tells PO from FS: their kinship ranges overlap
    po, fs = np.array(want) == "PO", np.array(want) == "FS"
    assert ibs0[po].max() == 0.0 and ibs0[fs].min() > relatedness.IBS0_PO
    assert relatedness.degree(kinship[po | fs]).tolist() == ["1st"] * int((po | fs).sum())


def test_relationship_at_the_cut_offs():
    kinship = np.array([0.3541, 0.354, 0.354, 0.177, 0.177, 0.1769, 0.0442, 0.0441, 0.2, np.nan, -np.inf])
    ibs0 = np.array([0.0, 0.0, 0.008, 0.0079, 0.008, 0.0, 0.0, 0.0, np.nan, 0.0, 0.1])
    assert relatedness.relationship(kinship, ibs0).tolist() == [
        "Dup/MZ",
        "PO",
        "FS",  # IBS0 at the cut-off is not below it
        "PO",
        "FS",
        "2nd",
        "3rd",
        "UN",
        "unknown",  # 1st degree, but no SNP to tell PO from FS
        "unknown",
        "UN",
    ]
    assert relatedness.relationship([0.25], [0.01], ibs0_po=0.02).tolist() == ["PO"]


def test_degrees_file_types_each_pair(tmp_path):
    """degrees.tsv.gz through the pipeline: `ibs0` is IBS0 / NSNP of pairs.tsv.gz, and the
    relationship column types a simulated family's pairs as simulated."""
    from genodata import vcf_text

    ped = Pedigree(np.random.default_rng(5), 20_000)
    family(ped)
    g = ped.genotypes()
    vcf = tmp_path / "f.vcf"
    vcf.write_text(vcf_text(g, seed=1))
    pipeline.run_all(vcf, tmp_path / "g", ["king"], block_size=8, thresholds={"king": 0.0442})
    mdir = tmp_path / "g" / "king"
    tiles = sorted((mdir / "pairs").glob("tile_*.npz"))
    manifest = tmp_path / "g" / "store" / "genotype" / "manifest.json"
    peers.write_outputs(tiles, manifest, "king", [mdir / "degrees.tsv.gz"])
    with gzip.open(mdir / "pairs.tsv.gz", "rt") as fh:
        pairs = [line.rstrip("\n").split("\t") for line in fh][1:]
    with gzip.open(mdir / "degrees.tsv.gz", "rt") as fh:
        rows = [line.rstrip("\n").split("\t") for line in fh]
    assert rows[0] == ["id1", "id2", "kinship", "degree", "ibs0", "relationship"]
    assert [r[:3] for r in rows[1:]] == [[p[0], p[1], p[5]] for p in pairs]
    assert [float(r[4]) for r in rows[1:]] == pytest.approx([int(p[4]) / int(p[2]) for p in pairs], rel=1e-12)
    index = {f"s{k}": k for k in range(len(g))}
    for r in rows[1:]:
        i, j = sorted((index[r[0]], index[r[1]]))
        assert r[5] == ped.truth.get((i, j), "UN"), r
    assert {r[5] for r in rows[1:]} == {"Dup/MZ", "PO", "FS", "2nd", "3rd"}  # the threshold keeps 3rd or closer
