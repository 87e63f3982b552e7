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


# a fresh interpreter: sys.meta_path watched for edits made in place while numba starts
WATCHED = """
import sys
from genotile.util import numba_start

edits = []


class Watched(list):
    pass


for name in ("insert", "remove", "append", "pop", "__setitem__", "__delitem__"):
    def edit(self, *args, _name=name):
        edits.append(_name)
        return getattr(list, _name)(self, *args)

    setattr(Watched, name, edit)


sys.meta_path = Watched(sys.meta_path)
before = list(sys.meta_path)
numba_start.import_numba()
left = [f for f in sys.meta_path if isinstance(f, numba_start._Unfindable)]
print(edits, len(left), [f for f in sys.meta_path if f not in before] == [])
"""


def test_the_finder_leaves_and_the_list_is_never_edited_in_place():
    """An import on another thread walks sys.meta_path as it is: an entry inserted or removed
    under it would shift the finders it has not asked yet (an installed module then not found).
    So the finder comes and goes with the list rebound, never edited, and is gone after."""
    out = subprocess.run([sys.executable, "-c", WATCHED], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[0] == "[] 0 True", out
