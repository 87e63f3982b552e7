"""Backends compute a tile's count matrices from packed plane words.

Every backend implements `count_matrices(left, right, counts)`:
  left  -- uint64 words (rows of block I, words), right -- (rows of block J, words);
  counts -- {name: [Term, ...]} from a metric;
and returns {name: int64 array (rows I, rows J)}, bit-identical across backends.
"""

from ..errors import GenotileError
from . import cupy_b1, cupy_int8, numba_popcount, numpy_blas, numpy_popcount

# Fastest first: `auto` takes the first available (the GPU ones report unavailable without
# CuPy and a CUDA GPU, so CPU runs are unaffected).
BACKENDS = {
    "cupy-b1": cupy_b1,
    "cupy-int8": cupy_int8,
    "numba": numba_popcount,
    "numpy": numpy_blas,
    "numpy-popcount": numpy_popcount,
}


def available() -> list[str]:
    return [name for name, mod in BACKENDS.items() if mod.is_available()]


def resolve(name: str) -> str:
    """The backend `name` stands for ("auto": the fastest one available here)."""
    if name == "auto":
        return available()[0]
    if name not in BACKENDS:
        raise GenotileError(f"unknown backend {name!r}; known: auto, {', '.join(BACKENDS)}")
    if not BACKENDS[name].is_available():
        raise GenotileError(f"backend {name!r} is not available on this machine")
    return name


def get(name: str):
    return BACKENDS[resolve(name)]
