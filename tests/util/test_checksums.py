"""util/checksums.py: a whole file's pieces hashed once a process while its stat holds."""

import os

import pytest

from genotile.util import checksums


@pytest.fixture
def reads(monkeypatch):
    """Every range_digests call's path; pieces of 1 KiB, so that a 4 KiB file is "large"."""
    monkeypatch.setattr(checksums, "PIECE", 1024)
    monkeypatch.setattr(checksums, "_HASHED", {})
    seen: list[str] = []
    real = checksums.range_digests

    def spy(path, ranges):
        seen.append(os.path.basename(path))
        return real(path, ranges)

    monkeypatch.setattr(checksums, "range_digests", spy)
    return seen


def test_a_large_file_is_hashed_once_while_its_stat_holds(tmp_path, reads):
    path = tmp_path / "big.fa"
    path.write_bytes(b"ACGT" * 1024)
    first = checksums.file_pieces(path)
    assert len(first) == 4
    assert checksums.file_pieces(path) == first and checksums.file_digest(path) == checksums.pieces_digest(first)
    assert reads == ["big.fa"]
    with open(path, "ab") as fh:  # grown: another size
        fh.write(b"ACGT")
    assert checksums.file_pieces(path)[:4] == first and reads == ["big.fa"] * 2
    path.write_bytes(b"TGCA" * 1024)  # the same size, written again: another mtime and ctime
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert checksums.file_pieces(path) != first and reads == ["big.fa"] * 3
    assert checksums.file_pieces(path, size=2048) == checksums.file_pieces(path, size=2048)
    assert reads == ["big.fa"] * 5  # a prefix is always read


def test_a_small_file_is_read_every_time(tmp_path, reads):
    path = tmp_path / "small.fa"
    path.write_bytes(b"ACGT" * 10)
    assert checksums.file_pieces(path) == checksums.file_pieces(path)
    assert reads == ["small.fa"] * 2


def test_a_file_written_to_while_hashed_is_not_kept(tmp_path, reads, monkeypatch):
    path = tmp_path / "big.fa"
    path.write_bytes(b"ACGT" * 1024)
    real = checksums.file_stat
    looks: list[int] = []

    def moving(p):  # the stat taken after the hashing differs from the one before it
        looks.append(1)
        key = real(p)
        return key if len(looks) % 2 else [*key[:-1], key[-1] + 1]

    monkeypatch.setattr(checksums, "file_stat", moving)
    checksums.file_pieces(path)
    checksums.file_pieces(path)
    assert reads == ["big.fa"] * 2 and checksums._HASHED == {}


def test_the_pieces_hashed_whole_are_handed_out_with_their_stat_while_it_holds(tmp_path, reads):
    """hashed_pieces: what file_pieces kept of the whole file (and the stat it is of), for as
    long as the file's stat is that one: none once it grew or was touched."""
    path = tmp_path / "big.fa"
    path.write_bytes(b"ACGT" * 1024)
    assert checksums.hashed_pieces(path) is None  # never hashed whole here
    first = checksums.file_pieces(path)
    pieces, stat = checksums.hashed_pieces(path)
    assert pieces == first and stat == checksums.file_stat(path)
    with open(path, "ab") as fh:
        fh.write(b"ACGT")
    assert checksums.hashed_pieces(path) is None
    checksums.file_pieces(path)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched: the same bytes, another stat
    assert checksums.hashed_pieces(path) is None
