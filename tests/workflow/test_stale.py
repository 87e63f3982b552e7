"""No stale result whatever changed between runs (issue 15): `genotile run` reuses a store only
when its recorded input content, option files and settings are the current ones."""

import json
import os
import shutil

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import jobs_run, random_alignment, snakemake, write_fasta

from genotile.cli import main
from genotile.pipeline import run_all

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
    assert got == clean(tmp_path, b, None, ["snp"], block_size="auto")  # the CLI's default


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
    assert "store (nucleotide): recomputing in full: the input's earlier bytes changed" in caplog.text


def test_block_size_and_seed_changes_rebuild_the_plan(tmp_path, caplog):
    path, out = fasta(tmp_path / "in.fa", 5, n=13), tmp_path / "out"
    run_all(path, out, ["snp"], block_size=4)
    with caplog.at_level("INFO", logger="genotile"):
        run_all(path, out, ["snp"], block_size=5, seed=7)
    got = outputs(out)
    assert got["summary"]["plan"]["block_size"] == 5 and got["summary"]["plan"]["seed"] == 7
    assert got == clean(tmp_path, path, None, ["snp"], block_size=5, seed=7)
    assert "store (nucleotide): recomputing in full: seed changed (1 -> 7)" in caplog.text


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


# -- the Snakemake workflow --


def _snakemake_outputs(work, dataset, metric) -> dict:
    folder = work / "results" / dataset / metric
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.tsv*"))}


def _set_back(path, like):
    st = os.stat(like)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_snakemake_reruns_on_content_changed_with_an_older_mtime(tmp_path):
    path = fasta(tmp_path / "in.fa", 12, n=11)
    config = {"datasets": {"d": {"input": str(path), "metrics": ["snp"]}}, "thresholds": {"snp": 40}, "block_size": 5}
    work = tmp_path / "work"
    work.mkdir()
    snakemake(work, config)
    fasta(path, 13, n=11)  # new content, same shape...
    _set_back(path, tmp_path / "in.fa")
    os.utime(path, (1_000_000_000, 1_000_000_000))  # ...and an mtime older than every output
    proc = snakemake(work, config)
    assert jobs_run(proc.stderr).get("store") == 1
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    snakemake(fresh, config)
    assert _snakemake_outputs(work, "d", "snp") == _snakemake_outputs(fresh, "d", "snp")
    again = snakemake(work, config, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.parametrize("option", ["samples", "regions"])
def test_snakemake_reruns_on_an_option_file_edit(tmp_path, option):
    g = random_genotypes(12, 50, seed=14)
    vcf = write_vcf(tmp_path / "in.vcf.gz", vcf_text(g), index=True)
    samples, regions = tmp_path / "samples.txt", tmp_path / "regions.txt"
    samples.write_text("s3\ns1\ns0\ns7\ns9\n")
    regions.write_text("1:1-300\n")
    spec = {"input": str(vcf), "metrics": ["ibs"], "samples": str(samples), "regions": str(regions)}
    config = {"datasets": {"v": spec}, "thresholds": {"ibs": None}}
    work = tmp_path / "work"
    work.mkdir()
    snakemake(work, config)
    edited = samples if option == "samples" else regions
    old = os.stat(edited)
    edited.write_text("s3\ns1\ns0\ns7\ns10\n" if option == "samples" else "1:200-480\n")
    os.utime(edited, ns=(old.st_atime_ns, old.st_mtime_ns))  # content only
    snakemake(work, config)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    snakemake(fresh, config)
    assert _snakemake_outputs(work, "v", "ibs") == _snakemake_outputs(fresh, "v", "ibs")


def test_matrix_and_tiles_the_new_config_does_not_write_are_removed(tmp_path):
    out = tmp_path / "out"
    run_all(fasta(tmp_path / "a.fa", 15, n=10), out, ["snp"], block_size=3)
    assert (out / "snp" / "matrix.tsv").exists() and (out / "snp" / "pairs" / "tile_3_3.npz").exists()
    b = fasta(tmp_path / "b.fa", 16, n=10)
    run_all(b, out, ["snp"], block_size=4, dense_max=5)  # now 10 > dense_max: no matrix
    got = outputs(out)
    assert "matrix.tsv" not in got and got["listed"] == ["histogram", "pairs"]
    assert got == clean(tmp_path, b, None, ["snp"], block_size=4, dense_max=5)
    tiles = sorted(p.name for p in (out / "snp" / "pairs").glob("tile_*"))
    assert tiles == ["tile_0_0.npz", "tile_0_1.npz", "tile_0_2.npz", "tile_1_1.npz", "tile_1_2.npz", "tile_2_2.npz"]


def test_snakemake_merge_refuses_tiles_of_another_threshold(tmp_path):
    path = fasta(tmp_path / "in.fa", 17, n=11)
    config = {"datasets": {"d": {"input": str(path), "metrics": ["snp"]}}, "thresholds": {"snp": 100}, "block_size": 5}
    work = tmp_path / "work"
    work.mkdir()
    snakemake(work, config)
    (work / "results/d/snp/pairs/tile_1_2.npz").unlink()
    config["thresholds"]["snp"] = 2
    proc = snakemake(work, config, "--rerun-triggers", "mtime", check=False)
    assert proc.returncode != 0
    assert "results/d/snp/pairs/tile_0_0.npz: computed with threshold 100, not the current 2" in proc.stderr
    snakemake(work, config)  # the default triggers: the params changed, every tile reruns
    assert json.loads((work / "results/d/snp/summary.json").read_text())["threshold"] == 2


def test_snakemake_reruns_after_a_sequence_of_edits_equal_clean_runs(tmp_path):
    """dense_max dropped below n with a new input, the samples file edited, the old input
    restored with an older mtime: after each, the results equal a clean run's, file for file."""
    texts = [vcf_text(random_genotypes(9, 30, seed=s), seed=s) for s in (61, 62)]
    vcf, samples = tmp_path / "in.vcf", tmp_path / "samples.txt"
    vcf.write_text(texts[0])
    samples.write_text("s0\ns2\ns3\ns5\ns8\n")
    spec = {"input": str(vcf), "metrics": ["ibs"], "samples": str(samples)}
    config = {"datasets": {"v": spec}, "thresholds": {"ibs": 0.45}, "block_size": 3, "dense_max": 100}
    work = tmp_path / "work"
    work.mkdir()
    snakemake(work, config)
    assert (work / "results/v/ibs/matrix.tsv").exists()

    def old_mtime(path):
        os.utime(path, (1_000_000_000, 1_000_000_000))

    steps = [
        lambda: (vcf.write_text(texts[1]), config.update(dense_max=3)),
        lambda: (samples.write_text("s8\ns1\ns4\ns6\ns2\ns0\n"), old_mtime(samples)),
        lambda: (vcf.write_text(texts[0]), old_mtime(vcf)),
    ]
    for k, step in enumerate(steps):
        step()
        snakemake(work, config)
        fresh = tmp_path / f"fresh{k}"
        fresh.mkdir()
        snakemake(fresh, config)
        assert _snakemake_outputs(work, "v", "ibs") == _snakemake_outputs(fresh, "v", "ibs"), k
    assert not (work / "results/v/ibs/matrix.tsv").exists()
