"""The workflow's own process (runtime/workflow.py): a user error met while the workflow is
parsed or its DAG built is one `genotile error:` line and exit status 1, and two runs in one
directory never run together."""

import fcntl
import os
import subprocess

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import random_alignment, snakemake, snakemake_cmd, write_fasta


def one_line_error(proc, *parts: str, mid_run: bool = False) -> str:
    """The run failed with one `genotile error:` line holding `parts`, and no traceback (past a
    checkpoint, `mid_run`, Snakemake ends as after any failed job: "At least one job did not
    complete successfully")."""
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("genotile error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    for part in parts:
        assert part in errors[0], errors[0]
    noises = ["Traceback", 'File "', "InputFunctionException", "common.smk"] + ([] if mid_run else ["WorkflowError"])
    for noise in noises:
        assert noise not in proc.stderr, proc.stderr[-3000:]
    return errors[0]


@pytest.fixture
def fasta(tmp_path):
    path = tmp_path / "in.fa"
    write_fasta(path, random_alignment(np.random.default_rng(0), 6, 80))
    return path


@pytest.fixture
def vcf(tmp_path):
    return write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(8, 40, seed=1)))


def test_a_metric_given_the_wrong_kind_of_input_is_one_line(tmp_path, fasta, vcf):
    for path, metric, kind in ((fasta, "ibs", "FASTA alignment"), (vcf, "snp", "VCF")):
        proc = snakemake(tmp_path, {"datasets": {"d": {"input": str(path), "metrics": [metric]}}}, "-n", check=False)
        one_line_error(proc, f"input {path}", kind, metric)
    assert not (tmp_path / "results").exists()


def test_schema_errors_name_the_key_in_one_line(tmp_path, fasta):
    cases = (
        ({"datasets": {"d": {"input": str(fasta), "metrics": ["nope"]}}}, "config: datasets.d.metrics.0: 'nope'"),
        ({"datasets": {"d": {"input": str(fasta), "metrics": ["snp"]}}, "block_size": 0}, "config: block_size:"),
        ({"datasets": {"d": {"input": str(fasta), "metrics": ["snp"]}}, "bogus": 1}, "'bogus' was unexpected"),
    )
    for config, part in cases:
        one_line_error(snakemake(tmp_path, config, "-n", check=False), part)


@pytest.mark.parametrize("kind", ["fasta", "vcf"])
def test_a_format_past_dense_max_is_one_line_before_any_job(tmp_path, fasta, vcf, kind):
    """A FASTA's records and a VCF's samples are counted as the workflow is parsed
    (store/inputs.py known_vectors): refused before the store, even in a dry run."""
    path, metric, fmt, n = (fasta, "snp", "snp-dists-csv", 6) if kind == "fasta" else (vcf, "ibs", "mdist", 8)
    config = {"datasets": {"d": {"input": str(path), "metrics": [metric], "formats": [fmt]}}, "dense_max": 4}
    for extra in ((), ("-n",)):
        proc = snakemake(tmp_path, config, *extra, check=False)
        one_line_error(proc, f"dataset d: format {fmt} holds every pair", "dense_max (4)", f"{metric} has {n} ")
        assert "Job stats" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
        assert not (tmp_path / "results").exists()
    # within dense_max, the same dataset runs
    config["dense_max"] = n
    snakemake(tmp_path, config)
    assert (tmp_path / "results/d" / metric / ("snp-dists.csv" if kind == "fasta" else "plink.mdist")).is_file()


def test_a_format_past_dense_max_in_query_mode_is_one_line_before_any_job(tmp_path, fasta):
    """A query's vectors are the input's and the FILE's (against:), both counted as the workflow
    is parsed: refused before the store, as an all-pairs dataset is."""
    other = tmp_path / "other.fa"
    write_fasta(other, random_alignment(np.random.default_rng(1), 3, 80))
    dataset = {"input": str(fasta), "against": str(other), "metrics": ["snp"], "formats": ["snp-dists-csv"]}
    config = {"datasets": {"d": dataset}, "dense_max": 4}
    for extra in ((), ("-n",)):
        proc = snakemake(tmp_path, config, *extra, check=False)
        one_line_error(proc, "dataset d: format snp-dists-csv holds every pair", "dense_max (4)", "snp has 9 ")
        assert "Job stats" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
        assert not (tmp_path / "results").exists()
    config["dense_max"] = 9  # within it, the query runs
    snakemake(tmp_path, config)
    assert (tmp_path / "results/d/snp/snp-dists.csv").is_file()


def test_a_run_is_refused_while_another_holds_the_directory(tmp_path, fasta):
    """Two runs that both passed Snakemake's own lock (its check and its write are two steps):
    the second to reach the run lock starts nothing, whatever the timing."""
    config = {"datasets": {"d": {"input": str(fasta), "metrics": ["snp"]}}}
    lock = tmp_path / ".snakemake/genotile/run.lock"
    lock.parent.mkdir(parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the other run, between its onstart and its end
    try:
        proc = snakemake(tmp_path, config, check=False)
    finally:
        os.close(fd)
    one_line_error(proc, "another Snakemake run is working in", "this one started nothing")
    assert not (tmp_path / "results").exists()
    # a dry run takes no lock; once the other run has ended, the run goes through
    snakemake(tmp_path, config, "-n")
    snakemake(tmp_path, config)
    assert (tmp_path / "results/d/snp/pairs.tsv.gz").is_file()


@pytest.mark.parametrize("attempt", range(4))
def test_two_runs_started_together_one_is_refused(tmp_path, fasta, attempt):
    config = {"datasets": {"d": {"input": str(fasta), "metrics": ["snp", "hamming"]}}, "block_size": 2, "report": False}
    cmd = snakemake_cmd(tmp_path, config, "--cores", "1")
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    codes = sorted(rc for rc, _ in results)
    assert codes == [0, 1], [err[-2000:] for _, err in results]
    refused = next(err for rc, err in results if rc)
    # Snakemake's lock where the other run had written it, else the run lock
    assert "Directory cannot be locked" in refused or "genotile error: another Snakemake run" in refused, refused
    # the run that went through is whole: a rerun has nothing to do
    again = subprocess.run(cmd + ["-n"], capture_output=True, text=True)
    assert "Nothing to be done" in again.stdout + again.stderr
