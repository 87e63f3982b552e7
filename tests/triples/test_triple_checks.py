"""The ccc3 merge trusts no triple file (issue 15): other thresholds, indices outside the job's
blocks, repeated triples are refused by name, even with a valid checksum."""

import pytest
from genodata import random_genotypes, vcf_text, write_vcf

from genotile import pipeline
from genotile.errors import GenotileError
from genotile.io.tilefile import read_tile, write_tile
from genotile.store.reuse import current_store
from genotile.triples import stage as triples_stage


@pytest.fixture()
def ccc3_run(tmp_path):
    path = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(7, 14, seed=31), seed=31))
    current_store(path, "genotype_t", tmp_path / "out", 64, 1)
    store = tmp_path / "out" / "store" / "genotype_t"
    pipeline.run_ccc3(store, tmp_path / "out" / "ccc3", block_size=5, threshold=0.1, backend="numpy")
    return store, tmp_path / "out" / "ccc3"


def merge(store, folder, threshold=0.1):
    plan = triples_stage.plan3(triples_stage.load_json(store / "manifest.json", "m"), 5, 1)
    return triples_stage.merge(
        triples_stage.triple_paths(folder / "triples", plan),
        store / "manifest.json",
        block_size=5,
        stages=1,
        triples_out=folder / "triples.tsv.gz",
        summary_out=folder / "summary.json",
        config={"threshold": threshold},
    )


def test_triple_files_of_another_threshold_are_refused(ccc3_run):
    store, folder = ccc3_run
    assert merge(store, folder)["triples_computed"] == 14 * 13 * 12 // 6
    with pytest.raises(GenotileError, match=r"triple file .*triples_0_0_0_0.npz: computed with threshold 0.1, not"):
        merge(store, folder, threshold=0.5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a["a"].__setitem__(0, -1), r"is not 0 <= a < b < c < 14"),
        (lambda a: a["c"].__setitem__(0, a["b"][0]), r"is not 0 <= a < b < c < 14"),
        (lambda a: [a[k].__setitem__(1, a[k][0]) for k in a], r"a triple is listed twice"),
        (lambda a: a.update(c=a["c"][:-1]), r"its arrays do not all hold its \d+ triples"),
    ],
)
def test_triple_file_with_bad_indices_is_refused_by_name(ccc3_run, change, message):
    store, folder = ccc3_run
    path = folder / "triples" / "triples_0_1_2_0.npz"
    arrays, meta, _ = read_tile(path)
    assert arrays["a"].size >= 2
    change(arrays)
    write_tile(path, arrays, meta)
    with pytest.raises(GenotileError, match=rf"triple file {path}: .*{message}"):
        merge(store, folder)


def test_triple_from_other_blocks_is_refused(ccc3_run):
    store, folder = ccc3_run
    other = read_tile(folder / "triples" / "triples_0_0_0_0.npz")[0]
    path = folder / "triples" / "triples_0_1_2_0.npz"
    arrays, meta, _ = read_tile(path)
    for k in ("a", "b", "c"):
        arrays[k][0] = other[k][0]
    write_tile(path, arrays, meta)
    with pytest.raises(GenotileError, match=r"lies in blocks \(0, 0, 0\), not this job's \(0, 1, 2\)"):
        merge(store, folder)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_threshold_is_refused_by_a_job(ccc3_run, bad):
    store, folder = ccc3_run
    with pytest.raises(GenotileError, match=r"threshold of ccc3 must be a finite number or null"):
        triples_stage.triple_job(
            store / "planes.npy",
            store / "manifest.json",
            store / "perm.npy",
            0,
            0,
            0,
            0,
            block_size=5,
            stages=1,
            threshold=bad,
            out=folder / "x.npz",
        )
    assert not (folder / "x.npz").exists()


def test_run_ccc3_hands_its_null_bound_to_every_job(tmp_path, monkeypatch):
    """`genotile run --ccc3-null-threshold-max N`: the bound reaches the jobs as well as the plan (a
    job checks it again, as the workflow's triple jobs do), not the default in its place."""
    path = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(7, 14, seed=31), seed=31))
    current_store(path, "genotype_t", tmp_path / "out", 64, 1)
    seen = []
    job = triples_stage.triple_job
    monkeypatch.setattr(triples_stage, "triple_job", lambda *a, **kw: seen.append(kw["null_max"]) or job(*a, **kw))
    store = tmp_path / "out" / "store" / "genotype_t"
    pipeline.run_ccc3(store, tmp_path / "out" / "ccc3", block_size=5, threshold=None, backend="numpy", null_max=99)
    assert seen and set(seen) == {99}
