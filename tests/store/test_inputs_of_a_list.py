"""store/inputs.py with a list input (issue 27, point 1): each file checked, the files of one
source, each once; a query's input and FILE too; the vectors known before the store are the
files' added up."""

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf
from snakerun import random_alignment, write_fasta

from genotile.errors import GenotileError
from genotile.store.inputs import check_against, check_datasets, check_input, known_vectors
from genotile.store.sources import write_fingerprint


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    a, b = tmp_path / "a.fa", tmp_path / "b.fa"
    write_fasta(a, random_alignment(rng, 4, 30))
    write_fasta(b, random_alignment(rng, 3, 30), ids=["x", "y", "z"])
    g = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(5, 20, seed=1)))
    h = write_vcf(tmp_path / "h.vcf", vcf_text(random_genotypes(6, 20, seed=2)))
    return a, b, g, h


def refused(call, *parts: str) -> str:
    with pytest.raises(GenotileError) as exc:
        call()
    message = str(exc.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message
    return message


def test_a_list_of_one_kind_is_checked_file_by_file(files):
    a, b, g, h = files
    assert check_input([str(a), str(b)], ["snp"]) == "fasta"
    assert check_input([str(g), str(h)], ["ibs", "king"]) == "vcf"
    assert check_input([str(a)], ["snp"]) == check_input(str(a), ["snp"])  # a one-file list is that file
    # each file against the metrics, by name
    refused(lambda: check_input([str(g), str(h)], ["snp"]), f"input {g} is a VCF/BCF", "snp")


def test_a_list_mixing_alignments_and_genotypes_is_one_line(files):
    a, _, g, _ = files
    for listed, odd, first in (([a, g], g, a), ([g, a], a, g)):
        refused(
            lambda listed=listed: check_input([str(p) for p in listed], ["snp"], where="dataset d: "),
            f"dataset d: input {odd} is ",
            f"but {first} of the same list is ",
            "a list input is files of one kind",
        )


def test_a_file_listed_twice_is_refused(files, monkeypatch):
    a, b, _, _ = files
    monkeypatch.chdir(a.parent)
    refused(lambda: check_input(["a.fa", "b.fa", "./a.fa"], ["snp"]), "input ./a.fa is listed twice (as a.fa)")


def test_a_query_takes_lists_of_one_kind_on_either_side(files):
    """A query's input and FILE may each be a list of files, checked as a list input is: one
    source, each file once, of the other side's kind."""
    a, b, g, h = files
    other = a.parent / "q.fa"
    write_fasta(other, random_alignment(np.random.default_rng(3), 2, 30))
    check_against([str(a), str(b)], str(other), ["snp"], where="dataset d: ")
    check_against(str(other), [str(a), str(b)], ["snp"])
    check_against([str(a)], [str(other)], ["snp"])  # a one-file list: that file
    check_against(str(g), [str(h), str(g)], ["king"])
    refused(
        lambda: check_against(str(other), [str(a), str(g)], ["snp"], where="dataset d: "),
        f"dataset d: against: input {g} is a VCF/BCF, but {a} of the same list is a FASTA alignment",
    )
    refused(
        lambda: check_against(str(other), [str(g), str(h)], ["snp"], where="dataset d: "),
        f"dataset d: against: {g} + {h} is a VCF/BCF, but the input {other} is a FASTA alignment",
        "a query compares vectors of one kind",
    )
    refused(lambda: check_against(str(other), [str(a), str(a)], ["snp"]), f"against: input {a} is listed twice")
    refused(
        lambda: check_against(str(g), [str(h), str(g)], ["king"], {"samples": "s.txt"}),
        "against: samples: selects and orders the samples of one file",
    )


def test_check_datasets_names_the_dataset(files):
    a, b, g, _ = files
    base = {"multiallelic": "skip", "filter_pass": False}
    check_datasets({"datasets": {"d": {"input": [str(a), str(b)], "metrics": ["snp"], **base}}})
    refused(
        lambda: check_datasets({"datasets": {"d": {"input": [str(a), str(g)], "metrics": ["snp"], **base}}}),
        "dataset d: input",
    )
    query = {"input": [str(a), str(b)], "against": [str(a), str(g)], "metrics": ["snp"], **base}
    refused(lambda: check_datasets({"datasets": {"d": query}}), "dataset d: against: input", "of the same list")
    check_datasets({"datasets": {"d": {**query, "against": [str(b), str(a)]}}})


def test_known_vectors_of_a_list_are_its_files_added_up(files, tmp_path):
    a, b, g, h = files
    assert known_vectors([str(a), str(b)], "snp") == 7
    assert known_vectors([str(g), str(h)], "ibs") == 11
    assert known_vectors([str(a)], "snp") == 4
    # one file's count unknown (missing: its reader names it), or vectors that are variants: None
    assert known_vectors([str(a), str(tmp_path / "absent.fa")], "snp") is None
    assert known_vectors([str(g), str(h)], "ccc2") is None
    # a samples: list picks among the files' samples: the store tells
    assert known_vectors([str(g), str(h)], "ibs", {"samples": ["s1"]}) is None
    # each file's count kept in its own fingerprint
    prints = [tmp_path / "d.json", tmp_path / "d+2.json"]
    for out, path in zip(prints, (a, b), strict=True):
        write_fingerprint(out, path)
    assert known_vectors([str(a), str(b)], "snp", fingerprint=prints) == 7
    assert known_vectors([str(a), str(b)], "snp", fingerprint=prints) == 7  # from the records
