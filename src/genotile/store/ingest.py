"""Ingest: read an input with its format's reader, check it, and keep what the store is packed from.

The one ingest of every input format: the reader is looked up in the registry of readers
(io/readers/base.py, by the input's name, else by the encoding's source), checked against the
encoding and the options, and takes the form its reader offers:

- an alignment (io/readers/fasta.py): the informative columns' codes, written; or, where the
  codes would be temporary (`hold`: the store job), a regular alignment that fits held in
  memory (HeldAlignment);
- genotypes (VCF/BCF, PLINK, VCF-Zarr): the codes, written (store/ingest_genotypes.py); or,
  where they would be temporary, a whole .bed as it is (io/readers/bed.py BedFile), read by the
  pass that writes its store (store/pack.py), which counts its calls: the manifest is then
  `pending` (its counts and checksum filled in, and written, by that pass); where identical
  samples are collapsed, the plan needs their number first: the .bed is then read here, into
  bits in sample order (bed.read_held: HeldBits).

It writes the ingest manifest (IDs, sizes, counts, options, what the store was computed from:
store/sources.py; identical vectors, store/duplicates.py) and returns it with what store/pack.py
packs: the files are the same, byte for byte, whichever form was taken.
"""

import dataclasses
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.core.columns import ColumnCounts
from genotile.core.encodings import ENCODINGS
from genotile.core.registry import REGISTRY
from genotile.errors import GenotileError
from genotile.io.readers import bed as bed_module
from genotile.io.readers.array import AlignmentArray, GenotypeArray
from genotile.io.readers.base import AlignmentReader, GenotypeReader, Reader, reader_of
from genotile.io.readers.bed import BedFile, HeldBits
from genotile.io.readers.fasta import HeldAlignment
from genotile.store.duplicates import COLLAPSIBLE, distinct_rows, distinct_samples, row_hashes
from genotile.store.ingest_genotypes import check_options, genotype_manifest, read_genotypes, stream_bytes
from genotile.store.inputs import inputs_of
from genotile.store.pack import gpu_insisted
from genotile.store.sources import (
    complete_fingerprints,
    content_digest,
    content_sha256,
    input_pieces,
    recorded_digest,
    recorded_pieces,
    sources,
)
from genotile.util import sha256_state
from genotile.util.atomic import write_record
from genotile.util.checksums import file_sha256_resumable, pieces_digest
from genotile.util.cpus import usable_cpus
from genotile.version import __version__

HASH_THREADS = 4  # threads hashing the rows of a .bed's bits for identical samples at most


@dataclass(frozen=True)
class Ingested:
    """What an ingest made: its manifest (as written) and what the store is packed from.

    Attributes
    ----------
    manifest : dict
        The ingest manifest.
    stored : pathlib.Path or HeldAlignment or HeldBits or BedFile or numpy.ndarray
        The codes matrix written (.npy, uint8 (vectors, kept fields)), or the input held in
        memory: an alignment's folded bytes (io/readers/fasta.py), a .bed's calls as bits
        (io/readers/bed.py), or (no codes file named) the codes matrix itself; or a plain .bed
        not read yet (BedFile: its pass, in store/pack.py, completes the manifest).
    pending : bool
        The manifest lacks the .bed's counts and checksum and is not written yet: `stored.finish`
        does both with the counts of the pass that packs it.
    columns : ColumnCounts or None
        What an append reads in place of this input (store/extend.py): a nucleotide alignment's
        base counts, held (HeldAlignment.columns) or read in one pass without being held
        (FastaReader.columns); else None.
    sha256_state : str or None
        The input's SHA-256 state after its last byte (util/sha256_state.py), from the pass that
        gave its SHA-256: an alignment file's, read by the store job (`hold`); else None.
    pieces : list of str or None
        The SHA-256s (hex) of its pieces (util/checksums.file_pieces), beside it: with them, an
        append checks the earlier bytes on threads and resumes the SHA-256 over the new ones
        (store/append.py).
    """

    manifest: dict
    stored: Path | HeldAlignment | HeldBits | BedFile | np.ndarray
    pending: bool = False
    columns: ColumnCounts | None = None
    sha256_state: str | None = None
    pieces: list[str] | None = None


def ingest(
    path,
    encoding: str,
    codes_out=None,
    manifest_out=None,
    collapse_duplicates: bool = False,
    hold: bool = False,
    **options,
) -> Ingested:
    """Read `path` for a store of `encoding`; write the ingest manifest.

    Parameters
    ----------
    path : str or os.PathLike or GenotypeArray or AlignmentArray
        The input: a FASTA alignment, a VCF/BCF, a PLINK fileset (its .bed / .pgen), a VCF-Zarr
        directory (.vcz); or an array in memory, opened by its reader (io/readers/array.py).
    encoding : str
        The store encoding (core/encodings.py).
    codes_out : str or os.PathLike, optional
        The codes matrix (.npy, uint8 (vectors, kept fields), input order), unless held. None:
        held in memory (an array's, a genotype reader's blocks), nothing written; a FASTA file
        then needs `hold` and a regular alignment that fits (io/readers/fasta.py).
    manifest_out : str or os.PathLike, optional
        The ingest manifest (.json); None: returned only.
    collapse_duplicates : bool
        Record which vectors are identical (distinct_index, n_distinct; store/duplicates.py),
        so that the plan covers distinct vectors only.
    hold : bool
        The codes would be temporary (the store job): where the reader can, the input is held in
        memory in its own form instead, and no codes are written. Not where GPU packing is
        insisted on (GENOTILE_GPU_PACK=1): it packs from the codes.
    **options
        The reader's options (genotypes: multiallelic, filter_pass, samples, regions); options
        with a None value count as not given.

    Returns
    -------
    Ingested
    """
    in_memory = isinstance(path, (GenotypeArray, AlignmentArray))  # an array, opened by its reader
    reader = type(path) if in_memory else reader_of(path, encoding)
    _check_kind(reader, path, encoding)
    given = {k: v for k, v in options.items() if v is not None}
    if (in_memory or not reader.options) and given:
        what = "an array" if in_memory else str(path)
        raise GenotileError(f"option(s) {', '.join(sorted(given))} apply to {inputs_of('genotypes')}, not to {what}")
    given = check_options(options) if reader.options else given
    # the store job's FASTA file: what the next append checks its earlier bytes with, and resumes
    # its SHA-256 from (store/append.py), is kept too where libcrypto is at hand
    appendable = hold and not in_memory and reader.source == "alignment" and os.path.isfile(path)
    appendable = appendable and sha256_state.available()
    hold = hold and not gpu_insisted()
    # hashlib releases the GIL: the SHA-256, and (where the codes are not kept) the digest the
    # workflow's fingerprint did not record (store/sources.py), alongside the reading
    hashing = ThreadPoolExecutor(2, thread_name_prefix="genotile-sha256")
    states: list[str] | None = [] if appendable else None  # the SHA-256's state, from the same pass
    sha256 = hashing.submit(path.sha256) if in_memory else hashing.submit(_sha256, path, states)
    recorded = None if in_memory else recorded_digest(path)
    # an appendable file's pieces: as the fingerprint recorded them, else hashed with its digest
    # (the digest is theirs), else beside
    pieces = recorded_pieces(path) if appendable and recorded else None
    hashed_pieces = hashing.submit(input_pieces, path) if appendable and pieces is None else None
    digest = None
    if hold and not recorded and not in_memory and hashed_pieces is None:
        digest = hashing.submit(content_digest, path)
    hashing.shutdown(wait=False)
    manifest: dict
    columns = None
    collapse = collapse_duplicates and encoding in COLLAPSIBLE
    if reader.source == "alignment":
        assert issubclass(reader, AlignmentReader)
        aligned = path if in_memory else reader(path)
        ids, n_fields, n_kept, held = aligned.read(encoding, codes_out, hold, canonical=collapse_duplicates)
        manifest = alignment_manifest(path, reader.kind, encoding, ids, n_fields, n_kept, sha256.result())
        stored = held if held is not None else Path(codes_out)
        columns = held.columns if isinstance(held, HeldAlignment) else aligned.columns
    else:
        assert issubclass(reader, GenotypeReader)
        with path if isinstance(path, GenotypeArray) else reader(path, **given) as opened:
            ids_variants, stored = read_genotypes(opened, path, encoding, codes_out, hold)
            # a plain .bed is read later, in one pass that counts its calls: its checksum is
            # filled in with them (`finish`), the hashing meanwhile alongside
            later = isinstance(stored, BedFile)
            manifest = genotype_manifest(opened, path, encoding, ids_variants, given, None if later else sha256)
        if later and collapse:  # the plan is of the distinct samples: the pass comes first
            stored, counts = _read_held(stored, None if codes_out is None else Path(codes_out).parent)
            _add_counts(manifest, counts)

    def finish(counts: dict | None = None) -> dict:
        """The manifest completed (the pass's counts, the checksum, the sources, the identical
        vectors) and written."""
        if counts is not None:
            _add_counts(manifest, counts)
        if manifest["input_sha256"] is None:
            manifest["input_sha256"] = sha256.result()
        if not in_memory:  # what the store was computed from (input, options, option files, index), for reruns
            known = recorded or (None if digest is None else digest.result())
            if not known and hashed_pieces is not None:
                known = pieces_digest(hashed_pieces.result())
            manifest["sources"] = sources(path, options, input_sha256=manifest["input_sha256"], input_digest=known)
            # a workflow fingerprint that left the digest to this job: filled in (also where
            # another fingerprint of the same file had it)
            hashed = None if hashed_pieces is None else hashed_pieces.result()
            complete_fingerprints(path, manifest["sources"]["input"]["digest"], hashed)
        if collapse:  # identical vectors computed once (duplicates.py)
            record_distinct(manifest, _distinct(stored))
        if manifest_out is not None:
            write_record(manifest_out, manifest)
        return manifest

    if isinstance(stored, BedFile):  # counted by the pass that writes the store (store/pack.py)
        return Ingested(manifest, dataclasses.replace(stored, finish=finish), pending=True)
    if not appendable:
        return Ingested(finish(), stored, columns=columns)
    made = finish()
    if hashed_pieces is not None:
        pieces = [d.hex() for d in hashed_pieces.result()]
    return Ingested(made, stored, columns=columns, sha256_state=states[0] if states else None, pieces=pieces)


def alignment_manifest(path, kind: str, encoding: str, ids: list[str], n_fields: int, n_kept: int, sha256: str) -> dict:
    """An alignment's ingest manifest, but what `ingest` adds after (sources, identical vectors);
    an append's too (store/extend.py), which reads only the new records."""
    return {
        "genotile": __version__,
        "input": str(path),
        "input_sha256": sha256,
        "format": kind,
        "alphabet": encoding,
        "n_vectors": len(ids),
        "n_fields": int(n_fields),
        "n_kept": int(n_kept),
        "ids": ids,
    }


def record_distinct(manifest: dict, distinct: tuple[np.ndarray, np.ndarray] | None) -> None:
    """An ingest manifest's record of identical vectors (store/duplicates.py): `distinct` is
    distinct_rows' (first, index), None where an append numbers them itself (store/append.py)."""
    manifest["collapse_duplicates"] = True
    if distinct is not None and distinct[0].size < distinct[1].size:
        manifest["n_distinct"] = int(distinct[0].size)
        manifest["distinct_index"] = distinct[1].tolist()


SHA_READ = 1 << 26  # bytes of a file read for its SHA-256 at a time (`_sha256`)


def _sha256(path, states: list[str] | None = None) -> str:
    """sources.content_sha256 (what `sha256sum` prints, for a file), the file read SHA_READ at a
    time into one buffer: the hashing thread takes the GIL back once a read and once a hash, and
    beside a pass over a .bed on 16 threads each take can wait its turn (a 5 GB .bed hashed in
    ~7 s in 4 MiB reads, there). `states`: given (a file, libcrypto at hand), the SHA-256's state
    after the last byte is appended to it (util/checksums.file_sha256_resumable: the same pass,
    as fast)."""
    if os.path.isdir(path):
        return content_sha256(path)
    if states is not None:
        sha256, state = file_sha256_resumable(path, read=SHA_READ)
        states.append(state)
        return sha256
    digest = hashlib.sha256()
    buffer = bytearray(SHA_READ)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as fh:
        while got := fh.readinto(buffer):
            digest.update(view[:got])
    return digest.hexdigest()


def _add_counts(manifest: dict, counts: dict) -> None:
    """The pass's counts of a .bed's calls added to the ingest manifest's (the reader's stats)."""
    for key, value in counts.items():
        manifest["counts"][key] += value


def _read_held(bed: BedFile, spill_dir) -> tuple[HeldBits, dict]:
    """A plain .bed's bits in sample order and its counts (bed.read_held), on the usable CPUs,
    within the pass's memory bound (ingest_genotypes.stream_bytes)."""
    hash_rows = lambda rows: row_hashes(rows.reshape(len(rows), -1).view(np.uint8), threads=1)  # noqa: E731
    return bed_module.read_held(bed, usable_cpus(bed_module.STREAM_THREADS), stream_bytes(), spill_dir, hash_rows)


def _check_kind(reader: type[Reader], path, encoding: str) -> None:
    """Refuse an encoding the input cannot feed, naming the metrics it can."""
    if encoding in reader.encodings():
        return
    feeds = ", ".join(m for m, facts in REGISTRY.items() if facts.encoding in reader.encodings())
    other = "genotypes" if ENCODINGS[encoding].genotypes else "an alignment"
    held = "genotypes" if reader.source == "genotypes" else "an alignment"
    raise GenotileError(f"{path}: {reader.what} holds {held} ({feeds}), not {other}")


def _distinct(stored: Path | HeldAlignment | HeldBits | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """store/duplicates.distinct_rows of what ingest made: the codes (written or held), rows alike
    to them (an alignment held, HeldAlignment.codes_alike) or a .bed's bit rows (distinct_samples;
    `_distinct_spilled` where they were spilled to a file)."""
    if isinstance(stored, np.ndarray):
        return distinct_rows(stored)
    if isinstance(stored, Path):
        return distinct_rows(np.load(stored, mmap_mode="r"))
    if isinstance(stored, HeldAlignment):
        return distinct_rows(stored.codes_alike())
    if stored.bits is None:
        return _distinct_spilled(stored)
    return distinct_samples(stored.bits.reshape(stored.bits.shape[0], -1), usable_cpus(HASH_THREADS))


SPILL_ROWS = 1024  # copies compared with their group's first at a time (`_distinct_spilled`)


def _distinct_spilled(held: HeldBits) -> tuple[np.ndarray, np.ndarray]:
    """duplicates.distinct_samples of a .bed's bits spilled to a file (bed.read_held): the rows
    grouped by the hashes made as they were read, then the copies compared with their group's
    first, read back SPILL_ROWS at a time; a hash shared by two different rows (never seen) falls
    back to distinct_rows over the rows themselves."""
    assert held.hashes is not None and held.spill is not None
    n = held.n_samples
    first, index = distinct_rows(held.hashes.view(np.uint8))
    copies = np.flatnonzero(first[index] != np.arange(n))
    mine, theirs = (np.empty((min(SPILL_ROWS, max(1, copies.size)), 2, held.n_words), np.uint64) for _ in range(2))
    for c0 in range(0, copies.size, SPILL_ROWS):
        rows = copies[c0 : c0 + SPILL_ROWS]
        if not np.array_equal(held.take_rows(rows, mine), held.take_rows(first[index[rows]], theirs)):
            words = np.memmap(held.spill, dtype=np.uint64, mode="r", shape=(n, 2 * held.n_words))
            return distinct_rows(words.view(np.uint8))
    return first, index
