"""Backends compute a tile's count matrices from packed plane words.

Every backend implements `count_matrices(left, right, counts)`:
  left  -- uint64 words (rows of block I, words), right -- (rows of block J, words);
  counts -- {name: [Term, ...]} from a metric;
and returns {name: int64 array (rows I, rows J)}, bit-identical across backends.
"""

import importlib
import sys

from genotile.backends import registry
from genotile.backends.cpu import numba_popcount, numpy_blas
from genotile.core import rates
from genotile.errors import GenotileError

# name -> module, fastest first (backends/registry.py: the names, their modules, which use a GPU)
BACKENDS = {name: importlib.import_module(b.module) for name, b in registry.BACKENDS.items()}


def limit_threads(n: int) -> None:
    """Use at most n CPU threads in the CPU backends (a job's `threads`); call before the first tile."""
    numba_popcount.MAX_THREADS = max(1, int(n))
    numpy_blas.THREADS = max(1, min(numpy_blas.THREADS, int(n)))


def available() -> list[str]:
    return [name for name, mod in BACKENDS.items() if mod.is_available()]


def numba_start_s() -> float:
    """Seconds numba still costs this process before its first tile: its import (unless a
    reader's kernels already imported it) and its first kernel call (unless a tile ran)."""
    if numba_popcount._KERNEL is not None:
        return 0.0
    return rates.NUMBA_START["first_call"] + (0.0 if "numba" in sys.modules else rates.NUMBA_START["import"])


def predicted_seconds(name: str, work: int) -> float:
    """The counts of a tile of `work` pairs x plane words per vector on CPU backend `name`
    (core/rates.py `CPU_COUNTS`), numba's start-up in this process included."""
    return (numba_start_s() if name == "numba" else 0.0) + work / rates.CPU_COUNTS[name]


def resolve(name: str, work: int | None = None) -> str:
    """The backend `name` stands for. "auto": the fastest one available here; on the CPU, for a
    tile of `work` pairs x plane words per vector when it is given, the one of least predicted
    time (`predicted_seconds`): numpy only where numba's start-up outweighs its faster counts."""
    if registry.check(name) == registry.AUTO:
        here = available()
        if work is None or registry.BACKENDS[here[0]].gpu:
            return here[0]
        timed = [b for b in here if b in rates.CPU_COUNTS]  # fastest first: the first wins a tie
        return min(timed, key=lambda b: predicted_seconds(b, work)) if timed else here[0]
    if not BACKENDS[name].is_available():
        raise GenotileError(f"backend {name!r} is not available on this machine")
    return name


def get(name: str):
    return BACKENDS[resolve(name)]
