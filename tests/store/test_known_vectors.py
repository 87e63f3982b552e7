"""store/inputs.py known_vectors: the vectors of an input known before its store (dense formats
past dense_max are refused at parse time by them) are the ones its store holds."""

import gzip
import os
import shutil
import subprocess

import cyvcf2
import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import random_alignment, write_fasta

from genotile.io.fasta import count_records
from genotile.store.ingest import ingest
from genotile.store.inputs import known_vectors
from genotile.store.sources import recorded_count, write_fingerprint


def stored_vectors(path, encoding, tmp_path, **options) -> int:
    return ingest(path, encoding, tmp_path / "codes.npy", tmp_path / "m.json", **options).manifest["n_vectors"]


def test_a_fastas_records_are_its_stores_vectors(tmp_path):
    plain = tmp_path / "in.fa"
    write_fasta(plain, random_alignment(np.random.default_rng(0), 7, 50))
    # blank lines first, CRLF line ends, gzip: the records the reader splits
    text = b"\n\n" + plain.read_bytes().replace(b"\n", b"\r\n")
    gz = tmp_path / "in.fa.gz"
    gz.write_bytes(gzip.compress(text))
    # a byte-order mark, spaces before the first '>': the reader skips them too
    marked = tmp_path / "bom.fa"
    marked.write_bytes(b"\xef\xbb\xbf \n  \t" + plain.read_bytes())
    for path in (plain, gz, marked):
        assert known_vectors(path, "snp") == stored_vectors(path, "nucleotide", tmp_path) == 7
    assert known_vectors(tmp_path / "absent.fa", "snp") is None  # its reader names it


def test_a_vcf_or_bcfs_samples_are_its_stores_vectors(tmp_path):
    vcf = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(9, 30, seed=2)))
    reader = cyvcf2.VCF(str(vcf))
    bcf = tmp_path / "g.bcf"
    writer = cyvcf2.Writer(str(bcf), reader, mode="wb")
    for record in reader:
        writer.write_record(record)
    writer.close()
    for path in (vcf, bcf):
        assert known_vectors(path, "ibs") == stored_vectors(path, "genotype", tmp_path) == 9
    picked = {"samples": ["s4", "s1", "s7"]}
    assert known_vectors(vcf, "ibs", picked) == stored_vectors(vcf, "genotype", tmp_path, **picked) == 3
    # a list naming a sample the file lacks: the store refuses it, by name
    assert known_vectors(vcf, "ibs", {"samples": ["s1", "nobody"]}) is None
    # vectors that are variants: only the store knows which the rules keep
    assert known_vectors(vcf, "ccc2") is None


def test_a_filesets_samples_are_its_stores_vectors(tmp_path):
    if shutil.which("plink2") is None:
        pytest.skip("plink2 is not installed (Debian: apt-get install -y plink2)")
    text = vcf_text(random_genotypes(11, 30, seed=4))
    for half in ("./1", "1/.", ".|1", "1|."):  # refused by plink2 unless --vcf-half-call
        text = text.replace(f"\t{half}", "\t./.")
    vcf = write_vcf(tmp_path / "g.vcf", text)
    for flag, name in (("--make-bed", "b.bed"), ("--make-pgen", "p.pgen")):
        out = tmp_path / name.split(".")[0]
        subprocess.run(["plink2", "--vcf", vcf, flag, "--out", out, "--threads", "1"], check=True, capture_output=True)
        path = tmp_path / name
        assert known_vectors(path, "king") == stored_vectors(path, "genotype", tmp_path) == 11
        picked = {"samples": ["s3", "s0"]}
        assert known_vectors(path, "ibs", picked) == stored_vectors(path, "genotype", tmp_path, **picked) == 2


def test_a_count_is_kept_in_the_fingerprint_while_the_input_is_unchanged(tmp_path):
    path, record = tmp_path / "in.fa", tmp_path / "fp.json"
    path.write_bytes(b">a\nACGT\n>b\nACGA\n")
    write_fingerprint(record, path)
    mtime = record.stat().st_mtime_ns
    counted: list[int] = []

    def count(p):
        counted.append(1)
        return count_records(p)

    assert recorded_count(record, path, count) == 2
    assert recorded_count(record, path, count) == 2
    assert counted == [1], "counted once"
    assert record.stat().st_mtime_ns == mtime, "the store's input kept its time"
    path.write_bytes(b">a\nACGT\n>b\nACGA\n>c\nACGG\n")
    os.utime(path, ns=(mtime + 10**9, mtime + 10**9))
    write_fingerprint(record, path)
    assert recorded_count(record, path, count) == 3
    assert counted == [1, 1]


def test_a_vcf_zarr_stores_samples_are_its_stores_vectors(tmp_path):
    from bio2zarr.vcf import convert  # the test extra's

    vcf = write_vcf(tmp_path / "g.vcf.gz", vcf_text(random_genotypes(8, 30, seed=6)), index=True)
    vcz = tmp_path / "g.vcz"
    convert([str(vcf)], str(vcz), worker_processes=0)
    assert known_vectors(vcz, "king") == stored_vectors(vcz, "genotype", tmp_path) == 8
    picked = {"samples": ["s2", "s5"]}
    assert known_vectors(vcz, "king", picked) == stored_vectors(vcz, "genotype", tmp_path, **picked) == 2
    assert known_vectors(tmp_path / "absent.vcz", "king") is None  # its reader names it
