"""Per-field codes and their bit planes (numpy only).

A vector is a row of small integer codes, one per field (alignment column,
variant, sample). `MISSING` marks a field that takes part in no comparison.

Categorical planes (snp, hamming). Each kept column's symbols are ranked by
frequency (rank 0 = the major symbol, ties to the smaller code). Planes, one
bit per column:
  V   = the entry is present (not missing) -- only for alphabets with missing;
  N   = the entry is present and not the major symbol;
  S_t = the entry is the column's rank-t symbol (t >= 1), kept only on
        columns with 3 or more symbols.
Columns with exactly 2 symbols (section B) come first, then columns with 3+
symbols (section M) sorted by symbol count, so S_t covers a prefix of M.
With "both" = both entries present, the mismatch count of a pair is
  V.N' + N.V' - 2 N_B.N_B' - N_M.N_M' - sum_t S_t.S_t'
(a biallelic column spends 2 planes, a column of k symbols k + 1).
"""

from dataclasses import asdict, dataclass, field

import numpy as np

from genotile.core.bits import n_words

MISSING = 255
PACK_BLOCK_BYTES = 1 << 20  # kept codes of a block of rows packed at a time (cache-sized)


@dataclass(frozen=True)
class Alphabet:
    """Maps input bytes to codes; MISSING for bytes that never compare."""

    name: str
    lut: np.ndarray = field(repr=False)
    has_missing: bool

    def encode(self, raw: np.ndarray) -> np.ndarray:
        return self.lut[raw]


def _nucleotide_lut() -> np.ndarray:
    lut = np.full(256, MISSING, dtype=np.uint8)
    for code, base in enumerate(b"ACGT"):
        lut[base] = code
        lut[base + 32] = code
    return lut


def _categorical_lut() -> np.ndarray:
    # Every ASCII character is a symbol, case-insensitive; bytes >= 128 are
    # rejected by the reader before they get here.
    lut = np.arange(256, dtype=np.uint8)
    lut[ord("a") : ord("z") + 1] -= 32
    lut[128:] = MISSING
    return lut


NUCLEOTIDE = Alphabet("nucleotide", _nucleotide_lut(), has_missing=True)
CATEGORICAL = Alphabet("categorical", _categorical_lut(), has_missing=False)
ALPHABETS = {a.name: a for a in (NUCLEOTIDE, CATEGORICAL)}


class ColumnScan:
    """Streaming pass over rows: which columns hold two or more symbols."""

    def __init__(self, n_columns: int):
        self.first = np.full(n_columns, MISSING, dtype=np.uint8)
        self.informative = np.zeros(n_columns, dtype=bool)

    def add(self, codes: np.ndarray) -> None:
        present = codes != MISSING
        unseen = present & (self.first == MISSING)
        self.first[unseen] = codes[unseen]
        self.informative |= present & (codes != self.first)


def symbol_counts(codes: np.ndarray, chunk_columns: int = 4096, threads: int | None = None) -> np.ndarray:
    """Count each code per column (the input of `categorical_encoding`).

    Parameters
    ----------
    codes : array_like of uint8, shape (rows, columns)
        Codes of an alphabet (a memory map is read `chunk_columns` columns at a time).
    chunk_columns : int, optional
        Columns per bincount (columns of many symbols).
    threads : int, optional
        Threads counting bands of rows (default: the CPUs this process may use, at most
        COUNT_THREADS).

    Returns
    -------
    numpy.ndarray of int64, shape (columns, 256)
        counts[c, k]: rows whose code in column c is k; MISSING (255) is counted too.

    Examples
    --------
    >>> codes = NUCLEOTIDE.encode(np.frombuffer(b"AAGTTN", dtype=np.uint8).reshape(3, 2))
    >>> counts = symbol_counts(codes)
    >>> counts.shape, counts[0, :4].tolist(), int(counts[1, MISSING])
    ((2, 256), [1, 0, 1, 1], 1)
    """
    # The codes a sample of rows holds are counted by compares on blocks of rows (a compare and
    # a uint8 sum a code, vectorised, at memory speed: ~40x a bincount of 2,000 x 30,000 codes);
    # columns whose counts then fall short of the rows hold other codes too and are bincounted.
    n_rows, n_cols = codes.shape
    sample = np.asarray(codes[:COUNT_SAMPLE_ROWS]).ravel()
    symbols = np.flatnonzero(np.bincount(sample, minlength=256))
    if symbols.size > COUNT_MAX_COMPARED or n_rows == 0:
        return _bincount_counts(codes, np.arange(n_cols), chunk_columns)
    col_chunk = max(1, COUNT_BLOCK_BYTES // 255)

    def count(r_start: int) -> np.ndarray:  # one band of rows, on a thread of its own
        acc = np.zeros((symbols.size, n_cols), dtype=np.int64)
        equal = np.empty(255 * min(n_cols, col_chunk), dtype=bool)
        for r0 in range(r_start, min(n_rows, r_start + band), 255):  # 255 rows: a uint8 sum cannot overflow
            rows = np.asarray(codes[r0 : min(r0 + 255, r_start + band)])
            for c0 in range(0, n_cols, col_chunk):
                block = rows[:, c0 : c0 + col_chunk]
                eq = equal[: block.size].reshape(block.shape)
                for k, symbol in enumerate(symbols.tolist()):
                    np.equal(block, symbol, out=eq)
                    acc[k, c0 : c0 + block.shape[1]] += np.add.reduce(eq.view(np.uint8), axis=0, dtype=np.uint8)
        return acc

    from concurrent.futures import ThreadPoolExecutor

    from genotile.util.cpus import usable_cpus

    workers = threads or usable_cpus(COUNT_THREADS)
    band = 255 * max(1, -(-n_rows // (255 * workers)))  # rows a thread counts, a multiple of 255
    with ThreadPoolExecutor(workers, thread_name_prefix="genotile-count") as pool:
        parts = list(pool.map(count, range(0, n_rows, band)))  # numpy releases the GIL in the compares
    acc: np.ndarray = np.sum(parts, axis=0)
    counts = np.zeros((n_cols, 256), dtype=np.int64)
    counts[:, symbols] = acc.T
    short = np.flatnonzero(acc.sum(axis=0) != n_rows)
    if short.size:
        counts[short] = _bincount_counts(codes, short, chunk_columns)
    return counts


COUNT_SAMPLE_ROWS = 256  # rows whose codes are counted by compares
COUNT_MAX_COMPARED = 12  # more codes than this in the sample: a bincount is as fast
COUNT_BLOCK_BYTES = 1 << 20  # codes compared per block (255 rows x columns)
COUNT_THREADS = 8  # threads counting bands of rows, at most


def _bincount_counts(codes, columns: np.ndarray, chunk_columns: int) -> np.ndarray:
    """symbol_counts of the given columns, (columns.size, 256), by a bincount of (code, column)."""
    counts = np.zeros((columns.size, 256), dtype=np.int64)
    for c0 in range(0, columns.size, chunk_columns):
        cols = columns[c0 : c0 + chunk_columns]
        block = np.asarray(codes[:, cols[0] : cols[-1] + 1])[:, cols - cols[0]]
        width = block.shape[1]
        keys = block.astype(np.int64) + 256 * np.arange(width, dtype=np.int64)
        counts[c0 : c0 + width] = np.bincount(keys.ravel(), minlength=256 * width).reshape(width, 256)
    return counts


@dataclass(frozen=True)
class PlaneLayout:
    """Where each plane lives in a packed row (word offsets)."""

    words_b: int
    words_m: int
    has_valid: bool
    s_words: tuple[int, ...]

    @property
    def words_base(self) -> int:
        return self.words_b + self.words_m

    def segments(self) -> dict[str, tuple[int, int]]:
        seg, offset = {}, 0
        names = (["V"] if self.has_valid else []) + ["N"]
        for name in names:
            seg[name] = (offset, offset + self.words_base)
            offset += self.words_base
        for t, width in enumerate(self.s_words, start=1):
            seg[f"S{t}"] = (offset, offset + width)
            offset += width
        return seg

    @property
    def total_words(self) -> int:
        return self.words_base * (2 if self.has_valid else 1) + sum(self.s_words)

    def section(self, plane: str, name: str) -> tuple[int, int]:
        lo, _ = self.segments()[plane]
        if name == "B":
            return lo, lo + self.words_b
        return lo + self.words_b, lo + self.words_base

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "PlaneLayout":
        return cls(d["words_b"], d["words_m"], d["has_valid"], tuple(d["s_words"]))


@dataclass(frozen=True)
class CategoricalEncoding:
    """Column order, symbol ranks and layout that turn codes into planes."""

    order: np.ndarray  # kept column -> index into the codes' columns
    ranks: np.ndarray  # (kept columns, 256) uint8: rank of each code, MISSING for absent
    n_b: int  # number of 2-symbol columns (section B)
    s_lengths: tuple[int, ...]  # columns covered by S_1, S_2, ...
    layout: PlaneLayout
    # (most symbols of a column, kept columns) uint8: the code of rank t in column c, MISSING
    # where the column has fewer symbols (the inverse of `ranks`, for packing by compares)
    symbols: np.ndarray = field(repr=False)


def categorical_encoding(counts: np.ndarray, has_missing: bool) -> CategoricalEncoding:
    """Rank symbols per column and lay out the planes V, N and S_t (module docstring).

    Parameters
    ----------
    counts : numpy.ndarray of int64, shape (columns, 256)
        `symbol_counts` of the codes; the MISSING column is ignored.
    has_missing : bool
        Whether the alphabet has a missing code (then the planes start with V).

    Returns
    -------
    CategoricalEncoding
        `order` (kept columns,): the columns with 2 or more symbols, 2-symbol ones first;
        `ranks` (kept columns, 256): each code's rank by count (0 = major; MISSING where
        absent); `n_b`, `s_lengths` and the `layout` (word ranges of the planes).

    Examples
    --------
    Column 1 (C, C, C) and column 3 (A, N, A) hold one symbol and are dropped:

    >>> raw = np.array([list(b"ACGA"), list(b"ACTN"), list(b"GCTA")], dtype=np.uint8)
    >>> enc = categorical_encoding(symbol_counts(NUCLEOTIDE.encode(raw)), has_missing=True)
    >>> enc.order.tolist(), enc.n_b, enc.layout.segments()
    ([0, 2], 2, {'V': (0, 1), 'N': (1, 2)})
    """
    # only the codes that occur in some column are ranked (a nucleotide store's 4 of 256): a code
    # absent from a column ranks after all present ones, so leaving it out changes no rank
    codes = np.flatnonzero(counts[:, :MISSING].any(axis=0))
    present = counts[:, codes]
    n_symbols = (present > 0).sum(axis=1)
    cols_b = np.flatnonzero(n_symbols == 2)
    cols_m = np.flatnonzero(n_symbols >= 3)
    cols_m = cols_m[np.argsort(-n_symbols[cols_m], kind="stable")]
    order = np.concatenate([cols_b, cols_m]).astype(np.int64)
    # rank by count descending, ties to the smaller code (stable sort on -count)
    present = present[order]
    by_rank = np.argsort(-present, axis=1, kind="stable")
    rank = np.empty(present.shape, dtype=np.uint8)  # (kept columns, codes): each code's rank
    np.put_along_axis(rank, by_rank, np.arange(codes.size, dtype=np.uint8)[None, :], axis=1)
    rank[present == 0] = MISSING
    ranks = np.full((order.size, 256), MISSING, dtype=np.uint8)
    ranks[:, codes] = rank
    nonmajor_m = n_symbols[cols_m] - 1
    t_max = int(nonmajor_m.max()) if nonmajor_m.size else 0
    s_lengths = tuple(int((nonmajor_m >= t).sum()) for t in range(1, t_max + 1))
    layout = PlaneLayout(
        words_b=n_words(cols_b.size),
        words_m=n_words(cols_m.size),
        has_valid=has_missing,
        s_words=tuple(n_words(c) for c in s_lengths),
    )
    kept_col, code = np.nonzero(rank != MISSING)
    symbols = np.full((int(n_symbols[order].max(initial=2)), order.size), MISSING, dtype=np.uint8)
    symbols[rank[kept_col, code], kept_col] = codes[code]
    return CategoricalEncoding(order, ranks, int(cols_b.size), s_lengths, layout, symbols)


def categorical_planes(codes: np.ndarray, enc: CategoricalEncoding, rows: np.ndarray | None = None) -> np.ndarray:
    """Pack rows of codes into their planes (V, N, S_t), as laid out by `enc`.

    Parameters
    ----------
    codes : array_like of uint8, shape (rows, columns)
        Codes of all columns; only `enc.order`'s are read.
    enc : CategoricalEncoding
        From `categorical_encoding` over the same columns.
    rows : array_like of int, optional
        The rows of `codes` to pack, in this order (default: all), gathered a block at a time.

    Returns
    -------
    numpy.ndarray of uint64, shape (rows, enc.layout.total_words)

    Examples
    --------
    Rows ACGA and GCTA differ in the kept columns 0 and 2 (G is the minor symbol of column
    2); with only 2-symbol columns, mismatches = V.N' + N.V' - 2 N.N':

    >>> from genotile.core.bits import popcount_rows
    >>> raw = np.array([list(b"ACGA"), list(b"ACTN"), list(b"GCTA")], dtype=np.uint8)
    >>> codes = NUCLEOTIDE.encode(raw)
    >>> planes = categorical_planes(codes, categorical_encoding(symbol_counts(codes), True))
    >>> planes.tolist()
    [[3, 2], [3, 0], [3, 1]]
    >>> v, n = planes[:, :1], planes[:, 1:]
    >>> (popcount_rows(v[:1] & n[2:]) + popcount_rows(n[:1] & v[2:]) - 2 * popcount_rows(n[:1] & n[2:])).tolist()
    [2]
    """
    codes = np.asarray(codes)
    n = codes.shape[0] if rows is None else len(rows)
    out = np.zeros((n, enc.layout.total_words), dtype=np.uint64)
    # a block of rows at a time, so that its compares stay in cache
    step = max(1, PACK_BLOCK_BYTES // max(1, enc.order.size))
    for r0 in range(0, n, step):
        block = codes[r0 : r0 + step] if rows is None else codes[rows[r0 : r0 + step]]
        _pack_block(np.take(block, enc.order, axis=1), enc, out[r0 : r0 + step])
    return out


def _pack_block(kept: np.ndarray, enc: CategoricalEncoding, out: np.ndarray) -> None:
    """The planes of a block of kept codes (rows, kept columns) into `out` (rows, total words).

    Each plane is a compare of the codes with one symbol a column (`enc.symbols`), where a
    lookup of every code's rank (`enc.ranks`) would gather one byte per field; a code that is
    none of its column's symbols (MISSING) is in no plane, as its rank MISSING would be."""
    lay, n_b, symbols = enc.layout, enc.n_b, enc.symbols
    seg = lay.segments()
    nonmajor = np.empty(kept.shape, dtype=bool)
    np.equal(kept[:, :n_b], symbols[1, :n_b], out=nonmajor[:, :n_b])  # B: one non-major symbol
    nonmajor[:, n_b:] = False
    for t, length in enumerate(enc.s_lengths, start=1):  # M: symbols of rank t on a prefix
        s_t = kept[:, n_b : n_b + length] == symbols[t, n_b : n_b + length]
        nonmajor[:, n_b : n_b + length] |= s_t
        _pack_into(s_t, out[:, slice(*seg[f"S{t}"])])

    def base(bits: np.ndarray, plane: str) -> None:
        _pack_into(bits[:, :n_b], out[:, slice(*lay.section(plane, "B"))])
        _pack_into(bits[:, n_b:], out[:, slice(*lay.section(plane, "M"))])

    if lay.has_valid:
        base(nonmajor | (kept == symbols[0]), "V")
    base(nonmajor, "N")


def _pack_into(bits: np.ndarray, words: np.ndarray) -> None:
    """pack_bits(bits) into the zeroed words (rows, at least n_words(fields)) of a wider array."""
    if bits.shape[1]:
        packed = np.packbits(bits, axis=1, bitorder="little")
        words.view(np.uint8)[:, : packed.shape[1]] = packed


def categorical_codes(planes: np.ndarray, enc: CategoricalEncoding) -> np.ndarray:
    """The codes that `categorical_planes` packed, from their planes: the inverse over the kept
    columns (a store's rows encoded again with another encoding: store/extend.py).

    Parameters
    ----------
    planes : numpy.ndarray of uint64, shape (rows, enc.layout.total_words)
        Rows of planes laid out by `enc`.
    enc : CategoricalEncoding
        Their encoding.

    Returns
    -------
    numpy.ndarray of uint8, shape (rows, enc.order.size)
        Column k holds the codes of column enc.order[k] of the codes packed (MISSING where absent).

    Examples
    --------
    >>> raw = np.array([list(b"ACGA"), list(b"ACTN"), list(b"GCTA")], dtype=np.uint8)
    >>> codes = NUCLEOTIDE.encode(raw)
    >>> enc = categorical_encoding(symbol_counts(codes), True)
    >>> np.array_equal(categorical_codes(categorical_planes(codes, enc), enc), codes[:, enc.order])
    True
    """
    lay, n_b, kept = enc.layout, enc.n_b, enc.order.size

    def bits(lo: int, hi: int, width: int) -> np.ndarray:
        words = np.ascontiguousarray(planes[:, lo:hi])
        return np.unpackbits(words.view(np.uint8), axis=1, count=width, bitorder="little").view(bool)

    def plane(name: str) -> np.ndarray:
        return np.concatenate([bits(*lay.section(name, "B"), n_b), bits(*lay.section(name, "M"), kept - n_b)], axis=1)

    rank = plane("N").view(np.uint8).copy()  # 1 where not the major symbol: rank 1 in section B
    for t, length in enumerate(enc.s_lengths, start=1):  # section M: the one S_t that holds it
        s_t = bits(*lay.segments()[f"S{t}"], length)
        rank[:, n_b : n_b + length][s_t] = t
    codes = enc.symbols[rank, np.arange(kept)]
    if lay.has_valid:
        codes[~plane("V")] = MISSING
    return codes
