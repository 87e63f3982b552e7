"""store/sources.py: the store job takes its input's digest from the workflow's fingerprint while
the input's stat is the one recorded with it, and hashes the input where it is not."""

import os
import threading

import pytest

from genotile.store import sources as sources_module
from genotile.store.sources import recorded_digest, sources, write_fingerprint
from genotile.util import checksums


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The files file_digest hashes, or file_pieces (a fingerprint's input: its pieces kept), in order."""
    seen: list[str] = []
    real, pieces = checksums.file_digest, checksums.file_pieces
    monkeypatch.setattr(sources_module, "file_digest", lambda path: seen.append(str(path)) or real(path))
    monkeypatch.setattr(sources_module, "file_pieces", lambda path: seen.append(str(path)) or pieces(path))
    return seen


def test_the_fingerprints_digest_is_taken_while_the_stat_holds(tmp_path, monkeypatch, hashed):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.fa").write_bytes(b">a\nACGT\n>b\nACGA\n")
    write_fingerprint(sources_module.FINGERPRINTS / "d.json", "in.fa")
    assert hashed == ["in.fa"]
    recorded = sources("in.fa")
    assert hashed == ["in.fa"], "not hashed again"
    assert recorded["input"]["digest"] == checksums.file_digest("in.fa")
    (tmp_path / "other.fa").write_bytes(b">a\nACGT\n")
    assert recorded_digest("other.fa") is None  # no fingerprint of it
    sources("other.fa")
    assert hashed == ["in.fa", "other.fa"]


@pytest.mark.parametrize("change", ["content", "mtime", "replaced"])
def test_a_changed_stat_hashes_the_input_again(tmp_path, monkeypatch, hashed, change):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "in.fa"
    path.write_bytes(b">a\nACGT\n>b\nACGA\n")
    write_fingerprint(sources_module.FINGERPRINTS / "d.json", "in.fa")
    before = os.stat(path)
    if change == "content":  # the same size and mtime: only the ctime moves
        path.write_bytes(b">a\nACGT\n>b\nACGC\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif change == "mtime":
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    else:  # another file of the same name
        (tmp_path / "new.fa").write_bytes(b">a\nACGT\n>b\nACGC\n")
        os.replace(tmp_path / "new.fa", path)
    assert recorded_digest("in.fa") is None
    assert sources("in.fa")["input"]["digest"] == checksums.file_digest(path)
    assert hashed == ["in.fa", "in.fa"]


def test_unreadable_or_odd_fingerprints_are_passed_over(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.fa").write_bytes(b">a\nACGT\n")
    records = sources_module.FINGERPRINTS
    records.mkdir(parents=True)
    (records / "a.json").write_text("{not json")
    (records / "b.json").write_text('{"stat": [], "sources": 3}')
    (records / "c.json").write_text('{"stat": {"in.fa": [1]}, "sources": {"input": {"path": "in.fa"}}}')
    assert recorded_digest("in.fa") is None
    write_fingerprint(records / "d.json", "in.fa")
    assert recorded_digest("in.fa") == checksums.file_digest("in.fa")
    assert recorded_digest(tmp_path / "absent.fa") is None


def test_a_file_another_fingerprint_recorded_is_not_hashed_again(tmp_path, monkeypatch, hashed):
    """A query's FILE that is another dataset's input: its fingerprint takes the pieces (and so the
    digest) the other recorded while the file's stat is the one recorded with them."""
    import json

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "db.fa"
    path.write_bytes(b">a\nACGT\n>b\nACGA\n")
    records = sources_module.FINGERPRINTS
    write_fingerprint(records / "db.json", "db.fa")
    write_fingerprint(records / "q+against.json", "db.fa")
    assert hashed == ["db.fa"], "hashed once"
    db, q = (json.loads((records / f"{name}.json").read_text()) for name in ("db", "q+against"))
    assert q["pieces"] == db["pieces"] and q["sources"] == db["sources"]
    assert q["sources"]["input"]["digest"] == checksums.file_digest(path)
    path.write_bytes(b">a\nACGT\n>b\nACGC\n")  # changed: the other's record no longer holds
    write_fingerprint(records / "q+against.json", "db.fa")
    assert hashed == ["db.fa", "db.fa"]
    assert json.loads((records / "q+against.json").read_text())["sources"]["input"]["digest"] == checksums.file_digest(
        path
    )


def _record(path) -> dict:
    import json

    return json.loads(path.read_text())


def test_a_changed_input_is_hashed_by_its_store_job_not_as_the_workflow_is_parsed(tmp_path, monkeypatch, hashed):
    """`defer` (a workflow's dataset input, issue 27): where the content changed for certain (no
    record, another size: records appended) the fingerprint is rewritten with its digest pending,
    unhashed; whoever hashes the file next (the store job) fills it in, its mtime kept."""
    monkeypatch.chdir(tmp_path)
    path, out = tmp_path / "in.fa", sources_module.FINGERPRINTS / "d.json"
    path.write_bytes(b">a\nACGT\n>b\nACGA\n")
    write_fingerprint(out, "in.fa", defer=True)
    assert hashed == [] and _record(out)["sources"]["input"] == {"path": "in.fa", "size": 16, "digest": None}
    assert "pieces" not in _record(out) and recorded_digest("in.fa") is None
    os.utime(out, ns=(10**18, 10**18))
    assert sources("in.fa")["input"]["digest"] == checksums.file_digest(path)  # a store job's hash
    assert hashed == ["in.fa"]
    assert _record(out)["sources"]["input"]["digest"] == checksums.file_digest(path)
    assert os.stat(out).st_mtime_ns == 10**18, "filled in, its mtime kept: nothing reruns"
    assert recorded_digest("in.fa") == checksums.file_digest(path)
    with open(path, "ab") as fh:  # records appended: another size
        fh.write(b">c\nACGG\n")
    write_fingerprint(out, "in.fa", defer=True)
    assert hashed == ["in.fa"], "not hashed as the workflow is parsed"
    assert _record(out)["sources"]["input"]["digest"] is None and os.stat(out).st_mtime_ns != 10**18
    pieces = checksums.file_pieces(path)
    sources_module.complete_fingerprints("in.fa", checksums.pieces_digest(pieces), pieces)
    assert sources_module.recorded_pieces("in.fa") == [p.hex() for p in pieces]
    assert recorded_digest("in.fa") == checksums.file_digest(path)


def test_a_change_of_the_same_size_is_still_hashed_as_the_workflow_is_parsed(tmp_path, monkeypatch, hashed):
    """A file restored with `cp -p` (another content, the same size, an older mtime) is told
    apart only by its digest: hashed at once, deferred or not, and an unchanged content (`touch`)
    keeps the fingerprint's mtime."""
    monkeypatch.chdir(tmp_path)
    path, out = tmp_path / "in.fa", sources_module.FINGERPRINTS / "d.json"
    path.write_bytes(b">a\nACGT\n>b\nACGA\n")
    write_fingerprint(out, "in.fa")
    os.utime(out, ns=(10**18, 10**18))
    before = os.stat(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # touched
    write_fingerprint(out, "in.fa", defer=True)
    assert hashed == ["in.fa", "in.fa"] and os.stat(out).st_mtime_ns == 10**18
    path.write_bytes(b">a\nACGT\n>b\nACGC\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    write_fingerprint(out, "in.fa", defer=True)
    assert hashed == ["in.fa"] * 3 and os.stat(out).st_mtime_ns != 10**18
    assert _record(out)["sources"]["input"]["digest"] == checksums.file_digest(path)


def test_a_pending_digest_is_not_filled_in_once_the_file_changed_again(tmp_path, monkeypatch, hashed):
    monkeypatch.chdir(tmp_path)
    path, out = tmp_path / "in.fa", sources_module.FINGERPRINTS / "d.json"
    path.write_bytes(b">a\nACGT\n")
    write_fingerprint(out, "in.fa", defer=True)
    digest = checksums.file_digest(path)
    path.write_bytes(b">a\nACGA\n")  # after the fingerprint, before the hash was taken
    sources_module.complete_fingerprints("in.fa", digest)
    assert _record(out)["sources"]["input"]["digest"] is None
    assert recorded_digest("in.fa") is None


def test_a_file_hashed_for_one_fingerprint_completes_another_left_pending(tmp_path, monkeypatch, hashed):
    """A dataset's input left pending, then the same file as another dataset's query FILE (not
    deferred): hashed once, and both fingerprints hold the digest and pieces."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "db.fa").write_bytes(b">a\nACGT\n>b\nACGA\n")
    records = sources_module.FINGERPRINTS
    write_fingerprint(records / "db.json", "db.fa", defer=True)
    os.utime(records / "db.json", ns=(10**18, 10**18))
    write_fingerprint(records / "q+against.json", "db.fa")
    assert hashed == ["db.fa"]
    db, q = _record(records / "db.json"), _record(records / "q+against.json")
    assert db["sources"] == q["sources"] and db["pieces"] == q["pieces"]
    assert db["sources"]["input"]["digest"] == checksums.file_digest(tmp_path / "db.fa")
    assert os.stat(records / "db.json").st_mtime_ns == 10**18


def test_a_pending_input_is_hashed_ahead_once_and_taken_while_its_stat_holds(tmp_path, monkeypatch, hashed):
    """The store job starts hashing an input its fingerprint left pending first thing
    (scripts/store.py, `hash_ahead`); its digest and pieces are then taken from that hash, not
    hashed again, while the file is unchanged; nothing is started for a complete fingerprint."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sources_module, "_AHEAD", {})
    path, out = tmp_path / "in.fa", sources_module.FINGERPRINTS / "d.json"
    path.write_bytes(b">a\nACGT\n>b\nACGA\n")
    write_fingerprint(out, "in.fa")  # complete: nothing to hash ahead
    sources_module.hash_ahead("in.fa")
    assert sources_module.hashed_ahead("in.fa") is None and hashed == ["in.fa"]
    with open(path, "ab") as fh:
        fh.write(b">c\nACGG\n")
    write_fingerprint(out, "in.fa", defer=True)
    sources_module.hash_ahead("in.fa")
    ahead = [t for t in threading.enumerate() if t.name == "genotile-ahead"]
    assert all(t.daemon for t in ahead)  # a job failing meanwhile exits without waiting for it
    sources_module.hash_ahead("in.fa")  # once
    assert sources_module.input_pieces("in.fa") == checksums.file_pieces(path)
    assert sources("in.fa")["input"]["digest"] == checksums.file_digest(path)
    assert hashed == ["in.fa", "in.fa"], "hashed once more, ahead"
    assert _record(out)["sources"]["input"]["digest"] == checksums.file_digest(path)  # filled in
    with open(path, "ab") as fh:  # changed since: not taken
        fh.write(b">d\nACGG\n")
    assert sources_module.hashed_ahead("in.fa") is None


def test_each_fingerprint_is_parsed_once_while_its_stat_holds(tmp_path, monkeypatch):
    """A list's store job looks every file up among every fingerprint: each is parsed once a
    process (store/sources._parsed), again once written (a digest filled in)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sources_module, "_PARSED", {})
    records = sources_module.FINGERPRINTS
    for k in range(3):
        (tmp_path / f"day{k}.fa").write_bytes(b">a\nACGT\n" * (k + 1))
        write_fingerprint(records / f"d+{k + 1}.json", f"day{k}.fa", defer=True)  # pending: no digest
    sources_module._PARSED.clear()
    parsed: list[str] = []
    real = sources_module.json.loads
    monkeypatch.setattr(sources_module.json, "loads", lambda text: parsed.append(text) or real(text))
    assert [recorded_digest(f"day{k}.fa") for k in range(3)] == [None] * 3
    assert len(parsed) == 3
    sources_module.complete_fingerprints("day1.fa", checksums.file_digest(tmp_path / "day1.fa"))
    parsed.clear()
    assert recorded_digest("day1.fa") == checksums.file_digest(tmp_path / "day1.fa")
    assert len(parsed) == 1  # the one written again
