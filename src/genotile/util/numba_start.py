"""numba imported without its BLAS probe: imported by every module of genotile's numba kernels
before `from numba import ...`.

numba's first compiled call (or a cached kernel's first load) imports `numba.np.arraymath`,
whose module-level `_check_blas()` imports `scipy.linalg` to learn whether a BLAS is there for
np.convolve and np.correlate of floats: 0.12 s of a numba start of ~0.44 s on the 2-core VM
(bench/RESULTS.md, "Session 20"), paid by every process that runs a numba kernel (an appended
store's tiles, every CPU tile job), with scipy installed. genotile's kernels call neither
function (integer popcounts, text and genotype loops). So `arraymath` is imported here with
`scipy.linalg` unfindable for this thread only: the probe finds no BLAS, and numba's
np.convolve / np.correlate of floats in this process take numba's own inner-product loop (the
same sums in another order; np.dot and np.linalg still find scipy's BLAS, which they probe when
compiled). Another thread importing scipy.linalg meanwhile imports it as usual. Where
`arraymath` or `scipy.linalg` is imported already, nothing changes.
"""

import importlib.abc
import sys
import threading

_PROBED = "scipy.linalg"
_lock = threading.Lock()


class _Unfindable(importlib.abc.MetaPathFinder):
    """A finder that makes `scipy.linalg` unfindable for one thread, and is silent for the rest."""

    def __init__(self, thread: int) -> None:
        self.thread = thread

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _PROBED and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{_PROBED}: not imported for numba's BLAS probe", name=fullname)
        return None


def import_numba() -> None:
    """Import numba and `numba.np.arraymath`, the latter without its BLAS probe's import of
    scipy.linalg (the module docstring); once per process.

    >>> import_numba(); import numba.np.arraymath
    """
    if "numba.np.arraymath" in sys.modules:
        return
    with _lock:
        if "numba.np.arraymath" in sys.modules:
            return
        finder = _Unfindable(threading.get_ident())
        # sys.meta_path rebound, never edited in place: an import on another thread walks the list
        # as it is, and an entry inserted or removed under it would shift the finders it has not
        # asked yet (one skipped: an installed module not found)
        sys.meta_path = [finder, *sys.meta_path]
        try:
            import numba.np.arraymath  # noqa: F401 -- its _check_blas() runs now, finding no scipy.linalg
        finally:
            sys.meta_path = [f for f in sys.meta_path if f is not finder]
