"""The host's GPUs read once (core/blocks.host_gpus): one nvidia-smi call a process, giving the
GPU count (runtime/gpu_slots.host_gpu_count) and the device memory the store's plan reads; none in
a job whose Snakemake process shared what it read, on the same host and SLURM job only."""

import os
import subprocess
import sys

import pytest

from genotile.core import blocks
from genotile.runtime import gpu_slots


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """A stand-in nvidia-smi on PATH, two GPUs, logging each call to `calls`."""
    calls = tmp_path / "calls"
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nprintf "0, 81559\\n1, 40960\\n"\n')
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(blocks.HOST_GPUS_ENV, "")  # recorded, so that the share_host_gpus of a test
    monkeypatch.delenv(blocks.HOST_GPUS_ENV)  # is undone after it (it sets os.environ itself)
    for name in blocks.JOB_ID_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    blocks.forget_host_gpus()
    gpu_slots.host_gpu_count.cache_clear()
    yield calls
    blocks.forget_host_gpus()
    gpu_slots.host_gpu_count.cache_clear()


def _count(calls) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def _in_a_job(env=None) -> str:
    """host_gpus() as a job process started with `env` (this one's where None) prints it."""
    code = "from genotile.core.blocks import host_gpus; print(host_gpus())"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


def test_one_call_gives_the_count_and_the_memory(fake_smi):
    assert gpu_slots.host_gpu_count() == 2
    assert blocks.device_memory_bytes() == 40960 * 2**20
    assert gpu_slots.visible_gpus() == ["0", "1"]
    assert _count(fake_smi) == 1


def test_a_shared_answer_spares_the_jobs_nvidia_smi(fake_smi, monkeypatch):
    blocks.share_host_gpus()  # nothing read yet: nothing shared
    assert blocks.HOST_GPUS_ENV not in os.environ
    blocks.host_gpus()
    blocks.share_host_gpus()
    assert _in_a_job() == f"(2, {40960 * 2**20})\n"
    assert _count(fake_smi) == 1, "the job did not run nvidia-smi"
    # another batch job or step (its own GPUs), or no nvidia-smi there: read there, as before
    for k, name in enumerate(("SLURM_JOB_ID", "SLURM_STEP_ID", "LSB_JOBID", "PBS_JOBID")):
        assert _in_a_job({**os.environ, name: "7"}) == f"(2, {40960 * 2**20})\n"
        assert _count(fake_smi) == 2 + k
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (p and os.path.isfile(os.path.join(p, "nvidia-smi")))
    )
    assert _in_a_job({**os.environ, "PATH": path}) == "(0, None)\n"


def test_without_nvidia_smi_there_is_no_gpu(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    blocks.forget_host_gpus()
    try:
        assert blocks.host_gpus() == (0, None)
    finally:
        blocks.forget_host_gpus()


def test_a_prefetch_reads_on_a_thread_once(fake_smi, monkeypatch):
    """The Snakefile's prefetch: nvidia-smi runs on a thread while the rules are read; the bound's
    later call waits for its answer and runs nothing more. None where CUDA_VISIBLE_DEVICES is set
    (the GPUs it lists are the run's: nvidia-smi is not asked)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    blocks.prefetch_host_gpus()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _count(fake_smi) == 0
    blocks.prefetch_host_gpus()
    assert blocks.host_gpus() == (2, 40960 * 2**20)
    assert gpu_slots.default_gpu_bound(local=True) == 2
    assert _count(fake_smi) == 1
