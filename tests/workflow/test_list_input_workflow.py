"""A dataset's input as a list of files (issue 27, point 1), as the workflow takes it before its
store job: every file an input of the store with a fingerprint of its own (rules/common.smk),
a query's FILE given as a list too; a list of mixed kinds refused in one line before any job."""

import json
import re

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import random_alignment, snakemake, write_fasta
from test_user_errors import one_line_error

SOURCES = ".snakemake/genotile/sources"


@pytest.fixture
def fastas(tmp_path):
    rng = np.random.default_rng(0)
    paths = [tmp_path / f"day{k}.fa" for k in (1, 2, 3)]
    for k, path in enumerate(paths):
        write_fasta(path, random_alignment(rng, 3, 60), ids=[f"d{k}s{i}" for i in range(3)])
    return paths


def store_inputs(proc) -> list[str]:
    """The store job's inputs, as a dry run prints them."""
    text = proc.stdout + proc.stderr
    job = text[text.index("checkpoint store:") :]
    return re.search(r"input: (.*)", job).group(1).split(", ")


def recorded_input(tmp_path, name: str) -> str:
    return json.loads((tmp_path / SOURCES / name).read_text())["sources"]["input"]["path"]


def test_every_listed_file_is_an_input_of_the_store_with_its_fingerprint(tmp_path, fastas):
    listed = [str(p) for p in fastas[:2]]
    config = {"datasets": {"d": {"input": listed, "metrics": ["snp"]}}}
    proc = snakemake(tmp_path, config, "-n")
    prints = [f"{SOURCES}/d.json", f"{SOURCES}/d+2.json"]
    assert store_inputs(proc) == [*listed, *prints]
    # each fingerprint records its file: the store job finds each file's digest by its stat
    assert [recorded_input(tmp_path, "d.json"), recorded_input(tmp_path, "d+2.json")] == listed
    # a further file: a fingerprint of its own, the earlier ones as they were
    before = [(tmp_path / p).stat().st_mtime_ns for p in prints]
    config["datasets"]["d"]["input"] = [*listed, str(fastas[2])]
    proc = snakemake(tmp_path, config, "-n")
    assert store_inputs(proc)[-1] == f"{SOURCES}/d+3.json"
    assert [(tmp_path / p).stat().st_mtime_ns for p in prints] == before
    assert recorded_input(tmp_path, "d+3.json") == str(fastas[2])
    # the list made shorter: the fingerprints of files no longer listed are gone, past a gap too
    # (a run stopped while it removed them: d+2.json gone, d+3.json left)
    (tmp_path / SOURCES / "d+2.json").unlink()
    config["datasets"]["d"]["input"] = listed[:1]
    proc = snakemake(tmp_path, config, "-n")
    assert store_inputs(proc) == [listed[0], prints[0]]
    assert sorted(p.name for p in (tmp_path / SOURCES).iterdir()) == ["d.json"]


def test_a_one_file_list_is_that_file(tmp_path, fastas):
    one = snakemake(tmp_path, {"datasets": {"d": {"input": [str(fastas[0])], "metrics": ["snp"]}}}, "-n")
    plain = snakemake(tmp_path, {"datasets": {"d": {"input": str(fastas[0]), "metrics": ["snp"]}}}, "-n")
    assert store_inputs(one) == store_inputs(plain) == [str(fastas[0]), f"{SOURCES}/d.json"]


def test_a_list_of_mixed_kinds_is_one_line_before_any_job(tmp_path, fastas):
    vcf = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(4, 20, seed=1)))
    config = {"datasets": {"d": {"input": [str(fastas[0]), str(vcf)], "metrics": ["snp"]}}}
    one_line_error(
        snakemake(tmp_path, config, "-n", check=False),
        f"dataset d: input {vcf} is a VCF/BCF, but {fastas[0]} of the same list is a FASTA alignment",
    )
    assert not (tmp_path / "results").exists()


def test_a_query_against_a_list_has_every_file_an_input_with_its_fingerprint(tmp_path, fastas):
    """`against:` a list: each file an input of the store, with a fingerprint of its own
    (`<dataset>+against.json`, `<dataset>+against+2.json`); a list input with it too; a list of
    mixed kinds refused in one line before any job."""
    spec = {"input": [str(p) for p in fastas[:2]], "against": [str(fastas[2]), str(fastas[0])], "metrics": ["snp"]}
    proc = snakemake(tmp_path, {"datasets": {"d": spec}}, "-n")
    prints = [f"{SOURCES}/d.json", f"{SOURCES}/d+2.json", f"{SOURCES}/d+against.json", f"{SOURCES}/d+against+2.json"]
    assert store_inputs(proc) == [*spec["input"], *spec["against"], *prints]
    assert [recorded_input(tmp_path, "d+against.json"), recorded_input(tmp_path, "d+against+2.json")] == spec["against"]
    # the list made shorter: the fingerprint of a file no longer listed is gone; no `against:`, none
    snakemake(tmp_path, {"datasets": {"d": {**spec, "against": spec["against"][:1]}}}, "-n")
    assert not (tmp_path / SOURCES / "d+against+2.json").exists()
    snakemake(tmp_path, {"datasets": {"d": {"input": spec["input"], "metrics": ["snp"]}}}, "-n")
    assert not (tmp_path / SOURCES / "d+against.json").exists()
    # a dataset named as another's FILE fingerprint once was (`d.against`): fingerprints of its own
    both = {"d": spec, "d.against": {"input": [str(fastas[1]), str(fastas[2])], "metrics": ["snp"]}}
    snakemake(tmp_path, {"datasets": both}, "-n")
    assert [recorded_input(tmp_path, f"d.against{k}.json") for k in ("", "+2")] == both["d.against"]["input"]
    assert [recorded_input(tmp_path, f"d+against{k}.json") for k in ("", "+2")] == spec["against"]
    vcf = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(4, 20, seed=1)))
    spec["against"] = [str(fastas[2]), str(vcf)]
    one_line_error(
        snakemake(tmp_path, {"datasets": {"d": spec}}, "-n", check=False),
        f"dataset d: against: input {vcf} is a VCF/BCF, but {fastas[2]} of the same list is a FASTA alignment",
    )


@pytest.mark.parametrize(
    "given, says",
    [
        ([], "config: datasets.d.input: [] should be non-empty"),
        (["a.fa", "a.fa"], "config: datasets.d.input: ['a.fa', 'a.fa'] has non-unique elements"),
        (["a.fa", ""], "config: datasets.d.input.1: '' should be non-empty"),
    ],
)
def test_an_empty_list_or_a_file_listed_twice_is_refused_by_the_schema(tmp_path, given, says):
    one_line_error(
        snakemake(tmp_path, {"datasets": {"d": {"input": given, "metrics": ["snp"]}}}, "-n", check=False), says
    )


def test_a_format_past_dense_max_counts_every_listed_file(tmp_path, fastas):
    spec = {"input": [str(p) for p in fastas], "metrics": ["snp"], "formats": ["snp-dists-csv"]}
    proc = snakemake(tmp_path, {"datasets": {"d": spec}, "dense_max": 8}, "-n", check=False)
    one_line_error(proc, "dataset d: format snp-dists-csv holds every pair", "dense_max (8)", "snp has 9 ")
