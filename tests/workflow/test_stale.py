"""No stale result whatever changed between runs (issue 15): `genotile run` reuses a store only
when its recorded input content, option files and settings are the current ones."""

import json
import os
import shutil

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import random_alignment, write_fasta

from genotile.cli import main
from genotile.pairs.steps import run_all

OUTPUTS = ("matrix.tsv", "pairs.tsv.gz", "histogram.tsv")


def outputs(outdir, metric="snp") -> dict:
    """The metric's result files by name (those that exist), and the summary's provenance."""
    folder = outdir / metric
    found = {name: (folder / name).read_bytes() for name in OUTPUTS if (folder / name).exists()}
    s = json.loads((folder / "summary.json").read_text())
    found["summary"] = {k: s[k] for k in ("input", "input_sha256", "threshold", "plan", "n_vectors", "pairs_passing")}
    found["listed"] = sorted(s["outputs"])
    return found


def clean(tmp_path, *args, **kwargs) -> dict:
    """The outputs of the same run in a fresh folder."""
    fresh = tmp_path / f"clean{len(list(tmp_path.glob('clean*')))}"
    run_all(*args[:1], fresh, *args[2:], **kwargs)
    return outputs(fresh, args[2][0])


def fasta(path, seed, n=9, length=70):
    write_fasta(path, random_alignment(np.random.default_rng(seed), n, length))
    return path


def test_another_input_in_the_same_outdir_is_not_reused(tmp_path):
    a, b = fasta(tmp_path / "a.fa", 1), fasta(tmp_path / "b.fa", 2)
    out = tmp_path / "out"
    assert main(["run", str(a), "--outdir", str(out), "--metric", "snp"]) == 0
    assert main(["run", str(b), "--outdir", str(out), "--metric", "snp"]) == 0
    got = outputs(out)
    assert got["summary"]["input"] == str(b)
    assert got == clean(tmp_path, b, None, ["snp"])


def test_edited_input_restored_with_an_older_mtime_is_noticed(tmp_path, caplog):
    path, out = fasta(tmp_path / "in.fa", 3), tmp_path / "out"
    backup = tmp_path / "backup.fa"
    shutil.copy2(path, backup)  # the old content, with the old mtime
    run_all(path, out, ["snp"], thresholds={"snp": 30})
    first = outputs(out)
    fasta(path, 4)  # edited in place
    run_all(path, out, ["snp"], thresholds={"snp": 30})
    assert outputs(out) == clean(tmp_path, path, None, ["snp"], thresholds={"snp": 30}) != first
    shutil.copy2(backup, path)  # `cp -p` back: older mtime than every file of the last run
    st = os.stat(backup)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with caplog.at_level("INFO", logger="genotile"):
        run_all(path, out, ["snp"], thresholds={"snp": 30})
    assert outputs(out) == first
    assert "ingest (nucleotide): recomputing, changed since the last run: input content" in caplog.text


def test_block_size_and_seed_changes_rebuild_the_plan(tmp_path, caplog):
    path, out = fasta(tmp_path / "in.fa", 5, n=13), tmp_path / "out"
    run_all(path, out, ["snp"], block_size=4)
    with caplog.at_level("INFO", logger="genotile"):
        run_all(path, out, ["snp"], block_size=5, seed=7)
    got = outputs(out)
    assert got["summary"]["plan"]["block_size"] == 5 and got["summary"]["plan"]["seed"] == 7
    assert got == clean(tmp_path, path, None, ["snp"], block_size=5, seed=7)
    assert "plan and pack (nucleotide): recomputing, changed since the last run: block_size (4 -> 5); seed" in (
        caplog.text
    )


def test_same_settings_reuse_the_store(tmp_path):
    path, out = fasta(tmp_path / "in.fa", 6), tmp_path / "out"
    run_all(path, out, ["snp"])
    planes = out / "store" / "nucleotide" / "planes.npy"
    before = planes.stat().st_mtime_ns
    run_all(path, out, ["snp"], thresholds={"snp": 3})  # a threshold is the tiles' business
    assert planes.stat().st_mtime_ns == before


@pytest.mark.parametrize("option", ["samples", "regions", "index"])
def test_vcf_option_files_and_index_are_checked(tmp_path, option):
    g = random_genotypes(10, 40, seed=8)
    vcf = write_vcf(tmp_path / "in.vcf.gz", vcf_text(g), index=True)
    samples, regions = tmp_path / "samples.txt", tmp_path / "regions.txt"
    samples.write_text("s3\ns1\ns0\ns7\n")
    regions.write_text("1:1-200\n")
    options = {"samples": str(samples), "regions": str(regions)}
    out = tmp_path / "out"
    run_all(vcf, out, ["ibs"], vcf_options=options)
    old = os.stat(vcf if option == "index" else tmp_path / f"{option}.txt")
    if option == "samples":
        samples.write_text("s3\ns1\ns0\ns8\n")
    elif option == "regions":
        regions.write_text("1:100-400\n")
    else:  # the same VCF and a new index: a cp -p of both from elsewhere
        g2 = random_genotypes(10, 40, seed=9)
        write_vcf(tmp_path / "in.vcf.gz", vcf_text(g2), index=True)
    for changed in (tmp_path / f"{option}.txt", vcf, tmp_path / "in.vcf.gz.tbi"):
        if changed.exists():  # every mtime set back: only the content tells
            os.utime(changed, ns=(old.st_atime_ns, old.st_mtime_ns))
    run_all(vcf, out, ["ibs"], vcf_options=options)
    assert outputs(out, "ibs") == clean(tmp_path, vcf, None, ["ibs"], vcf_options=options)


def test_vcf_rewritten_beside_its_old_index_is_refused_by_name(tmp_path):
    from genotile.errors import GenotileError

    g = random_genotypes(8, 60, seed=10)
    vcf = write_vcf(tmp_path / "in.vcf.gz", vcf_text(g), index=True)
    index = tmp_path / "in.vcf.gz.tbi"
    st = os.stat(index)
    write_vcf(vcf, vcf_text(random_genotypes(8, 90, seed=11)))  # the old index stays
    os.utime(index, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    with pytest.raises(GenotileError, match=r"in.vcf.gz.tbi: index older than the data file"):
        run_all(vcf, tmp_path / "out", ["ibs"], vcf_options={"regions": "1"})
