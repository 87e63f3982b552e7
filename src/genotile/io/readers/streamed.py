"""What the store job's one pass over a PLINK fileset reads (io/readers/bed.py `_stream`): a plain
.bed's records as they lie (`BedFile`), or pgenlib's counts of a .pgen's, or of a selection of a
.bed's, made into them (`BedFile.pgen`: `PgenRecords`); and the pass's compiled kernels loaded
ahead of it (`warm_kernel`). Below bed.py and plink.py, which both name them.
"""

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from genotile.errors import GenotileError
from genotile.io.readers.bed_words import MAGIC, record_bytes

# .bed bytes from which the pass transposes with numba (bed_kernels.py), not numpy
# (bed_words.records_to_bits): its start-up, ~0.6-1 s on the 2-core VM, costs more below
COMPILED_BYTES = 1 << 27


def pgenlib_module():
    """pgenlib (PLINK 2's own reader), or one line saying how to install it."""
    try:
        import pgenlib
    except ImportError:
        raise GenotileError("PLINK input needs the pgenlib package: pip install pgenlib") from None
    return pgenlib


def pgenlib_error(path, exc: RuntimeError) -> GenotileError:
    """pgenlib's refusal of a file as one line naming it."""
    return GenotileError(f"{path}: {str(exc).strip() or 'unreadable'}")


def read_counts(reader, variants: np.ndarray, alleles: np.ndarray | None, rows: np.ndarray, path) -> None:
    """pgenlib's int8 counts (-9 missing) of allele alleles[k] (None: allele 1) of file variant
    variants[k] into rows[k]: a range read at once where the variants are consecutive, a split
    multi-allelic variant's ALTs read together, each an allele_idx."""
    try:
        if alleles is not None and (alleles != 1).any():
            for a in np.unique(alleles):
                pick = np.flatnonzero(alleles == a)
                part = np.empty((pick.size, rows.shape[1]), dtype=np.int8)
                reader.read_list(np.ascontiguousarray(variants[pick]), part, allele_idx=int(a))
                rows[pick] = part
        elif variants.size and int(variants[-1]) - int(variants[0]) + 1 == variants.size:
            reader.read_range(int(variants[0]), int(variants[-1]) + 1, rows)
        else:
            reader.read_list(np.ascontiguousarray(variants), rows)
    except RuntimeError as exc:
        raise pgenlib_error(path, exc) from None


EVERY_COLUMN = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class PgenRecords:
    """Selected variants of a PLINK fileset, its samples or a subset, read by pgenlib as int8 allele counts
    (allele 1, -9 missing) a run of records at a time: what the store job's pass over a .pgen
    (io/readers/bed.py, `BedFile.pgen`) makes its .bed records of. Record k is the file's
    variant `variants[k]`."""

    path: str
    variants: np.ndarray
    reader_args: dict
    subset: np.ndarray | None = None  # uint32, sorted: the samples read (`samples:`), or every one
    # int64: sample j of a record is the subset's columns[j] (empty: j)
    columns: np.ndarray = field(default_factory=lambda: EVERY_COLUMN)
    # uint32: the ALT allele record k counts (`multiallelic: split`: one record an ALT); None: allele 1
    alleles: np.ndarray | None = None

    def open(self):
        """A pgenlib reader of the file (one a thread: a reader keeps its place in the file)."""
        try:
            reader = pgenlib_module().PgenReader(os.fsencode(self.path), **self.reader_args)
            if self.subset is not None:
                reader.change_sample_subset(self.subset)
        except RuntimeError as exc:  # changed or removed since it was checked
            raise pgenlib_error(self.path, exc) from None
        return reader

    def read(self, reader, r0: int, r1: int, out: np.ndarray) -> np.ndarray:
        """Records r0:r1 into out[: r1 - r0], int8 (records, samples)."""
        rows = out[: r1 - r0]
        alleles = None if self.alleles is None else self.alleles[r0:r1]
        read_counts(reader, self.variants[r0:r1], alleles, rows, self.path)
        return rows


@dataclass(frozen=True)
class BedFile:
    """A plain .bed that the store job reads in the pass that writes its store
    (`write_streamed`, store/pack.py), or, where identical samples are collapsed, reads before
    the plan into HeldBits (`read_held`): not read yet. `finish(counts)` completes the ingest
    manifest with the pass's counts (store/ingest.py) and returns it.

    With `pgen` (`PgenRecords`: a .pgen, or a .bed's selection of variants or samples) the
    pass's records are not the file's bytes but pgenlib's counts of them made into .bed records
    (bed_kernels.counts_to_records), a run of records on each thread; the rest of the pass is
    the same."""

    path: str
    n_samples: int
    n_variants: int
    what: tuple[str, str] | None = None
    finish: Callable[[dict], dict] | None = None
    pgen: PgenRecords | None = None

    @property
    def record_bytes(self) -> int:
        """Bytes of the records the pass reads (the .bed's, or those made of a .pgen's counts)."""
        return len(MAGIC) + self.n_variants * record_bytes(self.n_samples)


def warm_kernel(path, size: int | None = None, transposer: bool = True) -> None:
    """Import numba and load the compiled transposer (cached beside the package) on a thread, once,
    for the pass over a .bed that will take it (from COMPILED_BYTES): ~0.6 s of start-up, on the
    2-core VM, while the store job reads the .fam and .bim and makes the plan (the .bed's SHA-256
    is hashed meanwhile too, without the GIL). `transposer` False: a pass whose blocks go to a
    GPU's transposer (bed.stream_to), which takes only the kernel that makes a .pgen's records
    (counts_to_records), and of a plain .bed none: nothing is loaded for it."""
    global _warming
    try:
        big = (os.path.getsize(path) if size is None else size) >= COMPILED_BYTES
    except OSError:
        return
    if not big or _warming is not None:
        return

    def load() -> None:
        with contextlib.suppress(Exception):  # the pass imports it again, and says what failed
            if transposer:
                from genotile.io.readers.bed_kernels import records_to_bits

                out, flags = np.zeros((1, 2, 1), dtype=np.uint64), np.zeros((3, 1), dtype=np.uint64)
                records_to_bits(np.zeros((1, 1), dtype=np.uint64), 1, 0, 1, 1, np.zeros(32, np.int64), out, 0, flags)
            from genotile.io.readers.bed_kernels import counts_to_records  # a .pgen's, or a selection's

            counts_to_records(np.zeros((1, 1), np.uint8), 1, np.zeros(8, np.uint8), 8, np.zeros(0, np.int64))

    _warming = threading.Thread(target=load, name="genotile-numba", daemon=True)
    _warming.start()


_warming: threading.Thread | None = None
