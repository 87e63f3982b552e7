"""Exact histograms of a metric over all pairs, summed tile by tile.

A tile sees every pair it computes, before the threshold, so the sum of the
tiles' histograms is the histogram of the metric over all unique pairs -- the
distribution a report should show, not that of the thresholded subset.

Integer columns (counts: snp, hamming) get one bin per value (a bincount).
Float columns get fixed bins over the metric's natural range, plus three
counters: below the range (-inf included), above it (+inf included) and nan.
Functions take the array module (`xp`: numpy or cupy), so a GPU tile can count
on the device.
"""

import numpy as np

# (low, high, bins) per float column; values equal to `high` go to the last bin
FLOAT_BINS = {
    "dist_1ibs": (0.0, 1.0, 200),
    "kinship": (-1.0, 0.5, 300),
    **{f"ccc_{a}{b}": (0.0, 4.5, 450) for a in "01" for b in "01"},
}
EXTRA = ("below", "above", "nan")


def histogram_columns(metric) -> tuple[str, ...]:
    """The columns a report plots: the matrix column, and every CCC entry for ccc2."""
    return metric.columns if metric.name == "ccc2" else (metric.dense_column,)


def column_histogram(values, column: str, xp=np):
    """int64 counts of the values (any shape) of one column."""
    v = values.ravel()
    if column not in FLOAT_BINS:
        return xp.bincount(v.astype(xp.int64), minlength=1).astype(xp.int64)
    low, high, bins = FLOAT_BINS[column]
    nan = xp.isnan(v)
    below = (v < low) & ~nan
    above = (v > high) & ~nan
    inside = ~(nan | below | above)
    index = xp.floor((v[inside] - low) * (bins / (high - low))).astype(xp.int64)
    index = xp.minimum(index, bins - 1)  # v == high
    counts = xp.bincount(index, minlength=bins).astype(xp.int64)
    extra = xp.stack([below.sum(), above.sum(), nan.sum()]).astype(xp.int64)
    return xp.concatenate([counts, extra])


def tile_histograms(metric, values: dict, unique, xp=np) -> dict:
    """{'hist_<column>': counts} over the pairs where `unique` is true."""
    return {f"hist_{c}": column_histogram(values[c][unique], c, xp) for c in histogram_columns(metric)}


def add(total: dict, tile: dict) -> dict:
    """Sum tile histograms (bincounts of different lengths are padded)."""
    for name, counts in tile.items():
        if not name.startswith("hist_"):
            continue
        have = total.get(name)
        if have is None:
            total[name] = counts.astype(np.int64)
            continue
        size = max(have.size, counts.size)
        total[name] = np.pad(have, (0, size - have.size)) + np.pad(counts, (0, size - counts.size))
    return total


def rows(column: str, counts: np.ndarray):
    """(column, low, high, count) rows: integers as [v, v], floats as [low, high)."""
    if column not in FLOAT_BINS:
        for value, count in enumerate(counts.tolist()):
            yield column, str(value), str(value), count
        return
    low, high, bins = FLOAT_BINS[column]
    edges = np.linspace(low, high, bins + 1)
    for k in range(bins):
        yield column, repr(float(edges[k])), repr(float(edges[k + 1])), int(counts[k])
    below, above, nan = (int(c) for c in counts[bins:])
    yield column, "-inf", repr(float(low)), below
    yield column, repr(float(high)), "inf", above
    yield column, "nan", "nan", nan


def in_input_order(values: dict, transposed, flipped, xp=np) -> dict:
    """Values with the asymmetric columns (ccc2's 01/10) read as (a, b), a before b in input order."""
    out = dict(values)
    for c1, c2 in transposed:
        out[c1], out[c2] = xp.where(flipped, values[c2], values[c1]), xp.where(flipped, values[c1], values[c2])
    return out
