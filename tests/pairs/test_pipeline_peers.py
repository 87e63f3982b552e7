"""The opt-in outputs (`formats:`, `king_degrees:`, `king_cutoff:`) through the Snakemake workflow:
asked for, they are made by their own rules without rerunning a merge or changing its outputs,
and hold what the writers give in process; impossible requests stop before any job."""

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import jobs_run, random_alignment, snakemake, write_fasta

from genotile.pairs import peers

OPT_IN = {
    "g": {"formats": ["kin0", "mdist"], "king_degrees": True, "king_cutoff": 0.0884},
    "a": {"formats": ["snp-dists-molten", "snp-dists-csv"]},
}
FILES = {
    ("g", "king"): ["plink2.kin0", "degrees.tsv.gz", "king.unrelated.in.id", "king.unrelated.out.id"],
    ("g", "ibs"): ["plink.mdist", "plink.mdist.id"],
    ("a", "snp"): ["snp-dists.molten.tsv", "snp-dists.csv"],
    ("a", "hamming"): ["snp-dists.molten.tsv", "snp-dists.csv"],
}
MERGED = ("pairs.tsv.gz", "summary.json", "histogram.tsv", "matrix.tsv")
ENCODING = {"king": "genotype", "ibs": "genotype", "snp": "nucleotide", "hamming": "categorical"}


def base_config(tmp):
    g = random_genotypes(13, 80, p_missing=0.05, seed=3)
    g[7] = g[5]  # a duplicate (as are s3 and s4, genodata's): related at any cut-off
    vcf = write_vcf(tmp / "g.vcf.gz", vcf_text(g, seed=3))
    fasta = tmp / "a.fa"
    write_fasta(fasta, random_alignment(np.random.default_rng(3), 9, 200))
    return {
        "datasets": {
            "g": {"input": str(vcf), "metrics": ["ibs", "king"]},
            "a": {"input": str(fasta), "metrics": ["snp", "hamming"]},
        },
        "thresholds": {"ibs": None, "king": 0.0442, "snp": 30},
        "block_size": 5,
    }


def with_opt_in(config):
    out = {**config, "datasets": {k: {**v, **OPT_IN[k]} for k, v in config["datasets"].items()}}
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("peers")
    config = base_config(tmp)
    snakemake(tmp, config)
    merged = [tmp / "results" / d / m / name for d, m in FILES for name in MERGED]
    before = {p: p.read_bytes() for p in merged}
    proc = snakemake(tmp, with_opt_in(config))
    return tmp, before, proc


def test_opt_in_outputs_run_only_their_own_rules(runs):
    tmp, before, proc = runs
    ran = jobs_run(proc.stdout + proc.stderr)
    mine = {"kin0": 1, "king_degrees": 1, "king_cutoff": 1, "mdist": 1, "snp_dists": 4}
    assert {rule: ran.get(rule) for rule in mine} == mine
    assert not {"store", "tile", "matrix", "merge"} & set(ran), ran
    for path, content in before.items():
        assert path.read_bytes() == content, f"{path} changed"


def test_opt_in_outputs_equal_the_writers(runs, tmp_path):
    tmp, _before, _proc = runs
    for (dataset, metric), names in FILES.items():
        mdir = tmp / "results" / dataset / metric
        tiles = sorted((mdir / "pairs").glob("tile_*.npz"))
        manifest = tmp / "results" / dataset / "store" / ENCODING[metric] / "manifest.json"
        cutoff = OPT_IN[dataset].get("king_cutoff")
        peers.write_outputs(tiles, manifest, metric, [tmp_path / n for n in names], king_cutoff=cutoff)
        for name in names:
            assert (mdir / name).read_bytes() == (tmp_path / name).read_bytes(), name
    kept = (tmp / "results/g/king/king.unrelated.in.id").read_text().splitlines()
    removed = (tmp / "results/g/king/king.unrelated.out.id").read_text().splitlines()
    assert kept[0] == removed[0] == "#IID" and sorted(kept[1:] + removed[1:]) == sorted(f"s{i}" for i in range(13))
    assert {"s3", "s4"} & set(removed) and {"s5", "s7"} & set(removed)  # one of each duplicate pair


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"datasets": {"g": {"formats": ["kin0"], "metrics": ["ibs"]}}},
            "dataset g: format kin0 is written for metric king",
        ),
        ({"datasets": {"g": {"king_cutoff": 0.02}}}, "dataset g: king_cutoff 0.02 needs every pair above it"),
        ({"datasets": {"g": {"formats": ["peds"]}}}, "peds"),  # the schema's enum
    ],
)
def test_impossible_requests_stop_before_any_job(tmp_path, change, message):
    config = base_config(tmp_path)
    for name, spec in change["datasets"].items():
        config["datasets"][name] = {**config["datasets"][name], **spec}
    proc = snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr


def test_every_pair_formats_stop_past_dense_max(tmp_path):
    config = {**base_config(tmp_path), "dense_max": 8}
    config["datasets"]["a"]["formats"] = ["snp-dists-csv"]
    proc = snakemake(tmp_path, config, "--until", "store", check=False)
    proc = snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    assert "dataset a: format snp-dists-csv holds every pair, written only up to dense_max (8) vectors" in (
        proc.stdout + proc.stderr
    )
