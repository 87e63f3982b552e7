"""ibs and king against the real tools, every pair, on msprime data with 2% missing calls.

PLINK 1.9 `--distance square 1-ibs flat-missing` (.mdist) for dist_1ibs, `allele-ct`
(.dist) for ibs_count on data without missing calls, PLINK 2 `--make-king-table`
(.kin0) for king, scikit-allel's cityblock distance for ibs_count. PLINK prints 6
significant digits: a value agrees when it is within half a unit of the last printed digit.
Flags: --allow-extra-chr (any contig name), --double-id (FID = IID = the VCF sample ID);
both PLINKs keep every site of this data (biallelic, monomorphic ones included: checked
through the variant counts in their logs).
"""

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from genodata import read_float_matrix

from genotile import pipeline

msprime = pytest.importorskip("msprime", reason="msprime is needed to simulate the peer-test data")

pytestmark = pytest.mark.peers  # PLINK 1.9 / 2 and scikit-allel: `pytest -m peers`


def simulate_vcf(path: Path, n: int, length: float, seed: int, p_missing: float) -> tuple[list[str], int]:
    """An msprime VCF of n diploid samples (biallelic sites), calls missing with p_missing."""
    ts = msprime.sim_ancestry(
        n, sequence_length=length, recombination_rate=1e-8, population_size=10_000, random_seed=seed
    )
    ts = msprime.sim_mutations(ts, rate=1e-8, random_seed=seed, model=msprime.BinaryMutationModel())
    rng = np.random.default_rng(seed)
    samples = [f"s{i}" for i in range(n)]
    lines = [
        "##fileformat=VCFv4.2",
        f"##contig=<ID=1,length={int(length)}>",
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
        "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *samples]),
    ]
    for var in ts.variants():
        g = var.genotypes.reshape(n, 2)
        calls = np.array([f"{a}|{b}" for a, b in g], dtype=object)
        calls[rng.random(n) < p_missing] = "./."
        lines.append("\t".join(["1", str(int(var.site.position) + 1), ".", "A", "T", ".", "PASS", ".", "GT", *calls]))
    path.write_text("\n".join(lines) + "\n")
    return samples, ts.num_sites


def plink(binary: str, args: list[str], out: Path) -> str:
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (Debian: apt-get install -y {binary})")
    subprocess.run(
        [binary, *args, "--allow-extra-chr", "--double-id", "--threads", "1", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return Path(f"{out}.log").read_text()


def half_unit(printed: str) -> float:
    """Half a unit of the last digit PLINK printed (%g): the rounding it applied."""
    m = re.fullmatch(r"-?\d+(?:\.(\d+))?(?:e([-+]\d+))?", printed)
    assert m, f"unexpected number {printed!r}"
    return 0.0 if float(printed) == 0 else 0.5 * 10.0 ** (int(m.group(2) or 0) - len(m.group(1) or ""))


def assert_printed_agree(ours: float, printed: str, what: str):
    if printed in ("nan", "inf", "-inf"):
        assert str(ours) == printed, what
        return
    # 1e-12 relative slack: PLINK's double may round the other way at an exact tie
    assert abs(ours - float(printed)) <= half_unit(printed) * (1 + 1e-9) + 1e-12 * abs(ours), (what, ours, printed)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("peers")
    samples, n_sites = simulate_vcf(root / "missing.vcf", 30, 2e6, seed=7, p_missing=0.02)
    simulate_vcf(root / "complete.vcf", 30, 2e6, seed=8, p_missing=0.0)
    assert n_sites > 1000
    return root, samples, n_sites


def test_ibs_equals_plink19_mdist(data, tmp_path):
    root, samples, n_sites = data
    log = plink(
        "plink1.9",
        ["--vcf", str(root / "missing.vcf"), "--distance", "square", "1-ibs", "flat-missing"],
        tmp_path / "p",
    )
    assert f"{n_sites} variants and {len(samples)} people pass filters and QC" in log
    ids = [line.split("\t")[1] for line in (tmp_path / "p.mdist.id").read_text().splitlines()]
    assert ids == samples
    printed = [line.split("\t") for line in (tmp_path / "p.mdist").read_text().splitlines()]
    pipeline.run_all(root / "missing.vcf", tmp_path / "g", ["ibs"], block_size=11)
    mids, ours = read_float_matrix(tmp_path / "g" / "ibs" / "matrix.tsv")
    assert mids == samples
    for i in range(len(samples)):
        for j in range(len(samples)):
            assert_printed_agree(ours[i, j], printed[i][j], f"dist_1ibs {samples[i]} {samples[j]}")


def test_ibs_count_equals_plink19_allele_ct_without_missing(data, tmp_path):
    root, samples, _ = data
    plink("plink1.9", ["--vcf", str(root / "complete.vcf"), "--distance", "square", "allele-ct"], tmp_path / "p")
    theirs = np.loadtxt(tmp_path / "p.dist")
    pipeline.run_all(root / "complete.vcf", tmp_path / "g", ["ibs"], block_size=11)
    ours = pairwise_column(tmp_path / "g" / "ibs" / "pairs.tsv.gz", samples, "ibs_count")
    assert np.array_equal(ours, theirs)  # integers, printed exactly


def test_king_equals_plink2_kin0(data, tmp_path):
    root, samples, n_sites = data
    log = plink("plink2", ["--vcf", str(root / "missing.vcf"), "--make-king-table"], tmp_path / "k")
    assert f"--make-king-table: {n_sites} variants processed" in log
    lines = (tmp_path / "k.kin0").read_text().splitlines()
    header = lines[0].lstrip("#").split("\t")
    assert header[-4:] == ["NSNP", "HETHET", "IBS0", "KINSHIP"]
    pipeline.run_all(root / "missing.vcf", tmp_path / "g", ["king"], block_size=11)
    ours = {}
    with gzip.open(tmp_path / "g" / "king" / "pairs.tsv.gz", "rt") as fh:
        next(fh)
        for line in fh:
            a, b, nsnp, hethet, ibs0, kinship = line.rstrip("\n").split("\t")
            ours[frozenset((a, b))] = (int(nsnp), int(hethet), int(ibs0), float(kinship))
    assert len(lines) - 1 == len(ours) == len(samples) * (len(samples) - 1) // 2
    for line in lines[1:]:
        cols = line.split("\t")
        a, b = cols[header.index("IID1")], cols[header.index("IID2")]
        nsnp, hethet, ibs0, kinship = ours[frozenset((a, b))]
        assert nsnp == int(cols[-4])
        # PLINK 2 prints HETHET and IBS0 as proportions of NSNP
        assert_printed_agree(hethet / nsnp, cols[-3], f"HETHET {a} {b}")
        assert_printed_agree(ibs0 / nsnp, cols[-2], f"IBS0 {a} {b}")
        assert_printed_agree(kinship, cols[-1], f"KINSHIP {a} {b}")


def test_ibs_count_equals_scikit_allel_cityblock(data, tmp_path):
    allel = pytest.importorskip("allel", reason="scikit-allel is not installed")
    root, samples, _ = data
    pipeline.run_all(root / "complete.vcf", tmp_path / "g", ["ibs"], block_size=11)
    codes = np.load(tmp_path / "g" / "ingest" / "genotype.codes.npy")  # samples x variants ALT counts
    theirs = allel.pairwise_distance(codes.T.astype(np.float64), metric="cityblock")
    ours = pairwise_column(tmp_path / "g" / "ibs" / "pairs.tsv.gz", samples, "ibs_count")
    n = len(samples)
    assert np.array_equal(ours[np.triu_indices(n, 1)], theirs)


def pairwise_column(pairs_path, ids, column) -> np.ndarray:
    index = {v: k for k, v in enumerate(ids)}
    out = np.zeros((len(ids), len(ids)))
    with gzip.open(pairs_path, "rt") as fh:
        header = next(fh).rstrip("\n").split("\t")
        c = header.index(column)
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            i, j = index[cols[0]], index[cols[1]]
            out[i, j] = out[j, i] = float(cols[c])
    return out
