"""Backends compute a tile's count matrices from packed plane words.

Every backend implements `count_matrices(left, right, counts)`:
  left  -- uint64 words (rows of block I, words), right -- (rows of block J, words);
  counts -- {name: [Term, ...]} from a metric;
and returns {name: int64 array (rows I, rows J)}, bit-identical across backends.
"""

from genotile.backends.cpu import numba_popcount, numpy_blas, numpy_popcount
from genotile.backends.cuda import cupy_b1, cupy_int8
from genotile.errors import GenotileError

# Fastest first: `auto` takes the first available (the GPU ones report unavailable without
# CuPy and a CUDA GPU, so CPU runs are unaffected).
BACKENDS = {
    "cupy-b1": cupy_b1,
    "cupy-int8": cupy_int8,
    "numba": numba_popcount,
    "numpy": numpy_blas,
    "numpy-popcount": numpy_popcount,
}


def limit_threads(n: int) -> None:
    """Use at most n CPU threads in the CPU backends (a job's `threads`); call before the first tile."""
    numba_popcount.MAX_THREADS = max(1, int(n))
    numpy_blas.THREADS = max(1, min(numpy_blas.THREADS, int(n)))


def available() -> list[str]:
    return [name for name, mod in BACKENDS.items() if mod.is_available()]


# numba's first kernel call in a process costs ~0.4 s of its own start-up, on top of ~0.35 s to
# import it; a tile job of less work than this (pairs x plane words per vector) is done sooner
# by BLAS (`numpy`, ~2e9 such pair-words/s on 2 cores), so `auto` takes numpy there
NUMBA_MIN_WORK = 2**31


def resolve(name: str, work: int | None = None) -> str:
    """The backend `name` stands for ("auto": the fastest one available here, for a tile of
    `work` pairs x plane words per vector when it is given)."""
    if name == "auto":
        best = available()[0]
        if best == "numba" and work is not None and work < NUMBA_MIN_WORK:
            return "numpy"
        return best
    if name not in BACKENDS:
        raise GenotileError(f"unknown backend {name!r}; known: auto, {', '.join(BACKENDS)}")
    if not BACKENDS[name].is_available():
        raise GenotileError(f"backend {name!r} is not available on this machine")
    return name


def get(name: str):
    return BACKENDS[resolve(name)]
