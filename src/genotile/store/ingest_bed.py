"""A plain PLINK 1 .bed ingested for the workflow's store job without a codes matrix.

The store job (pairs/steps.store) ingests, plans and packs in one process, and its codes matrix
(samples x variants uint8, 4x the .bed's bytes) is a temporary file. For a whole .bed as it is
(`genotype` encoding, no `samples`, no `regions`: the calls are the file's) that matrix is not
needed: the .bed's 2-bit calls are read once, sample-major, into memory as bits (io/bed.py
`read_bits`: uint64 (samples, 2, words), a sample's lo bits then its hi bits, 64 variants a
word, about the .bed's bytes), and everything the codes gave is made from them:

- the ingest counts (missing calls, monomorphic and all-missing variants), while reading;
- the identical samples (`collapse_duplicates`): two bit rows are equal exactly where the two
  samples' codes are, so the distinct rows and index over the bit rows are those over the codes
  (`distinct_samples`: grouped by row hash, then only the copies compared);
- the store: the bits, in the plan's row order (store/pack.pack_bits, io/bed.py `write_bits`; the
  tiles make the planes of the rows they read, `BitsPlanes`).

Every file written is the same, byte for byte, as the ingest + pack of the codes would write,
but the store's planes.npy and its manifest's `stored` key: its planes, as the tiles read them,
are the same (tests/io/test_bed.py). The .bed's SHA-256 is taken while it is read. Larger .bed files
than HOLD_BYTES, GPU packing insisted on (GENOTILE_GPU_PACK=1), and any selection go through
the codes (store/ingest.py, store/pack.py).
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from genotile.io import bed
from genotile.io.plink import PlinkReader, plink_format
from genotile.store.sources import recorded_digest, sources
from genotile.util.atomic import write_record
from genotile.util.checksums import file_digest, file_sha256
from genotile.util.cpus import usable_cpus
from genotile.version import __version__

HOLD_BYTES = 1 << 30  # .bed bytes held as bits in memory at most (then the codes path)
HELD_OPTIONS = ("multiallelic", "filter_pass")  # change nothing in a .bed (no FILTER column, one ALT)
READ_THREADS = 4  # threads of read_bits at most (more were no faster on the 16-core H100 machine: the GIL)
HASH_ROWS = 256  # samples hashed at a time (row_hashes' temporaries: a few MB)


def takes(path, encoding: str, options: dict | None = None) -> bool:
    """Can the store of `path` for `encoding` skip the codes matrix? A `genotype` store of a whole
    .bed of at most HOLD_BYTES, packed on the CPU, with no option but HELD_OPTIONS (`samples` and
    `regions` select calls; an unknown option is refused by the codes path's ingest)."""
    if encoding != "genotype" or plink_format(path) != "plink1":
        return False
    if any(v is not None for k, v in (options or {}).items() if k not in HELD_OPTIONS):
        return False
    if os.environ.get("GENOTILE_GPU_PACK", "").strip().lower() in ("1", "true", "yes", "on"):
        return False  # GPU packing insisted on: it packs from the codes (store/pack.py)
    try:
        return os.path.getsize(path) <= HOLD_BYTES
    except OSError:
        return False  # the codes path says what is wrong with it


def ingest_bed(path, encoding: str, manifest_out, collapse_duplicates: bool = False, **options):
    """Read a whole .bed as bits and write the ingest manifest store/ingest.ingest would write.

    Parameters
    ----------
    path : str or os.PathLike
        The .bed of the fileset (`takes` holds).
    encoding : str
        "genotype".
    manifest_out : str or os.PathLike
        The ingest manifest (.json).
    collapse_duplicates : bool
        As store/ingest.ingest: record identical samples (distinct_index, n_distinct).
    **options
        The reader's options: HELD_OPTIONS (`takes`), others None.

    Returns
    -------
    manifest : dict
        The ingest manifest, as written.
    bits : numpy.ndarray
        uint64 (samples, 2, words): io/bed.py `read_bits`.
    """
    given = {k: v for k, v in options.items() if v is not None}  # as ingest_vcf.check_options keeps them
    # hashlib releases the GIL: the SHA-256, and the digest the workflow's fingerprint did not
    # record (store/sources.py), alongside the reading
    hashing = ThreadPoolExecutor(2, thread_name_prefix="genotile-sha256")
    digest = hashing.submit(file_sha256, path)
    recorded = recorded_digest(path)
    content = None if recorded else hashing.submit(file_digest, path)
    hashing.shutdown(wait=False)
    reader = PlinkReader(path, **given)
    n_samples, n_variants = len(reader.samples), int(reader.plan[0].size)
    what = (reader.files[1].name, reader.files[2].name)
    threads = usable_cpus(READ_THREADS)
    bits, counts = bed.read_bits(path, n_samples, n_variants, threads=threads, what=what)
    for key, value in counts.items():
        reader.stats[key] += value
    manifest = _manifest(path, encoding, reader, given, digest.result(), n_variants)
    known = recorded if content is None else content.result()
    manifest["sources"] = sources(path, options, input_sha256=manifest["input_sha256"], input_digest=known)
    if collapse_duplicates:  # identical vectors computed once (duplicates.py; `genotype` is collapsible)
        first, index = distinct_samples(bits.reshape(n_samples, -1), threads)
        manifest["collapse_duplicates"] = True
        if first.size < index.size:
            manifest["n_distinct"] = int(first.size)
            manifest["distinct_index"] = index.tolist()
    write_record(manifest_out, manifest)
    return manifest, bits


def _manifest(path, encoding: str, reader: PlinkReader, options: dict, sha256: str, n_variants: int) -> dict:
    """The manifest of store/ingest_vcf.ingest_vcf for a `genotype` PLINK ingest: the same keys in
    the same order (tests/io/test_bed.py compares the files' bytes)."""
    return {
        "genotile": __version__,
        "input": str(path),
        "input_sha256": sha256,
        "format": reader.format,
        "encoding": encoding,
        "n_vectors": len(reader.samples),
        "n_fields": n_variants,
        "n_kept": n_variants,
        "options": {k: (str(v) if isinstance(v, os.PathLike) else v) for k, v in options.items()},
        "counts": dict(reader.stats),
        "ids": list(reader.samples),
        "fileset": [str(f) for f in reader.files],
        "fids": reader.fids,
        "iids": reader.iids,
    }


def distinct_samples(words: np.ndarray, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """store/duplicates.distinct_rows of the samples' bit rows (uint64 (samples, words)): the
    same (first, index), at less cost where few samples are copies.

    Rows are grouped by their 128-bit row_hashes (distinct_rows over the hashes: 16 bytes a
    row), then only the copies are compared with their group's first; a hash shared by two
    different rows (never seen) falls back to distinct_rows over the rows themselves."""
    from genotile.store.duplicates import distinct_rows, row_hashes  # only where duplicates are collapsed

    n = words.shape[0]
    starts = range(0, n, HASH_ROWS)
    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="genotile-hash") as pool:
        parts = pool.map(lambda r0: row_hashes(words[r0 : r0 + HASH_ROWS].view(np.uint8), threads=1), starts)
        hashes = np.concatenate([np.zeros((0, 2), dtype=np.uint64), *parts])
    first, index = distinct_rows(hashes.view(np.uint8))
    copies = np.flatnonzero(first[index] != np.arange(n))
    for c0 in range(0, copies.size, HASH_ROWS):  # exact: the copies against their group's first
        rows = copies[c0 : c0 + HASH_ROWS]
        if not np.array_equal(words[rows], words[first[index[rows]]]):
            return distinct_rows(words.view(np.uint8))
    return first, index
