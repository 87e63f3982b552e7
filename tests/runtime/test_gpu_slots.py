"""The GPU slot allocator, with fake devices (no GPU needed)."""

import multiprocessing as mp
import os
import signal
import time

import pytest

from genotile.runtime.gpu_slots import ENV, gpu_slot


@pytest.fixture(autouse=True)
def no_visible_devices(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


def _hold(lock_dir, n, queue, hold_s):
    with gpu_slot(n_devices=n, lock_dir=lock_dir, poll=0.02) as dev:
        queue.put((os.getpid(), dev, os.environ.get(ENV)))
        time.sleep(hold_s)


def _held_together(lock_dir, n, jobs: int) -> list:
    """(pid, device, CUDA_VISIBLE_DEVICES) of `jobs` processes each holding a slot for a second."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_hold, args=(lock_dir, n, queue, 1.0)) for _ in range(jobs)]
    for p in procs:
        p.start()
    got = [queue.get(timeout=10) for _ in procs]
    for p in procs:
        p.join(10)
    return got


def test_concurrent_jobs_get_distinct_devices(tmp_path):
    got = _held_together(tmp_path, 3, 3)
    devices = sorted(dev for _, dev, _ in got)
    assert devices == ["0", "1", "2"]
    assert all(dev == env for _, dev, env in got)  # CUDA_VISIBLE_DEVICES set to the slot


def test_fourth_job_waits_for_a_free_slot(tmp_path):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    first = [ctx.Process(target=_hold, args=(tmp_path, 2, queue, 1.5)) for _ in range(2)]
    for p in first:
        p.start()
    held = {queue.get(timeout=10)[1] for _ in first}
    assert held == {"0", "1"}
    t0 = time.monotonic()
    late = ctx.Process(target=_hold, args=(tmp_path, 2, queue, 0.0))
    late.start()
    _, dev, _ = queue.get(timeout=10)
    waited = time.monotonic() - t0
    for p in [*first, late]:
        p.join(10)
    assert dev in ("0", "1") and waited > 0.5  # it got a slot only once one was released


def test_sigkilled_job_releases_its_slot(tmp_path):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    victim = ctx.Process(target=_hold, args=(tmp_path, 1, queue, 60))
    victim.start()
    assert queue.get(timeout=10)[1] == "0"
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(10)
    with gpu_slot(n_devices=1, lock_dir=tmp_path, timeout=5) as dev:
        assert dev == "0"


def test_respects_cuda_visible_devices(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "5")
    with gpu_slot(n_devices=8, lock_dir=tmp_path) as dev:
        assert dev == "5"
    assert list(tmp_path.iterdir()) == []  # no lock taken


def test_jobs_share_out_the_devices_cuda_visible_devices_lists(tmp_path, monkeypatch):
    """CUDA_VISIBLE_DEVICES listing several devices (a user's export): one-GPU jobs take one each,
    not all the first; the variable is restored after."""
    monkeypatch.setenv(ENV, "3,5")
    got = _held_together(tmp_path, 8, 2)
    assert sorted(dev for _, dev, _ in got) == ["3", "5"]
    assert all(dev == env for _, dev, env in got)
    with gpu_slot(n_devices=8, lock_dir=tmp_path) as dev:
        assert dev == "3" and os.environ[ENV] == "3"
    assert os.environ[ENV] == "3,5"


def test_a_slurm_jobs_slots_and_device_names_with_slashes(tmp_path, monkeypatch):
    """Each SLURM job locks its own GPUs (every allocation numbers them from 0); a legacy MIG
    name's slashes make no path."""
    from genotile.runtime import gpu_slots

    monkeypatch.delenv("GENOTILE_GPU_LOCK_DIR", raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert gpu_slots.default_lock_dir().name.endswith("-job4242")
    monkeypatch.setenv(ENV, "MIG-GPU-abc/1/0,MIG-GPU-abc/2/0")
    with gpu_slot(lock_dir=tmp_path) as dev:
        assert dev == "MIG-GPU-abc/1/0" == os.environ[ENV]
    assert [p.name for p in tmp_path.iterdir()] == ["gpuMIG-GPU-abc_1_0.lock"]


def test_no_devices_means_no_gpu(tmp_path):
    with gpu_slot(n_devices=0, lock_dir=tmp_path) as dev:
        assert dev is None and ENV not in os.environ


def test_timeout_when_all_slots_stay_taken(tmp_path):
    with gpu_slot(n_devices=1, lock_dir=tmp_path):
        ctx = mp.get_context("fork")
        queue = ctx.Queue()

        def try_one():
            os.environ.pop(ENV)  # a separate job, not a child of the holder
            try:
                with gpu_slot(n_devices=1, lock_dir=tmp_path, poll=0.05, timeout=0.3):
                    queue.put("got")
            except TimeoutError as exc:
                queue.put(str(exc))

        p = ctx.Process(target=try_one)
        p.start()
        msg = queue.get(timeout=10)
        p.join(10)
    assert msg.startswith("no free GPU slot among 1")


@pytest.mark.parametrize(
    ("visible", "host", "gpus", "local_bound", "store"),
    [
        (None, 0, [], 1, 1),  # no GPU: a bound of 1 still lets a job asking for one run
        (None, 2, ["0", "1"], 2, 2),  # every GPU of the host
        ("3,1", 8, ["3", "1"], 2, 2),  # SLURM's (or the user's) own list
        ("", 8, [], 1, 1),
        ("NoDevFiles", 8, [], 1, 1),
    ],
)
def test_a_local_run_takes_every_gpu_it_may_see(monkeypatch, visible, host, gpus, local_bound, store):
    from genotile.runtime import gpu_slots

    if visible is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, visible)
    monkeypatch.setattr(gpu_slots, "host_gpu_count", lambda: host)
    assert gpu_slots.visible_gpus() == gpus
    assert gpu_slots.default_gpu_bound(local=True) == local_bound
    assert gpu_slots.default_gpu_bound(local=False) == 1  # within each submitted group job
    assert gpu_slots.store_job_gpus(bound=8) == store and gpu_slots.store_job_gpus(bound=1) == 1
