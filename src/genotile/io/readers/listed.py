"""A dataset's input given as a list of files (issue 27, point 1): their vectors one file after
another, read as one input in memory (store/listed.py reads the files).

`ListedAlignment` is an `AlignmentArray` of FASTA files of one length, their records in order;
`ListedGenotypes` a `GenotypeArray` of genotype inputs holding the same variants in the same order
(their IDs, after the reader options), their samples in order. Names must be unique over the
whole list, as within one file. What the files must share is checked here, and a mismatch is one
line naming the file that differs.
"""

import hashlib

import numpy as np

from genotile.core.encode import ALPHABETS
from genotile.errors import GenotileError
from genotile.io.ids import check_ids, check_unique
from genotile.io.readers.array import AlignmentArray, GenotypeArray
from genotile.io.readers.base import list_label
from genotile.io.readers.query import Part


def listed_sha256(sha256s: list[str]) -> str:
    """A list input's input_sha256: of its files' SHA-256s, in order (a tile names its store by
    it; a fresh store and an appended one of the same list record the same)."""
    return hashlib.sha256(("listed " + " ".join(sha256s)).encode()).hexdigest()


def _names(parts: list[Part], what: str) -> list[str]:
    """Every part's names in order, checked unique over the list (a name in two files is refused,
    naming the second)."""
    seen: dict[str, str] = {}
    for part in parts:
        check_ids(part.ids, part.name, what)
        check_unique(part.ids, part.name, what)
        for name in part.ids:
            if name in seen:
                raise GenotileError(
                    f"{part.name}: {what} {name!r} is also in {seen[name]}: the files of a list input hold "
                    f"distinct {what}s"
                )
        seen.update(dict.fromkeys(part.ids, part.name))
    return [name for part in parts for name in part.ids]


class ListedAlignment(AlignmentArray):
    """FASTA files of one length, one after the other, read as one alignment in memory.

    `held`: all held as one (io/readers/fasta.py hold_regulars; each part's data a view of its
    rows), which `read` gives the ingest as a FASTA file's held alignment; None: the parts'
    bytes, joined here and encoded as an array's."""

    kind = "listed"
    what = "a list of alignments"

    def __init__(self, parts: list[Part], held=None):
        length = parts[0].data.shape[1]
        for part in parts[1:]:
            if part.data.shape[1] != length:
                raise GenotileError(
                    f"{part.name} holds sequences of length {part.data.shape[1]}, but {parts[0].name} of length "
                    f"{length}: the files of a list input are one alignment"
                )
        self.held = held
        self.rows = held.rows if held is not None else np.concatenate([p.data for p in parts])
        self.ids = _names(parts, "sequence")
        self.sha256s = [p.sha256 for p in parts]
        self._label, self._sha256 = list_label([p.name for p in parts]), listed_sha256(self.sha256s)

    def __str__(self) -> str:
        return self._label

    def sha256(self) -> str:
        return self._sha256

    def read(self, alphabet: str, codes_out=None, hold: bool = False, canonical: bool = False):
        """As AlignmentArray.read; the held alignment itself where there is one (`hold`, no codes
        file: the ingest of store/listed.py)."""
        if self.held is None or not hold or self.held.alphabet is not ALPHABETS[alphabet]:
            return super().read(alphabet, codes_out, hold, canonical)
        return self.ids, self.rows.shape[1], int(self.held.keep.size), self.held


class ListedGenotypes(GenotypeArray):
    """Genotype inputs holding the same variants, in the same order, read as one genotype array of
    their samples (codes (samples, variants), the files' samples in order).

    `keys`: each file's reader's manifest keys (PLINK: FID and IID of each sample); the list's
    are theirs concatenated where every file has them."""

    what = "a list of genotype inputs"
    format = "listed"

    def __init__(self, parts: list[Part], stats: dict, keys: list[dict]):
        variants = parts[0].fields or []
        for part in parts[1:]:
            other = part.fields or []
            if other != variants:
                k = next((k for k, (x, y) in enumerate(zip(variants, other, strict=False)) if x != y), None)
                shown = (
                    "" if k is None else f": variant {k + 1} is {other[k]!r} there, {variants[k]!r} in {parts[0].name}"
                )
                raise GenotileError(
                    f"{part.name} holds {len(other)} variants, {parts[0].name} {len(variants)}{shown}; the files of a "
                    "list input hold the same variants, in the same order (after the reader options)"
                )
        self.codes = np.concatenate([p.data for p in parts])
        self.samples = _names(parts, "sample")
        self.variants = list(variants)
        self.path = self._label = list_label([p.name for p in parts])
        self.sha256s = [p.sha256 for p in parts]
        self._sha256 = listed_sha256(self.sha256s)
        self.stats = stats
        self._keys = {key: [v for k in keys for v in k[key]] for key in ("fids", "iids") if all(key in k for k in keys)}

    def __str__(self) -> str:
        return self._label

    def sha256(self) -> str:
        return self._sha256

    def manifest_keys(self) -> dict:
        """FID and IID of each sample where every file is a PLINK fileset (PLINK-style outputs)."""
        return dict(self._keys)
