"""The packed store: plane words of every vector, in permuted order, memory-mappable.

`planes.npy` is uint64 (vectors, words): row r holds vector perm[r], its planes
laid out as the manifest's `layout` says. `manifest.json` carries the IDs (in
input order), the permutation's seed, the layout and the input's checksum.

`pack` packs what ingest made (store/ingest.py): the codes matrix, or the input held in memory
in its reader's form, an alignment's folded bytes or a whole .bed's calls as bits; or a whole
.bed not read yet, read here in one pass straight into its store (`_pack_streamed`), its calls
counted for the ingest manifest; a plain .bed's kept codes (`genotile run`) are packed from the
.bed's own 2-bit calls (`pack_from_bed`). A whole .bed's store in the store job holds
its calls as bits, 2 each (store/bits.py; manifest `stored`: STORED_BITS; row r: vector
perm[r]'s lo words, then its hi words): its five genotype planes are made from them as rows are
read (`open_store`), so the store job writes the .bed's size, not 2.5 times it. The same planes,
as the tiles read them, whatever the form.
"""

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from genotile.core.bits import n_words
from genotile.core.columns import code_bytes
from genotile.core.encode import ALPHABETS, PlaneLayout, categorical_encoding, categorical_planes, symbol_counts
from genotile.core.genotype import PLANES, GenotypeLayout, genotype_layout, genotype_planes
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io import npy_rows
from genotile.store.bits import STORED_BITS
from genotile.util.atomic import atomic_path, write_record
from genotile.util.cpus import usable_cpus
from genotile.util.progress import Progress
from genotile.util.readback import load_json, load_npy
from genotile.version import __version__

ROW_CHUNK = 4096
CHUNK_BYTES = 1 << 26  # codes read per packing step
PACK_THREADS = 8  # CPU packing threads at most (numpy releases the GIL in compares and packbits;
# 16 packed 40,000 x 20,000 no faster than 8 on the 16-core H100 machine)


def _categorical(codes, ingest_manifest: dict, gpu: bool = False):
    """(layout, rows -> planes, manifest keys) of an alphabet's store."""
    alphabet = ALPHABETS[ingest_manifest["alphabet"]]
    enc = categorical_encoding(symbol_counts(codes), alphabet.has_missing)
    extra = categorical_keys(alphabet.name, enc)
    if gpu:
        from genotile.backends.cuda import cupy_pack

        return enc.layout, cupy_pack.categorical_packer(enc), extra
    return enc.layout, lambda rows: categorical_planes(rows, enc), extra


def categorical_keys(alphabet: str, enc) -> dict:
    """The store manifest's keys of an alphabet's encoding."""
    return {
        "alphabet": alphabet,
        "n_kept": int(enc.order.size),
        "n_two_symbol": enc.n_b,
        "s_lengths": list(enc.s_lengths),
    }


def _genotype(codes, ingest_manifest: dict, gpu: bool = False):
    """(layout, rows -> planes, manifest keys) of a genotype store (see genotype.py)."""
    encoding = ingest_manifest["encoding"]
    layout = genotype_layout(codes, encoding)
    extra = {"encoding": encoding, "n_kept": int(codes.shape[1]), "ingest_counts": ingest_manifest.get("counts", {})}
    if gpu:
        from genotile.backends.cuda import cupy_pack

        return layout, cupy_pack.genotype_packer(layout, codes.shape[1]), extra
    return layout, lambda rows: genotype_planes(rows, layout), extra


def use_gpu_packing(gpu: bool | None = None) -> bool:
    """Pack on the GPU? gpu=None: only where GENOTILE_GPU_PACK=1 insists; the planes are the same
    bits either way.

    The CPU packs by compares on every core (encode.categorical_planes, genotype.genotype_planes),
    which on an H100 machine's 16 cores beat the GPU packer with its CuPy import, context and
    transfers: 40,000 x 20,000 nucleotides 2.4 s against 2.7-4.4 s, 2,000 x 50,000 genotypes
    0.27 s against 1.0-1.2 s (bench/RESULTS.md, session 6)."""
    if gpu is None:
        gpu = _gpu_from_env() is True
    if gpu is False:
        return False
    from genotile.backends.cuda import cupy_pack

    if cupy_pack.is_available():
        return True
    raise GenotileError("GPU packing was asked for, but CuPy with a CUDA GPU is not available")


def gpu_insisted() -> bool:
    """GPU packing insisted on (GENOTILE_GPU_PACK=1): the planes are packed from the codes."""
    return _gpu_from_env() is True


def _gpu_from_env() -> bool | None:
    """GENOTILE_GPU_PACK: False (0, false, no, off), True (1, true, yes, on), else None (auto)."""
    env = os.environ.get("GENOTILE_GPU_PACK", "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    return True if env in ("1", "true", "yes", "on") else None


def store_rows(ingest_manifest: dict, n_input: int, plan: Plan, perm: np.ndarray, what) -> np.ndarray:
    """The input row each store row holds: the permutation of the vectors, or of the distinct ones
    where identical vectors were collapsed; GenotileError naming `what` when the plan is for
    another number of vectors."""
    first = distinct_first(ingest_manifest, n_input)  # the input row of each distinct vector
    n = n_input if first is None else first.size
    if n != plan.n_vectors or perm.shape != (n,):
        raise GenotileError(f"{what}: {n} vectors, but the plan is for {plan.n_vectors}")
    return perm if first is None else first[perm]


def pack(
    stored,
    ingest_manifest: dict,
    plan: Plan,
    perm: np.ndarray,
    planes_out=None,
    manifest_out=None,
    gpu: bool | None = None,
) -> tuple[dict, np.ndarray | None]:
    """The store (planes.npy and its manifest) of what ingest made, written, or in memory.

    Parameters
    ----------
    stored : str or os.PathLike or HeldAlignment or HeldBits or BedFile or numpy.ndarray
        The codes matrix (.npy, uint8 (vectors, kept fields)), or the input held in memory
        (store/ingest.py `Ingested.stored`): the codes themselves among them; or a whole .bed not
        read yet (its pass writes the store, then `stored.finish` the ingest manifest).
    ingest_manifest : dict
        The ingest manifest.
    plan, perm
        The plan and its permutation (of the distinct vectors where duplicates were collapsed).
    planes_out : str or os.PathLike, optional
        planes.npy (uint64 (vectors, words); row r holds vector perm[r]); None: the planes are
        filled into an array in memory (not from a .bed's bits: those are stored in a file).
    manifest_out : str or os.PathLike, optional
        The store manifest; None: returned only.
    gpu : bool, optional
        Pack the codes on the GPU (`use_gpu_packing`); the planes are the same bits either way.

    Returns
    -------
    manifest : dict
        The store manifest.
    planes : numpy.ndarray or None
        uint64 (vectors, words), as planes.npy would hold them, where `planes_out` is None.
    """
    from genotile.io.readers.bed import BedFile, HeldBits
    from genotile.io.readers.fasta import HeldAlignment

    if isinstance(stored, HeldAlignment):
        return _pack_held(stored, ingest_manifest, plan, perm, planes_out, manifest_out)
    if isinstance(stored, (HeldBits, BedFile)):
        if planes_out is None:
            raise ValueError("a .bed's calls as bits are stored in a file: name planes_out")
        if isinstance(stored, BedFile):
            return _pack_streamed(stored, ingest_manifest, plan, perm, planes_out, manifest_out), None
        try:
            return _pack_bits(stored, ingest_manifest, plan, perm, planes_out, manifest_out), None
        finally:
            stored.close()  # a spilled file's space back
    return _pack_codes(stored, ingest_manifest, plan, perm, planes_out, manifest_out, gpu)


def _pack_codes(
    stored, ingest_manifest: dict, plan: Plan, perm: np.ndarray, planes_out, manifest_out, gpu
) -> tuple[dict, np.ndarray | None]:
    """The planes of a codes matrix, a file or in memory (or, a plain .bed's written, of the .bed
    itself: `pack_from_bed`)."""
    if isinstance(stored, np.ndarray):
        codes, what = stored, ingest_manifest["input"]
    else:
        codes, what = load_npy(stored, "codes", dtype=np.uint8, ndim=2, mmap=True), stored
    n_input = codes.shape[0]
    rows_of = store_rows(ingest_manifest, n_input, plan, perm, what)
    if planes_out is not None and not (gpu is True or (gpu is None and gpu_insisted())):
        # a plain .bed: from its bytes, unless told GPU
        manifest = pack_from_bed(codes.shape, ingest_manifest, plan, rows_of, planes_out, manifest_out)
        if manifest is not None:
            return manifest, None
    on_gpu = use_gpu_packing(gpu)
    if ingest_manifest.get("encoding") in PLANES:
        layout, to_planes, extra = _genotype(codes, ingest_manifest, on_gpu)
    else:
        layout, to_planes, extra = _categorical(codes, ingest_manifest, on_gpu)
    threads = 1 if on_gpu else usable_cpus(PACK_THREADS)
    planes = _write_planes(rows_of, layout, lambda rows: to_planes(codes[rows]), codes.shape[1], threads, planes_out)
    return write_manifest(extra, layout, ingest_manifest, plan, n_input, manifest_out), planes


def _pack_held(
    held, ingest_manifest: dict, plan: Plan, perm: np.ndarray, planes_out, manifest_out
) -> tuple[dict, np.ndarray | None]:
    """The planes of an alignment held in memory (io/readers/fasta.py HeldAlignment), packed from
    its folded bytes and its counts, no codes matrix; the same files as `_pack_codes` writes from
    the codes. Returns the store manifest.

    The encoding is that of the codes (the counts are theirs); its columns are then the held
    rows' (the kept fields, in the encoding's order) and its symbols their folded bytes
    (columns.code_bytes), so that encode.categorical_planes compares the bytes as it would the
    codes."""
    n_input = held.rows.shape[0]
    rows_of = store_rows(ingest_manifest, n_input, plan, perm, ingest_manifest["input"])
    enc = categorical_encoding(held.counts, held.alphabet.has_missing)
    on_bytes = dataclasses.replace(enc, order=held.keep[enc.order], symbols=code_bytes(held.alphabet)[enc.symbols])
    planes = lambda rows: categorical_planes(held.rows, on_bytes, rows)  # noqa: E731
    made = _write_planes(rows_of, enc.layout, planes, held.rows.shape[1], usable_cpus(PACK_THREADS), planes_out)
    extra = categorical_keys(held.alphabet.name, enc)
    return write_manifest(extra, enc.layout, ingest_manifest, plan, n_input, manifest_out), made


def _write_planes(
    rows_of: np.ndarray, layout, planes_of, row_bytes: int, threads: int, planes_out
) -> np.ndarray | None:
    """planes.npy: the planes of input rows `rows_of` (planes_of(rows): uint64 (rows, words)),
    blocks of rows packed on `threads` threads and written with pwrite (npy_rows); or, no
    `planes_out`, filled into an array, returned."""
    n = rows_of.size
    # rows per chunk bounded in bytes too: a genotype row can hold a million fields
    chunk = max(1, min(ROW_CHUNK, CHUNK_BYTES // max(1, row_bytes)))
    if threads > 1:  # enough chunks for the threads to share evenly
        chunk = max(1, min(chunk, -(-n // (4 * threads))))
    progress = Progress("pack", total=n)
    if planes_out is None:
        out = np.empty((n, layout.total_words), dtype=np.uint64)

        def fill_rows(r0: int) -> int:
            rows = rows_of[r0 : r0 + chunk]
            out[r0 : r0 + rows.size] = planes_of(rows)
            return r0 + rows.size

        with ThreadPoolExecutor(threads, thread_name_prefix="genotile-pack") as pool:
            for done in pool.map(fill_rows, range(0, n, chunk)):
                progress.update(done)
        progress.finish(n)
        return out
    out_bytes = layout.total_words * 8
    with atomic_path(planes_out) as tmp, open(tmp, "wb") as fh:
        start = npy_rows.write_header(fh, (n, layout.total_words), np.uint64)

        def pack_rows(r0: int) -> int:
            rows = rows_of[r0 : r0 + chunk]
            npy_rows.pwrite_rows(fh.fileno(), planes_of(rows), start + r0 * out_bytes, tmp)
            return r0 + rows.size

        with ThreadPoolExecutor(threads, thread_name_prefix="genotile-pack") as pool:
            for done in pool.map(pack_rows, range(0, n, chunk)):  # in order: progress only grows
                progress.update(done)
    progress.finish(n)
    return None


def write_manifest(extra: dict, layout, ingest_manifest: dict, plan: Plan, n_input: int, manifest_out) -> dict:
    """The store manifest of a store of `layout` packed from what `ingest_manifest` describes
    (`extra`: its encoding's keys first), written to `manifest_out` (None: returned only); an
    append's too (store/append.py), whose new records are packed alone."""
    manifest = {
        "genotile": __version__,
        **extra,
        "n_vectors": n_input,
        "n_fields": ingest_manifest["n_fields"],
        "layout": layout.to_json(),
        "plan": plan.to_json(),
        "input": ingest_manifest["input"],
        "input_sha256": ingest_manifest["input_sha256"],
        "sources": ingest_manifest.get("sources"),  # what the store was computed from (store/sources.py)
        "ids": ingest_manifest["ids"],
        # PLINK input: FID and IID of each sample (io/readers/plink_tables.py), for outputs in PLINK's own columns
        **{key: ingest_manifest[key] for key in ("fids", "iids") if key in ingest_manifest},
        # identical vectors computed once: planes hold the distinct ones (store/duplicates.py)
        **{key: ingest_manifest[key] for key in ("n_distinct", "distinct_index") if key in ingest_manifest},
        # a query's store (store/query.py): which rows are the input's and which FILE's, in the
        # manifest's one write (a tile's store identity; a job killed after it leaves it whole)
        **{key: ingest_manifest[key] for key in ("query",) if key in ingest_manifest},
    }
    if manifest_out is not None:
        write_record(manifest_out, manifest)
    return manifest


def plain_bed(ingest_manifest: dict, shape: tuple[int, int]) -> str | None:
    """The .bed of a `genotype` ingest that io/readers/bed.py read whole (no `samples`, no `regions`), or
    None: the .bed's calls are then the codes, and the planes can be packed from them."""
    m = ingest_manifest
    options = m.get("options") or {}
    if m.get("format") != "plink1" or m.get("encoding") != "genotype" or "samples" in options or "regions" in options:
        return None
    fileset = m.get("fileset") or [None]
    if not isinstance(fileset[0], str) or shape != (m.get("n_vectors"), m.get("n_fields")):
        return None
    return fileset[0]


def pack_from_bed(shape, ingest_manifest: dict, plan: Plan, rows_of, planes_out, manifest_out) -> dict | None:
    """The planes of a plain .bed's `genotype` store packed from the .bed's 2-bit calls (io/readers/bed.py:
    4 calls a byte, where the codes hold one), not from its codes; the same bytes. Returns the
    store manifest, or None, with nothing written, where the .bed is not what ingest read: not
    plain, gone, or not of the SHA-256 ingest recorded (hashed alongside the packing). Taken before
    GPU packing (the .bed is a quarter of the codes' bytes) unless GPU packing is insisted on
    (gpu=True, GENOTILE_GPU_PACK=1); it needs no GPU backend imported."""
    path = plain_bed(ingest_manifest, tuple(shape))
    if path is None:
        return None
    from genotile.io.readers import bed
    from genotile.util.checksums import file_sha256

    n_input, n_fields = shape
    hashing = ThreadPoolExecutor(1, thread_name_prefix="genotile-sha256")
    try:
        digest = hashing.submit(file_sha256, path)  # hashlib releases the GIL: alongside the packing
        progress = Progress("pack (from the .bed)", total=rows_of.size)
        with atomic_path(planes_out) as tmp:
            try:
                complete = bed.pack_planes(path, n_input, n_fields, rows_of, tmp, threads=usable_cpus(PACK_THREADS))
                same = digest.result() == ingest_manifest["input_sha256"]
            except (GenotileError, OSError):  # changed or gone since ingest: the codes have it
                same = False
            if not same:
                raise _NotTheIngested
    except _NotTheIngested:
        return None
    finally:
        hashing.shutdown(wait=True)
    progress.finish(rows_of.size)
    return _bed_manifest(complete, ingest_manifest, plan, n_input, n_fields, manifest_out)


class _NotTheIngested(Exception):
    """The .bed is not the one ingest read: pack from the codes."""


def _bed_manifest(
    complete: bool, ingest_manifest: dict, plan: Plan, n_input: int, n_fields: int, manifest_out, stored=None
) -> dict:
    """The store manifest of a `genotype` store packed from a .bed's calls (`complete`: no
    missing call), as `_pack_codes` writes it from the codes; `stored`: what planes.npy holds, where
    not the planes themselves (STORED_BITS)."""
    layout = GenotypeLayout(n_words(n_fields), PLANES["genotype"], complete)
    extra = {"encoding": "genotype", "n_kept": int(n_fields), "ingest_counts": ingest_manifest.get("counts", {})}
    if stored is not None:
        extra["stored"] = stored
    return write_manifest(extra, layout, ingest_manifest, plan, n_input, manifest_out)


def _pack_bits(held, ingest_manifest: dict, plan: Plan, perm: np.ndarray, planes_out, manifest_out) -> dict:
    """The store of a plain .bed's `genotype` store from its calls held as bits in sample order
    (io/readers/bed.py `read_held`, where identical samples were collapsed before the plan), no
    codes matrix: the bits in the store's row order (store/bits.py), the planes made from them as
    they are read (`open_store`); the store manifest is `_pack_codes`' but `stored`. Returns the
    store manifest.

    Parameters
    ----------
    held : io.readers.bed.HeldBits
        The bits, in memory or spilled to a file.
    ingest_manifest : dict
        The ingest manifest.
    plan, perm
        The plan and its permutation (of the distinct samples where duplicates were collapsed).
    planes_out, manifest_out : str or os.PathLike
        planes.npy and the store manifest.
    """
    from genotile.store.bits import write_bits

    n_input, n_fields = held.n_samples, int(ingest_manifest["n_fields"])
    rows_of = store_rows(ingest_manifest, n_input, plan, perm, ingest_manifest["input"])
    n = rows_of.size
    progress = Progress("pack (the .bed's bits)", total=n)
    with atomic_path(planes_out) as tmp:
        write_bits(held, rows_of, tmp, threads=usable_cpus(PACK_THREADS))
    progress.finish(n)
    # complete: no missing call (the planes rows are every sample, or one of each set of copies)
    complete = ingest_manifest["counts"]["missing_calls"] == 0
    return _bed_manifest(complete, ingest_manifest, plan, n_input, n_fields, manifest_out, stored=STORED_BITS)


def _pack_streamed(bed, ingest_manifest: dict, plan: Plan, perm: np.ndarray, planes_out, manifest_out) -> dict:
    """The store of a plain .bed's `genotype` store written in one pass over the .bed
    (io/readers/bed.py `write_streamed`: its calls transposed to bits straight into the store's
    row order, and counted), the ingest manifest then completed with the counts and written
    (`bed.finish`, store/ingest.py); the same files as `_pack_bits` writes from the bits held.
    Returns the store manifest.

    Parameters
    ----------
    bed : io.readers.streamed.BedFile
        The .bed, not read yet.
    ingest_manifest : dict
        The ingest manifest, but the counts and the checksum.
    plan, perm
        The plan and its permutation.
    planes_out, manifest_out : str or os.PathLike
        planes.npy and the store manifest.
    """
    from genotile.io.readers import bed as bed_reader

    n_input, n_fields = bed.n_samples, bed.n_variants
    rows_of = store_rows(ingest_manifest, n_input, plan, perm, ingest_manifest["input"])
    progress = Progress(f"pack (the {Path(bed.path).suffix or 'input'}, in one pass)", total=rows_of.size)
    threads = usable_cpus(bed_reader.STREAM_THREADS)
    sink = _device_sink(rows_of, n_input, n_fields)
    if sink is not None:  # made on the GPU and held there for the job's tiles (store/resident.py)
        from genotile.store import resident

        counts = bed_reader.stream_to(bed.path, n_input, n_fields, sink, threads=threads, what=bed.what, pgen=bed.pgen)
        resident.write_behind(planes_out, resident.hold(planes_out, sink.bits, sink.device, n_fields), sink.write)
    else:
        counts = _write_streamed(bed, rows_of, planes_out, threads)
    progress.finish(rows_of.size)
    complete, finish = counts["missing_calls"] == 0, bed.finish
    if sink is not None and finish is not None and manifest_out is not None:
        # the manifests wait for the input's SHA-256 (one stream: ~1 GB/s), which the pass no longer
        # hides: written behind the job's tiles, which start from the provisional one (store/resident.py)
        provisional = _bed_manifest(complete, ingest_manifest, plan, n_input, n_fields, None, stored=STORED_BITS)
        resident.manifests_behind(
            planes_out,
            manifest_out,
            provisional,
            lambda: _bed_manifest(complete, finish(counts), plan, n_input, n_fields, manifest_out, stored=STORED_BITS),
        )
        return provisional
    if finish is not None:
        ingest_manifest = finish(counts)
    return _bed_manifest(complete, ingest_manifest, plan, n_input, n_fields, manifest_out, stored=STORED_BITS)


def _device_sink(rows_of: np.ndarray, n_samples: int, n_variants: int):
    """The GPU's transposer of the pass (backends/cuda/bed_device.DeviceBits) where the store is
    to be held on the device (store/resident.py `on_device`) and fits it; else None."""
    from genotile.store import resident

    if not resident.wanted():
        return None
    from genotile.backends.cuda import bed_device, cupy_common

    if not cupy_common.has_gpu() or not bed_device.fits(rows_of.size, n_variants):
        return None
    return bed_device.DeviceBits(rows_of, n_samples, n_variants)


def _write_streamed(bed, rows_of: np.ndarray, planes_out, threads: int) -> dict:
    """The host's pass (io/readers/bed.py `write_streamed`) into planes.npy; its counts."""
    from genotile.io.readers import bed as bed_reader
    from genotile.store.ingest_genotypes import stream_bytes

    n_input, n_fields = bed.n_samples, bed.n_variants
    with atomic_path(planes_out) as tmp:
        counts = bed_reader.write_streamed(
            bed.path,
            n_input,
            n_fields,
            rows_of,
            tmp,
            threads=threads,
            what=bed.what,
            held_bytes=stream_bytes(),
            pgen=bed.pgen,
        )
    return counts


def distinct_first(manifest: dict, n_input: int) -> np.ndarray | None:
    """The input row of each distinct vector of a collapsed ingest (None: not collapsed)."""
    if "distinct_index" not in manifest:
        return None
    index = np.asarray(manifest["distinct_index"], dtype=np.int64)
    k = manifest.get("n_distinct")
    if index.shape != (n_input,) or not isinstance(k, int) or index.min(initial=0) < 0 or index.max(initial=-1) >= k:
        raise GenotileError("manifest: its distinct_index does not match its vectors; delete it and rerun")
    values, first = np.unique(index, return_index=True)
    if values.size != k:
        raise GenotileError("manifest: its distinct_index does not match its vectors; delete it and rerun")
    return first.astype(np.int64)


def layout_from_json(d: dict):
    """A store's plane layout; manifests without a "kind" are categorical."""
    if d.get("kind", "categorical") == "genotype":
        return GenotypeLayout.from_json(d)
    return PlaneLayout.from_json(d)


def open_store(planes_path, manifest_path):
    """(planes, manifest dict, layout): the planes a memory map, or for a store of a .bed's bits
    (manifest `stored`: STORED_BITS) store/bits.BitsPlanes over one (or over the rows this
    process holds on its GPU: store/resident.py), making the planes of the rows read; either is
    indexed by rows alike."""
    from genotile.store import resident

    # a store whose manifest this job is still writing (store/resident.py): its provisional one
    manifest = resident.manifest_of(manifest_path) or load_json(
        manifest_path, "store manifest", ("n_vectors", "layout", "plan", "ids", "input_sha256")
    )
    held = resident.lookup(planes_path) if manifest.get("stored") == STORED_BITS else None
    # a store the job holds on its GPU (store/resident.py): its rows there, the file perhaps not written yet
    if held is not None:
        planes = held
    else:
        planes = load_npy(planes_path, "store planes", dtype=np.uint64, ndim=2, mmap=True)
    layout = layout_from_json(manifest["layout"])
    rows = manifest["n_distinct"] if "distinct_index" in manifest else manifest["n_vectors"]
    stored = manifest.get("stored")
    if stored is not None and not (
        stored == STORED_BITS
        and isinstance(layout, GenotypeLayout)
        and layout.planes == PLANES["genotype"]
        and layout.words == n_words(int(manifest.get("n_kept", -1)))
    ):
        raise GenotileError(f"{manifest_path}: stored form {stored!r} does not fit its layout; delete it and rerun")
    width = 2 * layout.words if stored else layout.total_words
    if planes.shape != (rows, width) or manifest["plan"].get("n_vectors") != rows:
        raise GenotileError(f"{planes_path}: shape {planes.shape} does not match {manifest_path}")
    if stored:
        from genotile.store.bits import BitsPlanes

        return BitsPlanes(planes, int(manifest["n_kept"])), manifest, layout
    return planes, manifest, layout
