"""Inputs that were read as something else (issue 15): each is now one clear error naming the
file and the record, through every reader that could meet it."""

import math
import subprocess
import sys

import pytest
from genodata import random_genotypes, vcf_text, write_vcf

from genotile.cli import main
from genotile.core.limits import check_config_thresholds
from genotile.errors import GenotileError
from genotile.io.fasta import read_alignment
from genotile.io.fastq import read_fastq
from genotile.io.gzcheck import BGZF_EOF
from genotile.screen.signatures import read_signatures
from genotile.store import ingest as ingest_module

ALIGNMENT = ">a\nACGT\n>b\nACGA\n>c\nTCGA\n"


def ingest(*args, **kwargs) -> dict:
    """The ingest manifest of store/ingest.ingest."""
    return ingest_module.ingest(*args, **kwargs).manifest


def ingest_fasta(tmp_path, text: bytes):
    path = tmp_path / "in.fa"
    path.write_bytes(text)
    return ingest(path, "nucleotide", tmp_path / "codes.npy", tmp_path / "m.json")


def test_fasta_with_cr_only_line_ends_is_refused(tmp_path):
    with pytest.raises(GenotileError, match=r"in.fa: CR-only line ends"):
        ingest_fasta(tmp_path, ALIGNMENT.replace("\n", "\r").encode())
    assert not (tmp_path / "codes.npy").exists()


def test_fasta_with_a_stray_cr_in_a_header_is_refused_by_record(tmp_path):
    # LF line ends (the regular layout the memory-mapped reader takes) and one CR mid-header
    with pytest.raises(GenotileError, match=r"in.fa: record 2: a carriage return inside the header line"):
        ingest_fasta(tmp_path, b">a\nACGT\n>b\rx\nACGA\n>c\nTCGA\n")


@pytest.mark.parametrize("header", ["> b", ">\tb", ">"])
@pytest.mark.parametrize("wrapped", [False, True])  # the memory-mapped reader, then the streaming one
def test_fasta_header_starting_with_whitespace_has_an_empty_id(tmp_path, header, wrapped):
    text = ALIGNMENT.replace(">b", header)
    if wrapped:
        text = text.replace("ACGA", "AC\nGA")
    with pytest.raises(GenotileError, match=r"in.fa: record 2 has an empty ID"):
        ingest_fasta(tmp_path, text.encode())
    with pytest.raises(GenotileError, match=r"record 2 has an empty ID"):
        list(read_alignment(tmp_path / "in.fa"))


def test_fastq_and_signature_ids_follow_the_same_rule(tmp_path):
    fq, fa = tmp_path / "r.fq", tmp_path / "s.fa"
    fq.write_text("@r1\nACGT\n+\nIIII\n@ r2\nACGT\n+\nIIII\n")
    fa.write_text(">s1\nACGT\n> s2\nACGT\n")
    with pytest.raises(GenotileError, match=r"r.fq: line 5: record 2 has an empty ID"):
        list(read_fastq(fq))
    with pytest.raises(GenotileError, match=r"s.fa: line 3: record 2 has an empty ID"):
        list(read_signatures(fa))


def test_fastq_and_signatures_with_cr_only_line_ends_are_refused(tmp_path):
    fq, fa = tmp_path / "r.fq", tmp_path / "s.fa"
    fq.write_bytes(b"@r1\rACGT\r+\rIIII\r")
    fa.write_bytes(b">s1\rACGT\r>s2\rACGT\r")
    with pytest.raises(GenotileError, match=r"r.fq: line 1: a carriage return inside the line"):
        list(read_fastq(fq))
    with pytest.raises(GenotileError, match=r"s.fa: line 1: a carriage return inside the line"):
        list(read_signatures(fa))


def bgzip(path, text: str, cut_eof: bool):
    import pysam

    src = path.with_suffix(".src")
    src.write_text(text)
    pysam.tabix_compress(str(src), str(path), force=True)
    data = path.read_bytes()
    assert data.endswith(BGZF_EOF)
    if cut_eof:  # cut at a block boundary: still a valid gzip stream, one block short
        path.write_bytes(data[: -len(BGZF_EOF)])
    return path


@pytest.mark.parametrize("reader", ["fastq", "signatures"])
def test_bgzip_cut_at_a_block_boundary_is_refused(tmp_path, reader):
    text = "@r1\nACGT\n+\nIIII\n" if reader == "fastq" else ">s1\nACGT\n"
    read = read_fastq if reader == "fastq" else read_signatures
    whole = bgzip(tmp_path / "whole.gz", text, cut_eof=False)
    assert len(list(read(whole))) == 1
    cut = bgzip(tmp_path / "cut.gz", text, cut_eof=True)
    with pytest.raises(GenotileError, match=r"cut.gz: BGZF file without its end-of-file block"):
        list(read(cut))


def test_duplicate_variant_id_is_refused_for_ccc2_naming_id_and_variants(tmp_path):
    g = random_genotypes(6, 5, seed=41)
    ids = ["rs0", "rs1", "rs2", "rs1", "rs4"]
    path = write_vcf(tmp_path / "d.vcf", vcf_text(g, ids=ids))
    with pytest.raises(GenotileError, match=r"d.vcf: duplicate variant ID 'rs1' \(variants 2 and 4 in file order"):
        ingest(path, "genotype_t", tmp_path / "t.npy", tmp_path / "t.json")
    assert not (tmp_path / "t.npy").exists() and not (tmp_path / "t.json").exists()
    ingest(path, "genotype", tmp_path / "g.npy", tmp_path / "g.json")  # samples are the vectors: fine


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "20"])
def test_non_finite_thresholds_and_min_scores_are_refused_in_the_config(value):
    with pytest.raises(GenotileError, match=r"thresholds: snp must be a finite number or null"):
        check_config_thresholds({"thresholds": {"snp": value}})
    with pytest.raises(GenotileError, match=r"screens: s: min_score must be a finite number or null"):
        check_config_thresholds({"thresholds": {"snp": 3}, "screens": {"s": {"min_score": value}}})
    check_config_thresholds({"thresholds": {"snp": 3, "king": None}, "screens": {"s": {"min_score": 30.1}}})


@pytest.mark.parametrize("text", ["snp=nan", "snp=inf", "snp=-Infinity", "snp=abc"])
def test_non_finite_threshold_is_refused_by_the_cli_in_one_line(tmp_path, text, capsys):
    (tmp_path / "a.fa").write_text(ALIGNMENT)
    with pytest.raises(SystemExit) as exc:
        main(["run", str(tmp_path / "a.fa"), "--outdir", str(tmp_path / "out"), "--metric", "snp", "--threshold", text])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --threshold: {text!r}:" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_nan_threshold_in_a_workflow_config_stops_before_any_job(tmp_path):
    from snakerun import snakemake

    (tmp_path / "a.fa").write_text(ALIGNMENT)
    config = {"datasets": {"d": {"input": str(tmp_path / "a.fa"), "metrics": ["snp"]}}, "thresholds": {"snp": 1}}
    cfg = tmp_path / "config.yaml"
    proc = snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode == 0
    cfg.write_text(cfg.read_text().replace("snp: 1", "snp: .nan"))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(__import__("snakerun").REPO / "Snakefile"), "-n"]
        + ["--directory", str(tmp_path), "--configfile", str(cfg)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "thresholds: snp must be a finite number or null, not nan" in proc.stdout + proc.stderr
