"""VCF input through the Snakemake workflow: ibs, king and ccc2 against brute force."""

import math

import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from reference import GENOTYPE_REFERENCES
from snakerun import read_pairs, snakemake

COLUMNS = {
    "ibs": ("ibs_count", "n", "dist_1ibs"),
    "king": ("nsnp", "hethet", "ibs0", "kinship"),
    "ccc2": ("ccc_00", "ccc_01", "ccc_10", "ccc_11"),
}


def same(value: str, expected) -> bool:
    if isinstance(expected, int):
        return value == str(expected)
    got = float(value)
    if math.isnan(expected) or math.isinf(expected):
        return math.isnan(got) if math.isnan(expected) else got == expected
    return abs(got - expected) <= 1e-12 * max(1.0, abs(expected))


@pytest.fixture(scope="module")
def vcf_run(tmp_path_factory):
    g = random_genotypes(13, 60, p_missing=0.05, seed=5)  # samples x variants
    tmp = tmp_path_factory.mktemp("vcf")
    path = write_vcf(tmp / "g.vcf.gz", vcf_text(g, seed=5))
    config = {
        "datasets": {"g": {"input": str(path), "metrics": ["ibs", "king", "ccc2"]}},
        "thresholds": {"ibs": None, "king": None, "ccc2": 0.3},
        "block_size": 11,  # 13 samples: 2 blocks (3 tiles); 60 variants: 6 blocks (21 tiles)
        "ccc": {"multiplier": 4.5, "param": 2 / 3},
    }
    snakemake(tmp, config)
    return tmp, g, config


@pytest.mark.parametrize("metric", ["ibs", "king", "ccc2"])
def test_vcf_metrics_equal_brute_force(vcf_run, metric):
    tmp, g, config = vcf_run
    vectors = g if metric != "ccc2" else g.T
    if metric == "ccc2":  # vectors are SNPs, named CHROM:POS:REF:ALT where ID is '.'
        ids = [f"1:{10 * v + 5}:A:G" for v in range(g.shape[1])]
    else:
        ids = [f"s{i}" for i in range(g.shape[0])]
    header, rows = read_pairs(tmp / f"results/g/{metric}/pairs.tsv.gz")
    assert header == ["id1", "id2", *COLUMNS[metric]]
    threshold = config["thresholds"][metric]
    expected = []
    for i in range(len(ids)):
        for j in range(i + 1, len(ids)):
            ref = GENOTYPE_REFERENCES[metric](vectors[i], vectors[j])
            if threshold is None or any(ref[c] >= threshold for c in COLUMNS[metric]):
                expected.append((ids[i], ids[j], ref))
    assert [(a, b) for a, b, *_ in rows] == [(a, b) for a, b, _ in expected]
    for row, (_, _, ref) in zip(rows, expected, strict=True):
        for value, col in zip(row[2:], COLUMNS[metric], strict=True):
            assert same(value, ref[col]), (row, col, ref[col])


def test_fasta_given_as_vcf_fails_clearly(tmp_path):
    fa = tmp_path / "x.vcf"
    fa.write_text(">a\nACGT\n>b\nACGA\n")
    proc = snakemake(tmp_path, {"datasets": {"x": {"input": str(fa), "metrics": ["ibs"]}}}, check=False)
    assert proc.returncode != 0 and f"genotile error: {fa}" in proc.stderr
    assert not [p for p in (tmp_path / "results").rglob("*") if p.is_file()]
