"""A dataset's input as a list of files (issue 27, point 1; store/listed.py): a fresh store of a
list is the store of the files joined into one, plane for plane; a further file appended to the
list is read alone and its vectors packed after the earlier rows, each vector's planes those of a
fresh store; anything else is made in full, saying why."""

import contextlib
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from genotile.errors import GenotileError
from genotile.io.fasta import read_alignment
from genotile.store import append, listed
from tests.genodata import random_genotypes, vcf_text, write_vcf
from tests.snakerun import random_alignment, write_fasta

SAME_FILES = ("plan.json", "perm.npy", "planes.npy")


def _store(work: Path, given, encoding="nucleotide", collapse=False) -> list[str]:
    """append.store of `given` (a path or a list) in `work`, after Snakemake removed the job's
    outputs; the lines it said."""
    said: list[str] = []
    with contextlib.chdir(work):
        for f in [Path("ingest.json"), *(Path("store", n) for n in (*SAME_FILES, "manifest.json"))]:
            f.unlink(missing_ok=True)
        of_input = listed.store if isinstance(given, list) else append.store
        of_input(given, encoding, "ingest.json", "store", 8, 1, collapse_duplicates=collapse, say=said.append)
    return said


def _rows_by_id(work: Path) -> dict[str, bytes]:
    """Each vector's planes in the store of `work`, by its name."""
    m = json.loads((work / "store" / "manifest.json").read_text())
    planes = np.load(work / "store" / "planes.npy")
    perm = np.load(work / "store" / "perm.npy")
    return {m["ids"][int(v)]: planes[r].tobytes() for r, v in enumerate(perm)}


@pytest.fixture
def alignment(tmp_path):
    rng = np.random.default_rng(5)
    seqs = random_alignment(rng, 70, 120)
    ids = [f"q{i}" for i in range(70)]
    write_fasta(tmp_path / "a.fa", seqs[:50], ids[:50])
    write_fasta(tmp_path / "b.fa", seqs[50:62], ids[50:62])
    write_fasta(tmp_path / "c.fa", seqs[62:], ids[62:])
    write_fasta(tmp_path / "ab.fa", seqs[:62], ids[:62])
    write_fasta(tmp_path / "abc.fa", seqs, ids)
    return tmp_path


def _copy(src: Path, dst: Path, names) -> Path:
    dst.mkdir()
    for n in names:
        (dst / n).write_bytes((src / n).read_bytes())
    return dst


@pytest.mark.parametrize("collapse", [False, True])
def test_fresh_list_is_the_joined_file(alignment, collapse):
    one = _copy(alignment, alignment / "one", ["abc.fa"])
    many = _copy(alignment, alignment / "many", ["a.fa", "b.fa", "c.fa"])
    _store(one, "abc.fa", collapse=collapse)
    assert _store(many, ["a.fa", "b.fa", "c.fa"], collapse=collapse) == []
    for name in SAME_FILES:
        assert (one / "store" / name).read_bytes() == (many / "store" / name).read_bytes(), name
    m = json.loads((many / "ingest.json").read_text())
    assert m["input"] == "a.fa + b.fa + c.fa"
    assert [s["input"]["path"] for s in m["sources"]["listed"]] == ["a.fa", "b.fa", "c.fa"]


def test_further_file_is_appended_as_grown_records(alignment):
    """[a] then [a, b] then [a, b, c]: the store the single file's appends make (a.fa grown to
    ab.fa, then abc.fa), plan and planes, byte for byte."""
    one = _copy(alignment, alignment / "one", ["a.fa"])
    many = _copy(alignment, alignment / "many", ["a.fa", "b.fa", "c.fa"])
    _store(one, "a.fa")
    _store(many, "a.fa")
    (one / "a.fa").write_bytes((alignment / "ab.fa").read_bytes())
    _store(one, "a.fa")
    said = _store(many, ["a.fa", "b.fa"])
    assert said and said[0].startswith("12 vectors appended to 50"), said
    for name in SAME_FILES:
        assert (one / "store" / name).read_bytes() == (many / "store" / name).read_bytes(), name
    (one / "a.fa").write_bytes((alignment / "abc.fa").read_bytes())
    _store(one, "a.fa")
    said = _store(many, ["a.fa", "b.fa", "c.fa"])
    assert said and said[0].startswith("8 vectors appended to 62"), said
    for name in SAME_FILES:
        assert (one / "store" / name).read_bytes() == (many / "store" / name).read_bytes(), name
    assert json.loads((many / "store" / "manifest.json").read_text())["appended"]["vectors"] == 8


def test_anything_else_is_made_in_full(alignment):
    many = _copy(alignment, alignment / "many", ["a.fa", "b.fa", "c.fa"])
    _store(many, ["a.fa", "b.fa"])
    said = _store(many, ["b.fa", "a.fa", "c.fa"])
    assert said == ["recomputing in full: file 1 of the list is b.fa, a.fa before (files are added at the end)"]
    said = _store(many, ["b.fa", "a.fa"])
    assert said[0].startswith("recomputing in full: the list holds 2 files, the earlier one 3")
    text = (many / "a.fa").read_text()
    (many / "a.fa").write_text(text.replace("A", "C", 1))
    said = _store(many, ["b.fa", "a.fa", "c.fa"])
    assert said == ["recomputing in full: a.fa changed since the earlier store was made"]
    fresh = _copy(many, alignment / "fresh", ["a.fa", "b.fa", "c.fa"])
    _store(fresh, ["b.fa", "a.fa", "c.fa"])
    assert _rows_by_id(fresh) == _rows_by_id(many)


def test_list_of_other_lengths_is_refused(alignment):
    write_fasta(alignment / "short.fa", ["ACGT", "ACGA"], ["x1", "x2"])
    with pytest.raises(GenotileError, match=r"short.fa holds sequences of length 4, but a.fa of length 120"):
        _store(alignment, ["a.fa", "short.fa"])


def test_name_in_two_files_is_refused(alignment):
    with pytest.raises(GenotileError, match=r"b.fa: sequence 'q50' is also in ab.fa"):
        _store(alignment, ["ab.fa", "b.fa"])


@pytest.fixture
def genotypes(tmp_path):
    g = random_genotypes(40, 30, seed=2)
    ids = [f"v{i}" for i in range(30)]
    names = [f"s{i}" for i in range(40)]
    for name, lo, hi in (("a", 0, 25), ("b", 25, 33), ("c", 33, 40), ("abc", 0, 40)):
        write_vcf(tmp_path / f"{name}.vcf", vcf_text(g[lo:hi], names[lo:hi], ids, seed=lo))
    return tmp_path


def test_genotype_list_fresh_and_appended(genotypes, caplog):
    caplog.set_level(logging.INFO, logger="genotile")
    one = _copy(genotypes, genotypes / "one", ["abc.vcf"])
    many = _copy(genotypes, genotypes / "many", ["a.vcf", "b.vcf", "c.vcf"])
    _store(one, "abc.vcf", "genotype")
    _store(many, ["a.vcf", "b.vcf", "c.vcf"], "genotype")
    for name in SAME_FILES:
        assert (one / "store" / name).read_bytes() == (many / "store" / name).read_bytes(), name
    grown = _copy(genotypes, genotypes / "grown", ["a.vcf", "b.vcf", "c.vcf"])
    said = _store(grown, "a.vcf", "genotype")
    # a one-file store records no variants: the list read again, its samples still appended
    said = _store(grown, ["a.vcf", "b.vcf"], "genotype")
    assert said and said[0].startswith("8 vectors appended to 25"), said
    assert "the whole list is read again: the earlier store did not record its variants" in caplog.text
    said = _store(grown, ["a.vcf", "b.vcf", "c.vcf"], "genotype")
    assert said and said[0].startswith("7 vectors appended to 33"), said
    assert _rows_by_id(grown) == _rows_by_id(one)
    m = json.loads((grown / "ingest.json").read_text())
    fresh = json.loads((many / "ingest.json").read_text())
    assert m["counts"] == fresh["counts"] and m["variants_sha256"] == fresh["variants_sha256"]


def test_genotype_list_of_other_variants(genotypes):
    g = random_genotypes(5, 30, seed=9)
    write_vcf(genotypes / "d.vcf", vcf_text(g, [f"d{i}" for i in range(5)], [f"w{i}" for i in range(30)]))
    with pytest.raises(GenotileError, match=r"d.vcf holds 30 variants, a.vcf 30: variant 1 is 'w0' there, 'v0'"):
        _store(genotypes, ["a.vcf", "d.vcf"], "genotype")
    _store(genotypes, ["a.vcf", "b.vcf"], "genotype")
    # the append finds other variants and leaves it to the list's read, which names the file
    with pytest.raises(GenotileError, match=r"d.vcf holds 30 variants, a.vcf 30: variant 1 is 'w0' there"):
        _store(genotypes, ["a.vcf", "b.vcf", "d.vcf"], "genotype")
    assert json.loads((genotypes / "store" / append.RECORD).read_text())["n_input"] == 33  # the earlier one's


def test_further_file_that_makes_a_column_variable_is_still_appended(alignment, caplog):
    """The further file's records alone cannot give the store (a column made variable): the list
    is read again, its store planned as appended all the same (the earlier tiles hold the same
    pairs), each vector's planes those of a fresh store of the list."""
    caplog.set_level(logging.INFO, logger="genotile")
    rows = {name: row.tobytes().decode() for name, row in read_alignment(alignment / "abc.fa")}
    rows = {name: "A" + row[1:] for name, row in rows.items()}  # column 0 constant ...
    rows["q62"] = "T" + rows["q62"][1:]  # ... but in c.fa's first record
    for name, lo, hi in (("a", 0, 50), ("b", 50, 62), ("c", 62, 70)):
        names = [f"q{i}" for i in range(lo, hi)]
        write_fasta(alignment / f"{name}.fa", [rows[n] for n in names], names)
    many = _copy(alignment, alignment / "many", ["a.fa", "b.fa", "c.fa"])
    _store(many, ["a.fa", "b.fa"])
    said = _store(many, ["a.fa", "b.fa", "c.fa"])
    assert said and said[0].startswith("8 vectors appended to 62"), said
    assert "the whole list is read again: the new records make a constant column variable" in caplog.text
    fresh = _copy(alignment, alignment / "fresh", ["a.fa", "b.fa", "c.fa"])
    _store(fresh, ["a.fa", "b.fa", "c.fa"])
    assert _rows_by_id(fresh) == _rows_by_id(many)


def _fileset(prefix: Path, g: np.ndarray, names: list[str]) -> str:
    from tests.io.test_bed import write_fileset

    bed = write_fileset(prefix, g)
    Path(f"{prefix}.fam").write_text("".join(f"0\t{n}\t0\t0\t0\t-9\n" for n in names))
    return bed


def test_a_changed_companion_file_of_an_earlier_file_is_seen(tmp_path):
    """A sample renamed in an earlier fileset's .fam (its .bed unchanged): not an append, and
    `genotile run`'s store is made again (store/sources.py, each file's companions)."""
    g = random_genotypes(30, 20, seed=3)
    for name, lo, hi in (("a", 0, 12), ("b", 12, 22), ("c", 22, 30)):
        _fileset(tmp_path / name, g[lo:hi], [f"{name}{i}" for i in range(hi - lo)])
    _store(tmp_path, ["a.bed", "b.bed"], "genotype")
    (tmp_path / "b.fam").write_text((tmp_path / "b.fam").read_text().replace("\tb0\t", "\tb0x\t"))
    said = _store(tmp_path, ["a.bed", "b.bed", "c.bed"], "genotype")
    assert said and said[0].startswith("recomputing in full: b.bed: content of the"), said
    assert "b0x" in json.loads((tmp_path / "store" / "manifest.json").read_text())["ids"]
    run = {"block_size": 8, "seed": 1}
    with contextlib.chdir(tmp_path):
        listed.current_store(["a.bed", "b.bed"], "genotype", "run.json", "run", **run)
        (tmp_path / "b.fam").write_text((tmp_path / "b.fam").read_text().replace("\tb1\t", "\tb1y\t"))
        listed.current_store(["a.bed", "b.bed"], "genotype", "run.json", "run", **run)
    assert "b1y" in json.loads((tmp_path / "run" / "manifest.json").read_text())["ids"]


def test_a_missing_listed_file_is_one_line(alignment):
    with pytest.raises(GenotileError, match=r"^nope.fa: no such file \(listed in a.fa \+ nope.fa\)$"):
        _store(alignment, ["a.fa", "nope.fa"])


def test_a_missing_further_file_after_a_store_is_one_line(alignment, capsys):
    """A list's further file missing where an earlier store of the list is there: the append's
    checks size and hash the files first (a FileNotFoundError's traceback before), so the store
    and `genotile run` refuse it by name first, as they do without a store."""
    from genotile.cli import main

    _store(alignment, ["a.fa", "b.fa"])
    with pytest.raises(GenotileError, match=r"^nope.fa: no such file \(listed in a.fa \+ b.fa \+ nope.fa\)$"):
        _store(alignment, ["a.fa", "b.fa", "nope.fa"])
    with contextlib.chdir(alignment):
        run = ["run", "a.fa", "b.fa", "--metric", "snp", "--outdir", "out"]
        assert main(run) == 0
        capsys.readouterr()
        assert main([*run[:3], "nope.fa", *run[3:]]) == 1
    err = capsys.readouterr().err
    assert err == "genotile error: nope.fa: no such file (listed in a.fa + b.fa + nope.fa)\n", err


def test_samples_with_a_genotype_list_is_refused(genotypes):
    from genotile.store.inputs import check_input

    with pytest.raises(GenotileError, match=r"samples: selects and orders the samples of one file"):
        check_input([genotypes / "a.vcf", genotypes / "b.vcf"], ["king"], {"samples": "keep.txt"})


def test_a_file_written_to_while_the_list_is_read_gets_no_record(alignment, monkeypatch):
    """A listed file edited while the store read the list: its recorded digest might not be what
    was read, so no append record (the next run makes the store in full)."""
    read = listed.read_list

    def racing(paths, *args, **kwargs):
        got = read(paths, *args, **kwargs)
        with open(paths[-1], "a") as fh:
            fh.write(">late\n" + "A" * 120 + "\n")
        return got

    monkeypatch.setattr(listed, "read_list", racing)
    _store(alignment, ["a.fa", "b.fa"])
    assert not (alignment / "store" / append.RECORD).exists()
    assert not list((alignment / "store").glob("kept-*"))
    monkeypatch.undo()
    assert _store(alignment, ["a.fa", "b.fa"]) == []  # no earlier record: made in full, nothing said
    assert (alignment / "store" / append.RECORD).exists()
