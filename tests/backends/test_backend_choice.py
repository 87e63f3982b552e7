"""`auto` on the CPU: the backend of least predicted time for the tile (backends.resolve,
core/rates.py CPU_COUNTS and NUMBA_START), numba's start-up counted only while this process
has not paid it."""

import sys

import pytest

from genotile import backends
from genotile.core import rates

KING_1000_X_20000 = 1000 * 1000 * 5 * 313  # one diagonal tile: pairs x (5 planes x 313 words)


@pytest.fixture
def cpu_only(monkeypatch):
    """A CPU host with numba, in a process that has not imported numba nor run its kernel."""
    monkeypatch.setattr(backends, "available", lambda: ["numba", "numpy", "numpy-popcount"])
    monkeypatch.setattr(backends.numba_popcount, "_KERNEL", None)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    return monkeypatch


def crossover(start: float) -> float:
    """The work at which numba's start plus counts take as long as numpy's counts."""
    return start / (1 / rates.CPU_COUNTS["numpy"] - 1 / rates.CPU_COUNTS["numba"])


def test_auto_takes_the_backend_of_least_predicted_time(cpu_only):
    start = rates.NUMBA_START["import"] + rates.NUMBA_START["first_call"]
    assert backends.numba_start_s() == pytest.approx(start)
    edge = crossover(start)
    assert backends.resolve("auto", work=int(edge * 0.99)) == "numpy"
    assert backends.resolve("auto", work=int(edge * 1.01)) == "numba"
    for work in (1, 10**6, 10**9, 10**12):
        chosen = backends.resolve("auto", work=work)
        assert backends.predicted_seconds(chosen, work) == min(
            backends.predicted_seconds(b, work) for b in ("numba", "numpy")
        )
    assert backends.resolve("auto") == "numba"  # no tile to size: the fastest


def test_issue_28_king_1000_by_20000_takes_numba(cpu_only):
    """The tile the issue timed (numpy's counts 9.0 s, numba's 1.8-2.8 s there; 0.77-0.85 s
    against 0.67-0.76 s with numba's start-up here on a quiet machine) goes to numba."""
    assert backends.resolve("auto", work=KING_1000_X_20000) == "numba"
    assert backends.predicted_seconds("numba", KING_1000_X_20000) < backends.predicted_seconds(
        "numpy", KING_1000_X_20000
    )


def test_numba_start_is_counted_once_per_process(cpu_only):
    small = 10**6  # a tile of 10^6 pair-words: numpy, while numba would cost its start-up
    assert backends.resolve("auto", work=small) == "numpy"
    cpu_only.setitem(sys.modules, "numba", object())  # a reader's kernels imported numba
    assert backends.numba_start_s() == pytest.approx(rates.NUMBA_START["first_call"])
    assert backends.resolve("auto", work=int(crossover(rates.NUMBA_START["first_call"]) * 1.01)) == "numba"
    cpu_only.setattr(backends.numba_popcount, "_KERNEL", object())  # a tile ran on numba here
    assert backends.numba_start_s() == 0.0
    assert backends.resolve("auto", work=1) == "numba"


def test_gpu_and_named_backends_are_not_second_guessed(cpu_only):
    cpu_only.setattr(backends, "available", lambda: ["cupy-b1", "numba", "numpy"])
    assert backends.resolve("auto", work=1) == "cupy-b1"  # a GPU takes every tile
    cpu_only.setattr(backends, "available", lambda: ["numpy", "numpy-popcount"])  # no numba
    assert backends.resolve("auto", work=10**12) == "numpy"
    assert backends.resolve("numpy", work=10**12) == "numpy"
