"""Which screening backend runs: the config's `backend` mapped onto numpy or cupy."""

from genotile.backends.cpu import screen_numpy as numpy_backend
from genotile.backends.cuda import cupy_common
from genotile.errors import GenotileError
from genotile.screen import score


def resolve(backend: str) -> str:
    """'numpy' or 'cupy': auto picks cupy on a GPU; numpy*, numba and cupy-* name their family
    (screening has one CPU backend: the numpy one)."""
    if backend == "auto":
        return "cupy" if cupy_common.has_gpu() else "numpy"
    if backend.startswith("numpy") or backend == "numba":
        return "numpy"
    if backend.startswith("cupy"):
        if not cupy_common.has_gpu():
            raise GenotileError(f"backend {backend!r} needs CuPy and a CUDA GPU, and none is available")
        return "cupy"
    raise GenotileError(f"unknown backend {backend!r}")


def first_matches_and_sums(samples, sigs, backend: str):
    """(positions, quality sums), both (n_samples, n_signatures), on the chosen backend."""
    if resolve(backend) == "cupy":
        from genotile.backends.cuda import cupy_screen as cupy_backend

        pos = cupy_backend.first_matches(samples, sigs)
        return pos, cupy_backend.qual_sums(samples, pos, sigs.lengths)
    pos = numpy_backend.first_matches(samples, sigs)
    return pos, score.qual_sums(samples, pos, sigs.lengths)
