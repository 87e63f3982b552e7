"""Whether a tile job asks for a GPU (config `tile_gpu`): only where one exists or was asked for.

The `gpu` resource of the tile, triples and screen_tile rules is 1 or 0. Locally it is counted
against `--resources gpu=N`; on SLURM the executor plugin turns 1 into `sbatch --gpus=1`, which a
cluster without GPUs never satisfies (the job waits forever or is refused). So `tile_gpu: auto`
asks for one only when the backend can use it and a GPU is there: on this host, or on a node of
the partition the tile jobs are submitted to (`sinfo`).
"""

import functools
import shutil
import subprocess

from genotile.backends import registry
from genotile.core.cuda_env import cuda_visible_devices
from genotile.errors import GenotileError
from genotile.runtime.gpu_slots import host_gpu_count


@functools.cache
def gpu_visible() -> bool:
    """Whether this process may use an NVIDIA GPU: CUDA_VISIBLE_DEVICES names one (SLURM sets it
    in a job that got a GPU), or, where it is unset, `nvidia-smi -L` lists one."""
    listed = cuda_visible_devices()
    return bool(listed) if listed is not None else host_gpu_count() > 0


@functools.cache
def partition_has_gpus(partition: str | None) -> bool:
    """Whether a node of the SLURM partition (None: the cluster's default one) has a `gpu` GRES.

    Asks `sinfo` once per partition and process; a partition sinfo does not know, or no sinfo at
    all, counts as none (a job that asked for a GPU there would never start).
    """
    if shutil.which("sinfo") is None:
        return False
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-o", "%P %G"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    for line in out.splitlines():
        name, _, gres = line.strip().partition(" ")
        is_default = name.endswith("*")  # sinfo marks the default partition
        if (name.rstrip("*") == partition) if partition else is_default:
            # GRES like "gpu:a100:4(S:0-1)" or "(null)"; several comma-separated
            if any(item.split(":", 1)[0] == "gpu" for item in gres.split(",")):
                return True
    return False


def tile_gpus(setting, backend: str, on_cluster: bool, partition: str | None = None) -> int:
    """The `gpu` resource (0 or 1) of a tile-like job.

    setting    -- config `tile_gpu`: True (ask for one), False (never), "auto"
    backend    -- config `backend`
    on_cluster -- jobs are submitted to SLURM (else they run on this host)
    partition  -- the SLURM partition of the tile jobs (None: the cluster's default)

    `auto`: none for a CPU backend; one for a CuPy backend; for backend `auto`, one where a GPU is
    there (this host, or a node of the partition with a `gpu` GRES).
    """
    if setting is True or setting is False:
        return int(setting)
    if setting != "auto":
        raise GenotileError(f"tile_gpu must be auto, true or false, not {setting!r}")
    uses = registry.uses_gpu(backend)
    if uses is not None:
        return int(uses)
    return int(partition_has_gpus(partition) if on_cluster else gpu_visible())
