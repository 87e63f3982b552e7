"""Aligned FASTA input: `FastaReader`, reading the informative columns' codes of an alignment.

The columns that hold two or more distinct symbols (the only ones that can make two vectors
differ) are found, then those columns' codes written, one row per vector, into a memory-mapped
uint8 matrix (vectors x kept fields) in input order. A regular uncompressed alignment
(io/fasta_mmap.py) is read in one pass over a memory map, with numpy; any other file (gzip,
BGZF, odd layouts, bytes the fast path does not take) in two streaming passes
(io/fasta.read_alignment, the reference). Both give the same IDs, codes and errors.

Where the codes would be a temporary file (the store job), a regular alignment that fits in
memory is held there instead (`hold`: HeldAlignment): its bytes folded in place while its
columns' symbols are counted, in the one pass over the memory map; store/pack.py makes the
planes from those bytes and counts, and no codes are written, read back or counted again. The
store's files are the same, byte for byte.
"""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from genotile.core.columns import ColumnCounts, ColumnSpan, code_bases, encode_ascii, fold_ascii
from genotile.core.encode import ALPHABETS, MISSING, NUCLEOTIDE, Alphabet, ColumnScan, symbol_counts
from genotile.errors import GenotileError
from genotile.io import fasta_mmap, npy_rows
from genotile.io.fasta import check_fasta, read_alignment
from genotile.io.readers.base import AlignmentReader
from genotile.util.atomic import atomic_path
from genotile.util.cpus import usable_cpus
from genotile.util.progress import Progress

CHUNK_BYTES = 1 << 23  # sequence bytes gathered per block of rows
INGEST_THREADS = 4  # threads of the one-pass reader at most (memory-bound: on the 16-core H100 machine
# 40,000 x 20,000 scanned in 0.53-0.57 s on 4, 0.61-0.74 on 8, 1.00-1.07 on 16)
HOLD_BYTES = 1 << 30  # alignments up to this many sequence bytes are gathered once and held


@dataclass(frozen=True)
class HeldAlignment:
    """A regular alignment held in memory for the store job's pack (store/pack.py), in place of
    its codes matrix."""

    alphabet: Alphabet
    rows: np.ndarray  # (vectors, fields) uint8: the sequences' bytes, folded (columns.fold_ascii)
    keep: np.ndarray  # (kept,) int64: the informative fields
    counts: np.ndarray  # (kept, 256) int64: encode.symbol_counts of the kept fields' codes
    # a nucleotide alignment's bases counted in every column (None: other alphabets), which an
    # append adds the new records' to (store/extend.py)
    columns: ColumnCounts | None = None

    def codes_alike(self) -> np.ndarray:
        """(vectors, kept) uint8 rows equal exactly where their codes are (for distinct_rows):
        the kept fields of `rows`, held canonical (hold_regular) where the alphabet has missing
        bytes of several values."""
        if self.keep.size == self.rows.shape[1]:
            return self.rows
        return np.take(self.rows, self.keep, axis=1)


class FastaReader(AlignmentReader):
    """An aligned FASTA (optionally gzip or BGZF), read for an alphabet's store.

    Attributes
    ----------
    columns : ColumnCounts or None
        After a `read` to hold a nucleotide alignment too large to be held (the store job's),
        read in one pass: what an append needs of its columns (ColumnCounts.of_span), else None.
    """

    kind = "fasta"
    suffixes = (".fa", ".fasta", ".fas", ".fna", ".aln")
    what = "a FASTA alignment"

    @classmethod
    def kind_of(cls, path) -> str | None:
        """`kind` for a name ending with one of `suffixes`, optionally followed by .gz."""
        return cls.kind if str(path).lower().removesuffix(".gz").endswith(cls.suffixes) else None

    def __init__(self, path):
        check_fasta(path)
        self.path = path

    def read(
        self, alphabet: str, codes_out, hold: bool = False, canonical: bool = False
    ) -> tuple[list[str], int, int, "HeldAlignment | None"]:
        """The alignment's informative columns for `alphabet`.

        Parameters
        ----------
        alphabet : str
            The store encoding (core/encode.ALPHABETS).
        codes_out : str or os.PathLike
            The codes (.npy, uint8 (vectors, kept fields)), written unless held.
        hold : bool
            A regular alignment of at most HOLD_BYTES of sequence is held in memory instead,
            nothing written.
        canonical : bool
            Held bytes as HeldAlignment.codes_alike wants them (identical vectors collapsed).

        Returns
        -------
        ids : list of str
        n_fields, n_kept : int
            Columns, and informative columns.
        held : HeldAlignment or None
            The held alignment, or None where the codes were written to `codes_out`.
        """
        alpha = ALPHABETS[alphabet]
        layout = fasta_mmap.open_regular(self.path)
        read = held = None
        if layout is not None and hold and layout.n * layout.length <= HOLD_BYTES:
            held = hold_regular(layout, alpha, canonical)  # None: a byte for the streaming reader
            read = None if held is None else (layout.ids, layout.length, int(held.keep.size))
        elif layout is not None:
            # the store job's codes, temporary: an append after it reads the new records alone
            # given the kept columns' counts (counted as their codes are written) and each
            # constant column's one base (store/extend.py)
            columns = ColumnCounts(layout.length) if hold and alpha is NUCLEOTIDE else None
            read = read_regular(layout, alpha, codes_out, columns)
            self.columns = columns if read is not None else None
        ids, n_fields, n_kept = read or read_streaming(self.path, alpha, codes_out)
        return ids, n_fields, n_kept, held


def hold_regular(layout: fasta_mmap.RegularFasta, alpha: Alphabet, canonical: bool = False) -> HeldAlignment | None:
    """A regular alignment held in memory, read in one pass over its memory map: blocks of rows
    gathered on several threads (numpy releases the GIL), folded in place (columns.fold_ascii)
    and, nucleotides, their bases counted while in cache (ColumnCounts); other alphabets' symbols
    are counted after (encode.symbol_counts of the folded bytes, which are their codes). None
    when a sequence holds a byte the fast path does not take (as read_regular)."""
    return hold_regulars([layout], alpha, canonical)


def hold_regulars(
    layouts: list[fasta_mmap.RegularFasta], alpha: Alphabet, canonical: bool = False
) -> HeldAlignment | None:
    """Regular alignments of one length held as one (`hold_regular`): the rows of each after the
    one before's (query mode's input, then its FILE: store/query.py), the columns counted over all."""
    n, length = sum(layout.n for layout in layouts), layouts[0].length
    if any(layout.length != length for layout in layouts):
        raise ValueError("alignments of different lengths are not held as one")
    whole = np.empty((n, length), dtype=np.uint8)
    counted = alpha is NUCLEOTIDE  # canonical then too: other alphabets' folded bytes are their codes

    def measure(raw: np.ndarray) -> ColumnCounts | None:
        if not counted:
            fold_ascii(alpha, raw)
            return None
        part = ColumnCounts(length)
        part.add(raw, canonical)
        return part

    bases = ColumnCounts(length)
    combine = bases.update if counted else (lambda part: None)
    with ThreadPoolExecutor(usable_cpus(INGEST_THREADS), thread_name_prefix="genotile-ingest") as pool:
        first = 0
        for layout in layouts:
            if not _scan_blocks(layout, _block_rows(length), whole[first : first + layout.n], measure, combine, pool):
                return None
            first += layout.n
    if counted:
        keep = np.flatnonzero(bases.informative)
        return HeldAlignment(alpha, whole, keep, bases.code_counts(keep), bases)
    kept: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    for c0 in range(0, length, COUNT_COLUMNS):  # a band of columns at a time: only the kept ones' counts kept
        band = symbol_counts(whole[:, c0 : c0 + COUNT_COLUMNS])
        informative = np.flatnonzero((band[:, :MISSING] > 0).sum(axis=1) >= 2)
        kept.append(c0 + informative)
        counts.append(band[informative])
    return HeldAlignment(alpha, whole, np.concatenate(kept).astype(np.int64), np.concatenate(counts))


COUNT_COLUMNS = 1 << 16  # columns of a held alignment counted at a time (other than nucleotide)


def read_regular(
    layout: fasta_mmap.RegularFasta, alpha, codes_out, columns: ColumnCounts | None = None
) -> tuple[list[str], int, int] | None:
    """(IDs, fields, kept fields) of a regular alignment, read in one pass over its memory map
    (fasta_mmap): blocks of rows are gathered, their columns' symbol ranges kept (ColumnSpan),
    then the informative columns' codes written (from the bytes held in memory when they fit,
    else gathered again from the page cache), blocks on several threads (numpy releases the
    GIL). None, and nothing written, when a sequence holds a byte the fast path does not take:
    the streaming reader then reads the file.

    `columns` (nucleotide), given empty, is filled with what an append needs
    (ColumnCounts.of_span): the kept columns' codes counted as each block is written, while in
    cache (a few per cent of the pass where few columns are kept; counting every column's bases,
    ColumnCounts.add, made each block of the scan ~3x slower), the constant columns' one base
    from the span."""
    n, length = layout.n, layout.length
    chunk = _block_rows(length)
    held = n * length <= HOLD_BYTES  # small enough: gather once, keep the bytes for the codes
    whole = np.empty((n, length), dtype=np.uint8) if held else None

    def measure(raw: np.ndarray) -> ColumnSpan:
        part = ColumnSpan(alpha, length)
        part.add(raw)
        return part

    span = ColumnSpan(alpha, length)
    with ThreadPoolExecutor(usable_cpus(INGEST_THREADS), thread_name_prefix="genotile-ingest") as pool:
        if not _scan_blocks(layout, chunk, whole, measure, span.update, pool):
            return None
        keep = np.flatnonzero(span.informative)
        every = keep.size == length
        with atomic_path(codes_out) as tmp, open(tmp, "wb") as fh:
            start = npy_rows.write_header(fh, (n, keep.size), np.uint8)

            def write(r0: int) -> np.ndarray | None:
                r1 = min(n, r0 + chunk)
                raw = whole[r0:r1] if whole is not None else layout.rows(r0, r1)  # held: the bytes were kept
                codes = encode_ascii(alpha, raw if every else raw[:, keep])
                npy_rows.pwrite_rows(fh.fileno(), codes, start + r0 * keep.size, tmp)
                return None if columns is None else code_bases(codes)

            parts = list(pool.map(write, range(0, n, chunk)))
    if columns is not None:
        kept = np.zeros((columns.bases.shape[0], keep.size), dtype=np.int64)
        for part in parts:
            assert part is not None
            kept += part
        columns.update(ColumnCounts.of_span(span, keep, kept, n))
    return layout.ids, length, int(keep.size)


def _block_rows(length: int) -> int:
    """Rows of a block of CHUNK_BYTES of sequence (the one-pass readers' unit of work)."""
    return max(1, CHUNK_BYTES // max(1, length))


def _scan_blocks(layout: fasta_mmap.RegularFasta, chunk: int, whole, measure, combine, pool) -> bool:
    """Gather a regular alignment's rows `chunk` at a time on `pool`'s threads (into `whole`
    where given, else into a scratch block), `combine(measure(raw))` for each block in order;
    False, at the first block holding a byte the fast path does not take (fasta_mmap.clean):
    the caller leaves the file to the streaming reader."""
    n = layout.n
    starts = range(0, n, chunk)

    def scan(r0: int):
        raw = layout.rows(r0, min(n, r0 + chunk), None if whole is None else whole[r0 : r0 + chunk])
        return (measure(raw),) if fasta_mmap.clean(raw) else None  # a tuple: measure may give None

    progress = Progress("ingest (columns)", total=n)
    for r0, part in zip(starts, pool.map(scan, starts), strict=True):
        if part is None:
            return False
        combine(part[0])
        progress.update(min(n, r0 + chunk))
    progress.finish(n)
    return True


def read_streaming(path, alpha, codes_out) -> tuple[list[str], int, int]:
    """(IDs, fields, kept fields), read in two streaming passes (fasta.read_alignment): the first
    finds the informative columns, the second writes their codes. Memory: one record and one
    chunk of the file, whatever it expands to."""
    alphabet = alpha.name
    ids: list[str] = []
    scan = None
    progress = Progress(f"ingest pass 1 ({alphabet} columns)")
    for name, raw in read_alignment(path):
        if scan is None:
            scan = ColumnScan(raw.size)
        scan.add(alpha.encode(raw))
        ids.append(name)
        progress.update(len(ids))
    progress.finish(len(ids))
    assert scan is not None  # read_alignment refuses a file without records
    keep = np.flatnonzero(scan.informative)
    n, length = len(ids), scan.first.size

    progress = Progress("ingest pass 2 (codes)", total=n)
    with atomic_path(codes_out) as tmp:
        codes = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(n, keep.size))
        row = -1
        for row, (name, raw) in enumerate(read_alignment(path)):
            if row >= n or name != ids[row]:
                raise GenotileError(f"{path}: the file changed while it was being read")
            codes[row] = alpha.encode(raw[keep])
            progress.update(row + 1)
        if row + 1 != n:
            raise GenotileError(f"{path}: the file changed while it was being read")
        del codes
    progress.finish(n)
    return ids, int(length), int(keep.size)
