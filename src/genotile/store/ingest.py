"""Ingest: read an input with its format's reader, check it, and keep what the store is packed from.

The one ingest of every input format: the reader is looked up in the registry of readers
(io/readers/base.py, by the input's name, else by the encoding's source), checked against the
encoding and the options, and takes the form its reader offers:

- an alignment (io/readers/fasta.py): the informative columns' codes, written; or, where the
  codes would be temporary (`hold`: the store job), a regular alignment that fits held in
  memory (HeldAlignment);
- genotypes (VCF/BCF, PLINK, VCF-Zarr): the codes, written (store/ingest_genotypes.py); or, held,
  a whole .bed's calls as bits (io/readers/bed.py HeldBits).

It writes the ingest manifest (IDs, sizes, counts, options, what the store was computed from:
store/sources.py; identical vectors, store/duplicates.py) and returns it with what store/pack.py
packs: the files are the same, byte for byte, whichever form was taken.
"""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.core.encodings import ENCODINGS
from genotile.core.registry import REGISTRY
from genotile.errors import GenotileError
from genotile.io.readers.array import AlignmentArray, GenotypeArray
from genotile.io.readers.base import AlignmentReader, GenotypeReader, Reader, reader_of
from genotile.io.readers.bed import HeldBits
from genotile.io.readers.fasta import HeldAlignment
from genotile.store.duplicates import COLLAPSIBLE, distinct_rows, distinct_samples
from genotile.store.ingest_genotypes import check_options, genotype_manifest, read_genotypes
from genotile.store.inputs import inputs_of
from genotile.store.pack import gpu_insisted
from genotile.store.sources import content_digest, content_sha256, recorded_digest, sources
from genotile.util.atomic import write_record
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
    stored : pathlib.Path or HeldAlignment or HeldBits or numpy.ndarray
        The codes matrix written (.npy, uint8 (vectors, kept fields)), or the input held in
        memory: an alignment's folded bytes (io/readers/fasta.py), a .bed's calls as bits
        (io/readers/bed.py), or (no codes file named) the codes matrix itself.
    """

    manifest: dict
    stored: Path | HeldAlignment | HeldBits | np.ndarray


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
    hold = hold and not gpu_insisted()
    # hashlib releases the GIL: the SHA-256, and (where the codes are not kept) the digest the
    # workflow's fingerprint did not record (store/sources.py), alongside the reading
    hashing = ThreadPoolExecutor(2, thread_name_prefix="genotile-sha256")
    sha256 = hashing.submit(path.sha256) if in_memory else hashing.submit(content_sha256, path)
    recorded = None if in_memory else recorded_digest(path)
    digest = hashing.submit(content_digest, path) if hold and not recorded and not in_memory else None
    hashing.shutdown(wait=False)
    manifest: dict
    if reader.source == "alignment":
        assert issubclass(reader, AlignmentReader)
        aligned = path if in_memory else reader(path)
        ids, n_fields, n_kept, held = aligned.read(encoding, codes_out, hold, canonical=collapse_duplicates)
        manifest = {
            "genotile": __version__,
            "input": str(path),
            "input_sha256": sha256.result(),
            "format": reader.kind,
            "alphabet": encoding,
            "n_vectors": len(ids),
            "n_fields": int(n_fields),
            "n_kept": n_kept,
            "ids": ids,
        }
        stored = held if held is not None else Path(codes_out)
    else:
        assert issubclass(reader, GenotypeReader)
        with path if isinstance(path, GenotypeArray) else reader(path, **given) as opened:
            ids_variants, stored = read_genotypes(opened, path, encoding, codes_out, hold)
            manifest = genotype_manifest(opened, path, encoding, ids_variants, given, sha256)
    if not in_memory:  # what the store was computed from (input, options, option files, index), for reruns
        known = recorded or (None if digest is None else digest.result())
        manifest["sources"] = sources(path, options, input_sha256=manifest["input_sha256"], input_digest=known)
    if collapse_duplicates and encoding in COLLAPSIBLE:  # identical vectors computed once (duplicates.py)
        first, index = _distinct(stored)
        manifest["collapse_duplicates"] = True
        if first.size < index.size:
            manifest["n_distinct"] = int(first.size)
            manifest["distinct_index"] = index.tolist()
    if manifest_out is not None:
        write_record(manifest_out, manifest)
    return Ingested(manifest, stored)


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
    to them (an alignment held, HeldAlignment.codes_alike) or a .bed's bit rows (distinct_samples)."""
    if isinstance(stored, np.ndarray):
        return distinct_rows(stored)
    if isinstance(stored, Path):
        return distinct_rows(np.load(stored, mmap_mode="r"))
    if isinstance(stored, HeldAlignment):
        return distinct_rows(stored.codes_alike())
    return distinct_samples(stored.bits.reshape(stored.bits.shape[0], -1), usable_cpus(HASH_THREADS))
