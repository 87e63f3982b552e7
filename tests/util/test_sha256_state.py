"""util/sha256_state.py: a SHA-256 kept as a state and resumed is hashlib's over all the bytes;
util/checksums.file_sha256_resumable resumes a file's SHA-256 over the bytes after a prefix;
without libcrypto, `available` says so in one line."""

import doctest
import hashlib
import logging
import os

import pytest

from genotile.util import checksums, sha256_state
from genotile.util.checksums import file_sha256, file_sha256_resumable
from genotile.util.sha256_state import Sha256

needs_libcrypto = pytest.mark.skipif(not sha256_state.available(), reason="no libcrypto with SHA256_Init here")

DATA = os.urandom(5 * 4096 + 77)


@needs_libcrypto
@pytest.mark.parametrize("cut", [0, 1, 55, 56, 63, 64, 65, 127, 128, 4095, 4096, 4097, 8192, len(DATA)])
def test_a_state_kept_and_resumed_gives_hashlibs_sha256(cut):
    h = Sha256()
    h.update(DATA[:cut])
    assert h.hexdigest() == hashlib.sha256(DATA[:cut]).hexdigest()
    kept = h.state()
    g = Sha256(kept)
    assert g.length == cut and g.state() == kept
    g.update(memoryview(bytearray(DATA))[cut:])  # any buffer
    assert g.hexdigest() == hashlib.sha256(DATA).hexdigest()
    h.update(DATA[cut:])  # hexdigest left the hash to go on
    assert h.hexdigest() == g.hexdigest()


@needs_libcrypto
@pytest.mark.parametrize("bad", ["", "00" * 39, "00" * 40 + "ab", "zz" * 40])
def test_a_state_not_made_by_state_is_refused(bad):
    with pytest.raises(ValueError):
        Sha256(bad)


@needs_libcrypto
@pytest.mark.parametrize("earlier", [0, 64, 4096, 2 * 4096, 3 * 4096 + 64, 4096 + 1, 1000, 12_345])
def test_a_files_sha256_resumed_over_its_new_bytes_is_hashlibs(tmp_path, earlier):
    """Sizes that are multiples of 64 and of the reads and not: the grown file's SHA-256,
    resumed from the earlier file's state, is sha256sum's."""
    path = tmp_path / "f"
    path.write_bytes(DATA[:earlier])
    sha, state = file_sha256_resumable(path, read=4096)
    assert sha == file_sha256(path)
    for grown in (earlier, earlier + 1, earlier + 64, 4 * 4096, len(DATA)):
        if grown < earlier:
            continue
        path.write_bytes(DATA[:grown])
        resumed, after = file_sha256_resumable(path, earlier, state, read=1000)
        assert resumed == hashlib.sha256(DATA[:grown]).hexdigest()
        assert after == file_sha256_resumable(path)[1]
    path.write_bytes(DATA)  # grown since its size was taken: read up to that size
    assert file_sha256_resumable(path, earlier, state, read=1000, end=earlier + 100)[0] == (
        hashlib.sha256(DATA[: earlier + 100]).hexdigest()
    )
    with pytest.raises(ValueError, match="after 0 bytes"):
        file_sha256_resumable(path, 10)


def test_no_libcrypto_is_said_in_one_line(monkeypatch, caplog):
    monkeypatch.setattr(sha256_state, "_candidates", lambda: iter(["/nonexistent/libcrypto.so.3"]))
    sha256_state._library.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="genotile"):
            assert not sha256_state.available()
            assert not sha256_state.available()  # checked once
        assert [r.message for r in caplog.records] == [
            "sha256: the state is not kept (no libcrypto found): an append hashes its input in one stream"
        ]
        with pytest.raises(RuntimeError):
            Sha256()
    finally:
        sha256_state._library.cache_clear()


@pytest.mark.parametrize("module", [sha256_state, checksums])
def test_the_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted and result.failed == 0


@needs_libcrypto
def test_a_libcrypto_that_differs_from_hashlib_is_not_used(monkeypatch, caplog):
    monkeypatch.setattr(sha256_state, "_resumed", lambda functions, data, cut: "0" * 64)
    sha256_state._library.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="genotile"):
            assert not sha256_state.available()
        assert len(caplog.records) == 1 and "SHA256_* differ from hashlib's" in caplog.records[0].message
    finally:
        sha256_state._library.cache_clear()
