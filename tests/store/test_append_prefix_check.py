"""An append's check of the earlier bytes (store/append.check_earlier, issue 27): the earlier
file's pieces' SHA-256s, recorded by the store job, compared with the grown file's first bytes
hashed piece by piece on threads (or with the pieces the workflow's fingerprint recorded), the
grown file's SHA-256 resumed over the new bytes from the recorded state; an edit in any piece,
the partial last one included, recomputes in full; a record without pieces (an earlier version)
or no libcrypto checks in one stream; the same files whichever way."""

import hashlib
import json
import logging
import os

import pytest

from genotile.store import append
from genotile.store.sources import FINGERPRINTS, write_fingerprint
from genotile.util import checksums, sha256_state
from genotile.util.checksums import file_pieces, file_sha256, file_sha256_resumable
from tests.snakerun import write_fasta
from tests.store.test_append_new_records import EARLIER, SAME, _files, _grow, _ids, _store

needs_libcrypto = pytest.mark.skipif(not sha256_state.available(), reason="no libcrypto with SHA256_Init here")
PIECE = 1024  # bytes of a piece in these tests: the earlier FASTA (6.4 kB) is 6 pieces and a partial one
DATA = os.urandom(6 * PIECE + 300)


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    monkeypatch.setattr(checksums, "PIECE", PIECE)


def _recorded(path) -> dict:
    """append.json's "input" for the file at `path`, as a fresh store job records it."""
    sha256, state = file_sha256_resumable(path)
    pieces = [d.hex() for d in file_pieces(path)]
    return {"size": os.path.getsize(path), "sha256": sha256, "sha256_state": state, "pieces": pieces}


@needs_libcrypto
@pytest.mark.parametrize("old", [0, 64, PIECE, 3 * PIECE, 3 * PIECE + 64, PIECE + 1, 1000, 4 * PIECE + 77])
@pytest.mark.parametrize("fingerprint", [False, True])
def test_the_resumed_sha256_and_pieces_are_the_grown_files(tmp_path, monkeypatch, old, fingerprint):
    """Earlier and grown sizes multiples of 64 and of PIECE and not."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "in.fa"
    path.write_bytes(DATA[:old])
    recorded = _recorded(path)
    for size in sorted({old, old + 1, old + 64, 4 * PIECE, 5 * PIECE + 1, len(DATA)}):
        if size < old:
            continue
        path.write_bytes(DATA[:size])
        if fingerprint:  # as the workflow writes it when parsed
            write_fingerprint(FINGERPRINTS / "d.json", "in.fa")
        checked = append.check_earlier(path, recorded, size)
        assert checked.earlier
        assert checked.sha256 == hashlib.sha256(DATA[:size]).hexdigest()
        assert checked.pieces == [d.hex() for d in file_pieces(path)]
        assert checked.state == file_sha256_resumable(path)[1]
        assert ("fingerprint" in checked.how) is fingerprint


@needs_libcrypto
@pytest.mark.parametrize("fingerprint", [False, True])
def test_an_edit_in_any_earlier_piece_is_caught(tmp_path, monkeypatch, fingerprint):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "in.fa"
    old = 6 * PIECE + 100  # six whole pieces and a partial one
    path.write_bytes(DATA[:old])
    recorded = _recorded(path)
    for at in [0, 5, PIECE, 3 * PIECE + 17, 6 * PIECE - 1, 6 * PIECE, old - 1]:
        grown = bytearray(DATA)
        grown[at] ^= 1
        path.write_bytes(grown)
        if fingerprint:
            write_fingerprint(FINGERPRINTS / "d.json", "in.fa")
        checked = append.check_earlier(path, recorded, len(grown))
        assert not checked.earlier and checked.sha256 is None, at
    path.write_bytes(DATA)
    assert append.check_earlier(path, recorded, len(DATA)).earlier


@needs_libcrypto
def test_a_fingerprint_left_pending_is_checked_on_threads_and_filled_in(tmp_path, monkeypatch):
    """The workflow leaves a grown input's digest to the store job (store/sources.py, `defer`):
    the earlier bytes are then hashed on threads, an edit is still caught, and the pieces the
    check computed complete the fingerprint."""
    monkeypatch.chdir(tmp_path)
    path, out = tmp_path / "in.fa", FINGERPRINTS / "d.json"
    old = 3 * PIECE + 64
    path.write_bytes(DATA[:old])
    recorded = _recorded(path)
    grown = bytearray(DATA[:-100])  # an edit, and bytes appended
    grown[PIECE + 5] ^= 1
    path.write_bytes(grown)
    write_fingerprint(out, "in.fa", defer=True)
    checked = append.check_earlier(path, recorded, len(grown))
    assert not checked.earlier and "on threads" in checked.how
    path.write_bytes(DATA)
    write_fingerprint(out, "in.fa", defer=True)
    assert json.loads(out.read_text())["sources"]["input"]["digest"] is None
    checked = append.check_earlier(path, recorded, len(DATA))
    assert checked.earlier and "on threads" in checked.how
    assert checked.pieces == [d.hex() for d in file_pieces(path)]
    append.complete_fingerprints(path, checksums.pieces_digest([bytes.fromhex(p) for p in checked.pieces]))
    assert json.loads(out.read_text())["sources"]["input"]["digest"] == checksums.file_digest(path)


@needs_libcrypto
def test_the_pieces_hashed_as_the_store_job_started_are_taken_and_an_edit_still_caught(tmp_path, monkeypatch):
    """scripts/store.py hashes a pending input ahead (store/sources.hash_ahead): the check compares
    those pieces, hashing only the earlier file's partial last piece."""
    from genotile.store import sources as sources_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sources_module, "_AHEAD", {})
    path, out = tmp_path / "in.fa", FINGERPRINTS / "d.json"
    old = 3 * PIECE + 64
    path.write_bytes(DATA[:old])
    recorded = _recorded(path)
    for k, at in enumerate((None, 5, 3 * PIECE + 10)):
        grown = bytearray(DATA[: len(DATA) - 7 * k])  # another size each time: left pending
        if at is not None:
            grown[at] ^= 1
        path.write_bytes(grown)
        write_fingerprint(out, "in.fa", defer=True)
        monkeypatch.setattr(sources_module, "_AHEAD", {})
        sources_module.hash_ahead("in.fa")
        checked = append.check_earlier(path, recorded, len(grown))
        # an edit in a whole earlier piece shows in those pieces: then all hashed on threads
        assert ("against the job's pieces" in checked.how) is (at is None or at >= 3 * PIECE), checked.how
        assert checked.earlier is (at is None), at
    assert checked.sha256 is None


@needs_libcrypto
def test_an_append_checks_the_pieces_on_threads_with_the_same_files(tmp_path, caplog):
    reference, _ = _grow(tmp_path, "reference", [EARLIER, SAME], False, whole=True)
    with caplog.at_level(logging.INFO, logger="genotile"):
        work, said = _grow(tmp_path, "work", [EARLIER, SAME], False)
    assert "7 pieces on threads, the SHA-256 resumed over the" in caplog.text
    assert said and "vectors appended to 36" in said[0]
    assert _files(work) == _files(reference)
    recorded = json.loads((work / "store" / append.RECORD).read_text())["input"]
    assert recorded["sha256"] == file_sha256(work / "data.fa")
    assert recorded["pieces"] == [d.hex() for d in file_pieces(work / "data.fa")]
    assert recorded["sha256_state"] == file_sha256_resumable(work / "data.fa")[1]


def _position_in_piece(data: bytes, piece: int) -> int:
    """A base of a sequence line in piece `piece` of `data` (the partial last one: the last piece)."""
    start = piece * PIECE
    for at in range(start, min(len(data), start + PIECE)):
        line_start = data.rfind(b"\n", 0, at) + 1
        if data[at : at + 1] in (b"A", b"C", b"G", b"T") and data[line_start : line_start + 1] != b">":
            return at
    raise AssertionError(f"no base in piece {piece}")


@needs_libcrypto
@pytest.mark.parametrize("piece", [0, 3, 6])  # 6: the earlier file's partial last piece
def test_an_edit_in_an_earlier_piece_recomputes_in_full_with_a_fresh_runs_files(tmp_path, piece):
    work = tmp_path / "work"
    work.mkdir()
    write_fasta(work / "data.fa", EARLIER, _ids(len(EARLIER)))
    assert _store(work, False) == []
    earlier = (work / "data.fa").read_bytes()
    assert len(earlier) // PIECE == 6 and len(earlier) % PIECE
    at = _position_in_piece(earlier, piece)
    edited = bytearray(earlier)
    edited[at : at + 1] = b"A" if edited[at : at + 1] != b"A" else b"C"
    write_fasta(tmp_path / "new.fa", SAME, _ids(len(SAME), len(EARLIER)))
    grown = bytes(edited) + (tmp_path / "new.fa").read_bytes()
    (work / "data.fa").write_bytes(grown)
    said = _store(work, False)
    assert said == [
        "recomputing in full: the input's earlier bytes changed "
        "(an edit before the end, or records removed or reordered)"
    ]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "data.fa").write_bytes(grown)
    assert _store(fresh, False) == []
    assert _files(work) == _files(fresh)


@needs_libcrypto
def test_a_record_without_pieces_checks_in_one_stream_with_the_same_files(tmp_path, caplog, monkeypatch):
    reference, _ = _grow(tmp_path, "reference", [EARLIER, SAME], False, whole=True)
    original = append.read_record

    def earlier_version(store_dir):  # a record the earlier version wrote: no pieces, no state
        record = original(store_dir)
        if record is not None:
            record["input"].pop("pieces")
            record["input"].pop("sha256_state")
        return record

    monkeypatch.setattr(append, "read_record", earlier_version)
    with caplog.at_level(logging.INFO, logger="genotile"):
        work, said = _grow(tmp_path, "work", [EARLIER, SAME], False)
    assert "checked in" in caplog.text and "(in one stream): the same" in caplog.text
    assert said and "vectors appended to 36" in said[0]
    assert _files(work) == _files(reference)  # the record too: its pieces and state for the next append


def test_without_libcrypto_an_append_checks_in_one_stream_with_the_same_files(tmp_path, caplog, monkeypatch):
    reference, _ = _grow(tmp_path, "reference", [EARLIER, SAME], False, whole=True)
    monkeypatch.setattr(sha256_state, "available", lambda: False)
    with caplog.at_level(logging.INFO, logger="genotile"):
        work, said = _grow(tmp_path, "work", [EARLIER, SAME], False)
    assert "(in one stream): the same" in caplog.text
    assert said and "vectors appended to 36" in said[0]
    got, want = _files(work), _files(reference)
    assert "pieces" not in got["record"]["input"] and "sha256_state" not in got["record"]["input"]
    for key in ("pieces", "sha256_state"):
        want["record"]["input"].pop(key, None)
    assert got == want


@needs_libcrypto
def test_the_pieces_this_process_hashed_are_trusted_while_the_file_stays_as_hashed(tmp_path, monkeypatch):
    """`genotile run` hashes its input whole first (store/append.py `_kept`): the check takes those
    pieces (util/checksums.hashed_pieces), the partial earlier piece alone hashed; where the file
    is written to while the check reads it (its stat moves), they are not trusted: the check is
    made in one stream, over the bytes as they are."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "in.fa"
    old = 3 * PIECE + 64
    path.write_bytes(DATA[:old])
    recorded = _recorded(path)
    path.write_bytes(DATA)
    file_pieces(path)  # as `_kept` hashes it
    checked = append.check_earlier(path, recorded, len(DATA))
    assert checked.earlier and "this run's pieces" in checked.how
    assert checked.sha256 == hashlib.sha256(DATA).hexdigest()
    real = append.range_digests

    def touching(p, spans):  # the file touched while its partial earlier piece is hashed
        got = real(p, spans)
        st = os.stat(p)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        return got

    monkeypatch.setattr(append, "range_digests", touching)
    checked = append.check_earlier(path, recorded, len(DATA))
    assert checked.how == "in one stream" and checked.earlier
