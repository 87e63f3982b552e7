"""An append's store made from the new records alone, where that gives the same store (issue 27,
point 1).

A nucleotide store's kept columns and symbol planes (core/encode.categorical_encoding) are a
function of the bases counted in each column over every record. The store job keeps those counts
for the next append, with the store they made, beside the store and out of Snakemake's outputs
(which Snakemake deletes before the job runs again), named in the append record (`kept`):

- `kept-<token>.counts.npy`: int64 (4, columns), each column's count of A, C, G and T over every
  earlier record (io/readers/fasta.py HeldAlignment.columns; the missing ones are the rest).
  Exact in the kept columns, whose counts rank their bases; a constant column's may be 1 for its
  one base (none where every record misses it): an input too large to be held is read in one
  pass that counts the kept columns' codes only (FastaReader.columns, ColumnCounts.of_span), and
  a constant column stays constant, and out of the store, exactly where the new records hold no
  other base there, whatever the numbers;
- `kept-<token>.planes.npy` and `kept-<token>.manifest.json`: hard links to the store's files
  (no copy: the store's files are replaced whole, util/atomic.py, never rewritten, so a link
  keeps the content it was made with).

An append then reads the new records only (the bytes after the earlier input's), counts their
bases and adds the earlier counts (`appended`): where the grown counts give the earlier encoding
(the same kept columns, each with the same symbols in the same rank order), every earlier row's
planes are what they were, and the grown store's planes are the earlier file's rows, copied,
then the new records' rows, encoded alone (`write_planes`). Anything else (a column made
variable, an allele added or its rank changed, no counts kept, new records the one-pass reader
does not take) is left to the ingest of the whole grown input, which gives the same store.
A query against this store's input reads its kept files the same way (store/against.py: the
query's input counted as new records, `new_records` and `grown`). A new token names each store's
kept files; the record naming it is written last and the other tokens' files removed after it
(`forget`), so a job killed before that leaves the earlier record with its own files whole.
"""

import contextlib
import dataclasses
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.core.columns import ColumnCounts, code_bytes
from genotile.core.encode import (
    NUCLEOTIDE,
    CategoricalEncoding,
    PlaneLayout,
    categorical_codes,
    categorical_encoding,
    categorical_planes,
)
from genotile.errors import GenotileError
from genotile.io import fasta_mmap, npy_rows
from genotile.store import stage
from genotile.store.duplicates import distinct_rows
from genotile.store.manifest import part_key
from genotile.util.atomic import atomic_path
from genotile.util.readback import load_npy

log = logging.getLogger("genotile")

LINKED = ("planes.npy", "manifest.json")  # the store's files the next append reads, hard-linked
COUNTS = "counts.npy"
PREFIX = "kept-"  # kept-<token>.<file>, in the store's folder
COPY_BYTES = 1 << 30  # bytes of the earlier planes copied by one call at most
RECODE_ROWS = 8192  # earlier rows encoded again at a time
RERANK_COLUMNS = 256  # columns whose bases' ranks changed rewritten bit by bit at most (else all encoded again)


def kept_path(store_dir: Path, token: str, name: str) -> Path:
    """A kept file of the store made with `token`."""
    return store_dir / f"{PREFIX}{token}.{name}"


def keep(store_dir: Path, columns: ColumnCounts | None, links: bool = False) -> dict | None:
    """The files the next append reads in place of the earlier records (module docstring), made
    for the store just written in `store_dir`; the append record's `kept` entry, or None where
    there are no counts (not a nucleotide alignment read in one pass) or the links fail.
    `links`: the store's files linked without counts (a genotype list's store, whose rows a
    further file's samples do not change: store/listed.py), where there are none."""
    if columns is None and not links:
        return None
    token = secrets.token_hex(8)
    try:
        for name in LINKED:
            os.link(store_dir / name, kept_path(store_dir, token, name))
        if columns is not None:
            with atomic_path(kept_path(store_dir, token, COUNTS)) as tmp, open(tmp, "wb") as fh:
                np.save(fh, columns.bases, allow_pickle=False)
    except (OSError, GenotileError) as exc:  # a file system without hard links: appends re-read the input
        log.info("store: nothing kept for the next append (%s)", exc)
        return None
    return {"token": token, "rows": None if columns is None else int(columns.rows)}


def forget(store_dir: Path, token: str | None) -> None:
    """Remove the kept files of every store but `token`'s (the one the record now names)."""
    for path in store_dir.glob(f"{PREFIX}*"):
        if path.name[len(PREFIX) :].split(".")[0] != token:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


@dataclass(frozen=True)
class Earlier:
    """The earlier store as kept: its planes' file, its manifest and its input's column counts."""

    planes: Path
    manifest: dict
    columns: ColumnCounts


def earlier_links(store_dir: Path, record: dict) -> tuple[tuple[Path, dict] | None, str]:
    """(the kept planes' file, the kept manifest) the record names, checked against it; or None
    and why not."""
    kept = record.get("kept")
    if not isinstance(kept, dict) or not isinstance(kept.get("token"), str):
        return None, "nothing was kept of the earlier store (its input not read in one pass, or no hard links)"
    token = kept["token"]
    manifest = stage.read_recorded(kept_path(store_dir, token, "manifest.json"))
    planes = kept_path(store_dir, token, "planes.npy")
    # its planes too: removed (a user freeing disk space), the whole input is read again
    if manifest is None or part_key(manifest) != record["parts"][-1]["key"] or not planes.is_file():
        return None, "the kept copy of the earlier store is missing or not the recorded one"
    return (planes, manifest), ""


def earlier(store_dir: Path, record: dict) -> tuple[Earlier | None, str]:
    """The kept files the record names, checked against it; or None and why not."""
    linked, why = earlier_links(store_dir, record)
    if linked is None:
        return None, why
    kept, manifest = record["kept"], linked[1]
    token = kept["token"]
    try:
        bases = load_npy(kept_path(store_dir, token, COUNTS), "column counts", dtype=np.int64, ndim=2)
    except GenotileError:
        return None, "the earlier input's column counts are missing or damaged"
    if bases.shape != (4, int(manifest["n_fields"])) or kept.get("rows") != manifest["n_vectors"]:
        return None, "the earlier input's column counts do not match its store"
    columns = ColumnCounts(bases.shape[1])
    columns.bases[...] = bases
    columns.rows = int(kept["rows"])
    return Earlier(kept_path(store_dir, token, "planes.npy"), manifest, columns), ""


@dataclass(frozen=True)
class Appended:
    """The new records read alone, and the grown input's column counts and encoding."""

    ids: list[str]
    rows: np.ndarray  # (new records, columns) uint8: their bytes, folded and canonical (ColumnCounts.add)
    columns: ColumnCounts  # every record's, the earlier ones' with the new ones'
    keep: np.ndarray  # the informative columns (the earlier ones)
    enc: CategoricalEncoding  # the grown input's, of the kept columns (its order indexes `keep`)
    earlier_enc: CategoricalEncoding | None  # the earlier store's where it is another (its rows encoded again)

    def planes(self, rows: np.ndarray) -> np.ndarray:
        """uint64 (rows, words): the planes of new records `rows`, as store/pack.py packs a held
        alignment (the encoding's columns and symbols on the folded bytes)."""
        enc = self.enc
        on_bytes = dataclasses.replace(enc, order=self.keep[enc.order], symbols=code_bytes(NUCLEOTIDE)[enc.symbols])
        return categorical_planes(self.rows, on_bytes, rows)

    def distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """duplicates.distinct_rows of the new records over the kept columns (as the ingest finds
        identical vectors: HeldAlignment.codes_alike), numbered among themselves."""
        return distinct_rows(self.rows if self.keep.size == self.rows.shape[1] else self.rows[:, self.keep])

    def recoded(self, planes: np.ndarray) -> np.ndarray:
        """The planes of earlier store rows (`earlier_enc`'s) in the grown encoding: where the
        planes hold the same columns in the same places (only the ranks of some columns' bases
        changed, the common case), those columns' bits rewritten (`_rerank`); else their codes
        over the kept columns (encode.categorical_codes), packed again."""
        old = self.earlier_enc
        assert old is not None
        enc = self.enc
        if old.n_b == enc.n_b and old.s_lengths == enc.s_lengths and np.array_equal(old.order, enc.order):
            changed = np.flatnonzero((old.symbols != enc.symbols).any(axis=0))
            if changed.size <= RERANK_COLUMNS:
                return _rerank(planes.copy(), old, enc, changed)
        codes = np.empty((planes.shape[0], self.keep.size), dtype=np.uint8)
        codes[:, old.order] = categorical_codes(planes, old)
        return categorical_planes(codes, enc)


def _rerank(planes: np.ndarray, old: CategoricalEncoding, enc: CategoricalEncoding, changed) -> np.ndarray:
    """`planes` (`old`'s) with the bits of the kept columns `changed` (places in the planes) set
    as `enc` ranks their bases; the layouts are the same. A column's V bits stay (a base is
    present or missing whatever its rank).

    The plane words holding those bits are copied out once, transposed (a word's bits of every
    row contiguous: a row-major store's column is one word in every row, a cache line each, and
    a changed column is read and written about ten times), rewritten, and put back."""
    lay, n_b = enc.layout, enc.n_b
    changed = [int(k) for k in changed]

    def place(plane: str, k: int) -> tuple[int, np.uint64]:
        """(word, shift) of column place k's bit in a plane."""
        if plane.startswith("S"):
            lo, m = lay.segments()[plane][0], k - n_b
        else:
            lo, m = lay.section(plane, "B" if k < n_b else "M")[0], k if k < n_b else k - n_b
        return lo + m // 64, np.uint64(m % 64)

    def symbol_planes(k: int) -> list[str]:
        return [f"S{t}" for t, length in enumerate(enc.s_lengths, start=1) if n_b <= k < n_b + length]

    words = sorted({place(plane, k)[0] for k in changed for plane in ("V", "N", *symbol_planes(k))})
    if not words:
        return planes
    at = {w: i for i, w in enumerate(words)}
    columns = np.ascontiguousarray(planes[:, words].T)  # (touched words, rows)
    one = np.uint64(1)

    def bit(plane: str, k: int) -> np.ndarray:
        word, shift = place(plane, k)
        return ((columns[at[word]] >> shift) & one).astype(bool)

    def put(plane: str, k: int, value: np.ndarray) -> None:
        word, shift = place(plane, k)
        row = columns[at[word]]
        row &= ~(one << shift)
        row |= value.astype(np.uint64) << shift

    for k in changed:
        planes_k = symbol_planes(k)
        present, rank = bit("V", k), bit("N", k).astype(np.uint8)  # rank 1 in section B
        for t, plane in enumerate(planes_k, start=1):
            rank[bit(plane, k)] = t
        new_rank = enc.ranks[k, old.symbols[rank, k]]
        put("N", k, present & (new_rank != 0))
        for t, plane in enumerate(planes_k, start=1):
            put(plane, k, present & (new_rank == t))
    planes[:, words] = columns.T
    return planes


def appended(input_path, start: int, before: Earlier) -> tuple[Appended | None, str]:
    """The records from byte `start` on (appended), where the grown input keeps the earlier
    kept columns (their bases may change: the earlier rows are then encoded again); or None and
    why not."""
    read, why = new_records(input_path, start, int(before.manifest["n_fields"]))
    if read is None:
        return None, why
    ids, rows = read
    if not set(ids).isdisjoint(before.manifest["ids"]):
        return None, "a new record's length or ID is refused"
    return grown(ids, rows, before)


def new_records(input_path, start: int, n_fields: int) -> tuple[tuple[list[str], np.ndarray] | None, str]:
    """(IDs, bytes) of the records of `input_path` from byte `start` on, as the one-pass reader
    takes them, each of `n_fields` columns; or None and why not (then the whole input's read
    says what is wrong, where anything is). An append's new records, or a query's input
    (store/against.py)."""
    try:
        layout = fasta_mmap.open_regular(input_path, start)
    except GenotileError:  # the whole input's read says it, in its own words
        return None, "a new record's ID is refused"
    if layout is None or layout.n == 0:
        return None, "the new records are not laid out as the one-pass reader takes them"
    if layout.length != n_fields:
        return None, "a new record's length or ID is refused"
    rows = layout.rows(0, layout.n)
    if not fasta_mmap.clean(rows):
        return None, "a new record holds a byte the one-pass reader does not take"
    return (layout.ids, rows), ""


def grown(ids: list[str], rows: np.ndarray, before: Earlier) -> tuple[Appended | None, str]:
    """The new records `rows` (new_records') counted and added to the earlier input's counts,
    where the grown counts keep the earlier kept columns; or None and why not."""
    counts = ColumnCounts(rows.shape[1])
    counts.add(rows, canonical=True)  # folded as the store's held bytes, missing ones 0 (identical rows)
    counts.update(before.columns)
    keep = np.flatnonzero(counts.informative)
    if not np.array_equal(keep, np.flatnonzero(before.columns.informative)):
        return None, "the new records make a constant column variable"
    enc = categorical_encoding(counts.code_counts(keep), NUCLEOTIDE.has_missing)
    earlier_enc = categorical_encoding(before.columns.code_counts(keep), NUCLEOTIDE.has_missing)
    if earlier_enc.layout != PlaneLayout.from_json(before.manifest["layout"]):
        return None, "the earlier store's layout is not its counts'"
    if same_encoding(enc, earlier_enc):
        return Appended(ids, rows, counts, keep, enc, None), ""
    log.info(
        "store: the earlier rows' planes are encoded again (the new records change a column's bases or their order)"
    )
    return Appended(ids, rows, counts, keep, enc, earlier_enc), ""


def same_encoding(a: CategoricalEncoding, b: CategoricalEncoding) -> bool:
    """Whether two encodings give every row the same planes: the same columns in the same order,
    each with the same symbols of each rank (the ranks are the symbols' inverse)."""
    return (
        a.n_b == b.n_b
        and a.s_lengths == b.s_lengths
        and a.layout == b.layout
        and np.array_equal(a.order, b.order)
        and np.array_equal(a.symbols, b.symbols)
    )


def write_planes(planes_out, earlier_planes: Path, appended, new_rows: np.ndarray, words: int) -> None:
    """planes.npy of `words` words a row: the earlier file's rows, copied (by the kernel,
    copy_file_range) or, where the encoding changed, encoded again (Appended.recoded), then the
    new records' `new_rows` (`appended`: an Appended, or a list's new samples,
    store/listed.NewSamples); the file replaced whole (util/atomic.py)."""
    old = load_npy(earlier_planes, "the earlier store's planes", dtype=np.uint64, ndim=2, mmap=True)
    assert isinstance(old, np.memmap)  # mmap: its `offset` is the header's bytes
    n_old = old.shape[0]
    with atomic_path(planes_out) as tmp, open(tmp, "r+b") as fh, open(earlier_planes, "rb") as src:
        start = npy_rows.write_header(fh, (n_old + new_rows.size, words), np.uint64)
        if appended.earlier_enc is None:
            _copy(src.fileno(), fh.fileno(), old.offset, start, n_old * words * 8, tmp)
        else:
            for r0 in range(0, n_old, RECODE_ROWS):
                planes = appended.recoded(np.asarray(old[r0 : r0 + RECODE_ROWS]))
                npy_rows.pwrite_rows(fh.fileno(), planes, start + r0 * words * 8, tmp)
        npy_rows.pwrite_rows(fh.fileno(), appended.planes(new_rows), start + n_old * words * 8, tmp)


def _copy(src: int, dst: int, src_offset: int, dst_offset: int, count: int, path) -> None:
    """`count` bytes of file `src` from `src_offset` into `dst` at `dst_offset`, in the kernel
    where it can (no trip through this process), else read and written."""
    done = 0
    while done < count:
        size = min(COPY_BYTES, count - done)
        try:
            got = os.copy_file_range(src, dst, size, src_offset + done, dst_offset + done)
        except OSError:  # not across these file systems: through this process
            got = len(block := os.pread(src, size, src_offset + done))
            npy_rows.pwrite_rows(dst, np.frombuffer(block, dtype=np.uint8), dst_offset + done, path)
        if got <= 0:
            raise OSError(f"{path}: short copy of the earlier planes")
        done += got
