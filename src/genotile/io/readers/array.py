"""Arrays in memory as inputs of the store: genotypes, or an alignment (the Python API's `x`).

An array is read as a file is, by the store's one ingest (store/ingest.py), which takes the
reader opened here in place of a path: `GenotypeArray` gives the samples and blocks of codes as
a genotype file's reader does (io/readers/base.py `GenotypeReader`); `AlignmentArray` the
informative columns' codes as the FASTA reader does (io/readers/fasta.py `FastaReader.read`),
held in memory unless a codes file is asked for. No file is read, and none is written unless
the caller names one.

What an array must hold is checked when the reader is made, and a value that does not fit is
refused naming the array, the value, its position (row, column) and the values allowed. Arrays
are not named by a path: they are not in the registry of READERS, which looks readers up by
name.
"""

import hashlib
from collections.abc import Iterator

import numpy as np

from genotile.core.encode import ALPHABETS, MISSING
from genotile.errors import GenotileError
from genotile.io.ids import check_ids, check_unique
from genotile.io.readers.base import AlignmentReader, GenotypeReader
from genotile.util.atomic import atomic_path

GENOTYPES = "ALT allele counts 0, 1, 2, a missing call as a negative number, NaN or 255"
SEQUENCES = (
    "sequences: str or bytes of one length, or an (n, length) array of one-character strings or "
    "of printable ASCII codes (32-126)"
)


def names(ids, n: int, what: str) -> list[str]:
    """The names of `n` rows (`what`: "samples", "variants", "sequences"): `ids` as text, or
    "0", "1", ... where None."""
    if ids is None:
        return [str(k) for k in range(n)]
    if isinstance(ids, (str, bytes)):  # its characters would name the rows one by one
        raise GenotileError(
            f"ids must be a sequence of names, one per {what[:-1]}, not the single {type(ids).__name__} {ids!r}"
        )
    out = [str(i) for i in ids]
    if len(out) != n:
        raise GenotileError(f"ids: {len(out)} given for {n} {what}")
    return out


def _position(value, row: int, column: int, rows: str, columns: str) -> str:
    return f"value {value!r} at row {row}, column {column} ({rows[:-1]} {row}, {columns[:-1]} {column})"


def genotype_codes(x, what: str = "the genotype array") -> np.ndarray:
    """(samples, variants) ALT allele counts as uint8 codes, core.encode.MISSING for a missing call.

    Parameters
    ----------
    x : array_like, shape (samples, variants)
        0, 1, 2; a missing call a negative number, NaN or 255 (an infinity is refused: neither).
    what : str
        The array in words, for errors.

    Returns
    -------
    numpy.ndarray of uint8, shape (samples, variants)

    Raises
    ------
    GenotileError
        Naming the array and its shape, or the first value that does not fit and its position.

    Examples
    --------
    >>> genotype_codes([[0, 1, 2], [-1, 2, 0]]).tolist()
    [[0, 1, 2], [255, 2, 0]]
    >>> genotype_codes([[0, 1, 2], [0, 1, 3]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    genotile.errors.GenotileError: the genotype array, shape (2, 3): value 3 at row 1, column 2 (sample 1, ...
    """
    g = np.asarray(x)
    if g.ndim == 1 and g.dtype.kind in "SU":  # a list of sequences
        raise GenotileError(
            f"{what} holds text (sequences?): an alignment is for snp and hamming; genotypes are {GENOTYPES}"
        )
    if g.ndim == 3:
        raise GenotileError(
            f"{what} has shape {g.shape}: allele calls (variants, samples, ploidy)? pass them as "
            "scikit-allel's GenotypeArray(x) (read variants first); genotypes are a 2-D array (samples, variants)"
        )
    if g.ndim != 2:
        raise GenotileError(f"{what} has shape {g.shape}: genotypes are a 2-D array (samples, variants)")
    where = f"{what}, shape {g.shape}"
    if 0 in g.shape:  # as a file's reader refuses an input without samples or variants
        raise GenotileError(f"{where} has no {'samples' if g.shape[0] == 0 else 'variants'}: nothing to compare")
    if g.dtype.kind == "f":  # NaN is missing; an infinity is no genotype nor a missing call: refused
        missing = np.isnan(g) | ((g < 0) & np.isfinite(g)) | (g == MISSING)
    elif g.dtype.kind in "iub":
        missing = (g < 0) | (g == MISSING)
    else:
        holds = "text" if g.dtype.kind in "SU" else f"{g.dtype}"
        hint = " (an alignment is for snp and hamming)" if g.dtype.kind in "SU" else ""
        raise GenotileError(f"{where} holds {holds}, not numbers{hint}; genotypes are {GENOTYPES}")
    fits = missing | (g == 0) | (g == 1) | (g == 2)
    if not fits.all():
        s, v = (int(k) for k in np.argwhere(~fits)[0])
        value = g[s, v].item()
        hint = ""
        if g.dtype.kind == "f" and np.isinf(value):
            hint = " (an infinity is not a missing call: use NaN or -1)"
        elif g.dtype.kind == "f" and value != round(value):
            hint = " (dosages are not supported)"
        raise GenotileError(
            f"{where}: {_position(value, s, v, 'samples', 'variants')}; genotypes are {GENOTYPES}{hint}"
        )
    return np.where(missing, MISSING, g).astype(np.uint8)


class GenotypeArray(GenotypeReader):
    """Genotypes in memory, shape (samples, variants), read as a genotype file's reader reads one.

    Parameters
    ----------
    x : array_like, shape (samples, variants)
        ALT allele counts (`genotype_codes`).
    samples, variants : sequence of str, optional
        Their names; default "0", "1", ...
    """

    kind = "array"
    suffixes = ()
    what = "a genotype array"
    format = "array"

    def __init__(self, x, samples=None, variants=None):
        self.codes = genotype_codes(x)
        n_samples, n_variants = self.codes.shape
        self.samples = names(samples, n_samples, "samples")
        self.variants = names(variants, n_variants, "variants")
        self.path = str(self)
        check_ids(self.samples, self, "sample")  # as a VCF's samples (its variants: the ingest checks)
        check_unique(self.samples, self, "sample")
        self.stats = {"variants": n_variants, "missing_calls": int(np.count_nonzero(self.codes == MISSING))}

    def __str__(self) -> str:
        return "the genotype array"

    def blocks(self, max_rows: int = 4096) -> Iterator[tuple[list, np.ndarray]]:
        """(variant IDs, codes (variants, samples)) blocks of at most `max_rows` variants."""
        for v0 in range(0, self.codes.shape[1], max_rows):
            yield self.variants[v0 : v0 + max_rows], self.codes[:, v0 : v0 + max_rows].T

    def sha256(self) -> str:
        """SHA-256 of the codes (samples, variants), the input's content."""
        return hashlib.sha256(self.codes.tobytes()).hexdigest()


def alignment_bytes(x, what: str = "the alignment") -> np.ndarray:
    """An alignment's sequences as one uint8 (sequences, length) array of ASCII bytes.

    Parameters
    ----------
    x : sequence of str or bytes, or numpy.ndarray of shape (n, length)
        Sequences of one length, or one-character strings, or printable ASCII codes.
    what : str
        The alignment in words, for errors.

    Returns
    -------
    numpy.ndarray of uint8, shape (sequences, length)

    Raises
    ------
    GenotileError
        Naming the alignment: no sequences, sequences of unequal lengths, numbers that are
        genotypes, the first value that is not printable ASCII text and its position.

    Examples
    --------
    >>> alignment_bytes(["ACGT", "ACGA"]).tobytes()
    b'ACGTACGA'
    >>> alignment_bytes(["ACGT", "ACG"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    genotile.errors.GenotileError: the alignment: sequence 1 has length 3, but sequence 0 has length 4: ...
    >>> alignment_bytes(np.array([[0, 1, 2], [2, 1, 0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    genotile.errors.GenotileError: the alignment, shape (2, 3), holds the numbers 0, 1, 2: genotypes ...
    """
    if isinstance(x, np.ndarray) and x.ndim == 2:
        return _array_bytes(x, what)
    if isinstance(x, np.ndarray) and x.ndim != 1:
        raise GenotileError(f"{what} has shape {x.shape}: {SEQUENCES}")
    rows: list[np.ndarray] = []
    for k, item in enumerate(x):
        if isinstance(item, str):
            wide = np.frombuffer(item.encode("utf-32-le"), dtype=np.uint32)
            _check_text(wide.reshape(1, -1), f"{what}: sequence {k}", row=k)
            item = item.encode("ascii")
        if not isinstance(item, (bytes, bytearray, np.bytes_)):
            raise GenotileError(f"{what}: sequence {k} is of type {type(item).__name__}; {SEQUENCES}")
        row = np.frombuffer(bytes(item), dtype=np.uint8)
        _check_text(row.reshape(1, -1), f"{what}: sequence {k}", row=k)
        if rows and row.size != rows[0].size:
            raise GenotileError(
                f"{what}: sequence {k} has length {row.size}, but sequence 0 has length {rows[0].size}: "
                "the sequences of an alignment are of one length"
            )
        rows.append(row)
    if not rows:
        raise GenotileError(f"{what} has no sequences")
    return np.stack(rows)


def _array_bytes(x: np.ndarray, what: str) -> np.ndarray:
    """alignment_bytes of an (n, length) array of one-character strings or ASCII codes."""
    where = f"{what}, shape {x.shape}"
    codes: np.ndarray
    if x.dtype.kind in "SU" and x.dtype.itemsize > (4 if x.dtype.kind == "U" else 1):
        _check_one_character(x, where)  # astype("U1") below would keep each cell's first character
    if x.dtype.kind == "U":
        codes = np.ascontiguousarray(x.astype("U1")).view(np.uint32).reshape(x.shape)
    elif x.dtype.kind == "S":
        codes = np.ascontiguousarray(x.astype("S1")).view(np.uint8).reshape(x.shape)
    elif x.dtype.kind in "iubf":
        if _genotypes_like(x):
            shown = ", ".join(str(v.item()) for v in np.unique(x)[:4])
            raise GenotileError(
                f"{where}, holds the numbers {shown}: genotypes (ALT allele counts), read by ibs, king, "
                f"ccc2 and ccc3, not sequences; snp and hamming read {SEQUENCES}"
            )
        if x.dtype.kind == "f":
            raise GenotileError(f"{where}, holds floats, not sequences; {SEQUENCES}")
        codes = x
    else:
        raise GenotileError(f"{where}, holds {x.dtype}, not sequences; {SEQUENCES}")
    if x.shape[0] == 0:
        raise GenotileError(f"{what} has no sequences")
    _check_text(codes, where)
    return codes.astype(np.uint8)


def _check_one_character(x: np.ndarray, where: str) -> None:
    """Refuse the first cell of an (n, length) text array that is not one character."""
    bad = np.char.str_len(x) != 1
    if bad.any():
        r, c = (int(k) for k in np.argwhere(bad)[0])
        raise GenotileError(
            f"{where}: {x[r, c].item()!r} at row {r}, column {c} is not one character; an array of "
            f"characters holds one per cell ({SEQUENCES})"
        )


def _genotypes_like(x: np.ndarray) -> bool:
    """Whether numbers look like genotypes: 0, 1, 2 and missing calls (negative, NaN, 255) only."""
    return bool(np.all((x == 0) | (x == 1) | (x == 2) | (x == MISSING) | (x < 0) | np.isnan(x.astype(float))))


def _check_text(codes: np.ndarray, where: str, row: int | None = None) -> None:
    """Refuse the first code of `codes` (rows, columns) that is not printable ASCII."""
    bad = (codes < 32) | (codes > 126)
    if bad.any():
        r, c = (int(k) for k in np.argwhere(bad)[0])
        value = codes[r, c].item()
        shown = repr(chr(value)) if 0 <= value < 0x110000 else str(value)  # codes of integers may be anything
        at = f"column {c}" if row is not None else f"row {r}, column {c}"
        raise GenotileError(f"{where}: {shown} (code {value}) at {at} is not printable ASCII text; {SEQUENCES}")


class AlignmentArray(AlignmentReader):
    """An alignment in memory, read as io/readers/fasta.py reads a FASTA file.

    Parameters
    ----------
    x : sequence of str or bytes, or numpy.ndarray of shape (n, length)
        The sequences (`alignment_bytes`).
    ids : sequence of str, optional
        Their names; default "0", "1", ... Each is checked as a FASTA ID is (io/ids.py), once.
    """

    kind = "array"
    suffixes = ()
    what = "an alignment array"

    def __init__(self, x, ids=None):
        self.rows = alignment_bytes(x)
        self.ids = names(ids, self.rows.shape[0], "sequences")
        check_ids(self.ids, self, "sequence")
        check_unique(self.ids, self, "sequence")

    def __str__(self) -> str:
        return "the alignment"

    def read(
        self, alphabet: str, codes_out=None, hold: bool = False, canonical: bool = False
    ) -> tuple[list[str], int, int, np.ndarray | None]:
        """The informative columns' codes, as FastaReader.read gives them.

        Parameters
        ----------
        alphabet : str
            The store encoding (core/encode.ALPHABETS).
        codes_out : str or os.PathLike, optional
            Write the codes (.npy, uint8 (vectors, kept fields)) here; None: hold them.
        hold, canonical : bool
            As FastaReader.read's (the codes are held unless `codes_out` is named).

        Returns
        -------
        ids : list of str
        n_fields, n_kept : int
            Columns, and informative columns (two or more symbols).
        held : numpy.ndarray of uint8, shape (vectors, kept fields), or None
            The codes, or None where they were written to `codes_out`.
        """
        codes = ALPHABETS[alphabet].encode(self.rows)
        # a column is informative where its present codes are not all one (encode.ColumnScan's rule)
        low = codes.min(axis=0, initial=MISSING)
        high = np.where(codes == MISSING, 0, codes).max(axis=0, initial=0)
        keep = np.flatnonzero((low != MISSING) & (high != low))
        kept = np.ascontiguousarray(codes[:, keep])
        n_fields = self.rows.shape[1]
        if codes_out is None:
            return self.ids, n_fields, int(keep.size), kept
        with atomic_path(codes_out) as tmp, open(tmp, "wb") as fh:
            np.save(fh, kept, allow_pickle=False)
        return self.ids, n_fields, int(keep.size), None

    def sha256(self) -> str:
        """SHA-256 of the sequences' bytes (rows of one length), the input's content."""
        return hashlib.sha256(self.rows.tobytes()).hexdigest()
