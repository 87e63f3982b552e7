"""Identical vectors computed once: collapse exact duplicates before the plan, expand in the merge.

Outbreak and SARS-CoV-2 alignments hold many identical sequences (identical codes over the
informative columns). A pair's value depends on its two vectors alone, so the tiles need only
the distinct vectors ("distinct rows", numbered by first occurrence in input order); every
output is then rebuilt exactly:

- a pair of input vectors (x, y) of distinct rows g != h has the value of (g, h), read in input
  order (the transposed columns of an asymmetric metric trade places where x > y);
- a pair of copies of one distinct row g has the value of g with itself, computed once per row
  with copies (`self_values`: each plane product's diagonal, exact integer popcounts, then the
  metric's epilogue), which is not always 0 (ibs and king count the row's own calls);
- the histogram counts a distinct pair m_g * m_h times and the self value C(m_g, 2) times
  (`weighted_histograms`), so every tile's histogram is that of the input pairs it stands for;
- matrix.tsv is the distinct matrix indexed by each input vector's distinct row.

The ingest manifest records `distinct_index` (per input vector, its distinct row) and
`n_distinct` only where a collapse was asked for and found duplicates; without them nothing
changes. Only stores that no 3-way job reads are collapsed (ccc3 reads the genotype_t store).
"""

import numpy as np

from genotile.core import histogram
from genotile.core.bits import popcount_rows
from genotile.core.encodings import ENCODINGS

COLLAPSIBLE = tuple(name for name, e in ENCODINGS.items() if e.collapsible)
ROW_CHUNK = 4096


# Fixed multipliers of the row hash (any odd 64-bit values do; fixed, so that runs repeat).
_HASH_SEED = 0x5EED_D15_7C7
THREADS = 8  # threads of the row hash, the check and the weighing, at most
_MIX, _MIX_SHIFT = np.uint64(0xBF58476D1CE4E5B9), np.uint64(29)  # splitmix64's multiplier


def row_hashes(codes, threads: int | None = None) -> np.ndarray:
    """(n, 2) uint64: two hashes of each row's bytes, sum_i mix(word_i * K_i) mod 2**64 over the
    row as little-endian 64-bit words (zero-padded) with random odd multipliers K, mix(x) =
    (x ^ x >> 29) * C. The mix matters: without it a difference in a word's top byte reaches
    only the hash's top 8 bits, and two such differences cancel about once in 2^16 pairs (16,000
    sequences of 2,000 ACGT columns, 200 clusters, held one collision). Vectorised and
    on several threads (numpy releases the GIL): a single pass at memory speed, where a
    cryptographic hash a row would be a Python call a row. Only groups rows: `distinct_rows`
    then compares every row with its group's first."""
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    n, m = codes.shape
    words = max(1, -(-m // 8))
    mult = np.random.default_rng(_HASH_SEED).integers(0, 2**63, size=(2, words), dtype=np.uint64) * 2 + 1
    out = np.empty((n, 2), dtype=np.uint64)
    step = max(1, min(ROW_CHUNK, HASH_BLOCK_BYTES // (words * 8)))  # a block and its products in cache

    def block(r0: int) -> None:
        rows = np.asarray(codes[r0 : r0 + step])
        if m % 8 == 0 and m and rows.flags.c_contiguous:  # whole words already: no padded copy
            w = rows.view("<u8")
        else:
            padded = np.zeros((rows.shape[0], words * 8), dtype=np.uint8)
            padded[:, :m] = rows
            w = padded.view("<u8")
        prod, shifted = np.empty_like(w), np.empty_like(w)
        for k in range(2):
            np.multiply(w, mult[k], out=prod)  # wraps mod 2**64
            np.right_shift(prod, _MIX_SHIFT, out=shifted)
            np.bitwise_xor(prod, shifted, out=prod)
            np.multiply(prod, _MIX, out=prod)
            np.sum(prod, axis=1, dtype=np.uint64, out=out[r0 : r0 + rows.shape[0], k])

    with ThreadPoolExecutor(threads or usable_cpus(THREADS), thread_name_prefix="genotile-hash") as pool:
        list(pool.map(block, range(0, n, step)))
    return out


HASH_BLOCK_BYTES = 1 << 22  # bytes of rows hashed at a time


def distinct_rows(codes, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(first, index): `first` (k,) int64, the input row of each distinct row in order of first
    occurrence; `index` (n,) int64, each input row's distinct row. Rows are equal when their
    bytes are (a 128-bit hash groups them, `row_hashes`, then every row is compared with its
    group's first; where two different rows share a hash, the rows themselves are sorted,
    `_distinct_exact`).

    >>> first, index = distinct_rows(np.array([[1, 2], [3, 4], [1, 2], [3, 4], [0, 0]], np.uint8))
    >>> first.tolist(), index.tolist()
    ([0, 1, 4], [0, 1, 0, 1, 2])
    """
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    n = codes.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    h = row_hashes(codes, threads)
    order = np.lexsort((h[:, 1], h[:, 0]))  # stable: a group's rows stay in input order
    hs = h[order]
    starts = np.flatnonzero(np.concatenate(([True], (hs[1:] != hs[:-1]).any(axis=1))))
    group_first = order[starts]  # each group's first input row
    group_of = np.repeat(np.arange(starts.size), np.diff(np.append(starts, n)))
    rank = np.empty(starts.size, dtype=np.int64)
    rank[np.argsort(group_first, kind="stable")] = np.arange(starts.size)  # numbered by first occurrence
    index = np.empty(n, dtype=np.int64)
    index[order] = rank[group_of]
    first = np.sort(group_first).astype(np.int64)

    # exact: every copy compared with its group's first (a hash collision would be caught here);
    # the firsts are themselves
    copies = np.flatnonzero(first[index] != np.arange(n))
    step = max(1, min(ROW_CHUNK, HASH_BLOCK_BYTES // max(1, codes.shape[1])))

    def check(c0: int) -> bool:
        rows = copies[c0 : c0 + step]
        return bool(np.array_equal(np.asarray(codes[rows]), np.asarray(codes[first[index[rows]]])))

    with ThreadPoolExecutor(threads or usable_cpus(THREADS), thread_name_prefix="genotile-hash") as pool:
        if not all(pool.map(check, range(0, copies.size, step))):
            return _distinct_exact(codes)
    return first, index


def _distinct_exact(codes) -> tuple[np.ndarray, np.ndarray]:
    """distinct_rows by sorting the rows' bytes (numpy.unique): slower, needs no hash."""
    rows = np.ascontiguousarray(codes)
    keys = rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).ravel()
    _, first_sorted, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(first_sorted.size, dtype=np.int64)
    by_first = np.argsort(first_sorted, kind="stable")
    rank[by_first] = np.arange(first_sorted.size)  # numbered by first occurrence
    return first_sorted[by_first].astype(np.int64), rank[inverse.ravel()]


def groups(index: np.ndarray, n_distinct: int) -> tuple[np.ndarray, np.ndarray]:
    """(members, starts): input rows sorted by distinct row, then input order; the copies of
    distinct row g are members[starts[g]:starts[g + 1]]."""
    members = np.argsort(index, kind="stable")
    starts = np.zeros(n_distinct + 1, dtype=np.int64)
    np.cumsum(np.bincount(index, minlength=n_distinct), out=starts[1:])
    return members, starts


def expand_pairs(a, b, columns: dict, index: np.ndarray, n_distinct: int, transposed=()) -> tuple:
    """Pairs of distinct rows (a < b) -> every pair of input vectors (x < y) they stand for.

    Returns (x, y, columns) in no particular order (the merge sorts them)."""
    members, starts = groups(index, n_distinct)
    size = np.diff(starts)
    count = size[a] * size[b]
    pair = np.repeat(np.arange(a.size), count)
    local = np.arange(pair.size) - np.repeat(np.cumsum(count) - count, count)
    x = members[starts[a][pair] + local // size[b][pair]]
    y = members[starts[b][pair] + local % size[b][pair]]
    out = {c: v[pair] for c, v in columns.items()}
    flipped = x > y
    for c1, c2 in transposed:
        out[c1], out[c2] = np.where(flipped, out[c2], out[c1]), np.where(flipped, out[c1], out[c2])
    return np.minimum(x, y), np.maximum(x, y), out


def expand_self(g, columns: dict, index: np.ndarray, n_distinct: int) -> tuple:
    """Distinct rows g (with copies) and their self values -> every pair of their copies (x < y)."""
    members, starts = groups(index, n_distinct)
    size = np.diff(starts)[g]
    xs, ys, picks = [], [], []
    for s in np.unique(size).tolist():
        if s < 2:
            continue
        which = np.flatnonzero(size == s)
        i, j = np.triu_indices(s, 1)
        base = starts[g[which]][:, None]
        xs.append(members[base + i].ravel())
        ys.append(members[base + j].ravel())
        picks.append(np.repeat(which, i.size))
    if not xs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, {c: v[:0] for c, v in columns.items()}
    pick = np.concatenate(picks)
    return np.concatenate(xs), np.concatenate(ys), {c: v[pick] for c, v in columns.items()}


def self_values(planes: np.ndarray, layout, metric) -> dict:
    """The metric of each row with itself: {column: (rows,) values}, exactly as a tile computes
    the pair of two identical rows (each count's terms popcounted on the row's own planes)."""
    counts = {}
    for name, terms in metric.counts(layout).items():
        acc = np.zeros(planes.shape[0], dtype=np.int64)
        for t in terms:
            if t.coef == 0:
                continue
            if t.left is None or t.right is None:
                acc += t.coef * popcount_rows(planes[:, slice(*(t.left or t.right))])
            else:
                acc += t.coef * popcount_rows(planes[:, slice(*t.left)] & planes[:, slice(*t.right)])
        counts[name] = acc[:, None]
    values = metric.epilogue(counts)
    return {c: np.asarray(values[c]).reshape(-1) for c in metric.columns}


def weighted_histogram(values: np.ndarray, weights: np.ndarray, metric, column: str) -> np.ndarray:
    """histogram.column_histogram of `values` where each value counts `weights` times."""
    v, w = values.ravel(), weights.ravel().astype(np.float64)
    if column not in metric.float_bins:
        return np.rint(np.bincount(v.astype(np.int64), weights=w, minlength=1)).astype(np.int64)
    low, high, bins = metric.float_bins[column]
    nan = np.isnan(v)
    below = (v < low) & ~nan
    above = (v > high) & ~nan
    inside = ~(nan | below | above)
    bin_index = np.floor((v[inside] - low) * (bins / (high - low))).astype(np.int64)
    bin_index = np.minimum(bin_index, bins - 1)
    counts = np.rint(np.bincount(bin_index, weights=w[inside], minlength=bins)).astype(np.int64)
    extra = np.rint([w[below].sum(), w[above].sum(), w[nan].sum()]).astype(np.int64)
    return np.concatenate([counts, extra])


WEIGH_CELLS = 1 << 22  # dense cells weighed per step: bounds the weights' temporaries


def weigh_tile(arrays: dict, meta: dict, planes_i, metric, layout, weights_i, weights_j, diagonal: bool, threshold):
    """Make a tile over distinct rows stand for the input pairs: its histograms weighted from its
    dense block (which must be there), its pair count the input pairs', and on a diagonal tile
    the self pairs of rows with copies (`self_index`, `self_<column>`: distinct row and values,
    those passing the threshold). The block is weighed a band of rows at a time, on threads, so
    the weights never take more than a few bands' memory (a GPU tile's block can be 10^9 cells)."""
    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    dense = arrays["dense"]
    if tuple(metric.histogram_columns) != (metric.dense_column,):
        raise ValueError(f"{metric.name}: duplicates are collapsed only where the histogram is the dense column's")
    n_rows, n_cols = dense.shape
    step = max(1, WEIGH_CELLS // max(1, n_cols))
    weights_i, weights_j = np.asarray(weights_i, np.int64), np.asarray(weights_j, np.int64)

    def band(r0: int) -> tuple[np.ndarray, int]:
        r1 = min(n_rows, r0 + step)
        w = weights_i[r0:r1, None] * weights_j[None, :]
        if diagonal:  # pairs above the diagonal; the diagonal holds each row's self value
            w = np.triu(w, r0 + 1)
            local = np.arange(r1 - r0)
            w[local, r0 + local] = weights_i[r0:r1] * (weights_i[r0:r1] - 1) // 2
        return weighted_histogram(dense[r0:r1], w, metric, metric.dense_column), int(w.sum())

    key = f"hist_{metric.dense_column}"
    sums: dict = {}
    total = 0
    with ThreadPoolExecutor(usable_cpus(THREADS), thread_name_prefix="genotile-weigh") as pool:
        for h, count in pool.map(band, range(0, n_rows, step)):
            histogram.add(sums, {key: h})  # bincounts of different lengths, padded
            total += count
    if key not in sums:  # an empty block
        sums[key] = weighted_histogram(dense, np.zeros(dense.shape, np.int64), metric, metric.dense_column)
    arrays[key] = sums[key]
    meta["pairs_distinct"] = meta["pairs_computed"]
    meta["pairs_computed"] = total
    if diagonal:
        rows = np.flatnonzero(weights_i > 1)
        values = self_values(np.asarray(planes_i)[rows], layout, metric)
        keep = metric.passes({c: v for c, v in values.items()}, threshold)
        arrays["self_index"] = arrays["dense_rows"][rows][keep].astype(np.int64)
        for c in metric.columns:
            arrays[f"self_{c}"] = values[c][keep]
    return arrays, meta


def self_pairs(path, arrays: dict, metric, plan) -> dict:
    """A tile's self pairs (`self_index`, `self_<column>`), checked: distinct rows in range."""
    from genotile.errors import GenotileError

    names = ("self_index", *(f"self_{c}" for c in metric.columns))
    if not all(k in arrays for k in names):
        if any(k in arrays for k in names):
            raise GenotileError(f"tile {path}: its self pairs are incomplete; delete it and rerun")
        return {"g": np.zeros(0, dtype=np.int64), **{c: np.zeros(0) for c in metric.columns}}
    g = arrays["self_index"]
    if g.ndim != 1 or any(arrays[k].shape != g.shape for k in names) or ((g < 0) | (g >= plan.n_vectors)).any():
        raise GenotileError(f"tile {path}: its self pairs are not rows of this plan; delete it and rerun")
    return {"g": g.astype(np.int64), **{c: arrays[f"self_{c}"] for c in metric.columns}}


def expand_merged(merged: dict, selves: list[dict], index: np.ndarray, n_distinct: int, metric) -> dict:
    """The merged pairs of distinct rows (a, b, columns) and self pairs -> the input pairs."""
    columns = {c: merged[c] for c in metric.columns}
    x, y, values = expand_pairs(merged["a"], merged["b"], columns, index, n_distinct, metric.transposed)
    g = np.concatenate([s["g"] for s in selves]) if selves else np.zeros(0, dtype=np.int64)
    self_columns = {c: np.concatenate([s[c] for s in selves]).astype(merged[c].dtype) for c in metric.columns}
    sx, sy, svalues = expand_self(g, self_columns, index, n_distinct)
    out = {"a": np.concatenate([x, sx]), "b": np.concatenate([y, sy])}
    for c in metric.columns:
        out[c] = np.concatenate([values[c], svalues[c]])
    return out


HASH_ROWS = 256  # samples hashed at a time by distinct_samples (row_hashes' temporaries: a few MB)


def distinct_samples(words: np.ndarray, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """distinct_rows of a .bed's samples' bit rows (uint64 (samples, words), io/readers/bed.py): the
    same (first, index), at less cost where few samples are copies.

    Rows are grouped by their 128-bit row_hashes (distinct_rows over the hashes: 16 bytes a
    row), then only the copies are compared with their group's first; a hash shared by two
    different rows (never seen) falls back to distinct_rows over the rows themselves."""
    from concurrent.futures import ThreadPoolExecutor

    n = words.shape[0]
    starts = range(0, n, HASH_ROWS)
    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="genotile-hash") as pool:
        parts = pool.map(lambda r0: row_hashes(words[r0 : r0 + HASH_ROWS].view(np.uint8), threads=1), starts)
        hashes = np.concatenate([np.zeros((0, 2), dtype=np.uint64), *parts])
    first, index = distinct_rows(hashes.view(np.uint8))
    copies = np.flatnonzero(first[index] != np.arange(n))
    for c0 in range(0, copies.size, HASH_ROWS):  # exact: the copies against their group's first
        rows = copies[c0 : c0 + HASH_ROWS]
        if not np.array_equal(words[rows], words[first[index[rows]]]):
            return distinct_rows(words.view(np.uint8))
    return first, index
