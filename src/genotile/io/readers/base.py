"""The reader interface every input format implements, and the one registry of them.

A reader says, for its format: the input's kind (`kind`, "vcf", "plink1", ...), the names that
are of that kind (`suffixes`, `kind_of`), what it is in words (`what`, for errors), whether it
holds an alignment or genotypes (`source`: the store encodings it can feed are those of that
source, core/encodings.py), the reader options it takes (`options`), and the files (or
directories) it is read from (`input_files`; `companions`: the ones besides the named input, which a
store records the content of, store/sources.py).

Opened, an alignment reader (`AlignmentReader`: fasta.py) reads the aligned sequences; a genotype reader
(`GenotypeReader`: vcf.py, plink.py, bed.py, vcz.py) gives the samples and blocks of codes,
uint8 (variants, samples) with 0 / 1 / 2 ALT alleles and core.encode.MISSING, with the counts of
its rules, and may offer faster forms of the same calls: the (samples, variants) codes written
straight (`write_sample_rows`), or a whole .bed's calls held as bits (`held_bits`). The store's
one ingest (store/ingest.py) looks the reader up here (`reader_for`) and takes the form it
offers; store/inputs.py judges an input's kind, files and metrics from the same registry.

A new format is one module here with one `Reader` subclass, and one line in READERS.
"""

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import ClassVar

import numpy as np

from genotile.core.columns import ColumnCounts
from genotile.core.encodings import ENCODINGS
from genotile.errors import GenotileError

# Every input format, as "module:class" under genotile.io.readers, imported when first asked
# for (a job imports cyvcf2, pgenlib or zarr only for the input it reads), in the order errors
# list them; their names do not overlap.
READERS = (
    "vcf:VcfReader",  # VCF / BCF (cyvcf2, text VCF through io/vcf_fast.py first)
    "plink:PlinkReader",  # PLINK 2 .pgen (pgenlib); refuses a PLINK companion file (.bim) by name
    "bed:BedReader",  # PLINK 1 .bed (a whole .bed with numpy, a selection with pgenlib)
    "vcz:VczReader",  # VCF-Zarr (bio2zarr vcf2zarr's layout, read with zarr)
    "fasta:FastaReader",  # aligned FASTA
)

GENOTYPE_OPTIONS = ("multiallelic", "filter_pass", "samples", "regions", "chromosomes")


class Reader(ABC):
    """An input format: what names it, what it feeds, what it is read from.

    Attributes
    ----------
    kind : str
        The input's kind ("fasta", "vcf", "plink1", "plink2", "vcz"): store/inputs.py's answer,
        and the ingest manifest's `format` where the reader does not name it finer ("bcf").
    suffixes : tuple of str
        Lower-case name endings of this kind.
    what : str
        The input in words, for errors ("a VCF/BCF").
    source : {"alignment", "genotypes"}
        What it holds (core/encodings.py `Encoding.source`).
    options : tuple of str
        The reader options it takes (the VCF options for genotypes; none for an alignment).
    """

    kind: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    what: ClassVar[str]
    source: ClassVar[str]
    options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def kind_of(cls, path) -> str | None:
        """`kind` where the name of `path` ends with one of `suffixes`, else None.

        Raises
        ------
        GenotileError
            A name that belongs to this format but cannot be read as its input (a PLINK
            companion file)."""
        return cls.kind if str(path).lower().rstrip("/").endswith(cls.suffixes) else None

    @classmethod
    def encodings(cls) -> tuple[str, ...]:
        """The store encodings this input can feed (core/encodings.py)."""
        return tuple(name for name, e in ENCODINGS.items() if e.source == cls.source)

    @classmethod
    def input_files(cls, path) -> list[Path]:
        """Every file (or directory) the input is read from, the one named first."""
        return [Path(path)]

    @classmethod
    def companions(cls, path) -> dict[str, Path]:
        """{name: path} of the files besides the named input that are read with it (and exist),
        each recorded by content in the store's sources (store/sources.py)."""
        return {}


class AlignmentReader(Reader):
    """An alignment, opened: its sequences read for an alphabet's store (fasta.py; array.py for an
    alignment in memory)."""

    source = "alignment"
    # what an append needs of the columns of an alignment `read` without being held (the store
    # job's; core/columns.ColumnCounts, store/extend.py), where the reader took it; else None
    columns: ColumnCounts | None = None

    @abstractmethod
    def __init__(self, path):
        """Open `path` (a file's reader checks it here)."""

    @abstractmethod
    def read(self, alphabet: str, codes_out, hold: bool = False, canonical: bool = False) -> tuple:
        """The informative columns for `alphabet` (core/encode.ALPHABETS).

        Parameters
        ----------
        alphabet : str
            The store encoding.
        codes_out : str or os.PathLike or None
            The codes (.npy, uint8 (vectors, kept fields)), written unless held.
        hold : bool
            Hold the sequences in memory where they fit (nothing written).
        canonical : bool
            Held bytes as identical vectors are found from (store/duplicates.py).

        Returns
        -------
        ids : list of str
        n_fields, n_kept : int
            Columns, and informative columns.
        held : HeldAlignment or numpy.ndarray or None
            What the store is packed from where nothing was written to `codes_out`.
        """


class GenotypeReader(Reader):
    """Genotypes, opened: the samples, blocks of codes and the counts of the rules.

    Attributes
    ----------
    path : str
        The input.
    format : str
        The ingest manifest's `format` ("vcf", "bcf", "plink1", "plink2", "vcz").
    samples : list of str
        The samples, in output order (a `samples` option selects and orders them).
    stats : dict
        The counts of the rules (vcf.STATS), filled in as the calls are read.
    want_ids : bool
        False: `blocks` may give None for variant IDs (callers that drop them).
    """

    source = "genotypes"
    options = GENOTYPE_OPTIONS
    path: str
    format: str
    samples: list[str]
    stats: dict
    want_ids: bool = True

    @abstractmethod
    def __init__(
        self,
        path,
        multiallelic: str = "skip",
        filter_pass: bool = False,
        samples=None,
        regions=None,
        chromosomes: str = "autosomes",
    ):
        """Open `path`, with the genotype options (GENOTYPE_OPTIONS): `multiallelic` "skip" or
        "split", `filter_pass`, `samples` (IDs or a file of them: select and order), `regions`
        (io/regions.py), `chromosomes` ("autosomes": PLINK's default, variants on contigs 1-22
        only, the others counted in `stats["non_autosomal_skipped"]`; "all")."""

    @abstractmethod
    def blocks(self, max_rows: int = 4096) -> Iterator[tuple[list, np.ndarray]]:
        """Yield (variant IDs, codes) blocks of at most `max_rows` variants.

        Yields
        ------
        ids : list of str (or None, where `want_ids` is False)
            One per variant of the block.
        codes : numpy.ndarray
            uint8 (variants, samples): ALT alleles 0 / 1 / 2, core.encode.MISSING for a missing call.
        """

    def write_sample_rows(self, out_path, threads: int = 2) -> int | None:
        """Write the (samples, variants) codes of every selected variant straight to the .npy
        `out_path` (the `genotype` store's orientation), counting them; the number of variants,
        or None (nothing written) where this reader or selection has no such path."""
        return None

    def held_bits(self, threads: int = 2, device: bool = False):
        """The calls of every variant held in memory as bits (bed.HeldBits), counted; None where
        this reader or selection has no such form. `device`: the pass is to hand its blocks to a
        GPU's transposer (store/resident.py `on_device`), not to the compiled one."""
        return None

    def manifest_keys(self) -> dict:
        """Keys the ingest manifest records for this input besides the common ones."""
        return {}

    def close(self) -> None:
        """Release the input."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def list_label(names) -> str:
    """A list input in words, as its manifests and messages name it (store/listed.py): its files
    joined by " + ".

    >>> list_label(["day1.fa", "day2.fa"])
    'day1.fa + day2.fa'
    """
    return " + ".join(str(n) for n in names)


@cache
def reader_classes() -> tuple[type[Reader], ...]:
    """The classes of READERS, in order."""
    out = []
    for entry in READERS:
        module, name = entry.split(":")
        out.append(getattr(importlib.import_module(f"genotile.io.readers.{module}"), name))
    return tuple(out)


def reader_for(path) -> type[Reader] | None:
    """The reader of the input `path` by its name, or None for a name of no known kind.

    Raises
    ------
    GenotileError
        A name no input can be read from (a PLINK .bim named instead of its .bed)."""
    for cls in reader_classes():
        if cls.kind_of(os.fspath(path)) is not None:
            return cls
    return None


def reader_of(path, encoding: str) -> type[Reader]:
    """The reader of `path` for a store of `encoding`: by the name, else (a name of no known
    kind) the reader of the encoding's source, FASTA for an alignment, VCF/BCF for genotypes."""
    if encoding not in ENCODINGS:
        raise GenotileError(f"unknown encoding {encoding!r}")
    found = reader_for(path)
    if found is not None:
        return found
    source = ENCODINGS[encoding].source
    return next(cls for cls in reader_classes() if cls.kind == ("fasta" if source == "alignment" else "vcf"))
