"""The disk cache of the architecture-specific kernels (cupy_common._arch_specific_module: sm_90a
for wgmma), without a GPU: a cubin behind its SHA-256, written whole or not at all, a damaged or
foreign file read as absent, no disk under CUPY_CACHE_IN_MEMORY."""

import hashlib
import os

from genotile.backends.cuda import cupy_common


def test_a_written_cubin_reads_back(tmp_path):
    path = tmp_path / "cache" / "genotile-abc.cubin"
    cupy_common._write_cached(path, b"\x7fELF cubin bytes")
    assert cupy_common._read_cached(path) == b"\x7fELF cubin bytes"
    assert path.read_bytes()[:32] == hashlib.sha256(b"\x7fELF cubin bytes").digest()
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_a_damaged_or_missing_file_reads_as_absent(tmp_path):
    path = tmp_path / "genotile-abc.cubin"
    assert cupy_common._read_cached(path) is None
    cupy_common._write_cached(path, b"cubin")
    path.write_bytes(path.read_bytes()[:-1])  # truncated
    assert cupy_common._read_cached(path) is None
    path.write_bytes(b"cubin written by an older genotile without its digest")
    assert cupy_common._read_cached(path) is None
    assert cupy_common._read_cached(None) is None


def test_an_unwritable_cache_costs_nothing_but_the_cache(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache's folder would be")
    cupy_common._write_cached(blocker / "genotile-abc.cubin", b"cubin")  # no exception
    assert blocker.read_text().startswith("a file")


def test_cache_path_follows_cupys_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY", raising=False)
    assert cupy_common._arch_cache_path("k") == tmp_path / "genotile-k.cubin"
    monkeypatch.setenv("CUPY_CACHE_IN_MEMORY", "1")
    assert cupy_common._arch_cache_path("k") is None
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY")
    monkeypatch.delenv("CUPY_CACHE_DIR")
    default = os.path.expanduser("~/.cupy/kernel_cache/genotile-k.cubin")
    assert str(cupy_common._arch_cache_path("k")) == default
