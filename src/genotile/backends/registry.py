"""The config's `backend` names and what each one is, in one place.

Tiles and triples (backends/__init__.py: `resolve`), screening (screen/backend.py: `resolve`),
the GPU slot of a job (runtime/gpu_slots.py) and the rules (rules/common.smk: the conda env and
GPU request) all read the answer from here. Importing this module imports no backend (no numba, no CuPy), so the
rules can ask it at parse time.
"""

from dataclasses import dataclass

from genotile.errors import GenotileError

AUTO = "auto"


@dataclass(frozen=True)
class Backend:
    name: str
    module: str  # the module that computes tiles (count_matrices, is_available, ...)
    gpu: bool  # runs on a CUDA GPU (CuPy)
    screen: str  # the screening backend of its family: "cupy" or "numpy" (screening has one CPU backend)


# Fastest first: `auto` takes the first available one (the GPU ones report unavailable without
# CuPy and a CUDA GPU, so CPU runs are unaffected).
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend("cupy-b1", "genotile.backends.cuda.cupy_b1", gpu=True, screen="cupy"),
        Backend("cupy-int8", "genotile.backends.cuda.cupy_int8", gpu=True, screen="cupy"),
        Backend("numba", "genotile.backends.cpu.numba_popcount", gpu=False, screen="numpy"),
        Backend("numpy", "genotile.backends.cpu.numpy_blas", gpu=False, screen="numpy"),
        Backend("numpy-popcount", "genotile.backends.cpu.numpy_popcount", gpu=False, screen="numpy"),
    )
}
NAMES = (AUTO, *BACKENDS)  # what the config's `backend` may say (config/schema: checked by a test)


def check(name: str) -> str:
    """`name` if it is `auto` or a backend; else GenotileError listing the known ones."""
    if name != AUTO and name not in BACKENDS:
        raise GenotileError(f"unknown backend {name!r}; known: {', '.join(NAMES)}")
    return name


def uses_gpu(name: str) -> bool | None:
    """Whether backend `name` runs on a GPU: True (CuPy), False (CPU), None for `auto` (it takes
    a GPU where the machine that runs the job has one)."""
    if check(name) == AUTO:
        return None
    return BACKENDS[name].gpu


def is_cpu(name: str) -> bool:
    """True for a backend that never uses a GPU (its jobs need no CuPy and no GPU)."""
    return uses_gpu(name) is False
