"""The Snakemake workflow end to end, in temporary working directories."""

import numpy as np
import pytest
import yaml
from reference import pair_matrix
from snakerun import REPO, job_counts, jobs_run, random_alignment, read_matrix, read_pairs, snakemake, write_fasta


def expected_pairs(ids, ref, threshold):
    n = len(ids)
    return [
        (ids[i], ids[j], str(ref[i, j]))
        for i in range(n)
        for j in range(i + 1, n)
        if threshold is None or ref[i, j] <= threshold
    ]


@pytest.fixture(scope="module")
def alignment(tmp_path_factory):
    rng = np.random.default_rng(7)
    seqs = random_alignment(rng, 23, 211)
    path = tmp_path_factory.mktemp("aln") / "aln.fa"
    ids = write_fasta(path, seqs)
    return path, ids, seqs


@pytest.fixture(scope="module")
def run_one(alignment, tmp_path_factory):
    path, ids, seqs = alignment
    workdir = tmp_path_factory.mktemp("run")
    config = {
        "datasets": {"toy": {"input": str(path), "metrics": ["snp", "hamming"]}},
        "thresholds": {"snp": 40, "hamming": None},
        "block_size": 5,
        "seed": 3,
    }
    snakemake(workdir, config)
    return workdir, config


@pytest.mark.parametrize("metric", ["snp", "hamming"])
def test_outputs_equal_reference(run_one, alignment, metric):
    workdir, config = run_one
    _, ids, seqs = alignment
    ref = pair_matrix(seqs, metric)
    names, matrix = read_matrix(workdir / f"results/toy/{metric}/matrix.tsv")
    assert names == ids
    np.testing.assert_array_equal(matrix, ref)
    header, pairs = read_pairs(workdir / f"results/toy/{metric}/pairs.tsv.gz")
    assert header == ["id1", "id2", metric]
    assert pairs == expected_pairs(ids, ref, config["thresholds"][metric])
    tiles = sorted((workdir / f"results/toy/{metric}/pairs").iterdir())
    assert len(tiles) == 15  # 23 vectors in blocks of 5: 5 blocks, 5 * 6 / 2 tiles


def test_summary(run_one):
    import json

    workdir, _ = run_one
    s = json.loads((workdir / "results/toy/snp/summary.json").read_text())
    assert s["n_vectors"] == 23 and s["pairs_computed"] == 23 * 22 // 2
    assert s["plan"]["n_tiles"] == 15 and len(s["tiles"]) == 15
    _, pairs = read_pairs(workdir / "results/toy/snp/pairs.tsv.gz")
    assert s["pairs_passing"] == len(pairs)
    assert set(s["outputs"]) == {"pairs", "matrix", "histogram"}
    # auto: the GPU where there is one, else numpy's BLAS for tiles this small (numba's start-up
    # would cost more)
    from genotile.backends.cuda import cupy_common

    assert s["config"]["threshold"] == 40 and s["backend"] == ["cupy-b1" if cupy_common.has_gpu() else "numpy"]


def test_second_run_does_nothing_and_lost_tile_is_recomputed_alone(run_one):
    workdir, config = run_one
    proc = snakemake(workdir, config)
    assert "Nothing to be done" in proc.stdout + proc.stderr
    outputs = {p: p.read_bytes() for p in (workdir / "results/toy").glob("*/*.tsv*")}
    (workdir / "results/toy/snp/pairs/tile_1_3.npz").unlink()
    proc = snakemake(workdir, config)
    assert "tile_1_3.npz" in proc.stderr
    assert jobs_run(proc.stderr) == {"all": 1, "matrix": 1, "merge": 1, "tile": 1}
    for path, content in outputs.items():
        assert path.read_bytes() == content, path


def test_seed_and_block_size_change_no_output(run_one, alignment, tmp_path):
    workdir, config = run_one
    other = {**config, "seed": 99, "block_size": 7}
    snakemake(tmp_path, other)
    for rel in ("snp/matrix.tsv", "snp/pairs.tsv.gz", "hamming/matrix.tsv", "hamming/pairs.tsv.gz"):
        assert (tmp_path / "results/toy" / rel).read_bytes() == (workdir / "results/toy" / rel).read_bytes(), rel


def test_dense_max_skips_matrix(alignment, tmp_path):
    path, ids, seqs = alignment
    config = {"datasets": {"d": {"input": str(path), "metrics": ["snp"]}}, "dense_max": 10, "block_size": 8}
    snakemake(tmp_path, config)
    assert not (tmp_path / "results/d/snp/matrix.tsv").exists()
    _, pairs = read_pairs(tmp_path / "results/d/snp/pairs.tsv.gz")
    assert pairs == expected_pairs(ids, pair_matrix(seqs, "snp"), None)


def test_default_config_runs_from_repo_layout(tmp_path):
    """The shipped config, run from a copy of the repo root layout (inputs relative to the workdir)."""
    (tmp_path / "resources").symlink_to(REPO / "resources")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    snakemake(tmp_path, config)
    for name, spec in config["datasets"].items():
        for metric in spec["metrics"]:
            assert (tmp_path / f"results/{name}/{metric}/summary.json").exists()
            if metric in ("snp", "hamming"):
                from genotile.io.fasta import read_alignment

                recs = list(read_alignment(tmp_path / spec["input"]))
                seqs = [raw.tobytes().decode() for _, raw in recs]
                _, matrix = read_matrix(tmp_path / f"results/{name}/{metric}/matrix.tsv")
                np.testing.assert_array_equal(matrix, pair_matrix(seqs, metric))


def test_dry_run_shows_plan_after_checkpoint(alignment, tmp_path):
    path, _, _ = alignment
    config = {"datasets": {"d": {"input": str(path), "metrics": ["snp"]}}, "block_size": 10}
    proc = snakemake(tmp_path, config, "-n")
    assert "checkpoint" in proc.stdout and not (tmp_path / "results").exists()
    proc = snakemake(tmp_path, config, "--until", "store")
    assert "3 block(s)" in proc.stderr and "6 tile job(s)" in proc.stderr
    proc = snakemake(tmp_path, config, "-n")
    assert job_counts(proc.stdout) == {"all": 1, "matrix": 1, "merge": 1, "tile": 6}


BAD_INPUTS = {
    "unequal": (">a\nACGT\n>b\nACG\n", "has length 3, but the first sequence has length 4"),
    "duplicate": (">a\nACGT\n>b\nACGA\n>a x\nACGG\n", "duplicate sequence ID 'a'"),
    "empty": ("", "empty file"),
    "vcf": ("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\n", "not a FASTA file"),
}


@pytest.mark.parametrize("case", [*BAD_INPUTS, "missing"])
def test_bad_input_fails_clearly_and_leaves_nothing(case, tmp_path):
    path = tmp_path / "in.fa"
    if case == "missing":  # Snakemake itself refuses before any job runs, naming the file
        message = "Missing input files for rule store"
    else:
        text, message = BAD_INPUTS[case]
        path.write_text(text)
    config = {"datasets": {"bad": {"input": str(path), "metrics": ["snp"]}}}
    proc = snakemake(tmp_path, config, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr[-3000:]
    assert (str(path) if case == "missing" else f"genotile error: {path}") in proc.stderr
    leftovers = [p for p in (tmp_path / "results").rglob("*") if p.is_file()] if (tmp_path / "results").exists() else []
    assert leftovers == []


def test_schema_rejects_bad_config(alignment, tmp_path):
    path, _, _ = alignment
    for bad in (
        {"datasets": {"../escape": {"input": str(path), "metrics": ["snp"]}}},
        {"datasets": {"d": {"input": str(path), "metrics": ["nope"]}}},
        {"datasets": {"d": {"input": str(path), "metrics": ["snp"]}}, "block_size": 0},
    ):
        proc = snakemake(tmp_path, bad, "-n", check=False)
        assert proc.returncode != 0 and "genotile error: config: " in proc.stderr
