"""The screening branch through the Snakemake CLI: matches.tsv.gz against the brute-force
reference, tiles of several blocks, min_score, a lost tile recomputed, bad input."""

import json
import shutil

import numpy as np
import screenref as R
from snakerun import REPO, jobs_run, read_pairs, snakemake

DATASET = {"example_aln": {"input": "aln.fa", "metrics": ["snp"]}}


def setup(tmp_path, seed=3):
    rng = np.random.default_rng(seed)
    samples, sigs = R.random_screen(rng, 13, 1200, 9, 80, plants=3)
    samples.append(("all_n", "N" * 500, "5" * 500))
    R.write_fastq(tmp_path / "reads.fq", samples)
    R.write_signatures(tmp_path / "sigs.fa", sigs)
    (tmp_path / "aln.fa").write_text(">a\nACGT\n>b\nACGA\n")
    return samples, sigs


def config(**screen):
    spec = {"samples": "reads.fq", "signatures": "sigs.fa", **screen}
    return {"datasets": DATASET, "screens": {"vir": spec}, "backend": "numpy"}


def test_screen_matches_reference_and_blocks(tmp_path):
    samples, sigs = setup(tmp_path)
    proc = snakemake(tmp_path, config(sample_block=4, signature_block=5))
    header, rows = read_pairs(tmp_path / "results/vir/screen/matches.tsv.gz")
    assert header == ["sample", "signature", "position", "score"]
    want = R.expected_rows(samples, sigs)
    assert rows == want and len(want) >= 15
    assert jobs_run(proc.stdout + proc.stderr)["screen_tile"] == 8  # 4 sample blocks x 2 signature blocks
    summary = json.loads((tmp_path / "results/vir/screen/summary.json").read_text())
    assert summary["pairs_computed"] == 14 * 9 and summary["pairs_passing"] == len(want)
    assert summary["backend"] == ["numpy"] and len(summary["tiles"]) == 8

    # same result with one tile, and with min_score
    other = tmp_path / "one"
    other.mkdir()
    for name in ("reads.fq", "sigs.fa", "aln.fa"):
        shutil.copy(tmp_path / name, other / name)
    cut = sorted(float(r[3]) for r in want)[len(want) // 2]
    snakemake(other, config(min_score=cut))
    assert read_pairs(other / "results/vir/screen/matches.tsv.gz")[1] == R.expected_rows(samples, sigs, cut)

    # a lost tile is recomputed alone, and the merged bytes are the same
    before = (tmp_path / "results/vir/screen/matches.tsv.gz").read_bytes()
    (tmp_path / "results/vir/screen/tiles/tile_1_1.npz").unlink()
    proc = snakemake(tmp_path, config(sample_block=4, signature_block=5))
    ran = jobs_run(proc.stdout + proc.stderr)
    assert ran.get("screen_tile") == 1 and "screen_ingest" not in ran
    assert (tmp_path / "results/vir/screen/matches.tsv.gz").read_bytes() == before


def test_screen_bad_fastq_fails_clearly(tmp_path):
    setup(tmp_path)
    text = (tmp_path / "reads.fq").read_text().splitlines()
    text[3] = text[3][:-1]  # record 1's quality one character short
    (tmp_path / "reads.fq").write_text("\n".join(text) + "\n")
    proc = snakemake(tmp_path, config(), check=False)
    assert proc.returncode != 0
    assert "genotile error: reads.fq: line 4: record 1 ('read0') has" in proc.stderr
    assert not (tmp_path / "results/vir/screen/store/manifest.json").exists()


def test_example_config_has_a_screen():
    text = (REPO / "config/config.yaml").read_text()
    assert "screens:" in text and "example.reads.fq.gz" in text
    assert (REPO / "resources/example/example.reads.fq.gz").exists()
