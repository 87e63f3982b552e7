"""The screening search on one of its two backends: numpy (for every CPU backend name) or cupy.

Which one a config's `backend` stands for is backends.resolve_screen's answer (the one backend
resolver, backends/registry.py).
"""

from genotile.backends.cpu import screen_numpy as numpy_backend
from genotile.errors import GenotileError
from genotile.screen import score


def first_matches_and_sums(samples, sigs, family: str):
    """(positions, quality sums), both (n_samples, n_signatures), on the screening backend
    `family`: "numpy" or "cupy" (backends.resolve_screen)."""
    if family == "cupy":
        from genotile.backends.cuda import cupy_screen as cupy_backend

        pos = cupy_backend.first_matches(samples, sigs)
        return pos, cupy_backend.qual_sums(samples, pos, sigs.lengths)
    if family != "numpy":
        raise GenotileError(f"unknown screening backend {family!r}: numpy or cupy (backends.resolve_screen)")
    pos = numpy_backend.first_matches(samples, sigs)
    return pos, score.qual_sums(samples, pos, sigs.lengths)
