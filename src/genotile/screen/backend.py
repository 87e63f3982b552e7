"""The screening search on one of its two backends: numpy (for every CPU backend name) or cupy.

`resolve` says which one a config's `backend` stands for (the backend names and their families
are backends/registry.py's); `first_matches_and_sums` runs it: numpy_search.py on the CPU,
cupy_search.py on the GPU (imported only there: it needs CuPy).
"""

from genotile.backends import registry
from genotile.backends.cuda import cupy_common
from genotile.errors import GenotileError
from genotile.screen import numpy_search, score


def resolve(name: str) -> str:
    """The screening backend `name` stands for: "cupy" or "numpy" (screening has one backend of
    each family: a CPU backend maps to numpy, a CuPy one to cupy; auto takes cupy on a GPU)."""
    uses = registry.uses_gpu(name)
    if uses is None:
        return "cupy" if cupy_common.has_gpu() else "numpy"
    if uses and not cupy_common.has_gpu():
        raise GenotileError(f"backend {name!r} needs CuPy and a CUDA GPU, and none is available")
    return registry.BACKENDS[name].screen


def first_matches_and_sums(samples, sigs, family: str):
    """(positions, quality sums), both (n_samples, n_signatures), on the screening backend
    `family`: "numpy" or "cupy" (`resolve`)."""
    if family == "cupy":
        from genotile.screen import cupy_search

        pos = cupy_search.first_matches(samples, sigs)
        return pos, cupy_search.qual_sums(samples, pos, sigs.lengths)
    if family != "numpy":
        raise GenotileError(f"unknown screening backend {family!r}: numpy or cupy (screen.backend.resolve)")
    pos = numpy_search.first_matches(samples, sigs)
    return pos, score.qual_sums(samples, pos, sigs.lengths)
