"""ccc3 through the Snakemake workflow: triples.tsv.gz against brute force, stages and block sizes
giving the same bytes, the plan in the dry run, the null-threshold refusal."""

import gzip
import itertools
import json

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from reference import ccc3_triple
from snakerun import job_counts, snakemake

from genotile.core import ccc3


def config_for(path, **extra):
    return {
        "datasets": {"g": {"input": str(path), "metrics": ["ccc2", "ccc3"]}},
        "thresholds": {"ccc2": 0.3, "ccc3": extra.pop("threshold", 0.21)},
        "block_size": 11,
        "backend": "numpy",
        **extra,
    }


@pytest.fixture(scope="module")
def vcf(tmp_path_factory):
    g = random_genotypes(30, 20, p_missing=0.08, seed=21)  # samples x variants: 20 SNP vectors
    path = write_vcf(tmp_path_factory.mktemp("vcf3") / "g.vcf.gz", vcf_text(g, seed=21))
    return path, np.ascontiguousarray(g.T)


def read_triples(path):
    with gzip.open(path, "rt") as fh:
        lines = fh.read().splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def test_triples_equal_brute_force_and_stages_agree(vcf, tmp_path):
    path, vectors = vcf
    runs = {}
    for name, ccc3_cfg in (("staged", {"block_size": 7, "stages": 3}), ("whole", {"stages": 1})):
        work = tmp_path / name
        work.mkdir()
        proc = snakemake(work, config_for(path, ccc3=ccc3_cfg))
        assert "; threshold 0.21\n" in proc.stderr  # the plan's console line
        runs[name] = work
        if name == "staged":  # 3 blocks of 7, 6, 7: 10 block triples x 3 stages
            assert job_counts(proc.stdout + proc.stderr).get("triples", 30) == 30
            assert len(list((work / "results/g/ccc3/triples").glob("triples_*.npz"))) == 30
    out = {k: (w / "results/g/ccc3/triples.tsv.gz").read_bytes() for k, w in runs.items()}
    assert out["staged"] == out["whole"]
    header, rows = read_triples(runs["whole"] / "results/g/ccc3/triples.tsv.gz")
    assert header == ["id1", "id2", "id3", *ccc3.COLUMNS]
    ids = [f"1:{10 * v + 5}:A:G" for v in range(vectors.shape[0])]
    expected = []
    for a, b, c in itertools.combinations(range(vectors.shape[0]), 3):
        ref = ccc3_triple(vectors[a], vectors[b], vectors[c])
        if any(ref[col] >= 0.21 for col in ccc3.COLUMNS):
            expected.append([ids[a], ids[b], ids[c], *(repr(float(ref[col])) for col in ccc3.COLUMNS)])
    assert 0 < len(expected) < 1140
    assert rows == expected
    summary = json.loads((runs["staged"] / "results/g/ccc3/summary.json").read_text())
    assert summary["triples_computed"] == 1140 and summary["triples_passing"] == len(expected)
    assert summary["plan"]["n_jobs"] == 30 and len(summary["jobs"]) == 30
    # the dry run after the plan: nothing to do; after deleting one stage's file, that job and the merge
    (runs["staged"] / "results/g/ccc3/triples/triples_0_1_2_1.npz").unlink()
    dry = snakemake(runs["staged"], config_for(path, ccc3={"block_size": 7, "stages": 3}), "-n")
    counts = job_counts(dry.stdout + dry.stderr)
    assert counts.get("triples") == 1 and counts.get("triples_merge") == 1, counts
    assert "30 triple job(s), 1140 unique triples" in dry.stdout + dry.stderr


def test_null_threshold_beyond_2000_vectors_is_refused_at_planning(tmp_path):
    g = random_genotypes(4, 2001, p_missing=0.0, seed=1, special=False)
    path = write_vcf(tmp_path / "big.vcf", vcf_text(g, seed=1))
    proc = snakemake(tmp_path, config_for(path, threshold=None), check=False)
    assert proc.returncode != 0
    assert "genotile error: dataset g: ccc3 with a null threshold" in proc.stderr
    assert "2,001 vectors" in proc.stderr and "allowed up to 2,000 vectors" in proc.stderr
    assert not list(tmp_path.rglob("triples_*.npz"))


def test_null_threshold_bound_is_configurable(tmp_path):
    """`ccc3: null_threshold_max` moves the bound: 25 SNPs pass at 25, stop at 24 (naming the key)."""
    g = random_genotypes(6, 25, p_missing=0.1, seed=3)
    path = write_vcf(tmp_path / "g.vcf", vcf_text(g, seed=3))
    low, ok = tmp_path / "low", tmp_path / "ok"
    low.mkdir()
    ok.mkdir()
    proc = snakemake(low, config_for(path, threshold=None, ccc3={"null_threshold_max": 24}), check=False)
    assert proc.returncode != 0
    assert "25 vectors" in proc.stderr and "allowed up to 24 vectors (ccc3: null_threshold_max)" in proc.stderr
    assert not list(low.rglob("triples_*.npz"))
    proc = snakemake(ok, config_for(path, threshold=None, ccc3={"null_threshold_max": 25}))
    # the plan's console line says the null threshold in the config's word, not Python's None
    plan = [line for line in proc.stderr.splitlines() if line.startswith("genotile plan for g: ") and "triple" in line]
    assert plan and all(line.endswith("; threshold null") for line in plan), plan
    with gzip.open(ok / "results/g/ccc3/triples.tsv.gz", "rt") as fh:
        assert sum(1 for _ in fh) == 1 + 25 * 24 * 23 // 6  # header + every triple


def test_job_refuses_a_damaged_store_naming_the_file(tmp_path):
    """A ccc3 job reads the store's permutation and manifest through the checked loaders."""
    from genotile.errors import GenotileError
    from genotile.triples import stage as triples_stage

    g = random_genotypes(6, 9, p_missing=0.1, seed=4)
    path = write_vcf(tmp_path / "g.vcf", vcf_text(g, seed=4))
    work = tmp_path / "run"
    work.mkdir()
    snakemake(work, config_for(path, threshold=None))
    store = work / "results/g/store/genotype_t"
    job = {"block_size": 11, "stages": 1, "threshold": None, "backend": "numpy"}
    bad_perm, bad_manifest = tmp_path / "perm.npy", tmp_path / "manifest.json"
    bad_perm.write_bytes((store / "perm.npy").read_bytes()[:-9])  # truncated
    bad_manifest.write_text((store / "manifest.json").read_text()[:40])  # cut JSON
    with pytest.raises(GenotileError, match=rf"{bad_perm}.*unreadable"):
        triples_stage.triple_job(
            store / "planes.npy", store / "manifest.json", bad_perm, 0, 0, 0, 0, out=tmp_path / "t.npz", **job
        )
    with pytest.raises(GenotileError, match=str(bad_manifest)):
        triples_stage.triple_job(
            store / "planes.npy", bad_manifest, store / "perm.npy", 0, 0, 0, 0, out=tmp_path / "t.npz", **job
        )
    with pytest.raises(GenotileError, match=str(bad_manifest)):
        triples_stage.merge(
            [],
            bad_manifest,
            block_size=11,
            stages=1,
            triples_out=tmp_path / "x.tsv.gz",
            summary_out=tmp_path / "x.json",
            config={},
        )
    assert not (tmp_path / "t.npz").exists() and not (tmp_path / "x.tsv.gz").exists()


def test_null_threshold_output_past_the_free_disk_is_refused(tmp_path, monkeypatch):
    """Issue 30, goal 5: a run keeping every triple must fit the free space where it writes (its
    peak: the job files, then the largest job's spilled runs or triples.tsv.gz beside them); else
    one line with the sizes, before any job. What is already there counts as written, and a
    merged output is not asked again (Snakemake evaluates the plan at every DAG build)."""
    import collections
    import shutil

    from genotile.core.plan import Plan
    from genotile.errors import GenotileError
    from genotile.triples import stage

    usage = collections.namedtuple("usage", "total used free")
    free = {"bytes": 20 * 10**9}
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, free["bytes"]))
    one_job = ccc3.Plan3.from_plan(Plan(941, 4096, 1), 4096, 1)  # the bundled example: one job
    out = tmp_path / "not" / "yet"
    stage.check_output_room(one_job, 0.3, out)  # a threshold: its output is not known
    with pytest.raises(GenotileError) as err:  # 12.2 GB of files, the spill as large again: 24.4 GB
        stage.check_output_room(one_job, None, out, "dataset g: ")
    text = str(err.value)
    assert text.startswith("dataset g: ccc3 keeping every triple (threshold null) over 941 SNPs writes all 138,430,510")
    assert "12.2 GB of job files and 7.2 GB of triples.tsv.gz, 24.4 GB more at its peak" in text
    assert f"more than the 20.0 GB free under {tmp_path}" in text  # the folder the output will be made in
    with pytest.raises(GenotileError, match="threshold 0.0"):  # a threshold <= 0 keeps every triple too
        stage.check_output_room(one_job, 0.0, out)
    free["bytes"] = 25 * 10**9
    stage.check_output_room(one_job, None, out)  # fits
    many = ccc3.Plan3.from_plan(Plan(941, 128, 1), 128, 1)  # many jobs: the largest one's spill is small
    free["bytes"] = 13 * 10**9
    with pytest.raises(GenotileError):
        stage.check_output_room(many, None, out)  # 12.2 + 7.2 GB at the merge
    free["bytes"] = 20 * 10**9
    stage.check_output_room(many, None, out)
    out.mkdir(parents=True)
    (out / "triples_0_0_0_0.npz").write_bytes(b"x" * 1000)
    free["bytes"] = 1000
    with pytest.raises(GenotileError, match="more than the 1.0 kB free"):
        stage.check_output_room(one_job, None, out)
    (out / "triples.tsv.gz").write_bytes(b"")  # merged: not asked again
    stage.check_output_room(one_job, None, out)


def test_genotile_run_refuses_a_null_threshold_past_the_free_disk(vcf, tmp_path, monkeypatch, capsys):
    """`genotile run --metric ccc3` with no threshold: refused in one line where the disk lacks room."""
    import collections
    import shutil

    from genotile.cli import main

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 1000))
    path, _ = vcf
    code = main(["run", str(path), "--outdir", str(tmp_path / "o"), "--metric", "ccc3"])
    err = capsys.readouterr().err
    assert code != 0
    lines = [line for line in err.splitlines() if line.startswith("genotile error:")]
    assert len(lines) == 1 and "ccc3 keeping every triple (threshold null) over 20 SNPs writes all 1,140" in lines[0]
    assert "100.3 kB of job files" in lines[0] and "more than the 1.0 kB free" in lines[0]
    assert "Traceback" not in err and not list((tmp_path / "o").rglob("triples_*.npz"))


def test_an_auto_block_size_is_resolved_by_the_stores_planes(vcf, tmp_path):
    """ccc3's GPU default, block_size "auto" (settings.ccc3_plan_settings on GPUs), is resolved
    by the store's plane words in the run, its jobs and its merge alike: the one block the fused
    kernel's planes allow here (ccc3.GPU_BLOCK_SIZE), the triples of that block size byte for byte;
    where the workflow runs on a cluster (gpus 0) its settings are the CPU's, whatever the host."""
    from genotile import pipeline, settings
    from genotile.store.reuse import current_store
    from genotile.triples.stage import ccc3_block_size

    current_store(vcf[0], "genotype_t", tmp_path / "out", 64, 1)
    store = tmp_path / "out" / "store" / "genotype_t"
    runs = {}
    for size in ("auto", ccc3.GPU_BLOCK_SIZE):
        runs[size] = pipeline.run_ccc3(store, tmp_path / str(size), block_size=size, stages=2, threshold=0.21)
    assert runs["auto"]["plan"]["block_size"] == ccc3.GPU_BLOCK_SIZE
    assert runs["auto"]["triples_passing"] == runs[ccc3.GPU_BLOCK_SIZE]["triples_passing"] > 0
    want = (tmp_path / str(ccc3.GPU_BLOCK_SIZE) / "triples.tsv.gz").read_bytes()
    assert gzip.decompress((tmp_path / "auto" / "triples.tsv.gz").read_bytes()) == gzip.decompress(want)
    assert ccc3_block_size("auto", 2_000) == ccc3.GPU_BLOCK_SIZE  # wider planes: the streamed kernel
    workflow = {"block_size": "auto", "backend": "auto", "ccc3": {}}
    assert settings.ccc3_plan_settings(workflow, gpus=0) == (ccc3.CPU_BLOCK_SIZE, 1)
    assert settings.ccc3_plan_settings(workflow, gpus=3) == ("auto", 3)
