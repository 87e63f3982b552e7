"""Screens rerun on a change of content that no mtime shows (issue 15): signatures edited and
their mtime set back, the screen's results equal a fresh run's."""

import os

import numpy as np
import screenref as R
from snakerun import read_pairs, snakemake


def test_signatures_edited_with_an_older_mtime_rerun_the_screen(tmp_path):
    rng = np.random.default_rng(8)
    samples, sigs = R.random_screen(rng, 6, 600, 5, 40, plants=2)
    R.write_fastq(tmp_path / "reads.fq", samples)
    R.write_signatures(tmp_path / "sigs.fa", sigs)
    (tmp_path / "aln.fa").write_text(">a\nACGT\n>b\nACGA\n")
    spec = {"samples": "reads.fq", "signatures": "sigs.fa"}
    config = {"datasets": {"a": {"input": "aln.fa", "metrics": ["snp"]}}, "screens": {"v": spec}, "backend": "numpy"}
    snakemake(tmp_path, config)
    first = read_pairs(tmp_path / "results/v/screen/matches.tsv.gz")[1]
    planted = [(name, seq) for name, seq in sigs][:1]  # one signature left: fewer matches
    R.write_signatures(tmp_path / "sigs.fa", planted)
    os.utime(tmp_path / "sigs.fa", (1_000_000_000, 1_000_000_000))
    snakemake(tmp_path, config)
    rows = read_pairs(tmp_path / "results/v/screen/matches.tsv.gz")[1]
    assert rows == R.expected_rows(samples, planted) != first
