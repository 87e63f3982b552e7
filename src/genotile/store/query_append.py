"""A query whose FILE grew: records added at the end of the FILE compute only their cross pairs
(issue 27, point 3: "FILE may grow too, with the same rule as 1").

A query store keeps, beside its files and out of Snakemake's outputs, a record of what it was
made from (`query.json`): the input's sources (store/sources.py: its size, digest, option files),
the FILE's size and the SHA-256s of its pieces (util/checksums.file_pieces), the settings, the
plan and the key and identity of each part. When the store is made again with the input
unchanged and the FILE the earlier one with FASTA records added after its last byte (its first
pieces the recorded ones, the piece the earlier size ends in hashed up to it, and a record
starting there), the query plan keeps the earlier plan's permutation and blocks, the FILE's new
records permuted and blocked after its earlier ones (core/plan.py: a query plan's `segments`):
the earlier tiles (input block, earlier FILE block) hold the same cross pairs of the same vectors
and stay valid, whatever the grown store's encoding; only the tiles of a new FILE block are
computed. The grown store is made from the earlier one and the FILE's new records alone where
that gives the same store (`grow`: the record keeps the earlier store's column counts, and links
to its planes and manifest, as an all-pairs store's append record does, store/extend.py, and the
FILE's SHA-256 state, resumed over the new bytes); else as any query store (store/query.py: from
the FILE's all-pairs store where it has one, else both files read). Either way its files are a
fresh query store's with this plan, byte for byte; the merge reads every tile and writes what a
fresh query writes.

A FILE given as a list of FASTA files (or a one-file FILE become a list starting with it) grows
the same way by further files added at the end of the list (`listed_grown_by`, `_grow_listed`):
the record names each of its files (path, size, content digest, SHA-256, as an append record's
`files`: store/append.py), the earlier ones must be unchanged (store/listed.earlier_changed), and
the further files' records are the FILE's new ones.

With `block_size: auto`, a grown FILE whose query store's auto block size is more than twice the
earlier plan's (a FILE of 2 records grown to 200: blocks of 4 for a store a fresh plan makes one
tile of) is not appended to: the query store is planned and computed afresh, one line saying so
(`outgrown`; store/append.planned_afresh's rule, where the reason is given).

Anything else is a query made in full, saying why in one line: the input changed (a file of an
input list too), the FILE changed before its end (an edit, records removed or reordered; a file
of a FILE list changed, moved, reordered or removed), other settings, genotype files (records
added to a VCF are variants, which change every vector; a genotype FILE list is queried in full).
"""

import json
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from genotile.core.encode import NUCLEOTIDE
from genotile.core.encodings import ENCODINGS
from genotile.core.plan import Plan
from genotile.io.planfile import write_plan
from genotile.io.readers.base import list_label
from genotile.io.readers.listed import listed_sha256
from genotile.io.readers.query import Part, QueryAlignment, combined_sha256, label
from genotile.store import append, extend, records, stage
from genotile.store.ingest import alignment_manifest
from genotile.store.inputs import files_of
from genotile.store.listed import further_records, hashed_files
from genotile.store.manifest import part_key, store_identity
from genotile.store.pack import categorical_keys, write_manifest
from genotile.store.sources import content_sha256, content_size, recorded_pieces, stat_of_read
from genotile.util import sha256_state
from genotile.util.atomic import write_record
from genotile.util.checksums import PIECE, file_pieces, file_sha256_resumable, pieces, pieces_digest, range_digests
from genotile.version import __version__

log = logging.getLogger("genotile")

RECORD = records.QUERY  # beside the query store's files


def read_record(store_dir) -> dict | None:
    """The record of the last query store made in `store_dir`, or None (missing, damaged, or of
    another version)."""
    d = stage.read_recorded(Path(store_dir) / RECORD)
    return d if d is not None and d.get("genotile") == __version__ else None


def _file_pieces(against) -> list[str]:
    """The FILE's pieces' SHA-256s (hex): its workflow fingerprint's, else hashed on threads (once
    a process while its stat stays the same: util/checksums.file_pieces; `genotile run` checks,
    grows and records the FILE)."""
    recorded = recorded_pieces(against)
    return recorded if recorded is not None else [d.hex() for d in file_pieces(against)]


def grown_by(record: dict | None, input_path, against, settings: dict, options) -> tuple[int, str]:
    """The FILE's vectors of the earlier query store (n_against) where the FILE grew at its end
    (records added to its one file, or files added to its list: `listed_grown_by`) and nothing
    else changed, else 0; and why not, in words ("" where there is no earlier query store, or
    nothing to compare)."""
    from genotile.store.listed import side_differences

    files = files_of(against)
    if record is None or not all(os.path.isfile(f) for f in files):
        return 0, ""
    changed = append.settings_changed(record, settings)
    if changed:
        return 0, changed
    differ = side_differences(record["input"], input_path, options)
    if differ:
        return 0, f"the input changed ({'; '.join(differ)})"
    if ENCODINGS[settings["encoding"]].source != "alignment" or any(f.lower().endswith(".gz") for f in files):
        return 0, "the FILE is not an uncompressed FASTA (records appended are recognised there only)"
    if len(files) > 1 or len(record["against"].get("files") or []) > 1:
        return listed_grown_by(record, files, options)
    old, size = int(record["against"]["size"]), content_size(against)
    if size < old:
        return 0, "the FILE is shorter than before: records were removed or edited"
    if size > old and not append.record_starts_at(against, old):
        return 0, "the FILE's last record was extended, or its last line had no newline"
    earlier, grown = record["against"]["pieces"], _file_pieces(against)
    n_full = old // PIECE
    partial = [d.hex() for d in range_digests(against, pieces(old)[n_full:])]
    if grown[:n_full] != earlier[:n_full] or partial != earlier[n_full:]:
        return 0, "the FILE's earlier bytes changed (an edit before the end, or records removed or reordered)"
    # the same FILE (a store job run again on the same files): the recorded plan, nothing added
    return int(record["plan"]["n_against"]), ""


def listed_grown_by(record: dict, files: list[str], options) -> tuple[int, str]:
    """`grown_by` of a FILE given as a list of files (or a one-file FILE that became a list
    starting with it): the earlier FILE's n_against where its files are the first ones, each
    unchanged (store/listed.earlier_changed: path, size, digest, companions), further files added
    at its end or none; else 0 and why."""
    from genotile.store.listed import earlier_changed

    earlier = record["against"].get("files") or []
    if len(files) < len(earlier):
        return 0, f"the FILE's list holds {len(files)} files, {len(earlier)} before (files are added at its end)"
    why = earlier_changed(files, earlier, record["against"].get("sources") or {}, options)
    if why is not None:
        return 0, why or "a FILE is missing"
    return int(record["plan"]["n_against"]), ""


def plan(manifest: dict, record: dict, n_against_before: int, say) -> Plan | None:
    """The query plan of a grown FILE: the earlier plan, its FILE part grown by a segment of the
    new records; None where the store's vectors are not the earlier ones then the new ones."""
    before = Plan.from_json(record["plan"])
    q = manifest["query"]
    if q["n_input"] != before.n_query or q["n_against"] < n_against_before:
        return None
    if append.ids_digest(manifest["ids"][: before.n_vectors]) != record["ids_sha256"]:
        return None
    added = int(q["n_against"]) - n_against_before
    if not added:  # nothing added: the recorded plan, its tiles kept
        return before
    p = Plan(
        before.n_query + int(q["n_against"]),
        before.block_size,
        before.seed,
        n_against=int(q["n_against"]),
        segments=(*before.segments, added),
    )
    tiles = p.appended_tiles()
    say(
        f"{added} vectors appended to the FILE's {n_against_before}: {p.n_query * added:,} cross pairs to compute "
        f"(of {p.n_pairs:,}), {len(tiles)} of {len(p.tiles())} tiles; the earlier tiles are kept"
    )
    return p


def outgrown(manifest: dict, record: dict, n_against_before: int, block_size, metrics, backend: str) -> str | None:
    """The line saying a grown FILE's query store is planned afresh (store/append.planned_afresh:
    `block_size` auto, and the grown store's auto block size, what store/query.plan_query sizes a
    fresh plan by with these metrics and backend, more than twice the earlier plan's); None
    where the FILE's new records are appended (or none were added: the recorded plan kept)."""
    if int(manifest["query"]["n_against"]) <= n_against_before:
        return None
    return append.planned_afresh(
        block_size,
        int(record["plan"]["block_size"]),
        int(manifest["n_vectors"]),
        lambda: stage.resolve_auto_block_size(manifest, metrics, backend, quiet=True),
    )


def earlier_parts(record: dict, p: Plan) -> list[dict]:
    """The parts of the recorded store before the last part of `p`: all of them where `p` added
    a part, else the recorded store's own earlier ones (the same plan made again)."""
    parts = list(record["parts"])
    return parts if len(p.segments) == len(parts) else parts[: len(p.segments)]


def with_parts(manifest_path: Path, record: dict, p: Plan) -> None:
    """The grown query store's manifest given the earlier parts whose tiles are accepted
    (store/manifest.py tile_identities), before any tile reads it."""
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["appended"] = {"parts": earlier_parts(record, p), "vectors": p.parts()[-1]}
    write_record(manifest_path, manifest)


def stat_of_sides(input_path, against, options) -> list:
    """store/sources.stat_of_read of a query store's files: each file of the input, then of the
    FILE (store/query.py query_store, before and after its read; `write`)."""
    return stat_of_read([*files_of(input_path), *files_of(against)], options)


def write(
    store_dir: Path, input_path, against, settings: dict, options, columns=None, state=None, seen_stat=None
) -> None:
    """query.json for the query store just made in `store_dir` (its manifest written), with what
    the next growth reads in place of the earlier files (`columns`: the store's column counts,
    its files linked, store/extend.keep; `state`: the FILE's SHA-256 state after its last byte):
    written last, so that a job killed before it leaves the earlier record (and its kept files),
    whose store it then grows again; the other kept files removed after it. `seen_stat`:
    `stat_of_sides` before the store read them: a file written to since gets no record, nor
    kept files (its sources, taken after the read, may not be what the store holds; records
    added to the FILE meanwhile are not in it, and a later growth must not start after them).
    The FILE's files are recorded as an append record's (path, size, content digest, SHA-256:
    store/append.recorded_files), with its companions and option files (`sources`), what a FILE
    given as a list grown by further files is checked by."""
    manifest = json.loads((store_dir / "manifest.json").read_text(encoding="utf-8"))
    n_earlier = len(manifest["ids"]) - int(manifest["query"]["n_against"])
    current = {"store": store_identity(manifest), "key": part_key(manifest)}
    made = manifest.get("sources") or {}  # what the store was made from, as its ingest saw it
    files = files_of(against)
    unchanged = seen_stat is None or stat_of_sides(input_path, against, options) == seen_stat  # what was read is `now`
    of_file: dict = {}
    if len(files) == 1:
        file_pieces_now = _file_pieces(against)
        seen = (made.get("against") or {}).get("input") or {}
        now = (content_size(against), pieces_digest([bytes.fromhex(d) for d in file_pieces_now]))
        unchanged = unchanged and (seen.get("size"), seen.get("digest")) == now
        of_file = {"size": seen.get("size"), "pieces": file_pieces_now, "sha256_state": state}
    recorded = append.recorded_files(
        {"sources": made.get("against") or {}, "input_sha256": manifest["query"]["against_sha256"]}
    )
    if not unchanged or recorded is None:
        # the input or the FILE changed while the store was made: no record, so no later run keeps its tiles
        (store_dir / RECORD).unlink(missing_ok=True)
        extend.forget(store_dir, None)
        log.info("query store: the input or the FILE changed while its store was made; nothing recorded for a rerun")
        return
    kept = extend.keep(store_dir, columns)
    write_record(
        store_dir / RECORD,
        {
            "genotile": __version__,
            "settings": settings,
            "input": made["input"],
            "against": {
                "path": list_label(files),
                **of_file,
                "files": recorded,
                "sources": made["against"],
            },
            "ids_sha256": append.ids_digest(manifest["ids"]),
            "n_input": n_earlier,
            "plan": manifest["plan"],
            "parts": [*(manifest.get("appended") or {}).get("parts", []), current],
            "kept": kept,
        },
    )
    extend.forget(store_dir, None if kept is None else kept["token"])


def sha256_and_state(path) -> tuple[str, str | None]:
    """A FILE's SHA-256 and the state after its last byte (util/sha256_state.py), in one pass
    where libcrypto is at hand, else its SHA-256 alone (hashlib)."""
    if sha256_state.available():
        return file_sha256_resumable(path)
    return content_sha256(path), None


def _grown_sha256(path, old: int, state: str | None, size: int) -> tuple[str, str | None]:
    """The grown FILE's SHA-256 (and state): resumed from the earlier state over the new bytes
    alone where it was kept, else over the whole file."""
    if isinstance(state, str) and sha256_state.available():
        try:
            return file_sha256_resumable(path, old, state, end=size)
        except (ValueError, RuntimeError):  # a damaged state: the whole file
            pass
    return sha256_and_state(path)


def grow(
    store_dir: Path,
    record: dict,
    n_before: int,
    paths: tuple,
    encoding: str,
    options,
    ingest_manifest_out,
    complete: Callable,
    say,
    check: Callable[[Plan], None] | None = None,
    afresh: Callable[[dict], str | None] | None = None,
) -> tuple[Plan, object, str | None] | None:
    """The grown query store from the earlier one's kept files and the FILE's new records alone
    (store/extend.py: where the grown column counts keep the earlier kept columns): the ingest
    manifest, plan, permutation, planes and manifest a fresh query store of the grown FILE with
    the grown plan has, byte for byte; (plan, the grown column counts, the FILE's SHA-256 state).
    None, with nothing written, where it cannot (then the store is made as any query store).

    `paths`: (input, FILE); `complete`: store/query.complete_manifest (the query keys, sources);
    `check`: the plan's bounds (store/query.check_query_bound), before anything is written;
    `afresh`: given the grown ingest manifest, why the store is planned afresh (`outgrown`), or
    None: where it gives a line, nothing is written (the caller plans the store afresh and says
    so). A FILE given as a list grows by its further files (`_grow_listed`)."""
    input_path, against = paths
    if len(files_of(against)) > 1 or len(record["against"].get("files") or []) > 1:
        job = (paths, encoding, options, ingest_manifest_out)
        return _grow_listed(store_dir, record, n_before, job, (complete, say, check, afresh))
    t0 = time.perf_counter()
    old, size = int(record["against"]["size"]), content_size(against)
    if size == old:  # nothing added (the same files again): made as any query store, the plan kept
        return None
    before, why = extend.earlier(store_dir, record)
    read, why = extend.new_records(against, old, int(before.manifest["n_fields"])) if before else (None, why)
    if before is None or read is None:
        log.info("query store (%s): the FILE's records are not added alone: %s", encoding, why)
        return None
    hashing = ThreadPoolExecutor(1, thread_name_prefix="genotile-sha256")
    hashed = hashing.submit(_grown_sha256, against, old, record["against"].get("sha256_state"), size)
    hashing.shutdown(wait=False)
    ids, rows = read
    if content_size(against) != size:  # written to while read: made as any query store
        return None
    new, why = _grown(ids, rows, before)
    if new is None:
        log.info("query store (%s): the FILE's records are not added alone: %s", encoding, why)
        return None
    sha256, state = hashed.result()
    q = _input_part(input_path, before.manifest, record)
    a = Part(str(against), sha256, [*_file_ids(before.manifest), *ids], rows[:0])
    # the FILE's digest is its pieces' (util/checksums.file_digest): not hashed again
    digest = pieces_digest([bytes.fromhex(d) for d in _file_pieces(against)])
    made = _write_grown(store_dir, record, n_before, (q, a, new, before), paths, encoding, options,
                        ingest_manifest_out, (complete, say, check, afresh), digest, t0)  # fmt: skip
    return None if made is None else (made, new.columns, state)


def _file_ids(manifest: dict) -> list[str]:
    """The FILE's vectors' names of a query store's manifest (after the input's)."""
    return manifest["ids"][int(manifest["query"]["n_input"]) :]


def _input_part(input_path, manifest: dict, record: dict) -> Part:
    """The input's side of a grown query store, as the earlier one recorded it (the input is
    unchanged: `grown_by`): its names, SHA-256 and (a list's) each file's, no rows."""
    n_query = int(manifest["query"]["n_input"])
    each = [f.get("input") or {} for f in append.each_file(record["input"])]
    sha256s = [str(f.get("sha256")) for f in each] if len(files_of(input_path)) > 1 else None
    name = list_label(files_of(input_path))
    return Part(name, manifest["query"]["input_sha256"], manifest["ids"][:n_query], np.empty((0, 0), np.uint8),
                sha256s=sha256s)  # fmt: skip


def _grown(ids: list[str], rows, before: extend.Earlier):
    """extend.grown of the FILE's new records, where their names are not the FILE's earlier ones'
    nor each other's; else (None, why)."""
    if not set(ids).isdisjoint(_file_ids(before.manifest)) or len(set(ids)) != len(ids):
        return None, "a name is taken"
    return extend.grown(ids, rows, before)


def _grow_listed(store_dir: Path, record: dict, n_before: int, job: tuple, calls: tuple):
    """`grow` of a FILE given as a list, by its further files' records read alone (as a list
    input's further files: store/listed.py); None, with nothing written, where it cannot (no
    further file: the same files again; a column they make variable; a name taken). `job`:
    `grow`'s (paths, encoding, options, ingest_manifest_out); `calls`: its (complete, say, check,
    afresh)."""
    paths, encoding, options, ingest_manifest_out = job
    input_path, against = paths
    files, earlier = files_of(against), record["against"]["files"]
    further = files[len(earlier) :]
    if not further:
        return None
    t0 = time.perf_counter()
    before, why = extend.earlier(store_dir, record)
    if before is None:
        log.info("query store (%s): the FILE's further files are not added alone: %s", encoding, why)
        return None
    hashed = hashed_files(earlier, further)
    read, why = further_records(further, int(before.manifest["n_fields"]))
    new, why = (None, why) if read is None else _grown(*read, before)
    if read is None or new is None:
        log.info("query store (%s): the FILE's further files are not added alone: %s", encoding, why)
        return None
    ids = read[0]
    sha256s, digests = hashed.result()
    q = _input_part(input_path, before.manifest, record)
    a = Part(list_label(files), listed_sha256(sha256s), [*_file_ids(before.manifest), *ids], new.rows[:0],
             sha256s=sha256s)  # fmt: skip
    made = _write_grown(store_dir, record, n_before, (q, a, new, before), paths, encoding, options,
                        ingest_manifest_out, calls, digests, t0)  # fmt: skip
    return None if made is None else (made, new.columns, None)


def _write_grown(
    store_dir: Path, record: dict, n_before: int, grown: tuple, paths: tuple, encoding: str, options,
    ingest_manifest_out, calls: tuple, against_digest, t0: float,
) -> Plan | None:  # fmt: skip
    """The grown query store's files written (`grow`): `grown` (the input's part, the grown
    FILE's part, extend.Appended of the new records, the earlier store: extend.Earlier); `calls`
    (complete, say, check, afresh) as `grow` takes them; `against_digest`: the FILE's content
    digest (a list's, one a file). None, with nothing written, where the grown plan is not the
    earlier one's, or the store is planned afresh (`afresh`)."""
    q, a, new, before = grown
    complete, say, check, afresh = calls
    n_new = len(new.ids)
    m = alignment_manifest(
        label(q, a), QueryAlignment.kind, encoding, q.ids + a.ids, before.manifest["n_fields"], new.keep.size,
        combined_sha256(q, a),
    )  # fmt: skip
    complete(m, q, a, paths, options, against_digest)
    if afresh is not None and afresh(m) is not None:  # the caller reads both files and says so
        log.info("query store (%s): the FILE's records are not added alone: the store is planned afresh", encoding)
        return None
    p = plan(m, record, n_before, say)
    if p is None:
        return None
    if check is not None:
        check(p)
    t1 = time.perf_counter()
    write_record(ingest_manifest_out, m)
    write_plan(p, store_dir / "plan.json", store_dir / "perm.npy")
    n_old = p.n_vectors - n_new
    new_rows = p.permutation()[n_old:] - n_old
    extend.write_planes(store_dir / "planes.npy", before.planes, new, new_rows, new.enc.layout.total_words)
    manifest = write_manifest(categorical_keys(NUCLEOTIDE.name, new.enc), new.enc.layout, m, p, len(m["ids"]), None)
    manifest["appended"] = {"parts": earlier_parts(record, p), "vectors": p.parts()[-1]}
    write_record(store_dir / "manifest.json", manifest)
    log.info(
        "store stages (s): ingest %.3f (the FILE's %d new records), plan and pack %.3f",
        *(t1 - t0, n_new, time.perf_counter() - t1),
    )
    return p


def settings_of(encoding: str, options, block_size, seed: int) -> dict:
    """What, besides its two files, a query store is made with (store/append.settings_of; a
    query collapses no identical vectors)."""
    return append.settings_of(encoding, options, False, block_size, seed)
