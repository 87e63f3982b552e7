"""The screening stage: ingest (store + tile plan), tile, merge.

Store (`results/<screen>/screen/store/`): the samples' bytes, qualities and offsets and the
signatures' bytes and offsets as .npy (memory-mapped by the tiles), and `manifest.json` with
the IDs, the inputs' SHA-256 and the plan: blocks of `sample_block` samples x
`signature_block` signatures, one tile job per pair of blocks.
"""

import json
import math
import time
from pathlib import Path

import numpy as np

from genotile.core.keys import has_repeats
from genotile.errors import GenotileError
from genotile.io.fastq import PHRED_OFFSET, QUAL_MAX, read_fastq
from genotile.io.stale import remove_stale_files
from genotile.io.summary import output_records, versions
from genotile.io.tilefile import read_tile, write_tile
from genotile.io.tsvgz import write_tsv_gz
from genotile.screen import backend as search
from genotile.screen.encode import SequenceSet, from_records
from genotile.screen.score import format_score, hundredths, passes
from genotile.screen.signatures import read_signatures
from genotile.util.atomic import atomic_path, write_text
from genotile.util.checksums import file_sha256
from genotile.util.readback import RERUN, load_json, load_npy

STORE_ARRAYS = ("seq", "qual", "offsets", "sig_seq", "sig_offsets")
HEADER = ("sample", "signature", "position", "score")


def check_min_score(min_score) -> None:
    """min_score: None or a finite number (NaN would keep nothing, infinity all or nothing)."""
    if min_score is None:
        return
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not math.isfinite(min_score):
        raise GenotileError(f"min_score must be a finite number or null, not {min_score!r}")


def _blocks(n: int, size: int) -> int:
    return -(-n // size)


def tiles_of(manifest: dict) -> list[tuple[int, int]]:
    """Every tile (sample block I, signature block J) of a screening store's plan."""
    return [(i, j) for i in range(manifest["sample_blocks"]) for j in range(manifest["signature_blocks"])]


def ingest(samples_path, signatures_path, store_dir, *, sample_block: int, signature_block: int) -> dict:
    """Read and check both inputs, write the store and its manifest (last).

    Parameters
    ----------
    samples_path : str or os.PathLike
        FASTQ, plain or gzip: one sample a record.
    signatures_path : str or os.PathLike
        FASTA of signatures (A C G T N).
    store_dir : str or os.PathLike
        Gets seq, qual, offsets, sig_seq, sig_offsets (.npy: uint8 bytes back to back, int64
        offsets (records + 1,)) and manifest.json.
    sample_block, signature_block : int
        Samples and signatures per tile.

    Returns
    -------
    dict
        The manifest: IDs, inputs' SHA-256, sizes and the plan.
    """
    samples = from_records(read_fastq(samples_path), with_qual=True)
    sigs = from_records(read_signatures(signatures_path), with_qual=False)
    assert samples.qual is not None  # with_qual=True
    store = Path(store_dir)
    arrays = {
        "seq": samples.seq,
        "qual": samples.qual,
        "offsets": samples.offsets,
        "sig_seq": sigs.seq,
        "sig_offsets": sigs.offsets,
    }
    for name, arr in arrays.items():
        with atomic_path(store / f"{name}.npy") as tmp:
            with open(tmp, "wb") as fh:
                np.save(fh, arr)
    manifest = {
        "samples": str(samples_path),
        "samples_sha256": file_sha256(samples_path),
        "signatures": str(signatures_path),
        "signatures_sha256": file_sha256(signatures_path),
        "n_samples": len(samples),
        "n_signatures": len(sigs),
        "sample_bases": int(samples.seq.size),
        "signature_bases": int(sigs.seq.size),
        "sample_block": sample_block,
        "signature_block": signature_block,
        "sample_blocks": _blocks(len(samples), sample_block),
        "signature_blocks": _blocks(len(sigs), signature_block),
        "sample_ids": samples.names,
        "signature_ids": sigs.names,
    }
    write_text(store / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return manifest


MANIFEST_KEYS = (
    "samples",
    "samples_sha256",
    "signatures",
    "signatures_sha256",
    "n_samples",
    "n_signatures",
    "sample_bases",
    "signature_bases",
    "sample_block",
    "signature_block",
    "sample_blocks",
    "signature_blocks",
    "sample_ids",
    "signature_ids",
)
STORE_DTYPES = {"seq": np.uint8, "qual": np.uint8, "offsets": np.int64, "sig_seq": np.uint8, "sig_offsets": np.int64}


def _check_manifest(path, m: dict) -> None:
    """Counts, IDs and plan of a screening manifest agree with each other."""
    for kind, block in (("sample", "sample_block"), ("signature", "signature_block")):
        ids, n, size, blocks = m[f"{kind}_ids"], m[f"n_{kind}s"], m[block], m[f"{kind}_blocks"]
        if not (
            isinstance(ids, list)
            and all(isinstance(x, str) for x in ids)
            and type(n) is int
            and len(ids) == n > 0
            and type(size) is int
            and size > 0
            and blocks == _blocks(n, size)
        ):
            raise GenotileError(
                f"screening store manifest {path}: its {kind} IDs, count, block size and "
                f"blocks do not agree (damaged or edited); {RERUN}"
            )


def _check_offsets(path, offsets: np.ndarray, n: int, size: int) -> None:
    """offsets of n non-empty records back to back in an array of `size` bytes."""
    if offsets.shape != (n + 1,) or offsets[0] != 0 or offsets[-1] != size or (np.diff(offsets) <= 0).any():
        raise GenotileError(
            f"screening store {path}: not {n + 1} increasing offsets from 0 to {size} "
            f"(the size of its sequence array); {RERUN}"
        )


def load_store(store_dir) -> tuple[dict, SequenceSet, SequenceSet]:
    """The manifest and both sequence sets (arrays memory-mapped); a damaged file is refused, named."""
    store = Path(store_dir)
    manifest = load_json(store / "manifest.json", "screening store manifest", MANIFEST_KEYS)
    _check_manifest(store / "manifest.json", manifest)
    a = {
        name: load_npy(store / f"{name}.npy", "screening store array", dtype=STORE_DTYPES[name], ndim=1, mmap=True)
        for name in STORE_ARRAYS
    }
    if a["qual"].size != a["seq"].size:
        raise GenotileError(
            f"screening store {store / 'qual.npy'}: {a['qual'].size} qualities for "
            f"{a['seq'].size} bases in seq.npy; {RERUN}"
        )
    offsets, sig_offsets = np.asarray(a["offsets"]), np.asarray(a["sig_offsets"])
    _check_offsets(store / "offsets.npy", offsets, manifest["n_samples"], a["seq"].size)
    _check_offsets(store / "sig_offsets.npy", sig_offsets, manifest["n_signatures"], a["sig_seq"].size)
    samples = SequenceSet(manifest["sample_ids"], a["seq"], offsets, a["qual"])
    sigs = SequenceSet(manifest["signature_ids"], a["sig_seq"], sig_offsets)
    return manifest, samples, sigs


def _identity(manifest: dict) -> dict:
    keys = ("samples_sha256", "signatures_sha256", "sample_block", "signature_block")
    return {k: manifest[k] for k in keys}


def tile(store_dir, i: int, j: int, *, backend: str, tile_out) -> dict:
    """First matches and quality sums of sample block i x signature block j.

    Parameters
    ----------
    store_dir : str or os.PathLike
        The screening store.
    i, j : int
        Sample block and signature block.
    backend : str
        "auto", a numpy or a cupy backend name.
    tile_out : str or os.PathLike
        The checksummed tile file (pairs with a match: sample, signature, position, quality sum).

    Returns
    -------
    dict
        The tile's meta.
    """
    start = time.perf_counter()
    manifest, samples, sigs = load_store(store_dir)
    if (i, j) not in tiles_of(manifest):
        raise GenotileError(f"tile {i},{j} is not in the plan of {store_dir}")
    s0, s1 = i * manifest["sample_block"], min(len(samples), (i + 1) * manifest["sample_block"])
    g0, g1 = j * manifest["signature_block"], min(len(sigs), (j + 1) * manifest["signature_block"])
    block_s, block_g = samples.subset(s0, s1), sigs.subset(g0, g1)
    chosen = search.resolve(backend)
    t0 = time.perf_counter()
    pos, qsum = search.first_matches_and_sums(block_s, block_g, chosen)
    seconds_search = time.perf_counter() - t0
    rows, cols = np.nonzero(pos >= 0)
    arrays = {
        "sample": (rows + s0).astype(np.int64),
        "signature": (cols + g0).astype(np.int64),
        "position": pos[rows, cols].astype(np.int64),
        "qual_sum": qsum[rows, cols].astype(np.int64),
    }
    meta = {
        "tile": [i, j],
        "backend": chosen,
        "pairs_computed": (s1 - s0) * (g1 - g0),
        "matches": int(rows.size),
        "seconds_search": seconds_search,
        "seconds_total": time.perf_counter() - start,
        "store": _identity(manifest),
    }
    write_tile(tile_out, arrays, meta)
    return meta


def check_tile(path, arrays: dict, meta: dict, manifest: dict, samples: SequenceSet, sigs: SequenceSet) -> None:
    """A screen tile's matches lie in its blocks: sample in block I, signature in block J, the
    match inside the sample, a quality sum a Phred+33 sum can be, no pair twice, as many as it says."""
    i, j = meta["tile"]
    names = ("sample", "signature", "position", "qual_sum")
    size = meta.get("matches")
    if any(k not in arrays or arrays[k].ndim != 1 or arrays[k].shape != (size,) for k in names) or any(
        arrays[k].dtype.kind not in "iu" for k in names
    ):
        raise GenotileError(f"tile {path}: its arrays do not all hold its {size} matches as integers; {RERUN}")
    s, g, pos, q = (arrays[k] for k in names)
    s0, g0 = i * manifest["sample_block"], j * manifest["signature_block"]
    s1 = min(manifest["n_samples"], s0 + manifest["sample_block"])
    g1 = min(manifest["n_signatures"], g0 + manifest["signature_block"])
    bad = (s < s0) | (s >= s1) | (g < g0) | (g >= g1)
    if not bad.any():
        sig_len = sigs.lengths[g]
        bad = (pos < 0) | (pos + sig_len > samples.lengths[s]) | (q < 0) | (q > (QUAL_MAX - PHRED_OFFSET) * sig_len)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise GenotileError(
            f"tile {path}: match (sample {s[k]}, signature {g[k]}, position {pos[k]}, quality sum {q[k]}) "
            f"is not in sample block {i} x signature block {j} or not inside its sample; {RERUN}"
        )
    if has_repeats(s * manifest["n_signatures"] + g):
        raise GenotileError(f"tile {path}: a sample-signature pair is listed twice; {RERUN}")


def merge(tile_paths, store_dir, *, min_score, matches_out, summary_out, config: dict) -> dict:
    """matches.tsv.gz (sample and signature order, min_score applied) and summary.json.

    Parameters
    ----------
    tile_paths : sequence of str or os.PathLike
        Every tile file of the plan.
    store_dir : str or os.PathLike
    min_score : float or None
        Pairs kept (printed score >= min_score; None: every match).
    matches_out, summary_out : str or os.PathLike
    config : dict
        Recorded in summary.json.

    Returns
    -------
    dict
        The summary written.
    """
    started = time.perf_counter()
    check_min_score(min_score)
    manifest, samples, sigs = load_store(store_dir)
    want = set(tiles_of(manifest))
    seen = set()
    parts, tiles = [], []
    for path in tile_paths:
        arrays, meta, digest = read_tile(path)
        if meta.get("store") != _identity(manifest):
            raise GenotileError(
                f"tile {path}: computed from other inputs or blocks than {store_dir}; delete it and rerun"
            )
        t = meta.get("tile")
        job = tuple(t) if isinstance(t, list) and all(type(x) is int for x in t) else None
        if job not in want:
            raise GenotileError(f"tile {path}: holds tile {t}, not one of the plan of {store_dir}")
        if job in seen:
            raise GenotileError(f"tile {path}: tile {job} given twice")
        check_tile(path, arrays, meta, manifest, samples, sigs)
        seen.add(job)
        parts.append(arrays)
        tiles.append(
            {
                "tile": meta["tile"],
                "file": str(path),
                "sha256": digest,
                "backend": meta["backend"],
                "matches": meta["matches"],
                "seconds": meta["seconds_total"],
                "seconds_search": meta["seconds_search"],
            }
        )
    missing = sorted(want - seen)
    if missing:
        raise GenotileError(f"screen tiles missing from the merge: {missing}")
    cols = {k: np.concatenate([p[k] for p in parts]) for k in ("sample", "signature", "position", "qual_sum")}
    order = np.lexsort((cols["signature"], cols["sample"]))
    cols = {k: v[order] for k, v in cols.items()}
    lengths = sigs.lengths[cols["signature"]]
    h = hundredths(cols["qual_sum"], lengths)
    keep = passes(h, min_score)
    sample_ids = np.asarray(manifest["sample_ids"], dtype=object)
    sig_ids = np.asarray(manifest["signature_ids"], dtype=object)
    kept = np.flatnonzero(keep)
    write_tsv_gz(
        matches_out,
        HEADER,
        [
            sample_ids[cols["sample"][kept]],
            sig_ids[cols["signature"][kept]],
            [str(p + 1) for p in cols["position"][kept].tolist()],
            [format_score(v) for v in h[kept].tolist()],
        ],
    )
    search = sum(t["seconds_search"] for t in tiles)
    summary = {
        "kind": "screen",
        "columns": list(HEADER),
        **{
            k: manifest[k]
            for k in (
                "samples",
                "samples_sha256",
                "signatures",
                "signatures_sha256",
                "n_samples",
                "n_signatures",
                "sample_bases",
                "signature_bases",
            )
        },
        "pairs_computed": manifest["n_samples"] * manifest["n_signatures"],
        "pairs_matching": int(h.size),
        "pairs_passing": int(keep.sum()),
        "min_score": min_score,
        "backend": sorted({t["backend"] for t in tiles}),
        "plan": {k: manifest[k] for k in ("sample_block", "signature_block", "sample_blocks", "signature_blocks")},
        "outputs": output_records({"matches": matches_out}),
        "tiles": tiles,
        "timings": {
            "tile_seconds_total": sum(t["seconds"] for t in tiles),
            "tile_seconds_search": search,
            "pairs_per_s_search": manifest["n_samples"] * manifest["n_signatures"] / search if search else None,
            "merge_seconds": time.perf_counter() - started,
        },
        "config": config,
        "versions": versions(),
    }
    write_text(summary_out, json.dumps(summary, indent=1) + "\n")
    if tile_paths:  # tiles of an earlier plan (other block sizes or inputs)
        remove_stale_files(Path(tile_paths[0]).parent, r"tile_\d+_\d+\.npz", tile_paths)
    return summary
