"""Query mode's input: a dataset's vectors then a FILE's, read as one (issue 27, `against:`).

The two are encoded together, as one store of n + r vectors (the input's rows, then the
FILE's): a categorical column's symbols, an alignment's informative columns, are those of both
sets, so that a pair's value is the one an all-pairs run over both would give it. The store's
one ingest (store/ingest.py) reads them as it reads an array in memory: `QueryAlignment` is an
`AlignmentArray`, `QueryGenotypes` a `GenotypeArray`, each made from the two inputs' parts
(store/query.py reads the files). What the two must share is checked here, and a mismatch is
one line naming both files.

A name may be in both sets (the same sample in the database and among the new ones): each set's
names are unique within it, as every reader requires, and the pair of the two is reported like
any other (psdm does the same), with its distance (0 where the two are identical).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from genotile.core.encode import ALPHABETS
from genotile.errors import GenotileError
from genotile.io.ids import check_ids, check_unique
from genotile.io.readers.array import AlignmentArray, GenotypeArray

if TYPE_CHECKING:
    from genotile.io.readers.fasta import HeldAlignment


@dataclass(frozen=True)
class Part:
    """One side of a query: its file (a list of files, or an array, in words), its content's SHA-256
    (a list's: io/readers/listed.listed_sha256 of its files'), its vectors' names
    and their data (an alignment's bytes (n, length); genotype codes (samples, variants)); for
    genotypes the names of the fields (variant IDs where samples are the vectors, sample IDs
    where variants are)."""

    name: str
    sha256: str
    ids: list[str]
    data: np.ndarray
    fields: list[str] | None = None
    state: str | None = None  # the SHA-256's state after the file's last byte, where it was kept
    sha256s: list[str] | None = None  # a list of files' (store/listed.py): each file's SHA-256, in order


def label(query: Part, against: Part) -> str:
    """The store's `input` in words: "<input> against <FILE>"."""
    return f"{query.name} against {against.name}"


def combined_sha256(query: Part, against: Part) -> str:
    """The store's input_sha256: of the two SHA-256s, input's first (a tile names its store by it)."""
    import hashlib

    return hashlib.sha256(f"query {query.sha256} against {against.sha256}".encode()).hexdigest()


def _names(parts: tuple[Part, Part], what: str) -> list[str]:
    """Both parts' names, input's first, each checked unique within its own part."""
    for part in parts:
        check_ids(part.ids, part.name, what)
        check_unique(part.ids, part.name, what)
    return parts[0].ids + parts[1].ids


class QueryAlignment(AlignmentArray):
    """An input alignment and a FILE's, one after the other, read as one alignment in memory.

    `held`: both already held as one (io/readers/fasta.py hold_regulars: two regular FASTA files
    gathered, folded and counted on threads; the parts' data are views of its rows), which `read`
    gives the store's ingest as a FASTA file's held alignment (`hold`); None: the parts' bytes,
    joined here and encoded as an array's."""

    what = "an alignment and the alignment it is compared against"

    def __init__(self, query: Part, against: Part, held: "HeldAlignment | None" = None):
        if query.data.shape[1] != against.data.shape[1]:
            raise GenotileError(
                f"against: {against.name} holds sequences of length {against.data.shape[1]}, but the input "
                f"{query.name} of length {query.data.shape[1]}: a query compares sequences of one alignment"
            )
        self.held = held
        self.rows = held.rows if held is not None else np.concatenate([query.data, against.data])
        self.ids = _names((query, against), "sequence")
        self._label, self._sha256 = label(query, against), combined_sha256(query, against)

    def __str__(self) -> str:
        return self._label

    def sha256(self) -> str:
        return self._sha256

    def read(self, alphabet: str, codes_out=None, hold: bool = False, canonical: bool = False):
        """As AlignmentArray.read; the held alignment itself where there is one (`hold`, no codes
        file: the ingest of store/query.py)."""
        if self.held is None:
            return super().read(alphabet, codes_out, hold, canonical)
        if not hold or codes_out is not None or canonical or self.held.alphabet is not ALPHABETS[alphabet]:
            raise ValueError("a held query alignment is ingested held, for its own alphabet, as it was read")
        return self.ids, self.rows.shape[1], int(self.held.keep.size), self.held


class QueryGenotypes(GenotypeArray):
    """An input's genotypes and a FILE's, read as one genotype array in memory.

    Where samples are the vectors (`transposed` False: ibs, king) the two must hold the same
    variants, in the same order (their IDs, after the reader options), and the samples are the
    input's then the FILE's; where variants are (ccc2) the two must hold the same samples, in
    the same order, and the variants are the input's then the FILE's.
    """

    what = "genotypes and the genotypes they are compared against"
    format = "query"

    def __init__(self, query: Part, against: Part, transposed: bool, stats: dict):
        field, vectors = ("samples", "variants") if transposed else ("variants", "samples")
        a, b = query.fields or [], against.fields or []
        if a != b:
            k = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            shown = (
                "" if k >= min(len(a), len(b)) else f": {field[:-1]} {k + 1} is {b[k]!r} there, {a[k]!r} in the input"
            )
            raise GenotileError(
                f"against: {against.name} holds {len(b)} {field}, the input {query.name} {len(a)}{shown}; a query "
                f"compares {vectors} over the same {field}, in the same order (after the reader options)"
            )
        # codes (samples, variants): samples stacked, or (ccc2) variants side by side
        self.codes = np.concatenate([query.data, against.data], axis=1 if transposed else 0)
        self.samples = list(a) if transposed else _names((query, against), "sample")
        self.variants = _names((query, against), "variant") if transposed else list(a)
        self.path = label(query, against)
        self._label, self._sha256 = self.path, combined_sha256(query, against)
        self.stats = stats

    def __str__(self) -> str:
        return self._label

    def sha256(self) -> str:
        return self._sha256
