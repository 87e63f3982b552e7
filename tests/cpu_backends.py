"""The CPU backends the exactness tests run on.

`numba` runs only where numba is installed (the GPU machine's image has none): its
parametrized cases skip there and say so. `.ci/run` sets GENOTILE_REQUIRE_NUMBA=1, which
makes a missing numba an error instead of a skip.
"""

import os

import pytest

from genotile import backends

NUMBA = backends.BACKENDS["numba"].is_available()
if not NUMBA and os.environ.get("GENOTILE_REQUIRE_NUMBA") == "1":
    raise RuntimeError("GENOTILE_REQUIRE_NUMBA=1 but numba is not installed")

# every CPU backend that runs here (for loops and hypothesis strategies)
CPU_BACKENDS = ["numpy", "numpy-popcount", "numba"] if NUMBA else ["numpy", "numpy-popcount"]
# for @pytest.mark.parametrize: numba's cases skip, with the reason, where it is missing
CPU_BACKEND_PARAMS = [
    "numpy",
    "numpy-popcount",
    pytest.param("numba", marks=pytest.mark.skipif(not NUMBA, reason="numba is not installed")),
]
