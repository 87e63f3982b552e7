"""The screening results in the report (issue 28): hits.tsv counts the samples each signature
matches as matches.tsv.gz lists them, the plot draws those counts and the scores, and the run
summary has a row per screen."""

import csv
import gzip
import json

import numpy as np
import pytest
import yaml

from genotile import report


def write_screen(folder, samples, signatures, matches, min_score=10):
    """matches.tsv.gz, the store manifest and summary.json of a screen, as the merge writes them."""
    (folder / "store").mkdir(parents=True)
    (folder / "store/manifest.json").write_text(json.dumps({"sample_ids": samples, "signature_ids": signatures}))
    with gzip.open(folder / "matches.tsv.gz", "wt") as fh:
        fh.write("sample\tsignature\tposition\tscore\n")
        fh.writelines(f"{a}\t{b}\t1\t{score}\n" for a, b, score in matches)
    summary = {
        "config": {"screen": "s"},
        "n_samples": len(samples),
        "n_signatures": len(signatures),
        "pairs_computed": len(samples) * len(signatures),
        "pairs_matching": len(matches) + 1,
        "pairs_passing": len(matches),
        "min_score": min_score,
        "backend": ["numpy"],
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    return report.ScreenHits(folder / "matches.tsv.gz", folder / "store/manifest.json")


def drawn(monkeypatch):
    """The figures plot functions hand to _save (then saved as usual)."""
    figures = []
    original = report._save
    monkeypatch.setattr(report, "_save", lambda fig, out: (figures.append(fig), original(fig, out)))
    return figures


def test_hits_table_counts_samples_per_signature(tmp_path):
    matches = [("r1", "v1", "20.50"), ("r1", "v3", "30.13"), ("r3", "v1", "19.00"), ("r4", "v1", "25.00")]
    hits = write_screen(tmp_path, ["r1", "r2", "r3", "r4"], ["v1", "v2", "v3"], matches)
    report.screen_hits_table(hits, tmp_path / "hits.tsv")
    rows = list(csv.DictReader((tmp_path / "hits.tsv").open(), delimiter="\t"))
    assert rows == [
        {"signature": "v1", "samples": "3", "fraction": "0.75", "score_min": "19.00", "score_max": "25.00"},
        {"signature": "v2", "samples": "0", "fraction": "0", "score_min": "", "score_max": ""},
        {"signature": "v3", "samples": "1", "fraction": "0.25", "score_min": "30.13", "score_max": "30.13"},
    ]


def test_plot_draws_the_counts_and_the_scores(tmp_path, monkeypatch):
    matches = [("r1", "v1", "20.50"), ("r1", "v3", "30.13"), ("r3", "v1", "19.00")]
    hits = write_screen(tmp_path, ["r1", "r2", "r3", "r$x$"], ["v1", "v2", "v3"], matches)
    figures = drawn(monkeypatch)
    report.plot_screen(hits, tmp_path / "summary.json", tmp_path / "screen.png", 100)
    assert (tmp_path / "screen.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bars, heat = figures[0].axes[:2]
    assert [p.get_width() for p in bars.patches] == [2, 0, 1]
    assert [t.get_text() for t in bars.get_yticklabels()] == ["v1", "v2", "v3"]
    assert "2 (50%)" in [t.get_text().strip() for t in bars.texts]
    grid = heat.images[0].get_array()
    assert grid.shape == (3, 2)  # the signatures x the samples with a match (r1, r3)
    assert [t.get_text() for t in heat.get_xticklabels()] == ["r1", "r3"]
    assert grid[0, 0] == 20.5 and grid[2, 0] == 30.13 and grid[0, 1] == 19.0
    assert np.ma.getmaskarray(grid)[1].all() or np.isnan(grid[1]).all()  # v2 matches nothing
    assert "3 of 12 sample x signature pairs match with score >= 10 (4 at any score)" in figures[0]._suptitle.get_text()


def test_many_signatures_draw_the_most_matched_and_no_map_past_the_limit(tmp_path, monkeypatch):
    signatures = [f"v{j}" for j in range(100)]
    matches = [(f"r{k}", f"v{j}", "20.00") for j in range(100) for k in range(j % 7)]
    hits = write_screen(tmp_path, [f"r{k}" for k in range(7)], signatures, matches)
    figures = drawn(monkeypatch)
    report.plot_screen(hits, tmp_path / "summary.json", tmp_path / "screen.png", 50)
    bars, heat = figures[0].axes[:2]
    assert len(bars.patches) == report.SCREEN_BARS
    # ranked: the 14 signatures matching 6 samples, the 14 matching 5, the first 12 matching 4
    assert [p.get_width() for p in bars.patches] == [6] * 14 + [5] * 14 + [4] * 12
    assert [t.get_text() for t in bars.get_yticklabels()][:3] == ["v6", "v13", "v20"]
    assert not heat.images and "report_heatmap_max = 50" in heat.texts[0].get_text()


def test_a_screen_without_matches_draws_empty_bars_and_a_note(tmp_path, monkeypatch):
    hits = write_screen(tmp_path, ["r1", "r2"], ["v1"], [], min_score=None)
    figures = drawn(monkeypatch)
    report.plot_screen(hits, tmp_path / "summary.json", tmp_path / "screen.png", 100)
    bars, heat = figures[0].axes[:2]
    assert [p.get_width() for p in bars.patches] == [0]
    assert "no sample has a match" in heat.texts[0].get_text()
    assert "match (1 at any score)" in figures[0]._suptitle.get_text()


def test_run_summary_has_a_row_per_screen(tmp_path):
    folder = tmp_path / "results" / "s" / "screen"
    write_screen(folder, ["r1", "r2"], ["v1", "v2", "v3"], [("r1", "v2", "12.00")], min_score=10.5)
    bench = tmp_path / "benchmarks" / "s" / "screen"
    bench.mkdir(parents=True)
    for name, seconds in (("ingest", 1.5), ("tile_0_0", 2.0), ("tile_1_0", 0.25), ("merge", 0.5)):
        (bench / f"{name}.tsv").write_text(f"s\th:m:s\n{seconds}\t0:00:01\n")
    out = tmp_path / "run_summary.tsv"
    report.run_summary([], sorted(bench.glob("*.tsv")), out, [folder / "summary.json"])
    (row,) = csv.DictReader(out.open(), delimiter="\t")
    assert row == {
        "dataset": "s",
        "metric": "screen",
        "vectors": "2",
        "fields": "3",
        "fields_kept": "",
        "pairs": "6",
        "passing": "1",
        "threshold": "10.5",
        "backend": "numpy",
        "element_comparisons_per_s": "",
        "store_s": "1.50",
        "tile_s": "2.25",
        "matrix_s": "",
        "merge_s": "0.50",
    }


@pytest.mark.parametrize("broken", ["summary", "matches"])
def test_a_broken_input_leaves_a_placeholder_or_stops_with_one_line(tmp_path, broken):
    hits = write_screen(tmp_path, ["r1"], ["v1"], [("r1", "v1", "20.00")])
    if broken == "summary":  # the plot alone fails: a placeholder image, the run goes on
        (tmp_path / "summary.json").write_text("{}")
        report.plot_screen(hits, tmp_path / "summary.json", tmp_path / "screen.png", 100)
        assert (tmp_path / "screen.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:  # a match naming a sample the store does not hold
        with gzip.open(tmp_path / "matches.tsv.gz", "wt") as fh:
            fh.write("sample\tsignature\tposition\tscore\nr9\tv1\t1\t20.00\n")
        with pytest.raises(KeyError):
            report.ScreenHits(tmp_path / "matches.tsv.gz", tmp_path / "store/manifest.json")


def test_a_config_without_screens_asks_for_no_screen_plot(tmp_path):
    """The example's datasets alone, report on: the run summary still runs, no screen job."""
    from snakerun import REPO, job_counts, snakemake

    (tmp_path / "resources").symlink_to(REPO / "resources")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    del config["screens"]
    proc = snakemake(tmp_path, config, "-n")
    counts = job_counts(proc.stdout + proc.stderr)
    assert counts["run_summary"] == 1 and not any(rule.startswith("screen") or rule == "plot_screen" for rule in counts)
