"""util/numba_start: numba's start without its BLAS probe's scipy.linalg import, for the importing
thread only."""

import subprocess
import sys
import threading

import pytest

from genotile.util import numba_start

pytest.importorskip("numba")

# a fresh interpreter: the kernel module's import and one call, then what numba found
PROBE = """
import sys
from genotile.backends.cpu import numba_popcount
numba_popcount.warm()
import numba.np.arraymath as arraymath
print("scipy.linalg" in sys.modules, arraymath._HAVE_BLAS)
"""


def test_a_kernel_process_imports_no_scipy_linalg():
    pytest.importorskip("scipy")
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_scipy_linalg_still_imports_afterwards():
    pytest.importorskip("scipy")
    code = PROBE + "import scipy.linalg\nprint(scipy.linalg.blas is not None)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "True"]


def test_the_finder_blocks_its_own_thread_only():
    finder = numba_start._Unfindable(threading.get_ident())
    with pytest.raises(ModuleNotFoundError):
        finder.find_spec("scipy.linalg")
    assert finder.find_spec("scipy") is None  # the package itself is left to the other finders
    seen = []
    other = threading.Thread(target=lambda: seen.append(finder.find_spec("scipy.linalg")))
    other.start()
    other.join()
    assert seen == [None]


def test_the_finder_is_removed():
    numba_start.import_numba()
    assert not any(isinstance(f, numba_start._Unfindable) for f in sys.meta_path)
