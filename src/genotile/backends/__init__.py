"""Backends compute a tile's count matrices from packed plane words.

Every backend implements `count_matrices(left, right, counts)`:
  left  -- uint64 words (rows of block I, words), right -- (rows of block J, words);
  counts -- {name: [Term, ...]} from a metric;
and returns {name: int64 array (rows I, rows J)}, bit-identical across backends.
"""

import importlib

from genotile.backends import registry
from genotile.backends.cpu import numba_popcount, numpy_blas
from genotile.errors import GenotileError

# name -> module, fastest first (backends/registry.py: the names, their modules, which use a GPU)
BACKENDS = {name: importlib.import_module(b.module) for name, b in registry.BACKENDS.items()}


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
    if registry.check(name) == registry.AUTO:
        best = available()[0]
        if best == "numba" and work is not None and work < NUMBA_MIN_WORK:
            return "numpy"
        return best
    if not BACKENDS[name].is_available():
        raise GenotileError(f"backend {name!r} is not available on this machine")
    return name


def get(name: str):
    return BACKENDS[resolve(name)]
