"""Report plots never cost the results (issue 15): IDs are drawn verbatim (no matplotlib math
text), and a plot that fails leaves a placeholder image and a warning, not a failed run."""

import logging

import numpy as np
from snakerun import read_pairs, snakemake

from genotile import report

PNG = b"\x89PNG\r\n\x1a\n"
ODD_IDS = ["$x^2$", "a$b", "$a_$", "$\\nocommand{1}$", "plain"]


def write_matrix(path, ids, values):
    lines = ["\t".join(["", *ids])] + ["\t".join([i, *map(str, row)]) for i, row in zip(ids, values, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def test_heatmap_draws_ids_with_dollar_signs_verbatim(tmp_path, caplog):
    rng = np.random.default_rng(3)
    values = rng.integers(0, 9, (5, 5))
    values = np.triu(values, 1) + np.triu(values, 1).T
    write_matrix(tmp_path / "matrix.tsv", ODD_IDS, values)
    with caplog.at_level(logging.WARNING, logger="genotile"):
        report.plot_heatmap(tmp_path / "matrix.tsv", "snp", tmp_path / "heatmap.png", 1000)
    assert "placeholder" not in caplog.text
    data = (tmp_path / "heatmap.png").read_bytes()
    assert data[:8] == PNG and len(data) > 5000  # a drawn heatmap, not the small placeholder


def test_a_failing_plot_leaves_a_placeholder_and_a_warning(tmp_path, caplog):
    (tmp_path / "matrix.tsv").write_text("\ta\tb\na\t0\tx\nb\tx\t0\n")  # not numbers: loadtxt fails
    with caplog.at_level(logging.WARNING, logger="genotile"):
        report.plot_heatmap(tmp_path / "matrix.tsv", "snp", tmp_path / "heatmap.png", 1000)
    assert "plot_heatmap failed (ValueError" in caplog.text and "placeholder" in caplog.text
    assert (tmp_path / "heatmap.png").read_bytes()[:8] == PNG
    (tmp_path / "histogram.tsv").write_text("column\tlow\thigh\tcount\nsnp\t0\tzero\t1\n")
    report.plot_histogram(tmp_path / "histogram.tsv", "snp", tmp_path / "histogram.png")
    assert (tmp_path / "histogram.png").read_bytes()[:8] == PNG


def test_workflow_with_dollar_ids_writes_results_and_plots(tmp_path):
    rng = np.random.default_rng(4)
    seqs = ["".join(rng.choice(list("ACGT"), 40)) for _ in ODD_IDS]
    fasta = tmp_path / "in.fa"
    fasta.write_text("".join(f">{i}\n{s}\n" for i, s in zip(ODD_IDS, seqs, strict=True)))
    work = tmp_path / "work"
    work.mkdir()
    config = {"datasets": {"d": {"input": str(fasta), "metrics": ["snp"]}}, "thresholds": {"snp": 100}, "report": True}
    snakemake(work, {**config})
    header, rows = read_pairs(work / "results/d/snp/pairs.tsv.gz")
    assert len(rows) == 10 and {r[0] for r in rows} | {r[1] for r in rows} == set(ODD_IDS)
    heatmap = work / "results/d/snp/report/heatmap.png"
    assert heatmap.read_bytes()[:8] == PNG and "placeholder" not in (work / "logs/d/snp/plot_heatmap.log").read_text()
