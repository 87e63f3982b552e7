"""backends/cuda/transfers._staging: the pinned ring grows by the buffers a transfer lacks, never
pins more than it is asked for, and replaces buffers too small (no GPU needed: the pinning is
stood in for by plain host arrays)."""

import numpy as np
import pytest

from genotile.backends.cuda import transfers


@pytest.fixture
def pinned(monkeypatch):
    made: list[int] = []

    def empty_pinned(nbytes):
        made.append(nbytes)
        return np.empty(nbytes, dtype=np.uint8)

    monkeypatch.setattr(transfers.cc, "empty_pinned", empty_pinned)
    monkeypatch.setattr(transfers, "_RING", [])
    monkeypatch.setattr(transfers, "PIECE_BYTES", 1024)
    return made


def test_the_ring_grows_by_what_a_transfer_lacks(pinned):
    first = transfers._staging(100, 2)
    assert pinned == [1024, 1024] and len(first) == 2
    again = transfers._staging(1000, 5)
    assert pinned == [1024] * 5 and again[:2] == first  # the two kept, three pinned
    assert len(transfers._staging(10, 3)) == 3 and len(pinned) == 5  # nothing pinned for fewer


def test_buffers_too_small_are_replaced(pinned):
    transfers._staging(100, 2)
    bigger = transfers._staging(4096, 3)
    assert pinned == [1024, 1024, 4096, 4096, 4096]
    assert all(b.nbytes >= 4096 for b in bigger)
