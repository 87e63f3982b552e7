"""The packed store: plane words of every vector, in permuted order, memory-mappable.

`planes.npy` is uint64 (vectors, words): row r holds vector perm[r], its planes
laid out as the manifest's `layout` says. `manifest.json` carries the IDs (in
input order), the permutation's seed, the layout and the input's checksum.
"""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from genotile.core.encode import ALPHABETS, PlaneLayout, categorical_encoding, categorical_planes, symbol_counts
from genotile.core.genotype import PLANES, GenotypeLayout, genotype_layout, genotype_planes
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io.atomic import atomic_path, write_text
from genotile.io.readback import load_json, load_npy
from genotile.runtime.cpus import usable_cpus
from genotile.runtime.progress import Progress
from genotile.version import __version__

ROW_CHUNK = 4096
CHUNK_BYTES = 1 << 26  # codes read per packing step
PACK_THREADS = 2  # CPU packing threads at most (numpy releases the GIL in compares and packbits)


def _categorical(codes, ingest_manifest: dict, gpu: bool = False):
    """(layout, rows -> planes, manifest keys) of an alphabet's store."""
    alphabet = ALPHABETS[ingest_manifest["alphabet"]]
    enc = categorical_encoding(symbol_counts(codes), alphabet.has_missing)
    extra = {
        "alphabet": alphabet.name,
        "n_kept": int(enc.order.size),
        "n_two_symbol": enc.n_b,
        "s_lengths": list(enc.s_lengths),
    }
    if gpu:
        from genotile.backends.cuda import cupy_pack

        return enc.layout, cupy_pack.categorical_packer(enc), extra
    return enc.layout, lambda rows: categorical_planes(rows, enc), extra


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
    """Pack on the GPU? gpu=None: where a GPU backend is available (GENOTILE_GPU_PACK=0 turns
    it off, =1 insists); the planes are the same bits either way."""
    if gpu is None:
        env = os.environ.get("GENOTILE_GPU_PACK", "").strip().lower()
        if env in ("0", "false", "no", "off"):
            return False
        gpu = True if env in ("1", "true", "yes", "on") else None
    if gpu is False:
        return False
    from genotile.backends.cuda import cupy_pack

    if cupy_pack.is_available():
        return True
    if gpu:
        raise GenotileError("GPU packing was asked for, but CuPy with a CUDA GPU is not available")
    return False


def pack_store(
    codes_path, ingest_manifest: dict, plan: Plan, perm: np.ndarray, planes_out, manifest_out, gpu: bool | None = None
) -> dict:
    codes = load_npy(codes_path, "codes", dtype=np.uint8, ndim=2, mmap=True)
    n_input = codes.shape[0]
    first = distinct_first(ingest_manifest, n_input)  # the input row of each distinct vector
    n = n_input if first is None else first.size
    if n != plan.n_vectors or perm.shape != (n,):
        raise GenotileError(f"{codes_path}: {n} vectors, but the plan is for {plan.n_vectors}")
    rows_of = perm if first is None else first[perm]  # store row r holds input row rows_of[r]
    on_gpu = use_gpu_packing(gpu)
    if ingest_manifest.get("encoding") in PLANES:
        layout, to_planes, extra = _genotype(codes, ingest_manifest, on_gpu)
    else:
        layout, to_planes, extra = _categorical(codes, ingest_manifest, on_gpu)
    # rows per chunk bounded in bytes too: a genotype row can hold a million fields
    chunk = max(1, min(ROW_CHUNK, CHUNK_BYTES // max(1, codes.shape[1])))
    threads = 1 if on_gpu else usable_cpus(PACK_THREADS)
    if threads > 1:  # enough chunks for the threads to share evenly
        chunk = max(1, min(chunk, -(-n // (4 * threads))))
    progress = Progress("pack", total=n)
    with atomic_path(planes_out) as tmp:
        planes = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint64, shape=(n, layout.total_words))

        def pack_rows(r0: int, out=planes) -> int:
            rows = rows_of[r0 : r0 + chunk]
            out[r0 : r0 + rows.size] = to_planes(codes[rows])
            return r0 + rows.size

        with ThreadPoolExecutor(threads, thread_name_prefix="genotile-pack") as pool:
            for done in pool.map(pack_rows, range(0, n, chunk)):  # in order: progress only grows
                progress.update(done)
        planes.flush()
        del planes, pack_rows
    progress.finish(n)
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
        # PLINK input: FID and IID of each sample (io/plink.py), for outputs in PLINK's own columns
        **{key: ingest_manifest[key] for key in ("fids", "iids") if key in ingest_manifest},
        # identical vectors computed once: planes hold the distinct ones (store/duplicates.py)
        **{key: ingest_manifest[key] for key in ("n_distinct", "distinct_index") if key in ingest_manifest},
    }
    write_text(manifest_out, json.dumps(manifest, indent=1) + "\n")
    return manifest


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
    """(planes memmap, manifest dict, layout)."""
    manifest = load_json(manifest_path, "store manifest", ("n_vectors", "layout", "plan", "ids", "input_sha256"))
    planes = load_npy(planes_path, "store planes", dtype=np.uint64, ndim=2, mmap=True)
    layout = layout_from_json(manifest["layout"])
    rows = manifest["n_distinct"] if "distinct_index" in manifest else manifest["n_vectors"]
    if planes.shape != (rows, layout.total_words) or manifest["plan"].get("n_vectors") != rows:
        raise GenotileError(f"{planes_path}: shape {planes.shape} does not match {manifest_path}")
    return planes, manifest, layout
