"""`block_size: auto`: blocks sized by the work and memory of a tile job.

A Snakemake job costs a new Python process, its imports and, on a GPU, a CUDA context and
kernel load (about a second in all); a tile must carry much more compute than that, and no
more memory than a job has. `auto_block_size` picks the block from what the plan knows: the
number of vectors, the informative fields, the metrics that read the store, whether the tiles
run on a GPU, and that device's memory. Block sizes change no output byte (the permutation
depends on the seed alone), so the choice is free to change between versions.
"""

import math
import os
import shutil
import socket
import subprocess
import threading

from genotile.core.cuda_env import cuda_visible_devices
from genotile.core.encodings import ENCODINGS
from genotile.core.metrics import METRICS

AUTO = "auto"

# CPU: a tile of at most this many pair-words (pairs x plane words per vector) is a few seconds
# of numba on 2 threads (~2e10 pair-words/s, bench/RESULTS.md); larger work is cut into tiles
# that jobs on other cores run at once
CPU_TILE_WORK = 2**37
# CPU: bytes a tile job's count, value, mask and dense arrays may take (the SLURM profile gives
# tile jobs 8 GB)
CPU_TILE_BYTES = 4 * 2**30
# GPU: a tile streams its blocks through the device in 4,096-row chunks, so device memory bounds
# only the dense block; one tile per dataset up to this many vectors (two blocks past it, three
# tiles, so several GPUs share a larger run)
GPU_MAX_BLOCK = 2**18
# device memory assumed when it cannot be read (nvidia-smi missing)
GPU_DEFAULT_BYTES = 16 * 2**30
# GPU: the dense block (matrix.tsv wanted) on the device and in pinned host memory: at most
# this fraction of the device's memory
GPU_DENSE_FRACTION = 0.25


def bytes_per_pair(metric_names) -> int:
    """Host bytes a tile holds per pair on the CPU path: int64 counts, float64 values, masks."""
    return max(8 * (2 * len(METRICS[m].columns) + 2) + 8 for m in metric_names)


def words_per_vector(encoding: str, n_fields_kept: int) -> int:
    """Plane words per vector of the store about to be packed (an upper estimate)."""
    return ENCODINGS[encoding].planes_per_field * max(1, math.ceil(n_fields_kept / 64))


def blocks_for(n_vectors: int, n_blocks: int) -> int:
    """The block size that cuts n vectors into n_blocks blocks of (nearly) equal size."""
    return max(1, math.ceil(n_vectors / max(1, n_blocks)))


def auto_block_size(
    n_vectors: int,
    words: int,
    metric_names,
    *,
    gpu: bool,
    device_bytes: int | None = None,
    dense: bool = False,
) -> int:
    """Vectors per block for a store of n_vectors x `words` plane words per vector.

    Parameters
    ----------
    n_vectors : number of vectors in the store.
    words : plane words per vector (`words_per_vector`).
    metric_names : the metrics whose tiles read this store (the largest sets the memory).
    gpu : the tiles run on a GPU backend.
    device_bytes : the GPU's memory (default: `GPU_DEFAULT_BYTES`).
    dense : matrix.tsv is wanted, so every tile keeps its dense block.

    Returns
    -------
    int : the block size; n_vectors (one tile) whenever one tile fits the limits.
    """
    n = max(1, int(n_vectors))
    if gpu:
        cap = GPU_MAX_BLOCK
        if dense:
            budget = GPU_DENSE_FRACTION * (device_bytes or GPU_DEFAULT_BYTES)
            cap = min(cap, int(math.sqrt(budget / 8)))  # float64 or int64 dense values
        return blocks_for(n, math.ceil(n / max(1, cap)))
    per_pair = bytes_per_pair(metric_names)
    mem_cap = int(math.sqrt(CPU_TILE_BYTES / per_pair))
    n_blocks = math.ceil(n / max(1, mem_cap))
    # then as many blocks as it takes to bring each tile under CPU_TILE_WORK
    total = n * (n - 1) // 2 * max(1, words)
    while n_blocks < n and total / (n_blocks * (n_blocks + 1) // 2) > CPU_TILE_WORK:
        n_blocks += 1
    return blocks_for(n, n_blocks)


def gpu_tiles(backend: str) -> bool:
    """Whether tiles of `backend` run on a GPU: the cupy backends always; `auto` where this
    process sees an NVIDIA device (checked without importing CuPy: the plan job has none)."""
    if backend.startswith("cupy"):
        return True
    if backend != AUTO:
        return False
    return visible_gpu_count() > 0


def visible_gpu_count() -> int:
    """NVIDIA devices this process may use, without CUDA or nvidia-smi: those CUDA_VISIBLE_DEVICES
    lists where it is set, else the host's /dev/nvidiaN."""
    listed = cuda_visible_devices()
    if listed is not None:
        return len(listed)
    return sum(1 for name in _dev_names() if name.startswith("nvidia") and name[6:].isdigit())


def _dev_names() -> list[str]:
    try:
        return os.listdir("/dev")
    except OSError:
        return []


def device_memory_bytes() -> int | None:
    """The smallest visible GPU's memory, read by nvidia-smi (`host_gpus`); None where it cannot
    be read."""
    return host_gpus()[1]


# the host's GPUs as one process read them (`share_host_gpus`), for the processes it starts
HOST_GPUS_ENV = "GENOTILE_HOST_GPUS"


# the batch systems' job (and step) ids: each job, or step, may see GPUs of its own
JOB_ID_VARIABLES = ("SLURM_JOB_ID", "SLURM_STEP_ID", "LSB_JOBID", "PBS_JOBID", "FLUX_JOB_ID")


def _host_key() -> str:
    """This host, and the batch job (and step) this process runs in (each may see GPUs of its own).

    >>> _host_key().endswith("/" * len(JOB_ID_VARIABLES)) == all(not os.environ.get(v) for v in JOB_ID_VARIABLES)
    True
    """
    return socket.gethostname() + "".join(f"/{os.environ.get(v, '')}" for v in JOB_ID_VARIABLES)


def parse_host_gpus(out: str) -> tuple[int, int | None]:
    r"""`nvidia-smi --query-gpu=index,memory.total --format=csv,noheader,nounits`'s output as (GPUs,
    the smallest one's memory in bytes or None): a row a GPU, an index first (not its messages).

    >>> parse_host_gpus("0, 81559\n1, 40960\n")
    (2, 42949672960)
    >>> parse_host_gpus("No devices were found\n")
    (0, None)
    >>> parse_host_gpus("0, [N/A]\n")
    (1, None)
    """
    n, mib = 0, []
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0].isdigit():
            n += 1
            if fields[1].isdigit():
                mib.append(int(fields[1]))
    return n, (min(mib) * 2**20 if mib else None)


_HOST_GPUS: list[tuple[int, int | None]] = []  # what host_gpus read, once a process
_HOST_GPUS_LOCK = threading.Lock()


def host_gpus() -> tuple[int, int | None]:
    """(the GPUs on this host, the smallest one's memory in bytes: None where unknown), read
    without initialising CUDA, by one `nvidia-smi` a process (a second caller, another thread's
    included, waits for the first's answer): none where the process that started this one on the
    same host and SLURM job shared what it read (`share_host_gpus`: Snakemake's, for its local
    jobs) and nvidia-smi is at hand here too; (0, None) without nvidia-smi. Snakemake's process,
    the store job and each tile job each asked twice or once before."""
    with _HOST_GPUS_LOCK:
        if not _HOST_GPUS:
            _HOST_GPUS.append(_read_host_gpus())
        return _HOST_GPUS[0]


def forget_host_gpus() -> None:
    """Read the host's GPUs again at the next `host_gpus` (tests)."""
    with _HOST_GPUS_LOCK:
        _HOST_GPUS.clear()


def _read_host_gpus() -> tuple[int, int | None]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0, None
    shared = os.environ.get(HOST_GPUS_ENV, "").split(" ")
    if len(shared) == 3 and shared[0] == _host_key() and shared[1].isdigit():
        return int(shared[1]), int(shared[2]) if shared[2].isdigit() else None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0, None
    return parse_host_gpus(out)


def prefetch_host_gpus() -> None:
    """Start reading the host's GPUs (`host_gpus`) on a thread, where they will be asked for
    (CUDA_VISIBLE_DEVICES unset): the Snakefile's, as it is parsed, so that nvidia-smi runs while
    the rules are read rather than before (its `gpu` bound asks at the end)."""
    if cuda_visible_devices() is None and not _HOST_GPUS:
        threading.Thread(target=host_gpus, name="genotile-host-gpus", daemon=True).start()


def share_host_gpus() -> None:
    """Where this process has read its host's GPUs (`host_gpus`), hand them to the processes it
    starts (its environment: Snakemake's local jobs), so that they need not run nvidia-smi again;
    a process on another host, or in another SLURM job, reads its own."""
    with _HOST_GPUS_LOCK:
        known = list(_HOST_GPUS)
    if known:
        n, memory = known[0]
        os.environ[HOST_GPUS_ENV] = f"{_host_key()} {n} {'-' if memory is None else memory}"
