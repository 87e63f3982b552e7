"""One GPU per tile job on a host with several: lock-file slots.

Snakemake does not hand out GPU ids. A tile job that will use a GPU calls
`gpu_slot()` before anything touches CUDA:
- if CUDA_VISIBLE_DEVICES is already set (SLURM sets it for a job that asked
  for a GPU, or the user did), that choice is respected and no lock is taken;
- otherwise the job takes the first free slot among the host's devices with an
  exclusive `flock` on `<lock_dir>/gpu<k>.lock`, sets CUDA_VISIBLE_DEVICES=k and
  holds the lock for the life of the job. The kernel drops a flock when its
  process dies, SIGKILL included, so a killed job never leaves a slot taken.
"""

import contextlib
import fcntl
import functools
import os
import re
import tempfile
import time
from pathlib import Path

from genotile.backends import registry
from genotile.core.blocks import host_gpus
from genotile.core.cuda_env import cuda_visible_devices

ENV = "CUDA_VISIBLE_DEVICES"


@functools.cache
def host_gpu_count() -> int:
    """GPUs on this host, read without initialising CUDA (nvidia-smi: core/blocks.host_gpus, one
    call a process with the device memory the store's plan reads, none in a job whose Snakemake
    process shared its answer)."""
    return host_gpus()[0]


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them: its own list where it is
    set (SLURM sets it for a job granted GPUs; "", -1 and NoDevFiles name none), else every GPU of
    the host (`host_gpu_count`: "0", "1", ...)."""
    listed = cuda_visible_devices()
    return [str(k) for k in range(host_gpu_count())] if listed is None else listed


def default_gpu_bound(local: bool) -> int:
    """The workflow's `gpu` resource bound where the command line gives none: a local run uses
    every GPU it may (`visible_gpus`: one tile job a GPU at a time, `gpu_slot` handing each its
    own); at least 1, so that a job asking for one can run. Submitting to a cluster, 1: the bound
    then holds within each submitted group job (Snakefile `resource_scopes`), which asked for one."""
    return max(1, len(visible_gpus())) if local else 1


def store_job_gpus(bound: int) -> int:
    """The GPUs a local store job that computes its tiles takes: every one it may see (its tiles
    shared out among them, pairs/early.DevicePool), within the run's `gpu` bound, at least 1."""
    return max(1, min(len(visible_gpus()), int(bound)))


def default_lock_dir() -> Path:
    """Where the slots' lock files are: GENOTILE_GPU_LOCK_DIR, else one a user (and a SLURM job:
    each allocation numbers its own GPUs from 0, so two jobs' "gpu0" are different devices)."""
    job = os.environ.get("SLURM_JOB_ID")
    name = f"genotile-gpu-{os.getuid()}" + (f"-job{job}" if job else "")
    return Path(os.environ.get("GENOTILE_GPU_LOCK_DIR", Path(tempfile.gettempdir()) / name))


@contextlib.contextmanager
def gpu_slot(n_devices: int | None = None, lock_dir=None, poll: float = 1.0, timeout: float | None = None):
    """Yield the device id string this job may use (None: no GPU here): a free one of the host's
    `n_devices` (default: all), or of those CUDA_VISIBLE_DEVICES lists where it lists several (a
    user's export, or a SLURM job granted several: one-GPU jobs then share them out instead of all
    taking the first); where it names one (or none), that.
    """
    before, listed = os.environ.get(ENV), cuda_visible_devices()
    if listed is not None and len(listed) <= 1:
        yield before
        return
    devices = listed or [str(k) for k in range(host_gpu_count() if n_devices is None else n_devices)]
    if not devices:
        yield None
        return
    lock_dir = Path(lock_dir) if lock_dir is not None else default_lock_dir()
    lock_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    while True:
        for device in devices:
            fh = open(lock_dir / f"gpu{re.sub(r'[^A-Za-z0-9._-]', '_', device)}.lock", "a+")  # MIG-GPU-<uuid>/1/0
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            os.environ[ENV] = device
            try:
                yield device
            finally:
                if before is None:
                    del os.environ[ENV]
                else:
                    os.environ[ENV] = before
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
            return
        if timeout is not None and time.monotonic() - start > timeout:
            raise TimeoutError(f"no free GPU slot among {len(devices)} in {lock_dir} after {timeout} s")
        time.sleep(poll)


def slot_for_backend(backend: str):
    """A GPU slot if `backend` may run on a GPU (backends/registry.py: a CuPy backend, or auto on
    a GPU host)."""
    uses = registry.uses_gpu(backend)
    if uses or (uses is None and visible_gpus()):
        return gpu_slot()
    return contextlib.nullcontext()
