"""matrix.tsv written at disk speed: the cells' text made by arrays, a block of rows at a time.

The text is what tsvgz.format_rows writes, byte for byte (integers in decimal, floats as
Python's repr). No Python string is made per cell. Each block of rows is formatted by
number_text (a fixed-width byte row and a length per value; integers 0..max, a distance
matrix's, once from a table of their text), each text padded after a tab to whole uint64
words, and the block's lines "<id>\\t<cell>\\t<cell>...\\n" assembled from those words. A
symmetric float matrix small enough to keep its upper triangle's text has that triangle
formatted once, up front. Large matrices, where numba is installed (the CPU path has it), use
text_kernels: compiled float formatting and a compiled assembly that shifts each cell's words
into place. Without numba (a GPU machine may lack it), or for matrices too small to pay for
its start, numpy gathers the cells' words and compacts them by their byte masks. Blocks are
made on threads (the compiled loops and numpy's gathers release the GIL), a bounded window
ahead of the one being written: memory stays a few blocks, the kept triangle aside, whatever
the matrix.
"""

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice

import numpy as np

from genotile.io import number_text
from genotile.util.atomic import atomic_path

BLOCK_CELLS = 1 << 16  # cells formatted and assembled at once (their bytes stay in cache)
TABLE_MAX = 1 << 20  # integers 0..max formatted from a table when max is below this
SYMMETRIC_MAX = 1 << 23  # symmetric float matrices up to this many cells: each value formatted once
ROW_THREADS = 8  # threads assembling blocks of rows, at most
# numba's import and first kernel call cost ~0.7 s of a process here; a compiled float takes
# ~0.18 us of one thread against the numpy path's ~0.55 us (whose many small operations hold
# the GIL, so its threads hardly overlap), formatted once where symmetric, and an integer cell
# ~4 ns against ~30: they pay from about this many values to format, or cells
COMPILED_MIN_FLOATS, COMPILED_MIN_INTS = 1 << 20, 1 << 25

# a block of rows' cells: (table, lengths, index), cell (i, j) of the block is the entry
# e = index[i, j], "\t<text>" in the first lengths[e] bytes of table[e] (zeros after; the
# table's width a multiple of 8)
BlockTexts = Callable[[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


def tabbed(chars: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Texts (number_text's chars, lengths) as entries "\t<text>" padded to whole uint64 words.

    >>> table, n = tabbed(np.array([[49, 50, 0]], dtype=np.uint8), np.array([2]))
    >>> bytes(table[0]), n
    (b'\\t12\\x00\\x00\\x00\\x00\\x00', array([3]))
    """
    width = -(-(int(lengths.max(initial=0)) + 1) // 8) * 8
    table = np.zeros((chars.shape[0], width), dtype=np.uint8)
    table[:, 0] = ord("\t")
    used = min(width - 1, chars.shape[1])
    table[:, 1 : 1 + used] = chars[:, :used]
    return table, lengths + 1


def cell_texts(matrix: np.ndarray, kernels=None) -> BlockTexts:
    """The function giving a block of rows' cells (see BlockTexts), format_column's texts.

    Parameters
    ----------
    matrix : (rows, columns) array
    kernels : module, optional
        text_kernels (numba) to format floats with; number_text's numpy path without.
    """
    n_cols = matrix.shape[1]
    if np.issubdtype(matrix.dtype, np.integer) and matrix.size and 0 <= matrix.min() and matrix.max() < TABLE_MAX:
        table, lengths = tabbed(*number_text.int_text(np.arange(int(matrix.max()) + 1)))
        return lambda r0, r1: (table, lengths, matrix[r0:r1])
    if np.issubdtype(matrix.dtype, np.integer):
        fmt = _tabbed_by(number_text.int_text)
    else:  # format_column's repr(float(v)): float32, bool... widened; a symmetric matrix's
        # triangle formatted once where small enough
        fmt = _tabbed_by(number_text.float_text) if kernels is None else kernels.float_table
        upper = _upper_texts(matrix, fmt, gathered=kernels is None)
        if upper is not None:
            return upper

    def block(r0: int, r1: int):
        table, lengths = fmt(matrix[r0:r1].reshape(-1))
        return table, lengths, np.arange((r1 - r0) * n_cols, dtype=np.int64).reshape(r1 - r0, n_cols)

    return block


def _tabbed_by(fmt):
    """values -> tabbed(*fmt(values))."""
    return lambda values: tabbed(*fmt(values))


def _upper_texts(matrix: np.ndarray, fmt, gathered: bool = False) -> BlockTexts | None:
    """A symmetric matrix's texts, each value formatted once: its upper triangle (row by row)
    formatted up front on the row threads, cell (i, j) reading entry (min, max) of it. None for
    a matrix that is not symmetric (bit for bit) or has more than SYMMETRIC_MAX cells (the
    triangle's padded text and lengths are kept: 40 bytes a value, ~20 a cell, 170 MB at most).

    gathered: each block's cells gathered here into a table of their own (numpy's assembly):
    the cells left of the diagonal, (j, i) for j < r0, in j-major order, runs of consecutive
    entries, then transposed; gathering them in row order, scattered over the whole triangle,
    cost numpy more than formatting them again (~3.6 s against ~1.4 s, 2,000 x 2,000)."""
    n = matrix.shape[0]
    if matrix.shape[1] != n or matrix.size > SYMMETRIC_MAX:
        return None
    bits = np.ascontiguousarray(matrix).view(np.dtype(f"u{matrix.dtype.itemsize}"))
    if not np.array_equal(bits, bits.T):
        return None
    values = matrix[np.triu(np.ones((n, n), dtype=bool))]
    table = np.zeros((values.size, 8 * -(-(number_text.FLOAT_WIDTH + 1) // 8)), dtype=np.uint8)
    lengths = np.zeros(values.size, dtype=np.int64)

    def part(s: int) -> None:
        t, n_ = fmt(values[s : s + BLOCK_CELLS])
        table[s : s + t.shape[0], : t.shape[1]], lengths[s : s + t.shape[0]] = t, n_

    from genotile.util.cpus import usable_cpus

    with ThreadPoolExecutor(usable_cpus(ROW_THREADS), thread_name_prefix="genotile-matrix") as pool:
        list(pool.map(part, range(0, values.size, BLOCK_CELLS)))

    def entry(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        return lo * n - lo * (lo - 1) // 2 + (hi - lo)

    def upper(r0: int, r1: int):
        i = np.arange(r0, r1, dtype=np.int64)
        if not gathered:
            return table, lengths, entry(i[:, None], np.arange(n, dtype=np.int64)[None, :])
        left = entry(np.arange(r0, dtype=np.int64)[:, None], i[None, :])  # (r0, rows), j-major
        right = entry(i[:, None], np.arange(r0, n, dtype=np.int64)[None, :])
        cells = np.concatenate([table[left].transpose(1, 0, 2), table[right]], axis=1)
        sizes = np.concatenate([lengths[left].T, lengths[right]], axis=1)
        return cells.reshape(-1, table.shape[1]), sizes.reshape(-1), np.arange(sizes.size).reshape(sizes.shape)

    return upper


def _assemble_numpy(table: np.ndarray, lengths: np.ndarray, index: np.ndarray) -> tuple[bytes, np.ndarray]:
    """(text, ends): the rows' "\t<cell>..." bytes and each row's end in them: one uint64
    gather per cell word (numpy gathers whole words fast), then one compaction by the entries'
    byte masks."""
    masks = np.arange(table.shape[1]) < lengths[:, None]
    words, masks = table.view(np.uint64), masks.view(np.uint64)
    cells = np.take(words, index, axis=0).view(np.uint8)
    text = cells[np.take(masks, index, axis=0).view(bool)].tobytes()
    return text, np.cumsum(lengths[index].sum(axis=1))


def _lines_numpy(table, lengths, index, names: list[bytes], r0: int) -> bytes:
    """Lines r0.. of the matrix, "<name>\t<cell>...\n", by _assemble_numpy."""
    text, ends = _assemble_numpy(table, lengths, index)
    pieces, start = [], 0
    for name, end in zip(names[r0 : r0 + index.shape[0]], ends.tolist(), strict=True):
        pieces += [name, text[start:end], b"\n"]
        start = end
    return b"".join(pieces)


def line_blocks(texts: BlockTexts, ids: list[str], n_cols: int, kernels=None) -> Iterator:
    """Yield the matrix's lines "<id>\t<cell>...\n", a block of rows at a time (bytes-like)."""
    n_rows = len(ids)
    rows = max(1, BLOCK_CELLS // max(1, n_cols))
    encoded = [name.encode("utf-8") for name in ids]
    if kernels is not None:
        starts = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=starts[1:])
        names = (np.frombuffer(b"".join(encoded), dtype=np.uint8), starts)

    def make(r0: int):
        chars, lengths, index = texts(r0, min(n_rows, r0 + rows))
        if kernels is None:
            return _lines_numpy(chars, lengths, index, encoded, r0)
        return kernels.lines(chars, lengths, index, names, r0)

    # blocks made on threads, a bounded window ahead of the one being yielded
    from genotile.util.cpus import usable_cpus

    threads = usable_cpus(ROW_THREADS)
    starts_ = iter(range(0, n_rows, rows))
    with ThreadPoolExecutor(threads, thread_name_prefix="genotile-matrix") as pool:
        window = deque(pool.submit(make, r0) for r0 in islice(starts_, 2 * threads))
        while window:
            block = window.popleft().result()
            nxt = next(starts_, None)
            if nxt is not None:
                window.append(pool.submit(make, nxt))
            yield block


def compiled_kernels(matrix: np.ndarray):
    """text_kernels where numba is installed and the matrix is large enough to pay for it."""
    floats = not np.issubdtype(matrix.dtype, np.integer)
    n = matrix.shape[0]
    # compiled, a symmetric matrix's values are formatted once (_upper_texts): about half its cells
    values = n * (n + 1) // 2 if floats and matrix.shape[1] == n and matrix.size <= SYMMETRIC_MAX else matrix.size
    if values < (COMPILED_MIN_FLOATS if floats else COMPILED_MIN_INTS):
        return None
    try:
        from genotile.io import text_kernels
    except ImportError:  # no numba (a GPU machine's environment may lack it)
        return None
    return text_kernels


def write_matrix_tsv(out_path, ids: list[str], matrix: np.ndarray, columns: list[str] | None = None) -> None:
    """The square matrix with IDs as header row and first column, an empty top-left cell
    (snp-dists -b), written atomically; `columns`: a rectangle's column IDs (a query's: rows the
    input's, columns the FILE's), the header row."""
    kernels = compiled_kernels(matrix)
    texts = cell_texts(matrix, kernels)
    with atomic_path(out_path) as tmp, open(tmp, "wb") as fh:
        fh.write(("\t".join(["", *(ids if columns is None else columns)]) + "\n").encode("utf-8"))
        for block in line_blocks(texts, ids, matrix.shape[1], kernels):
            fh.write(block)  # blocks of ~BLOCK_CELLS cells: large enough writes
