"""bench/trace_snakemake.py: a whole run's split into Snakemake's phases and each job's start,
imports, work and end (bench/RESULTS.md, "Session 14: the time around the jobs")."""

import subprocess
import sys

import numpy as np
from snakerun import REPO, random_alignment, snakemake_cmd, write_fasta


def _split(tmp_path, *extra) -> dict:
    """The table's rows ({phase: seconds}) of bench/trace_snakemake.py over a small snp run
    (`extra`: further snakemake arguments)."""
    write_fasta(tmp_path / "a.fa", random_alignment(np.random.default_rng(1), 6, 40))
    config = {"datasets": {"d": {"input": str(tmp_path / "a.fa"), "metrics": ["snp"]}}, "report": False}
    args = snakemake_cmd(tmp_path, config, "--cores", "2", *extra)[3:]  # after `python -m snakemake`
    out = tmp_path / "split.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "trace_snakemake.py"), "--out", str(out), "--", *args],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict((c.strip() for c in line.strip("|").split("|")) for line in out.read_text().splitlines()[2:])


def test_a_runs_split_names_every_phase_and_job(tmp_path):
    rows = _split(tmp_path)
    assert [name.split(" (")[0] for name in rows if name.startswith("job ")] == [
        "job store.py",
        "job tile.py",
        "job matrix.py",
        "job merge.py",
    ]
    for name, value in rows.items():
        assert all(float(v) >= 0 for v in value.split(" / ")), (name, value)
    assert float(rows["whole run"]) >= float(rows["the Snakefile parsed (genotile's rules)"]) > 0
    assert (tmp_path / "results" / "d" / "snp" / "pairs.tsv.gz").exists()


def test_a_dry_run_is_split_up_to_its_dag(tmp_path):
    """No job runs: the table ends with the whole run (issue 27: the parse of a large input timed
    with `-n`)."""
    rows = _split(tmp_path, "-n")
    assert list(rows)[-1] == "whole run (no job ran)" and not any(name.startswith("job ") for name in rows)
    assert float(rows["the Snakefile parsed (genotile's rules)"]) > 0


def test_only_a_rules_script_is_a_job(tmp_path):
    """A process a job starts (a device pool's worker: `python -B -c ...`) is the job's child, not a
    job row of its own (the 2-GPU traces of Session 17 had a row "job -B" a worker, the job rows
    after it misaligned)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import trace_snakemake
    finally:
        sys.path.remove(str(REPO / "bench"))
    (tmp_path / "sitecustomize.py").write_text(trace_snakemake.SITECUSTOMIZE)
    script = tmp_path / "tmpab12cd.store.py"
    script.write_text("pass\n")
    marks = tmp_path / "marks.tsv"
    env = {"GENOTILE_TRACE": str(marks), "PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for cmd in (
        [sys.executable, "-B", "-c", "pass"],
        [sys.executable, str(script)],
        [sys.executable, "-m", "json.tool", "--help"],
    ):
        subprocess.run(cmd, env=env, capture_output=True, check=False)
    kinds = [kind for _, _, kind, what in trace_snakemake.read_marks(marks) if what == "ready"]
    assert sorted(kinds) == ["child", "child", "job store.py"], kinds
