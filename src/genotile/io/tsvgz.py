"""Tables as gzipped TSV: pairs.tsv.gz, triples.tsv.gz, matches.tsv.gz.

A column is `Cells` (each distinct text once, and every row's code: its text's position: `text_column`
formats numbers so, `Cells(ids, a)` names vectors) or a sequence of strings. The text is
assembled by numpy, a block of rows at a time: each column's texts (with the tab or newline
after them) padded to whole uint64 words in a table, one word gather per row and column, then
one compaction by the entries' byte masks (as matrix_tsv.py does), so no Python string is made
per row; blocks are formatted and compressed on several threads (pgzip.py: one gzip member,
whose bytes depend on the text alone, not on the thread count). The text is byte for byte
that of `format_column` joined by tabs. gzip runs at level 1: on a 2-million-row
pairs.tsv.gz, level 9 (Python's default) took 24 s, level 6 12 s, level 1 3 s for a file 11%
larger. The gzip header has no name and mtime 0, so equal tables give equal bytes.
"""

import itertools
import sys
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from genotile.io import pgzip
from genotile.util.atomic import atomic_path

COMPRESSLEVEL = 1
# How a row's text is made (here, number_text, text_kernels): bumped with any change to it, so
# that an append's merge never splices rows kept from an earlier format (pairs/splice.py)
TEXT_FORMAT = 1
TABLE_MAX = 1 << 20  # integers within a range this wide are formatted from a table of their strings
CHUNK_BYTES = 1 << 21  # padded cell bytes gathered at once (cache-sized)
BLOCK_BYTES = 1 << 23  # padded cell bytes of one gzip block (each compressed on its own)


class ByteTexts(Sequence[str]):
    """Texts as number_text makes them: text i is chars[i, :lengths[i]] (ASCII); indexing gives
    str, and write_tsv_gz pads them without making one."""

    def __init__(self, chars: np.ndarray, lengths: np.ndarray):
        self.chars, self.lengths = chars, lengths

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return bytes(self.chars[i, : self.lengths[i]]).decode("ascii")


class Cells(NamedTuple):
    """A column as row k's text `texts[codes[k]]`."""

    texts: Sequence[str]
    codes: np.ndarray


def format_column(values: np.ndarray) -> list[str]:
    """Integers as decimal (str); anything else as repr(float(v)), the shortest string that
    reads back as the same double (number_text's arrays, one str per value at the end).

    >>> format_column(np.array([3, -12])), format_column(np.array([0.1, 1e-05, np.nan]))
    (['3', '-12'], ['0.1', '1e-05', 'nan'])
    """
    values = np.asarray(values).reshape(-1)
    if np.issubdtype(values.dtype, np.integer):  # str() is as fast as any array path here
        return [str(v) for v in values.tolist()]
    from genotile.io import number_text  # floats only: its tables cost integer tables' jobs 3 ms of start-up

    chars, _ = number_text.float_text(values)
    # zero-padded ASCII rows as fixed-width bytes (numpy drops the trailing zeros), then str
    return chars.view(f"S{chars.shape[1]}").reshape(-1).astype(str).tolist()


def format_rows(matrix: np.ndarray):
    """Each row of a matrix as its tab-joined `format_column` strings.

    Small non-negative integers (distances) come from a table of their strings, formatted once:
    a 2,000 x 2,000 matrix.tsv then takes a quarter of the time of one str() a cell.
    """
    if np.issubdtype(matrix.dtype, np.integer) and matrix.size and 0 <= matrix.min() and matrix.max() < 1 << 20:
        table = np.array([str(v) for v in range(int(matrix.max()) + 1)], dtype=object)
        for row in matrix:
            yield "\t".join(table[row])
    else:
        for row in matrix:
            yield "\t".join(format_column(row))


def text_column(values: np.ndarray) -> Cells:
    """`format_column(values)` as Cells: each distinct value formatted once.

    Integers within a range narrower than TABLE_MAX come from a table of the range's strings;
    others (floats by bit pattern, so that -0.0 and each nan keep their own text) are formatted
    once per distinct value, floats by number_text as bytes (ByteTexts: no str per value).
    """
    values = np.asarray(values)
    if values.dtype.kind in "iu" and values.size:
        low, high = int(values.min()), int(values.max())
        if high - low < TABLE_MAX:
            return Cells([str(v) for v in range(low, high + 1)], values.astype(np.int64) - low)
    bits = np.ascontiguousarray(values).view(np.dtype(f"u{values.dtype.itemsize}"))
    unique, index = np.unique(bits, return_inverse=True)
    if values.dtype.kind == "f":  # repr's text as bytes, never as str
        return Cells(ByteTexts(*_float_text(unique.view(values.dtype))), index.reshape(-1))
    return Cells(format_column(unique.view(values.dtype)), index.reshape(-1))


def _float_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """number_text.float_text, compiled where this process has numba loaded already (its
    start, ~0.7 s, is then paid)."""
    if "numba" in sys.modules:
        try:
            from genotile.io import text_kernels
        except ImportError:
            pass
        else:
            return text_kernels.float_text(values)
    from genotile.io import number_text  # floats only (job start-up)

    return number_text.float_text(values)


class _Padded:
    """Entries text + end, each padded with zeros to `words` uint64 words; `masks`: which bytes
    are the entry's; `lengths`: each entry's bytes."""

    def __init__(self, texts: Sequence[str], end: bytes, words: int = 1):
        """`words`: at least this wide (`_used_padded`: the width of a larger list's entries)."""
        if isinstance(texts, ByteTexts):
            self._from_bytes(texts, end)
            return
        encoded = [t.encode("utf-8") for t in texts]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)) + len(end)
        blob = np.frombuffer(end.join(encoded) + end, dtype=np.uint8)
        starts = np.cumsum(lengths) - lengths
        self.lengths = lengths
        self.words = max(words, -(-int(lengths.max(initial=1)) // 8))
        table = np.zeros((len(encoded), 8 * self.words), dtype=np.uint8)
        masks = np.zeros(table.shape, dtype=bool)
        for k in range(8 * self.words):  # byte k of every entry at least k + 1 long
            used = np.flatnonzero(lengths > k)
            table[used, k] = blob[starts[used] + k]
            masks[used, k] = True
        self.table, self.masks = table.view(np.uint64), masks.view(np.uint64)

    def with_end(self, end: bytes) -> "_Padded":
        """The same entries, each ending in `end` (as long as their own end) instead: a texts list
        of two columns (a pair's id1 and id2) padded once."""
        twin = object.__new__(_Padded)
        twin.lengths, twin.words, twin.masks = self.lengths, self.words, self.masks
        table = self.table.view(np.uint8).copy()
        rows = np.arange(len(self.lengths))
        for k, byte in enumerate(end):
            table[rows, self.lengths - len(end) + k] = byte
        twin.table = table.view(np.uint64)
        return twin

    def _from_bytes(self, texts: ByteTexts, end: bytes) -> None:
        lengths = texts.lengths.astype(np.int64) + len(end)
        self.lengths = lengths
        self.words = -(-int(lengths.max(initial=1)) // 8)
        table = np.zeros((len(texts), 8 * self.words), dtype=np.uint8)
        used = min(texts.chars.shape[1], 8 * self.words)
        table[:, :used] = texts.chars[:, :used]
        rows = np.arange(len(texts))
        for k, byte in enumerate(end):  # the tab or newline right after each text
            table[rows, texts.lengths + k] = byte
        masks = np.arange(8 * self.words)[None, :] < lengths[:, None]
        self.table, self.masks = table.view(np.uint64), masks.view(np.uint64)


def _chunk_text(tables: list[_Padded], indexes: list[np.ndarray], r0: int, r1: int) -> bytes:
    """The text of rows r0..r1-1: every column's padded entries gathered, then compacted."""
    words = [np.take(t.table, i[r0:r1], axis=0) for t, i in zip(tables, indexes, strict=True)]
    masks = [np.take(t.masks, i[r0:r1], axis=0) for t, i in zip(tables, indexes, strict=True)]
    if len(words) > 1:
        words, masks = [np.concatenate(words, axis=1)], [np.concatenate(masks, axis=1)]
    return words[0].view(np.uint8)[masks[0].view(bool)].tobytes()


def _block_text(tables, indexes, r0: int, r1: int, chunk: int) -> bytes:
    return b"".join(_chunk_text(tables, indexes, c0, min(r1, c0 + chunk)) for c0 in range(r0, r1, chunk))


def write_tsv_gz(
    out_path, header: Sequence[str], columns: Sequence, threads: int | None = None, index: list | None = None
) -> int:
    """Writes header and rows atomically; returns the number of rows.

    Parameters
    ----------
    out_path : str or os.PathLike
    header : sequence of str
    columns : sequence of Cells or of sequences of str
        Each column's text per row (no tab or newline in a text).
    threads : int, optional
        Threads formatting and compressing (pgzip.default_threads()); the file is the same.
    index : list, optional
        Where each gzip block's (text bytes, compressed bytes, SHA-256 of those) is appended, the
        header's block first (pgzip.write_gzip).

    Returns
    -------
    int
        Rows written.
    """
    return write_tsv_gz_parts(out_path, header, [columns], threads, index)


def write_tsv_gz_parts(
    out_path, header: Sequence[str], parts: Iterable[Sequence], threads: int | None = None, index: list | None = None
) -> int:
    """`write_tsv_gz` of a table given as consecutive parts of rows, each asked for only when
    the writer reaches it (a merge too large to hold at once); one part is `write_tsv_gz`'s file,
    byte for byte. Returns the number of rows.

    Parameters
    ----------
    out_path : str or os.PathLike
    header : sequence of str
    parts : iterable of sequences of columns
        Each part's columns as `write_tsv_gz`'s, of equal lengths within the part.
    threads : int, optional
    index : list, optional
        As `write_tsv_gz`'s.
    """
    rows = 0

    def blocks():
        nonlocal rows
        for columns in parts:
            table = Table(columns, out_path)
            rows += table.n
            yield from table.blocks()

    write_blocks(out_path, header, blocks(), threads, index)
    return rows


def write_blocks(
    out_path, header: Sequence[str], blocks: Iterable, threads: int | None = None, index: list | None = None
) -> None:
    """The gzip of the header line then the blocks' texts (callables), written atomically: the
    file write_tsv_gz writes where the blocks are its (`Table.blocks`, or text cut the same way:
    pairs/splice.py)."""
    head = [lambda: ("\t".join(header) + "\n").encode("utf-8")]
    with atomic_path(out_path) as tmp, open(tmp, "wb") as raw:
        pgzip.write_gzip(raw, itertools.chain(head, blocks), COMPRESSLEVEL, threads, index)


def rows_per_block(words: Sequence[int]) -> int:
    """Rows of one gzip block of a table whose columns' padded entries take `words` uint64
    words each (`Table.words`): a whole number of chunks of about CHUNK_BYTES, about
    BLOCK_BYTES in all. The file's bytes depend on it (pgzip.py), so text spliced from other
    files is cut with it too."""
    row_bytes = max(1, 8 * sum(words))
    chunk = max(1, CHUNK_BYTES // row_bytes)
    return chunk * max(1, BLOCK_BYTES // (chunk * row_bytes))


SPARSE_TEXTS = 8  # a texts list this many times its rows' codes is padded for the codes used only


def _used_padded(texts: Sequence[str], end: bytes, codes: list[np.ndarray]) -> tuple[_Padded, np.ndarray | None]:
    """The padded entries of `texts` that `codes` use, and the sorted codes used (None: all the
    texts, padded in order). A list far longer than its rows (a merge's 1,000,000 IDs for its 300
    passing pairs: 0.5-0.7 s) is padded for the codes used only, as wide as its widest text, so
    that the rows per gzip block, and so the file's bytes, are the same (rows_per_block)."""
    if _all_padded(texts, codes):
        return _Padded(texts, end), None
    used = np.unique(np.concatenate(codes))
    widest = max(map(len, texts)) if "".join(texts).isascii() else max(len(t.encode("utf-8")) for t in texts)
    return _Padded([texts[k] for k in used.tolist()], end, -(-(widest + len(end)) // 8)), used


def _all_padded(texts: Sequence[str], codes: list[np.ndarray]) -> bool:
    """Whether `_used_padded` pads every one of `texts` for `codes`, in order."""
    return isinstance(texts, ByteTexts) or len(texts) <= SPARSE_TEXTS * max(1, sum(c.size for c in codes))


class Table:
    """Rows as write_tsv_gz writes them: each column's texts padded once (a texts list shared by
    columns of the same end once), and every row's code into them."""

    def __init__(self, columns: Sequence, where=""):
        cells = [c if isinstance(c, Cells) else Cells(c, np.arange(len(c))) for c in columns]
        self.n = len(cells[0].codes) if cells else 0
        if any(len(c.codes) != self.n for c in cells):
            raise ValueError(f"{where}: columns of unequal length {[len(c.codes) for c in cells]}")
        ends = [b"\n" if k == len(cells) - 1 else b"\t" for k in range(len(cells))]
        keys = [(id(c.texts), end) for c, end in zip(cells, ends, strict=True)]
        codes = [np.asarray(c.codes, dtype=np.int64) for c in cells]
        codes_of: dict[tuple[int, bytes], list[np.ndarray]] = {}  # a texts list's codes, all its columns'
        for key, column_codes in zip(keys, codes, strict=True):
            codes_of.setdefault(key, []).append(column_codes)
        tables: dict[tuple[int, bytes], tuple[_Padded, np.ndarray | None]] = {}
        self.padded: list[_Padded] = []
        self.indexes: list[np.ndarray] = []
        for c, end, key, column_codes in zip(cells, ends, keys, codes, strict=True):
            if key not in tables:
                # the same texts of another end padded whole already (id1's, for id2): its copy
                whole = [k for k in tables if k[0] == key[0] and len(k[1]) == len(end) and tables[k][1] is None]
                if whole and _all_padded(c.texts, codes_of[key]):
                    tables[key] = (tables[whole[0]][0].with_end(end), None)
                else:
                    tables[key] = _used_padded(c.texts, end, codes_of[key])
            padded, used = tables[key]
            self.padded.append(padded)
            self.indexes.append(column_codes if used is None else np.searchsorted(used, column_codes))

    @property
    def words(self) -> list[int]:
        """Each column's padded entry width, in uint64 words (rows_per_block)."""
        return [t.words for t in self.padded]

    def text(self, r0: int, r1: int) -> bytes:
        """The text of rows r0..r1-1."""
        chunk = max(1, CHUNK_BYTES // max(1, 8 * sum(self.words)))
        return _block_text(self.padded, self.indexes, r0, min(self.n, r1), chunk)

    def row_lengths(self) -> np.ndarray:
        """Each row's bytes (int64), its tabs and newline included."""
        total = np.zeros(self.n, dtype=np.int64)
        for t, i in zip(self.padded, self.indexes, strict=True):
            total += t.lengths[i]
        return total

    def blocks(self, rows: int | None = None) -> list:
        """Callables making the text of each gzip block (`rows` rows each: rows_per_block's)."""
        rows = rows_per_block(self.words) if rows is None else rows
        return [(lambda r0=r0: self.text(r0, r0 + rows)) for r0 in range(0, self.n, rows)]
