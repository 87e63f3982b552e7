"""tile_select's launch arguments as one struct: `SelectParams` mirrors the C struct of
kernels/select_params.cuh field by field, and `packed()` gives it as the kernel's one argument
(a numpy scalar of `STRUCT`, a structured dtype with C alignment, which CuPy passes by value).

Each field declares its C type here once (`_member`); `STRUCT` is built from the fields in
their order, so a field added to the C struct is added here in the same place
(tests/backends/test_select_params.py compares both layouts, on the CPU and on the device).
Pointer fields take a device array, an address or None (a null pointer).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

MAX_COUNTS = 8  # counts a select kernel reads at most (select_params.cuh: GT_MAX_COUNTS)

I64, I32, F64 = np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.float64)
POINTER = np.dtype(np.uint64)
# struct MetricParams (epilogues/epilogue.cuh): the metric's parameters
METRIC_PARAMS = np.dtype([("multiplier", F64), ("param", F64)], align=True)
# struct CountSource: a count's sub-tile matrix, row sums over the tile's rows, over its columns
COUNT_SOURCE = np.dtype([("mat", POINTER), ("lvec", POINTER), ("rvec", POINTER)], align=True)


def _member(dtype: np.dtype, default: Any = 0, count: int = 0) -> Any:
    """A field of SelectParams and its C type (count > 0: an array of that many)."""
    return field(default=default, metadata={"dtype": dtype, "count": count})


@dataclass(frozen=True, kw_only=True)
class SelectParams:
    """One tile_select launch: a sub-tile, its outputs, histograms and counts (the C struct's
    comments say what each field is)."""

    # the sub-tile: rows i0 .. i0 + ms, columns j0 .. j0 + ns of a tile n_total columns wide
    i0: int = _member(I64)
    j0: int = _member(I64)
    n_total: int = _member(I64)
    ms: int = _member(I32)
    ns: int = _member(I32)
    diag: bool = _member(I32, False)
    mode: int = _member(I32)  # 0: append the passing pairs; 1: every pair at its row-major rank
    has_thr: bool = _member(I32, False)
    dense_col: int = _member(I32)
    thr: float = _member(F64, 0.0)
    metric: tuple[float, float] = _member(METRIC_PARAMS, (0.0, 0.0))  # (multiplier, param)
    # outputs
    counter: Any = _member(POINTER, None)
    idx: Any = _member(POINTER, None)
    cols: Any = _member(POINTER, None)
    cap: int = _member(I64)
    dense: Any = _member(POINTER, None)
    # histograms (hist None: none)
    hist: Any = _member(POINTER, None)
    hspec: Any = _member(POINTER, None)
    hoff: Any = _member(POINTER, None)
    hist_base: Any = _member(POINTER, None)
    perm_l: Any = _member(POINTER, None)
    perm_r: Any = _member(POINTER, None)
    hist_total: int = _member(I64)
    hist_mask: int = _member(I32)
    win: int = _member(I32)
    # the metric's counts in its order: (mat, lvec, rvec) each, the rest null
    counts: tuple = _member(COUNT_SOURCE, (), MAX_COUNTS)

    def packed(self) -> np.ndarray:
        """The kernel argument: a 0-d array of STRUCT holding every field."""
        arg = np.zeros((), dtype=STRUCT)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "counts":
                if len(value) > MAX_COUNTS:
                    raise ValueError(f"{len(value)} counts: a select kernel reads at most {MAX_COUNTS}")
                for k, source in enumerate(value):
                    arg["counts"][k] = tuple(address(a) for a in source)
            elif f.metadata["dtype"] is POINTER:
                arg[f.name] = address(value)
            else:
                arg[f.name] = value
        return arg


def address(a) -> int:
    """A device pointer's value: a CuPy array's data, an address as is, None as null."""
    if a is None:
        return 0
    if isinstance(a, (int, np.integer)):
        return int(a)
    return int(a.data.ptr)


STRUCT = np.dtype(
    [
        (f.name, f.metadata["dtype"], (f.metadata["count"],)) if f.metadata["count"] else (f.name, f.metadata["dtype"])
        for f in fields(SelectParams)
    ],
    align=True,
)
