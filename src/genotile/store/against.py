"""A query's store made from its FILE's all-pairs store and the input alone (issue 27, point 3).

A query store (store/query.py) holds the input's vectors then the FILE's, encoded together: its
kept columns and symbol planes are a function of the bases counted in each column over both
files. An all-pairs store of FILE made by the workflow's store job or `genotile run`
(store/append.py) keeps, beside it, those counts over FILE and links to its planes and manifest
(store/extend.py `keep`). So where FILE has such a store, the query reads the input alone, adds
its counts to FILE's (extend.grown, as an append adds new records') and, where the sum keeps
FILE's columns, writes the store today's path writes, byte for byte (every file: the ingest
manifest, plan, permutation, planes and manifest): the input's rows encoded alone, then FILE's
rows taken from FILE's planes in the query plan's order (re-ranked where the input changed the
ranks of a column's bases: extend.Appended.recoded). FILE is not read, only fingerprinted: its
content digest (the workflow's fingerprint records it, store/sources.py `recorded_digest`) must
be the one its store was made from, whose SHA-256 the query's manifests then record.

Where FILE's store is looked for: the stores of the same encoding beside the query's own, the
workflow's `results/<dataset>/store/<encoding>` of every other dataset, or `genotile run`'s
`<outdir>/store/<encoding>` of every other --outdir in the same folder; the first (by path) whose
record is of FILE's current content is taken. Anything else (no such store, one made with reader
options, another alphabet, FILE changed since, an input column FILE holds constant made
variable, an input the one-pass reader does not take) is made by today's path, reading both
files, with one line in the log saying why.
"""

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.core.encode import ALPHABETS, NUCLEOTIDE
from genotile.core.encodings import ENCODINGS
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.io import npy_rows
from genotile.io.readers.query import Part, QueryAlignment, combined_sha256, label
from genotile.store import append, extend
from genotile.store.ingest import alignment_manifest
from genotile.store.pack import categorical_keys, write_manifest
from genotile.store.sources import content_sha256, content_size, known_digest
from genotile.util.atomic import atomic_path
from genotile.util.readback import load_npy

log = logging.getLogger("genotile")

GATHER_ROWS = 8192  # FILE's planes rows taken (and re-ranked) at a time


@dataclass(frozen=True)
class FileStore:
    """FILE's all-pairs store as kept (extend.Earlier), its folder and FILE's content digest."""

    folder: Path
    kept: extend.Earlier
    digest: str
    state: str | None = None  # FILE's SHA-256 state after its last byte, as its store's record keeps it


def find(against, encoding: str, store_dir, options: dict | None) -> tuple[FileStore | None, str]:
    """FILE's all-pairs store of this encoding beside `store_dir` (module docstring), made from
    FILE's content as it is now; or None and why not, in words."""
    if ENCODINGS[encoding].source != "alignment" or ALPHABETS[encoding] is not NUCLEOTIDE:
        return None, f"a store of {encoding} keeps no column counts (nucleotide alignments only)"
    if any(v is not None for v in (options or {}).values()) or not os.path.isfile(against):
        return None, "reader options, or FILE is not a file"
    folders = _beside(Path(store_dir), encoding)
    size = content_size(against)
    records = [(f, r) for f in folders if (r := append.read_record(f)) is not None and _of(r, encoding, size)]
    if not records:
        return None, f"no store of {against} ({size:,} bytes) by this genotile among {len(folders)} beside this one"
    digest = known_digest(against)  # hashed here, the fingerprints left pending are filled in
    why = "its kept files are missing"
    for folder, record in records:
        kept, why = extend.earlier(folder, record)
        if kept is None:
            continue
        recorded = (kept.manifest.get("sources") or {}).get("input") or {}
        if (recorded.get("size"), recorded.get("digest")) == (size, digest):
            return FileStore(folder, kept, digest, record["input"].get("sha256_state")), ""
        why = f"{against} changed since its store in {folder} was made"
    return None, why


def _beside(store_dir: Path, encoding: str) -> list[Path]:
    """The folders `<root>/*/store/<encoding>` of the root two levels above `store_dir` (itself
    `<root>/<name>/store/<encoding>`), sorted; none for a store folder named otherwise."""
    store_dir = store_dir.resolve()
    if store_dir.name != encoding or store_dir.parent.name != "store":
        return []
    return sorted(p for p in store_dir.parents[2].glob(f"*/store/{encoding}") if (p / append.RECORD).is_file())


def _of(record: dict, encoding: str, size: int) -> bool:
    """Whether an append record is of a store of `encoding`, no reader options, of `size` bytes."""
    settings = record.get("settings") or {}
    return settings.get("encoding") == encoding and not settings.get("options") and record["input"]["size"] == size


@dataclass(frozen=True)
class Reused:
    """A query store's ingest made from FILE's store: its manifest (today's path's, to the byte,
    once store/query.py gives it its query keys from `parts`), the input's records counted with
    FILE's (extend.Appended) and FILE's store planes (mapped: FILE's store may be made again
    meanwhile, its kept files removed)."""

    manifest: dict
    parts: tuple[Part, Part]  # the input's, and FILE's (its data not read: its rows are its store's)
    new: extend.Appended
    file: FileStore
    planes: np.ndarray


def ingest(input_path, against, encoding: str, found: FileStore) -> tuple[Reused | None, str]:
    """The input read alone and its counts added to FILE's (extend.new_records, extend.grown),
    its ingest manifest but the query keys; or None and why not."""
    kept = found.kept
    n_fields = int(kept.manifest["n_fields"])
    with ThreadPoolExecutor(1, thread_name_prefix="genotile-sha256") as hashing:  # hashlib releases the GIL
        sha256 = hashing.submit(content_sha256, input_path)
        read, why = extend.new_records(input_path, 0, n_fields)
        new, why = extend.grown(*read, kept) if read is not None else (None, why)
        digest = sha256.result()
    if new is None:
        return None, f"the input: {why}"
    try:
        planes = load_npy(kept.planes, "FILE's store planes", dtype=np.uint64, ndim=2, mmap=True)
    except GenotileError as exc:
        return None, str(exc)
    q = Part(str(input_path), digest, new.ids, new.rows)
    # FILE's vectors are its store's rows: its names and SHA-256 are its store's, its bytes unread
    a = Part(str(against), kept.manifest["input_sha256"], kept.manifest["ids"], new.rows[:0])
    m = alignment_manifest(
        label(q, a), QueryAlignment.kind, encoding, q.ids + a.ids, n_fields, new.keep.size, combined_sha256(q, a)
    )
    return Reused(m, (q, a), new, found, planes), ""


def pack(made: Reused, plan: Plan, store_dir: Path) -> dict:
    """planes.npy and manifest.json of the query store: the input's rows encoded alone, then
    FILE's taken from its store's planes (re-ranked where the encoding changed), in the plan's
    order; the store manifest (with the `query` record) returned."""
    new, kept = made.new, made.file.kept
    n, words = len(new.ids), new.enc.layout.total_words
    perm = plan.permutation()
    file_rows = _store_rows(kept.manifest)[perm[n:] - n]  # FILE's store row of each query store row
    with atomic_path(store_dir / "planes.npy") as tmp, open(tmp, "wb") as fh:
        start = npy_rows.write_header(fh, (plan.n_vectors, words), np.uint64)
        npy_rows.pwrite_rows(fh.fileno(), new.planes(perm[:n]), start, tmp)
        for r0 in range(0, file_rows.size, GATHER_ROWS):
            rows = file_rows[r0 : r0 + GATHER_ROWS]
            order = np.argsort(rows, kind="stable")  # read in the file's order
            planes = np.empty((rows.size, made.planes.shape[1]), dtype=np.uint64)  # in FILE's encoding
            planes[order] = made.planes[rows[order]]
            if new.earlier_enc is not None:
                planes = new.recoded(planes)
            npy_rows.pwrite_rows(fh.fileno(), planes, start + (n + r0) * words * 8, tmp)
    keys = categorical_keys(NUCLEOTIDE.name, new.enc)
    return write_manifest(keys, new.enc.layout, made.manifest, plan, plan.n_vectors, store_dir / "manifest.json")


def _store_rows(manifest: dict) -> np.ndarray:
    """The store row of each input vector of an all-pairs store: its plan's permutation inverted,
    through the row of each vector's first copy where identical ones were collapsed
    (store/duplicates.py)."""
    perm = Plan.from_json(manifest["plan"]).permutation()
    row_of = np.empty_like(perm)
    row_of[perm] = np.arange(perm.size)
    index = manifest.get("distinct_index")
    return row_of if index is None else row_of[np.asarray(index, dtype=np.int64)]
