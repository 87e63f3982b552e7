"""The report of the example config: every plot a valid image, the cluster table right."""

import csv
import gzip
import json
import struct
import subprocess
import sys

import pytest
import yaml
from snakerun import REPO, snakemake

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("report")
    (work / "resources").symlink_to(REPO / "resources")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    assert config["report"] is True
    snakemake(work, config)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(REPO / "Snakefile"),
            "--directory",
            str(work),
            "--configfile",
            str(work / "config.yaml"),
            "--report",
            str(work / "report.html"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work, config


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR" and data.rstrip(b"\x00").endswith(b"IEND\xaeB`\x82"), f"{path} is truncated"
    return struct.unpack(">II", data[16:24])


def test_every_plot_is_a_valid_image(example_run):
    work, config = example_run
    expected = []
    for dataset, spec in config["datasets"].items():
        for metric in spec["metrics"]:
            expected += [f"{dataset}/{metric}/report/histogram.png", f"{dataset}/{metric}/report/heatmap.png"]
            if metric == "king":
                expected.append(f"{dataset}/king/report/kinship_ibs0.png")
    for rel in expected:
        width, height = png_size(work / "results" / rel)
        assert width > 100 and height > 100, rel
    html = (work / "report.html").read_text(errors="replace")
    assert len(html) > 100_000 and "histogram" in html


def test_cluster_table_is_the_components_of_the_pairs(example_run):
    work, _ = example_run
    with gzip.open(work / "results/example_aln/snp/pairs.tsv.gz", "rt") as fh:
        pairs = [(r["id1"], r["id2"]) for r in csv.DictReader(fh, delimiter="\t")]
    # components by repeated merging, independent of the report's union-find
    comps: list[set] = []
    for a, b in pairs:
        touching = [c for c in comps if a in c or b in c]
        merged = set().union({a, b}, *touching)
        comps = [c for c in comps if c not in touching] + [merged]
    with open(work / "results/example_aln/snp/report/clusters.tsv") as fh:
        table = list(csv.DictReader(fh, delimiter="\t"))
    assert sorted(map(frozenset, comps), key=sorted) == sorted(
        (frozenset(r["members"].split(",")) for r in table), key=sorted
    )
    assert all(int(r["size"]) == len(r["members"].split(",")) for r in table)
    assert len(table) >= 2  # the example has an outbreak cluster and other near-identical sequences


def test_histogram_counts_every_pair(example_run):
    import json

    work, config = example_run
    for dataset, spec in config["datasets"].items():
        for metric in spec["metrics"]:
            summary = json.loads((work / f"results/{dataset}/{metric}/summary.json").read_text())
            with open(work / f"results/{dataset}/{metric}/histogram.tsv") as fh:
                rows = list(csv.DictReader(fh, delimiter="\t"))
            for column in {r["column"] for r in rows}:
                assert sum(int(r["count"]) for r in rows if r["column"] == column) == summary["pairs_computed"]


def test_histogram_plot_from_the_tiles_is_the_merged_histograms(example_run, tmp_path):
    """The plot job counts the histogram from the tiles (beside the merge, not after it): the
    rows are histogram.tsv's, and the image is the one drawn from histogram.tsv with
    summary.json's threshold, byte for byte; a tile of other settings is refused by name."""
    from genotile import report
    from genotile.core.metrics import get_metric
    from genotile.errors import GenotileError
    from genotile.pairs import clusters, stage

    work, config = example_run
    for dataset, spec in config["datasets"].items():
        for metric in spec["metrics"]:
            folder = work / f"results/{dataset}/{metric}"
            tiles = sorted((folder / "pairs").glob("tile_*.npz"))
            settings = json.loads((folder / "summary.json").read_text())["config"]
            manifest = work / f"results/{dataset}/store/{get_metric(metric).encoding}/manifest.json"
            rows = stage.tile_histogram_rows(tiles, manifest, metric, settings)
            text = "column\tlow\thigh\tcount\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows)
            assert text == (folder / "histogram.tsv").read_text()
            report.plot_histogram(folder / "histogram.tsv", metric, tmp_path / "want.png",
                                  report.run_threshold(folder / "summary.json"))  # fmt: skip
            assert (folder / "report/histogram.png").read_bytes() == (tmp_path / "want.png").read_bytes()
            if settings.get("threshold") is not None:
                other = {**settings, "threshold": settings["threshold"] + 1}
                with pytest.raises(GenotileError, match="tile .*tile_"):
                    stage.tile_histogram_rows(tiles, manifest, metric, other)
                if metric == "snp":  # clusters.tsv, beside the merge too, refuses them as well
                    with pytest.raises(GenotileError, match="tile .*tile_"):
                        clusters.clusters_of_tiles(tiles, manifest, tmp_path / "c.tsv", config=other)
                    clusters.clusters_of_tiles(tiles, manifest, tmp_path / "c.tsv", config=settings)
                    assert (tmp_path / "c.tsv").read_bytes() == (folder / "report/clusters.tsv").read_bytes()


def test_run_summary_has_a_row_per_dataset_and_metric(example_run):
    work, config = example_run
    with open(work / "results/run_summary.tsv") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert {(r["dataset"], r["metric"]) for r in rows} == {
        (d, m) for d, spec in config["datasets"].items() for m in spec["metrics"]
    } | {(screen, "screen") for screen in config["screens"]}
    assert all(float(r["tile_s"]) > 0 and float(r["store_s"]) > 0 for r in rows)


def test_screen_plot_and_table_hold_the_matches(example_run):
    """hits.tsv (what the screen plot draws) counts, per signature, the samples matches.tsv.gz
    lists; the run summary's screen row has the summary's pairs and min_score."""
    work, config = example_run
    (screen,) = config["screens"]
    folder = work / "results" / screen / "screen"
    with gzip.open(folder / "matches.tsv.gz", "rt") as fh:
        matches = list(csv.DictReader(fh, delimiter="\t"))
    with open(folder / "report/hits.tsv") as fh:
        table = {r["signature"]: r for r in csv.DictReader(fh, delimiter="\t")}
    signatures = [
        line[1:].split()[0]
        for line in (REPO / config["screens"][screen]["signatures"]).read_text().splitlines()
        if line.startswith(">")
    ]
    assert list(table) == signatures
    for name in signatures:
        samples = {m["sample"] for m in matches if m["signature"] == name}
        assert int(table[name]["samples"]) == len(samples)
        assert float(table[name]["fraction"]) == pytest.approx(len(samples) / 40, abs=1e-4)  # 40 reads
        scores = [float(m["score"]) for m in matches if m["signature"] == name]
        assert table[name]["score_max"] == (f"{max(scores):.2f}" if scores else "")
    assert sum(int(r["samples"]) for r in table.values()) == len(matches) == 14  # the example's kept matches
    width, height = png_size(folder / "report/screen.png")
    assert width > 400 and height > 200
    summary = json.loads((folder / "summary.json").read_text())
    with open(work / "results/run_summary.tsv") as fh:
        (row,) = [r for r in csv.DictReader(fh, delimiter="\t") if r["metric"] == "screen"]
    assert (row["dataset"], row["vectors"], row["fields"]) == (screen, "40", "8")
    assert (int(row["pairs"]), int(row["passing"])) == (summary["pairs_computed"], summary["pairs_passing"])
    assert row["threshold"] == str(config["screens"][screen]["min_score"]) and float(row["tile_s"]) > 0
    html = (work / "report.html").read_text(errors="replace")
    assert "hits.tsv" in html and "screen.png" in html


def write_summary(tmp_path, threshold):
    """results/d/snp/summary.json of a 3-vector snp run (what run_summary reads of it)."""
    summary = {
        "config": {"dataset": "d"},
        "metric": "snp",
        "n_vectors": 3,
        "n_fields": 10,
        "n_fields_kept": 4,
        "pairs_computed": 3,
        "pairs_passing": 3,
        "threshold": threshold,
        "backend": ["numpy"],
        "timings": {"element_comparisons_per_s_counts": 0},
    }
    path = tmp_path / "results" / "d" / "snp" / "summary.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(summary))
    return path


def test_run_summary_leaves_a_null_threshold_empty(tmp_path):
    """A metric run with no threshold: its run_summary.tsv cell is empty (as summary.json's null),
    not Python's `None`."""
    from genotile import report

    path = write_summary(tmp_path, threshold=None)
    out = tmp_path / "run_summary.tsv"
    report.run_summary([path], [], out)
    rows = list(csv.DictReader(out.open(), delimiter="\t"))
    assert rows[0]["threshold"] == "" and "None" not in out.read_text()


def test_run_summary_skips_a_benchmark_not_written_yet(tmp_path):
    """run_summary runs once the summaries are written, beside the plots, whose benchmark files
    Snakemake may not have written yet (empty, or a header alone): those are no stage of the
    table and are passed over; the stages upstream of the summaries are counted."""
    from genotile import report

    path = write_summary(tmp_path, threshold=2)
    bench = tmp_path / "benchmarks" / "d" / "snp"
    bench.mkdir(parents=True)
    (bench / "merge.tsv").write_text("s\th:m:s\n1.5\t0:00:01\n")
    (bench / "plot_histogram.tsv").write_text("")  # being written
    (bench / "plot_heatmap.tsv").write_text("s\th:m:s\n")  # its header alone
    out = tmp_path / "run_summary.tsv"
    report.run_summary([path], sorted((tmp_path / "benchmarks").rglob("*.tsv")), out)
    rows = list(csv.DictReader(out.open(), delimiter="\t"))
    assert len(rows) == 1 and float(rows[0]["merge_s"]) == 1.5


def test_every_report_item_has_the_one_label_key():
    """One label key (`result`): different keys give each item a column of its own in the report's
    lists, and a second key with two values becomes a toggle that hides half of the items."""
    import ast
    import re

    text = (REPO / "rules/report.smk").read_text()
    labels = re.findall(r"labels=(\{[^}]*\})", text)
    assert len(labels) == text.count("report(") >= 7
    assert all(list(ast.literal_eval(lab)) == ["result"] for lab in labels)
