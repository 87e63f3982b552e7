"""A config with `screens` and no `datasets` runs (a user who only screens reads); one with
neither is refused by the schema."""

import gzip

from snakerun import REPO, job_counts, snakemake

EXAMPLE = REPO / "resources" / "example"


def screen_config() -> dict:
    return {
        "screens": {
            "reads": {
                "samples": str(EXAMPLE / "example.reads.fq.gz"),
                "signatures": str(EXAMPLE / "example.signatures.fa"),
                "min_score": 10,
                "sample_block": 16,
            }
        },
        "report": True,  # the screen's plot and table, a run summary of its one row
    }


def test_screening_only_config_dry_run_lists_only_screen_jobs(tmp_path):
    proc = snakemake(tmp_path, screen_config(), "-n")
    assert job_counts(proc.stdout + proc.stderr) == {
        "screen_ingest": 1,
        "screen_merge": 1,
        "plot_screen": 1,
        "run_summary": 1,
        "all": 1,
    }


def test_screening_only_config_runs_and_matches_the_example_screen(tmp_path):
    """The same screen beside a dataset and alone: the same matches."""
    for name in ("alone", "both"):
        (tmp_path / name).mkdir()
    snakemake(tmp_path / "alone", screen_config())
    with_datasets = screen_config()
    with_datasets["datasets"] = {"aln": {"input": str(EXAMPLE / "example.aln.fa"), "metrics": ["snp"]}}
    snakemake(tmp_path / "both", with_datasets)
    alone = tmp_path / "alone" / "results" / "reads" / "screen" / "matches.tsv.gz"
    both = tmp_path / "both" / "results" / "reads" / "screen" / "matches.tsv.gz"
    rows = gzip.decompress(alone.read_bytes()).decode().splitlines()
    assert len(rows) > 1, rows  # a header and some matches
    assert alone.read_bytes() == both.read_bytes()
    summary = (tmp_path / "alone" / "results" / "run_summary.tsv").read_text().splitlines()
    assert [line.split("\t")[:2] for line in summary[1:]] == [["reads", "screen"]]  # no dataset rows
    assert sorted(p.name for p in (tmp_path / "alone" / "results").iterdir()) == ["reads", "run_summary.tsv"]
    assert (tmp_path / "alone" / "results" / "reads" / "screen" / "report" / "screen.png").stat().st_size > 1000


def test_config_with_neither_datasets_nor_screens_is_refused(tmp_path):
    for config in ({}, {"datasets": {}, "screens": {}}):
        proc = snakemake(tmp_path, {"report": False, **config}, "-n", check=False)
        assert proc.returncode != 0
        assert "is not valid under any of the given schemas" in proc.stdout + proc.stderr, proc.stderr[-2000:]
        # one line (runtime/workflow.py), no jsonschema traceback
        assert "Failed validating" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
        assert [line for line in proc.stderr.splitlines() if "genotile error" in line][0].startswith(
            "genotile error: config"
        )
