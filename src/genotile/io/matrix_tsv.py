"""matrix.tsv written at disk speed: the cells' text assembled by numpy, a block of rows at a time.

The text is what tsvgz.format_rows writes, byte for byte (integers in decimal, floats as
Python's repr). Each cell's text is formatted at most once with Python: integers 0..max from
a table of their strings; a float matrix, symmetric as every metric's is, once per cell on
and above the diagonal (any other matrix once per distinct bit pattern). Then each block of
rows is gathered from a byte table of "\t<text>" entries, padded to whole uint64 words, and
compacted by the entries' byte masks: a 10,000 x 10,000 distance matrix costs a few word
gathers and one compaction per cell instead of 10^8 Python strings.
"""

import numpy as np

from genotile.io.atomic import atomic_path
from genotile.io.tsvgz import format_column as _format_column

BLOCK_BYTES = 1 << 21  # gathered cell bytes per block of rows (cache-sized: 2x faster than 64 MiB here)
WRITE_BYTES = 1 << 24  # text written per write call
TABLE_MAX = 1 << 20  # integers 0..max formatted from a table when max is below this
ROW_THREADS = 8  # threads assembling blocks of rows, at most


def _repr_floats(values: np.ndarray) -> list[str]:
    return list(map(repr, values.tolist()))  # tolist() gives Python floats already


def cell_table(matrix: np.ndarray):
    """(texts, index_rows): the cell texts, and index_rows(r0, r1) -> (r1 - r0, columns) int64
    positions in texts of the cells of rows r0..r1-1 (texts[index[i, j]] is the text of
    matrix[i, j], format_column's)."""
    n_rows, n_cols = matrix.shape
    format_column = _format_column
    if np.issubdtype(matrix.dtype, np.integer) and matrix.size and 0 <= matrix.min() and matrix.max() < TABLE_MAX:
        return [str(v) for v in range(int(matrix.max()) + 1)], lambda r0, r1: matrix[r0:r1].astype(np.int64, copy=False)
    if np.issubdtype(matrix.dtype, np.floating):  # format_column's repr(float(v)), without float()
        format_column = _repr_floats
    bits = np.ascontiguousarray(matrix).view(np.dtype(f"u{matrix.dtype.itemsize}"))
    if n_rows == n_cols and np.array_equal(bits, bits.T):
        # symmetric (every metric's matrix is): each cell on and above the diagonal formatted
        # once, row by row; cell (i, j) reads entry (min, max) of that list
        texts = format_column(matrix[np.triu(np.ones((n_rows, n_rows), dtype=bool))])

        def upper(r0, r1):
            i = np.arange(r0, r1, dtype=np.int64)[:, None]
            j = np.arange(n_cols, dtype=np.int64)[None, :]
            lo, hi = np.minimum(i, j), np.maximum(i, j)
            return lo * n_rows - lo * (lo - 1) // 2 + (hi - lo)

        return texts, upper
    unique_bits, index = np.unique(bits.ravel(), return_inverse=True)
    index = index.reshape(matrix.shape)
    return format_column(unique_bits.view(matrix.dtype)), lambda r0, r1: index[r0:r1]


def row_bytes(texts: list[str], index_rows, n_rows: int, n_cols: int):
    """Yield, per row, the bytes "\t<cell>\t<cell>..." of its cells' texts (cell_table)."""
    # every entry "\t<text>" in one buffer: entry k starts at the k-th tab (texts hold no tab)
    blob = np.frombuffer(("\t" + "\t".join(texts) + "\t").encode("utf-8"), dtype=np.uint8)
    starts = np.flatnonzero(blob == ord("\t"))
    lengths = np.diff(starts)
    words = -(-int(lengths.max(initial=1)) // 8)  # each entry padded to whole uint64 words
    width = np.arange(8 * words)
    masks = width < lengths[:, None]  # (entries, 8 * words): bytes in use
    table = np.where(masks, blob[np.minimum(starts[:-1, None] + width, blob.size - 1)], 0).astype(np.uint8)
    table, masks = table.view(np.uint64), masks.view(np.uint64)
    rows = max(1, BLOCK_BYTES // max(1, n_cols * 8 * words))

    def assemble(r0: int) -> tuple[bytes, list[int]]:
        block = index_rows(r0, min(n_rows, r0 + rows))
        # one uint64 gather per cell word (numpy gathers whole words fast), then one compaction
        cells = np.take(table, block, axis=0).view(np.uint8)
        text = cells[np.take(masks, block, axis=0).view(bool)].tobytes()
        return text, np.cumsum(lengths[block].sum(axis=1)).tolist()

    # blocks assembled on threads (numpy releases the GIL in the gathers and the compaction), a
    # bounded window ahead of the rows being yielded, so memory stays a few blocks
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from itertools import islice

    from genotile.runtime.cpus import usable_cpus

    threads = usable_cpus(ROW_THREADS)
    starts_ = iter(range(0, n_rows, rows))
    with ThreadPoolExecutor(threads, thread_name_prefix="genotile-matrix") as pool:
        window = deque(pool.submit(assemble, r0) for r0 in islice(starts_, 2 * threads))
        while window:
            text, ends = window.popleft().result()
            nxt = next(starts_, None)
            if nxt is not None:
                window.append(pool.submit(assemble, nxt))
            start = 0
            for end in ends:
                yield text[start:end]
                start = end


def write_matrix_tsv(out_path, ids: list[str], matrix: np.ndarray) -> None:
    """The square matrix with IDs as header row and first column, an empty top-left cell
    (snp-dists -b), written atomically."""
    texts, index_rows = cell_table(matrix)
    with atomic_path(out_path) as tmp, open(tmp, "wb") as fh:
        fh.write(("\t".join(["", *ids]) + "\n").encode("utf-8"))
        pieces, size = [], 0
        for name, row in zip(ids, row_bytes(texts, index_rows, *matrix.shape), strict=True):
            pieces += [name.encode("utf-8"), row, b"\n"]
            size += len(row)
            if size >= WRITE_BYTES:
                fh.write(b"".join(pieces))
                pieces, size = [], 0
        fh.write(b"".join(pieces))
