"""bench/bench_biobank.py: its generator writes the PLINK 1 fileset it means to (genotile's own
.bed reader and plink2 read back the genotypes drawn, the planted relatives as planted), and its
--smoke run, a whole Snakemake king run, finds exactly the planted pairs."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from snakerun import REPO

from genotile.io.readers.bed import write_sample_rows

sys.path.insert(0, str(REPO / "bench"))
import bench_biobank  # noqa: E402

ALT_COUNT = np.array([2, 255, 1, 0], dtype=np.uint8)  # .bed code -> ALT (A1) count, 255 missing


def drawn(n: int, m: int, related: int, seed: int) -> np.ndarray:
    """(samples, variants) ALT counts of the generator's blocks, drawn again."""
    pairs = bench_biobank.related_pairs(n, related, seed)
    k = bench_biobank.block_variants(n)
    blocks = [bench_biobank.variant_block(seed, b, min(k, m - v0), n, pairs) for b, v0 in enumerate(range(0, m, k))]
    return ALT_COUNT[np.concatenate(blocks)].T


@pytest.fixture(scope="module")
def fileset(tmp_path_factory):
    """A fileset of 4,001 samples (not a multiple of 4: a padded last byte) x 5,000 variants, in
    several blocks of variants, 40 planted pairs."""
    n, m, related, seed = 4_001, 5_000, 40, 3
    prefix = tmp_path_factory.mktemp("biobank") / "x"
    made = bench_biobank.write_fileset(prefix, n, m, related, seed, threads=2)
    assert bench_biobank.block_variants(n) < m
    codes = prefix.with_suffix(".codes.npy")
    write_sample_rows(made["bed"], n, m, codes)
    return prefix, made, np.load(codes), (n, m, related, seed)


def test_the_bed_decodes_to_the_genotypes_drawn(fileset):
    prefix, made, g, (n, m, related, seed) = fileset
    assert g.shape == (n, m)
    assert np.array_equal(g, drawn(n, m, related, seed))
    # the same bytes whatever the threads
    again = bench_biobank.write_fileset(prefix.with_name("y"), n, m, related, seed, threads=1)
    assert again["bed"].read_bytes() == made["bed"].read_bytes()


def test_the_genotypes_are_hwe_with_missing_calls_and_the_planted_relatives(fileset):
    prefix, made, g, (n, m, related, seed) = fileset
    missing = g == 255
    assert 0.004 < missing.mean() < 0.006
    called = np.where(missing, 0, g).astype(np.int64)
    p = called.sum(0) / (2 * (~missing).sum(0))  # ALT frequency of each variant
    assert 0.035 < p.min() and p.max() < 0.53 and 0.25 < p.mean() < 0.3
    het = ((g == 1).sum(0) / (~missing).sum(0)).mean()
    assert abs(het - (2 * p * (1 - p)).mean()) < 0.01
    pairs = made["pairs"]
    assert len(np.unique(pairs)) == 2 * related
    for i, (a, b) in enumerate(pairs):
        both = ~missing[a] & ~missing[b]
        opposite = (np.abs(called[a] - called[b]) == 2) & both
        kind = bench_biobank.PLANTED[i % 4].name
        if kind == "duplicate":
            assert np.array_equal(g[a, both], g[b, both])
        elif kind == "parent-offspring":
            assert not opposite.any()  # a parent and its child share an allele everywhere
        else:  # siblings: opposite homozygotes where they share no parental haplotype
            assert 0 < opposite.mean() < 0.1


def test_the_bim_fam_and_planted_table_are_well_formed(fileset):
    prefix, made, g, (n, m, related, seed) = fileset
    bim = [line.split("\t") for line in prefix.with_suffix(".bim").read_text().splitlines()]
    assert len(bim) == m and all(len(f) == 6 for f in bim)
    assert [f[1] for f in bim[:2]] == ["v1", "v2"] and len({f[1] for f in bim}) == m
    assert [int(f[3]) for f in bim] == list(range(1, m + 1))
    assert {(f[0], f[4], f[5].strip()) for f in bim} == {("1", "G", "A")}
    fam = [line.split("\t") for line in prefix.with_suffix(".fam").read_text().splitlines()]
    assert len(fam) == n and all(len(f) == 6 and f[0] == "0" for f in fam)
    assert len({f[1] for f in fam}) == n
    table = prefix.with_suffix(".related.tsv").read_text().splitlines()
    assert table[0].split("\t") == ["id1", "id2", "kind", "expected", "low", "high"]
    assert len(table) == related + 1
    first = table[1].split("\t")
    assert first[:3] == [f"s{made['pairs'][0][0]}", f"s{made['pairs'][0][1]}", "parent-offspring"]


@pytest.mark.peers  # needs plink2
def test_plink2_reads_the_fileset(fileset, tmp_path):
    if shutil.which("plink2") is None:
        pytest.skip("plink2 not on PATH")
    prefix, made, g, (n, m, related, seed) = fileset
    out = tmp_path / "freq"
    proc = subprocess.run(
        ["plink2", "--bfile", str(prefix), "--freq", "--threads", "1", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = out.with_suffix(".afreq").read_text().splitlines()
    header = lines[0].lstrip("#").split("\t")
    rows = [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]
    assert len(rows) == m and {r["ALT"] for r in rows} == {"G"}  # A1 read as ALT
    missing = g == 255
    ours = np.where(missing, 0, g).sum(0) / (2 * (~missing).sum(0))
    assert np.allclose([float(r["ALT_FREQS"]) for r in rows], ours, atol=1e-5)
    assert [int(r["OBS_CT"]) for r in rows] == list(2 * (~missing).sum(0))


def test_bench_biobank_smoke_finds_exactly_the_planted_pairs(tmp_path):
    args = ["--peer", "plink2", "--pgen"] if shutil.which("plink2") else []
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_biobank.py"), "--smoke", "--out", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result = json.loads((tmp_path / "bench_biobank.json").read_text())
    check = result["check"]
    assert check["exact"] and check["planted"] == check["found"] == bench_biobank.SMOKE["related"], check
    assert not (check["missed"] or check["outside"] or check["extra"])
    assert set(check["ranges"]) == {kind.name for kind in bench_biobank.PLANTED}
    assert "| exact: 12 of 12 found, nothing else;" in (tmp_path / "bench_biobank.md").read_text()
    if args:
        assert result["plink2"]["agree"] == "yes (12 pairs)", result["plink2"]
        # the .pgen plink2 made of the same fileset: its own whole run, the same pairs
        assert result["pgen"]["check"]["exact"], result["pgen"]["check"]
        assert ".pgen / .bed, whole runs:" in (tmp_path / "bench_biobank.md").read_text()
