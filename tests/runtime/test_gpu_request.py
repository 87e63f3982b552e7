"""Whether a tile job asks for a GPU (config `tile_gpu`, runtime/gpu_request.py): only where one
exists or was asked for."""

import pytest

from genotile.errors import GenotileError
from genotile.runtime import gpu_request


@pytest.fixture(autouse=True)
def fresh_caches():
    gpu_request.gpu_visible.cache_clear()
    gpu_request.partition_has_gpus.cache_clear()
    yield
    gpu_request.gpu_visible.cache_clear()
    gpu_request.partition_has_gpus.cache_clear()


def fake_sinfo(monkeypatch, tmp_path, lines: str):
    """A `sinfo` on PATH that prints `lines` (its "%P %G" output)."""
    sinfo = tmp_path / "bin" / "sinfo"
    sinfo.parent.mkdir()
    sinfo.write_text(f"#!/bin/sh\ncat <<'EOF'\n{lines}EOF\n")
    sinfo.chmod(0o755)
    monkeypatch.setenv("PATH", f"{sinfo.parent}:/usr/bin:/bin")


def test_true_and_false_are_obeyed_whatever_the_backend():
    for backend in ("auto", "numba", "cupy-b1"):
        assert gpu_request.tile_gpus(True, backend, on_cluster=True) == 1
        assert gpu_request.tile_gpus(False, backend, on_cluster=False) == 0


def test_auto_follows_a_pinned_backend():
    for backend in ("numba", "numpy", "numpy-popcount"):
        assert gpu_request.tile_gpus("auto", backend, on_cluster=True) == 0
    for backend in ("cupy-b1", "cupy-int8"):
        assert gpu_request.tile_gpus("auto", backend, on_cluster=False) == 1
    with pytest.raises(GenotileError, match="unknown backend"):
        gpu_request.tile_gpus("auto", "tpu", on_cluster=False)
    with pytest.raises(GenotileError, match="tile_gpu"):
        gpu_request.tile_gpus("yes", "auto", on_cluster=False)


def test_auto_on_this_host_asks_where_cuda_visible_devices_names_a_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert gpu_request.tile_gpus("auto", "auto", on_cluster=False) == 1
    gpu_request.gpu_visible.cache_clear()
    for hidden in ("", "-1", "NoDevFiles"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        gpu_request.gpu_visible.cache_clear()
        assert gpu_request.tile_gpus("auto", "auto", on_cluster=False) == 0


def test_auto_on_this_host_without_the_variable_counts_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu_request, "host_gpu_count", lambda: 0)
    assert gpu_request.tile_gpus("auto", "auto", on_cluster=False) == 0
    gpu_request.gpu_visible.cache_clear()
    monkeypatch.setattr(gpu_request, "host_gpu_count", lambda: 2)
    assert gpu_request.tile_gpus("auto", "auto", on_cluster=False) == 1


SINFO = "cpu* (null)\ngpu gpu:a100:4(S:0-1)\nmixed (null),gpu:h100:8\nother mps:100\n"


@pytest.mark.parametrize(
    "partition, gpus",
    [(None, 0), ("cpu", 0), ("gpu", 1), ("mixed", 1), ("other", 0), ("missing", 0)],
)
def test_auto_on_slurm_asks_sinfo_about_the_partition(monkeypatch, tmp_path, partition, gpus):
    fake_sinfo(monkeypatch, tmp_path, SINFO)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # this host's GPU does not count on a cluster
    assert gpu_request.tile_gpus("auto", "auto", on_cluster=True, partition=partition) == gpus


def test_auto_on_slurm_with_a_gpu_default_partition(monkeypatch, tmp_path):
    fake_sinfo(monkeypatch, tmp_path, "debug* gpu:fake:2\n")
    assert gpu_request.tile_gpus("auto", "auto", on_cluster=True) == 1


def test_auto_on_slurm_without_sinfo_asks_for_none(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_request.tile_gpus("auto", "auto", on_cluster=True) == 0
