"""A query whose FILE grew by records at its end (issue 27, point 3; store/query_append.py): the
grown query store made from the earlier one's kept files and the FILE's new records alone is the
one reading both files makes with the grown plan, byte for byte; the FILE's SHA-256 resumed over
its new bytes is sha256sum's."""

import contextlib
import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from genotile.store import query, query_append
from tests.snakerun import random_alignment, same_size_edit, write_fasta

FILES = ("plan.json", "perm.npy", "planes.npy", "manifest.json")


def _query_store(work: Path) -> list[str]:
    """query.query_store of work/query.fa against work/db.fa, its outputs removed first (as
    Snakemake removes them); the lines it said."""
    said: list[str] = []
    with contextlib.chdir(work):  # paths named from the folder, so that two folders' files compare
        for name in FILES:
            Path("store", name).unlink(missing_ok=True)
        Path("ingest.json").unlink(missing_ok=True)
        query.query_store("query.fa", "db.fa", "nucleotide", "ingest.json", "store", 4, 1, say=said.append)
    return said


@pytest.fixture
def grown(tmp_path):
    """(the folder, the FILE's grown bytes): a query store of 12 sequences against 40; the FILE
    grown by 9 records (every column variable already: the earlier encoding holds)."""
    seqs = random_alignment(np.random.default_rng(11), 61, 90, p_change=0.4)
    ids = [f"x{i}" for i in range(61)]
    write_fasta(tmp_path / "query.fa", seqs[:12], ids[:12])
    write_fasta(tmp_path / "db.fa", seqs[12:52], ids[12:52])
    _query_store(tmp_path)
    write_fasta(tmp_path / "full.fa", seqs[12:], ids[12:])
    return tmp_path, (tmp_path / "full.fa").read_bytes()


def test_a_grown_file_is_added_alone_and_gives_the_store_both_files_give(grown, monkeypatch, caplog):
    work, full = grown
    other = work / "other"
    shutil.copytree(work, other)
    caplog.set_level(logging.INFO, logger="genotile")
    for folder in (work, other):
        (folder / "db.fa").write_bytes(full)
    said = _query_store(work)
    assert said == [
        "9 vectors appended to the FILE's 40: 108 cross pairs to compute (of 588), 9 of 39 tiles; the earlier tiles "
        "are kept"
    ]
    assert "(the FILE's 9 new records)" in caplog.text  # read alone
    monkeypatch.setattr(query_append, "grow", lambda *args, **kwargs: None)
    assert _query_store(other) == said  # both files read, the same plan
    for name in FILES:
        assert (work / "store" / name).read_bytes() == (other / "store" / name).read_bytes(), name
    assert (work / "ingest.json").read_bytes() == (other / "ingest.json").read_bytes()
    manifest = json.loads((work / "store" / "manifest.json").read_text())
    assert manifest["query"]["against_sha256"] == hashlib.sha256(full).hexdigest()  # resumed, as sha256sum's
    record = json.loads((work / "store" / query_append.RECORD).read_text())
    assert record["against"]["size"] == len(full) and record["kept"] is not None
    kept = {p.name.split(".")[0] for p in (work / "store").glob("kept-*")}
    assert kept == {f"kept-{record['kept']['token']}"}  # the earlier store's kept files removed


def test_a_file_grown_again_after_a_kill_before_the_record_is_grown_from_the_earlier_one(grown, monkeypatch):
    """A job killed after the grown store's files but before its record: the rerun grows the
    earlier store again, from the earlier record and its kept files."""
    work, full = grown
    (work / "db.fa").write_bytes(full)
    monkeypatch.setattr(query_append, "write", lambda *args, **kwargs: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        _query_store(work)
    monkeypatch.undo()
    said = _query_store(work)
    assert said and said[0].startswith("9 vectors appended to the FILE's 40"), said


def test_the_same_files_again_keep_the_plan_and_its_parts(grown):
    """A store job run again on the same files (a kill after the record, --forcerun store): the
    recorded plan and parts, nothing said, every tile kept (their identities accepted)."""
    from genotile.store.manifest import tile_identities

    work, full = grown
    (work / "db.fa").write_bytes(full)
    _query_store(work)
    before = json.loads((work / "store" / "manifest.json").read_text())
    assert _query_store(work) == []
    after = json.loads((work / "store" / "manifest.json").read_text())
    assert after == before and after["plan"]["segments"] == [9]
    accepted = tile_identities(after)
    assert all(len(accepted(t)) == 2 for t in [(0, 3), (1, 4)])  # the first part's tiles: two stores


def test_a_tile_of_an_earlier_part_recomputed_later_is_accepted_after_a_further_growth():
    """tile_identities: a tile of part k may record the identity of the store of any part from k
    on (each kept part k's blocks): a tile recomputed after an append, a kill or a deletion."""
    from genotile.core.plan import Plan
    from genotile.store.manifest import store_identity, tile_identities

    p = Plan(20, 4, 1, segments=(4, 4))
    parts = [{"store": {"input_sha256": s, "plan": {}}, "key": s} for s in ("a", "b")]
    manifest = {"input_sha256": "c", "plan": p.to_json(), "appended": {"parts": parts, "vectors": 4}}
    accepted = tile_identities(manifest)
    ids = [d["input_sha256"] for d in accepted((0, 1))]
    assert ids == [store_identity(manifest)["input_sha256"], "a", "b"]
    assert [d["input_sha256"] for d in accepted((0, 3))] == ["c", "b"]  # part 1's: b's or later
    assert [d["input_sha256"] for d in accepted((0, 4))] == ["c"]  # the last part's: this store's


def test_the_grown_plan_is_bounded_as_a_store_made_in_full(grown):
    """A null threshold past pairs_max is refused on the grow path too, before anything is written."""
    from genotile.errors import GenotileError

    work, full = grown
    (work / "db.fa").write_bytes(full)
    bounds = {"thresholds": {"snp": None}, "pairs_max": 500, "where": ""}
    with contextlib.chdir(work), pytest.raises(GenotileError, match="would write every one of the 588 pairs"):
        query.query_store(
            "query.fa", "db.fa", "nucleotide", "ingest.json", "store", 4, 1, metrics=["snp"], bounds=bounds
        )


def test_a_file_written_to_while_its_store_is_made_gets_no_record(grown, monkeypatch):
    """Records added to the FILE while the store read it: not in the store, so no record (a
    later growth would start after them); the next run makes the query in full."""
    from genotile.store import extend

    work, full = grown
    (work / "db.fa").write_bytes(full)
    read = extend.new_records

    def racing(path, start, n_fields):
        got = read(path, start, n_fields)
        with open(path, "ab") as fh:
            fh.write(b">late\n" + b"A" * 90 + b"\n")
        return got

    monkeypatch.setattr(extend, "new_records", racing)
    _query_store(work)
    assert not (work / "store" / query_append.RECORD).exists()
    monkeypatch.undo()
    assert _query_store(work) == []  # no record: made in full, nothing to say
    assert (work / "store" / query_append.RECORD).exists()


@pytest.mark.parametrize("grows", [True, False], ids=["grown alone", "read in full"])
def test_the_input_written_to_while_the_file_grows_gets_no_record(grown, monkeypatch, tmp_path_factory, grows):
    """The input given a same-size edit after grown_by checked it, as the FILE's new records are
    added. Grown alone: the grown store holds the input as the earlier store read it, its
    sources (taken after) the edited one's, so no record; the next run makes the query in full.
    Read in full (`grow` gives none, as where the FILE's new records make a column variable): the
    input read may not be the one grown_by checked, so no earlier tile is kept (the plan made in
    full, saying why). Either way the store is then a fresh one's of the same files, byte for byte."""
    work, full = grown
    (work / "db.fa").write_bytes(full)
    check = query_append.grown_by

    def racing(*args, **kwargs):
        got = check(*args, **kwargs)
        same_size_edit(work / "query.fa")
        return got

    monkeypatch.setattr(query_append, "grown_by", racing)
    if not grows:
        monkeypatch.setattr(query_append, "grow", lambda *args, **kwargs: None)
    said = _query_store(work)
    if grows:
        assert said and said[0].startswith("9 vectors appended to the FILE's 40"), said  # from the earlier store
    else:
        assert said == ["recomputing in full: the input or the FILE was written to while the store read it"], said
    assert not (work / "store" / query_append.RECORD).exists()
    assert not list((work / "store").glob("kept-*"))
    monkeypatch.undo()
    if grows:
        assert _query_store(work) == []  # no record: made in full, nothing to say
    fresh = tmp_path_factory.mktemp("fresh")
    for name in ("query.fa", "db.fa"):
        shutil.copyfile(work / name, fresh / name)
    _query_store(fresh)
    for name in FILES:
        assert (work / "store" / name).read_bytes() == (fresh / "store" / name).read_bytes(), name


def test_genotile_run_killed_before_the_record_makes_the_store_again(tmp_path, caplog):
    """`genotile run --against`: a store whose record is missing or another's is made again."""
    caplog.set_level(logging.INFO, logger="genotile")
    seqs = random_alignment(np.random.default_rng(3), 30, 60, p_change=0.4)
    write_fasta(tmp_path / "q.fa", seqs[:5], [f"q{i}" for i in range(5)])
    write_fasta(tmp_path / "db.fa", seqs[5:], [f"d{i}" for i in range(25)])
    out = tmp_path / "out"
    run = (tmp_path / "q.fa", tmp_path / "db.fa", "nucleotide", out, 4, 1)
    query.current_query_store(*run)
    (out / "store" / "nucleotide" / query_append.RECORD).unlink()
    caplog.clear()
    query.current_query_store(*run)
    assert "query store (nucleotide): changed since the last run: the store's record" in caplog.text
    assert (out / "store" / "nucleotide" / query_append.RECORD).exists()


def test_what_a_query_store_reads_is_watched_with_its_companions_and_option_files(tmp_path):
    """query_append.stat_of_sides: the input's and the FILE's files, their filesets' other files
    and the option files, so that a .fam or a samples file written to while the store read it
    leaves no record either."""
    for name in ("a.bed", "a.bim", "a.fam", "b.bed", "b.bim", "b.fam", "keep.txt"):
        (tmp_path / name).write_text(">s\nACGT\n")  # same_size_edit changes a FASTA-like second line
    with contextlib.chdir(tmp_path):
        before = query_append.stat_of_sides("a.bed", "b.bed", {"samples": "keep.txt"})
        assert len(before) == 7 and None not in before
        for name in ("b.fam", "keep.txt"):
            same_size_edit(tmp_path / name)
            now = query_append.stat_of_sides("a.bed", "b.bed", {"samples": "keep.txt"})
            assert now != before
            before = now


@pytest.mark.parametrize("grows", [False, True])
def test_a_query_stores_manifest_is_written_once_with_its_query_record(grown, monkeypatch, grows):
    """Each way a query store is made (here both files read, then the FILE grown:
    store/query_append.py) writes its store manifest once, with its `query` record: a job killed
    after that write leaves a manifest a tile reads as a query's (query.pack_query wrote it twice,
    the first time without the record, until Session 25)."""
    from genotile.store import against, pack, stage
    from genotile.util import atomic

    work, full = grown
    if grows:
        (work / "db.fa").write_bytes(full)
    writes: list[bool] = []

    def spy(path, record, *args, **kwargs):
        if Path(path).name == "manifest.json" and Path(path).parent.name == "store":
            writes.append("query" in record)
        return atomic.write_record(path, record, *args, **kwargs)

    for module in (pack, query, query_append, against, stage):
        if hasattr(module, "write_record"):
            monkeypatch.setattr(module, "write_record", spy)
    _query_store(work)
    assert writes == [True]
