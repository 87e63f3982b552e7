"""Exact histograms of a metric over all pairs, summed tile by tile.

A tile sees every pair it computes, before the threshold, so the sum of the
tiles' histograms is the histogram of the metric over all unique pairs -- the
distribution a report should show, not that of the thresholded subset.

Integer columns (counts: snp, hamming) get one bin per value (a bincount).
Float columns get fixed bins over the metric's natural range (Metric.float_bins), plus three
counters: below the range (-inf included), above it (+inf included) and nan.
Functions take the array module (`xp`: numpy or cupy), so a GPU tile can count
on the device.
"""

import numpy as np

EXTRA = ("below", "above", "nan")


def column_histogram(values, metric, column: str, xp=np):
    """int64 counts of the values (any shape) of one column of `metric` (metrics.Metric: its
    `float_bins` bin a float column; any other column gets a bincount).

    Parameters
    ----------
    values : numpy.ndarray or cupy.ndarray, any shape
        Values of `column` (non-negative integers, or floats).
    metric : metrics.Metric
        The metric the column belongs to.
    column : str
        One of `metric.histogram_columns`.
    xp : module, optional
        numpy, or cupy to count on the device.

    Returns
    -------
    ndarray of int64, shape (max + 1,) or (bins + 3,)
        Integers: one count per value 0..max. Floats: one count per bin over [low, high] (a
        value equal to high in the last bin), then below, above (infinities included) and nan.

    Examples
    --------
    >>> from genotile.core.metrics import get_metric
    >>> column_histogram(np.array([[0, 2], [2, 3]]), get_metric("snp"), "snp").tolist()
    [1, 0, 2, 1]
    >>> h = column_histogram(np.array([0.0, 0.5, 1.0, np.nan, 2.0]), get_metric("ibs"), "dist_1ibs")
    >>> h.size, h[[0, 100, 199]].tolist(), h[200:].tolist()
    (203, [1, 1, 1], [0, 1, 1])
    """
    if column not in metric.float_bins:
        if xp is np and values.ndim == 2:
            return _bincount_bands(values)
        return xp.bincount(values.ravel().astype(xp.int64, copy=False), minlength=1).astype(xp.int64, copy=False)
    v = values.ravel()
    low, high, bins = metric.float_bins[column]
    nan = xp.isnan(v)
    below = (v < low) & ~nan
    above = (v > high) & ~nan
    inside = ~(nan | below | above)
    index = xp.floor((v[inside] - low) * (bins / (high - low))).astype(xp.int64)
    index = xp.minimum(index, bins - 1)  # v == high
    counts = xp.bincount(index, minlength=bins).astype(xp.int64)
    extra = xp.stack([below.sum(), above.sum(), nan.sum()]).astype(xp.int64)
    return xp.concatenate([counts, extra])


BINCOUNT_CELLS = 1 << 22  # cells of a band of rows counted at a time


def _bincount_bands(values: np.ndarray) -> np.ndarray:
    """np.bincount of a 2-D block of non-negative integers, a band of rows at a time on threads:
    a tile's block is often a view into a padded count buffer, which ravel() and astype(int64)
    would copy whole (twice its bytes, then 8 bytes a cell)."""
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    step = max(1, BINCOUNT_CELLS // max(1, values.shape[1]))

    def band(r0: int) -> np.ndarray:
        return np.bincount(values[r0 : r0 + step].ravel().astype(np.int64, copy=False), minlength=1)

    total = np.zeros(1, np.int64)
    with ThreadPoolExecutor(usable_cpus(8), thread_name_prefix="genotile-bincount") as pool:
        for counts in pool.map(band, range(0, values.shape[0], step)):
            if counts.size > total.size:
                total = np.pad(total, (0, counts.size - total.size))
            total[: counts.size] += counts
    return total


def tile_histograms(metric, values: dict, unique, xp=np) -> dict:
    """{'hist_<column>': counts} over the pairs where `unique` is true, for each of the metric's
    `histogram_columns` (the matrix column; every CCC entry for ccc2).

    Parameters
    ----------
    metric : metrics.Metric
    values : dict of str to ndarray, each shape (rows I, rows J)
        The tile's value columns (asymmetric ones in input order: `in_input_order`).
    unique : ndarray of bool, shape (rows I, rows J)
        The unique pairs of the tile (row < column on a diagonal tile, all elsewhere).
    xp : module, optional
        numpy or cupy.

    Returns
    -------
    dict of str to ndarray of int64
        One `column_histogram` per histogram column.
    """
    return {f"hist_{c}": column_histogram(values[c][unique], metric, c, xp) for c in metric.histogram_columns}


def symmetric_counts(metric) -> bool:
    """Whether `diagonal_tile_histograms` applies: no transposed columns, and every histogram
    column an integer count (a bincount), so that a diagonal tile's block is symmetric exactly."""
    return not metric.transposed and not any(c in metric.float_bins for c in metric.histogram_columns)


def diagonal_tile_histograms(metric, values: dict) -> dict:
    """`tile_histograms` of a diagonal tile of a metric with `symmetric_counts`: the pairs above
    the diagonal are half of the block's cells off the diagonal, so each histogram is (the
    block's - its diagonal's) / 2, without the (n, n) masks and gathers of the upper triangle.

    >>> from genotile.core.metrics import get_metric
    >>> v = np.array([[0, 3, 1], [3, 0, 1], [1, 1, 0]])
    >>> diagonal_tile_histograms(get_metric("snp"), {"snp": v})["hist_snp"].tolist()
    [0, 2, 0, 1]
    """
    out = {}
    for c in metric.histogram_columns:
        block = column_histogram(values[c], metric, c)  # a bincount: its diagonal's is no longer
        diag = column_histogram(np.diagonal(values[c]), metric, c)
        half = np.trim_zeros((block - np.pad(diag, (0, block.size - diag.size))) // 2, "b")
        # trimmed to the largest value above the diagonal, as the bincount of those values is
        out[f"hist_{c}"] = half if half.size else np.zeros(1, np.int64)
    return out


def add(total: dict, tile: dict) -> dict:
    """Sum tile histograms (bincounts of different lengths are padded).

    Parameters
    ----------
    total : dict of str to numpy.ndarray of int64
        The running sums, updated in place.
    tile : dict of str to numpy.ndarray
        A tile's arrays; only the `hist_<column>` ones, shape (bins,), are added.

    Returns
    -------
    dict
        `total`.

    Examples
    --------
    >>> total = add({}, {"hist_snp": np.array([1, 2]), "a": np.array([7])})
    >>> add(total, {"hist_snp": np.array([0, 0, 5])})["hist_snp"].tolist()
    [1, 2, 5]
    """
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


def rows(metric, column: str, counts: np.ndarray):
    """The rows of histogram.tsv for one column.

    Parameters
    ----------
    metric : metrics.Metric
    column : str
        One of `metric.histogram_columns`.
    counts : numpy.ndarray of int64, shape (max + 1,) or (bins + 3,)
        The column's summed histogram (`column_histogram`, `add`).

    Yields
    ------
    tuple of (str, str, str, int)
        (column, low, high, count): integers as [v, v]; floats as [low, high) per bin, then
        the below (-inf, low), above (high, inf) and nan rows.
    """
    if column not in metric.float_bins:
        for value, count in enumerate(counts.tolist()):
            yield column, str(value), str(value), count
        return
    low, high, bins = metric.float_bins[column]
    edges = np.linspace(low, high, bins + 1)
    for k in range(bins):
        yield column, repr(float(edges[k])), repr(float(edges[k + 1])), int(counts[k])
    below, above, nan = (int(c) for c in counts[bins:])
    yield column, "-inf", repr(float(low)), below
    yield column, repr(float(high)), "inf", above
    yield column, "nan", "nan", nan


def in_input_order(values: dict, transposed, flipped, xp=np) -> dict:
    """Values with the asymmetric columns (ccc2's 01/10) read as (a, b), a before b in input order.

    Parameters
    ----------
    values : dict of str to ndarray, each shape (rows I, rows J)
        A tile's value columns as computed (row i of block I, column j of block J).
    transposed : sequence of (str, str)
        Column pairs that trade places when the pair does (`Metric.transposed`).
    flipped : ndarray of bool, shape (rows I, rows J)
        Where vector i comes after vector j in input order.
    xp : module, optional
        numpy or cupy.

    Returns
    -------
    dict of str to ndarray
        The same columns, the transposed pairs swapped where `flipped`.
    """
    out = dict(values)
    for c1, c2 in transposed:
        out[c1], out[c2] = xp.where(flipped, values[c2], values[c1]), xp.where(flipped, values[c1], values[c2])
    return out
