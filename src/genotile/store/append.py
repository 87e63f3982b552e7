"""A growing alignment: records added at the end of a dataset's FASTA compute only their own pairs
(issue 27, points 1, 2 and 4).

The store job keeps, beside its store and out of Snakemake's outputs (which Snakemake deletes
before the job runs again), a record of what it made (`append.json`): the input's size and
SHA-256 (with its pieces' SHA-256s and the SHA-256's state after its last byte: below), its IDs'
digest, the settings, the identical vectors and the plan with the key and identity of each part.
When the input is that file with records added after its last byte (its first `size` bytes are
the recorded ones, `check_earlier`, and a record starts there), the store is
made again over the grown input, with the earlier plan's permutation and blocks for the earlier
vectors and the new ones permuted and blocked after them (core/plan.py `segments`): the earlier
tiles hold the same pairs of the same vectors, and stay valid, since a pair's value depends on its
two vectors alone; only the tiles with a new block are computed (new x old, new x new). The grown
store is encoded over the grown input, so a new tile's pairs are those of a fresh run; the merge
then reads every tile, old and new, and writes what a fresh run on the grown input writes.

Only the new records are read where that gives the same store (store/extend.py): a categorical
store's kept columns and symbol planes depend on every vector (a new sequence may add an allele,
or make a constant column variable), so the record names, beside it, each column's base counts
over the earlier input and links to the earlier store's planes and manifest; where the new
records' counts added to them give the earlier encoding (the common case: a few hundred genomes
added), the grown planes are the earlier rows, copied, then the new records' (`_extend`), and the
whole-file SHA-256 the manifests record is resumed from the earlier one's state over the new
bytes alone. An input too large to be held in memory is read in one pass that counts only its
kept columns' bases, and each constant column's one base: all the next append's encoding needs
(store/extend.py). Otherwise (and where nothing was kept: another alphabet, an input the
streaming reader reads) the whole grown input is read again (`_reingest`; its one line in the
log says why), with the same files. The old store's files are replaced whole
(util/atomic.py), never rewritten in place; the record is written last and the earlier store's
kept files removed after it, so a job killed before it leaves the earlier record with its kept
files, and the rerun appends to the earlier store again.

The check of the earlier bytes (`check_earlier`): the record holds the SHA-256s of the earlier
input's PIECE-byte pieces (util/checksums.file_pieces, the pieces of the input's digest; the
last, partial one of the bytes up to its size) and the SHA-256's state after its last byte
(util/sha256_state.py: libcrypto's SHA256_CTX through ctypes). The grown file's first bytes are
hashed piece by piece on threads and compared with them (in the workflow, the pieces of the
grown file that its fingerprint recorded when the workflow was parsed are compared instead,
trusted as its digest is, and only the partial last piece is hashed), while the SHA-256 is
resumed over the new bytes: no SHA-256 stream over the earlier bytes. The fresh store job keeps
both from what it computes anyway (the state from its one SHA-256 pass, as fast as hashlib's;
the pieces from the fingerprint or from the input's digest, else hashed beside it: store/ingest.py).
A record without them (written by an earlier version, or without libcrypto) is checked in one
SHA-256 stream over the whole grown file, as before; its store then records them.

Identical vectors (store/duplicates.py): an appended vector identical to an earlier one is a row
of its own (tiled against the earlier rows, where its pairs are), so that the earlier tiles'
histograms, weighed by the earlier copies, stay those of the earlier pairs. Earlier vectors
identical over the earlier columns but not over the grown ones (one holds an N where the other
holds the base, at a column the new vectors made variable) would make the earlier tiles'
collapse wrong: then the store is made in full.

Blocks outgrown (`planned_afresh`): with `block_size: auto`, the appended plan keeps the earlier
plan's block size, which the earlier input's size set. Where a fresh plan of the grown store would
take blocks more than twice as large (a collection that started small: 2 sequences, then 2,000
added, would be cut into ~1,000 blocks of 2), the append is not made: the store is planned and
computed afresh, one line saying so. As an array that doubles its capacity, this keeps the work of
all the stores made afresh within a constant factor of a fresh run's: the auto block size grows
only while one tile holds the store, or up to a tile's cap (core/blocks.py), so a large store's
appends (200 to 15,800 on the CPU, 2,000 to 200,000 on a GPU) barely move it and stay appends. A
block size the user set is kept, as a fresh plan would keep it.

Anything else is made in full, and the console says why in one line: an edit before the end, a
removed or reordered record, other options or settings, an input other than an uncompressed
FASTA. What the workflow's store job runs (`store`), and `genotile run` (`current_store`: a store
made last from the same input content and settings is kept as it is, as its tiles are where
they were computed with the same settings: pairs/stage.tiles_to_compute).
"""

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genotile.core.blocks import AUTO
from genotile.core.columns import ColumnCounts
from genotile.core.encode import NUCLEOTIDE
from genotile.core.encodings import ENCODINGS
from genotile.core.limits import check_plan
from genotile.core.plan import Plan
from genotile.io.planfile import write_plan
from genotile.io.readers.fasta import FastaReader
from genotile.store import extend, records, stage
from genotile.store.ingest import alignment_manifest, record_distinct
from genotile.store.manifest import part_key, store_identity
from genotile.store.pack import categorical_keys, write_manifest
from genotile.store.sources import complete_fingerprints, differences, hashed_ahead, recorded_pieces, sources
from genotile.util import checksums, sha256_state
from genotile.util.atomic import write_record
from genotile.util.checksums import (
    READ,
    file_pieces,
    file_sha256_resumable,
    pieces,
    pieces_digest,
    range_digests,
)
from genotile.util.sha256_state import Sha256
from genotile.version import __version__

log = logging.getLogger("genotile")

RECORD = records.APPEND  # beside the store's files, not one of the store job's outputs


def read_record(store_dir) -> dict | None:
    """The record of the last store made in `store_dir`, or None (missing or damaged)."""
    d = stage.read_recorded(Path(store_dir) / RECORD)
    return d if d is not None and d.get("genotile") == __version__ else None


def ids_digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def settings_of(encoding: str, options: dict | None, collapse: bool, block_size, seed: int) -> dict:
    """What, besides its input, a store is made with (all of it must match for an append)."""
    return {
        "encoding": encoding,
        "options": {k: v for k, v in sorted((options or {}).items()) if v is not None},
        "collapse": bool(collapse),
        "block_size": block_size,
        "seed": int(seed),
    }


def _record(
    path: Path, manifest: dict, ingest_manifest: dict, settings: dict, size: int, kept: dict | None, checks: dict
) -> None:
    """append.json for the store just made: written last, atomically; `kept`: what the next
    append reads in place of this input (store/extend.py `keep`); `checks`: what it checks the
    earlier bytes with (`Checks.of`: the pieces' SHA-256s and the SHA-256's state)."""
    write_record(
        path,
        {
            "genotile": __version__,
            "input": {
                "path": ingest_manifest["input"],
                "size": size,
                "sha256": ingest_manifest["input_sha256"],
                # the files it was read from (a list's: store/listed.py), what a further file's append checks
                "files": recorded_files(ingest_manifest),
                **checks,
            },
            "settings": settings,
            "n_input": int(ingest_manifest["n_vectors"]),
            "ids_sha256": ids_digest(manifest["ids"]),
            "distinct_index": manifest.get("distinct_index"),
            "n_distinct": manifest.get("n_distinct"),
            "plan": manifest["plan"],
            "parts": [*(manifest.get("appended") or {}).get("parts", []), _part(manifest)],
            "kept": kept,
            # a genotype list's variants (store/listed.py): what a further file is checked with
            "variants_sha256": ingest_manifest.get("variants_sha256"),
            # what each file was read with (its companions, option files): a list's earlier files checked by them
            "sources": ingest_manifest.get("sources"),
        },
    )


def each_file(made: dict) -> list[dict]:
    """Each input file's `sources` record (store/sources.py: the file, the options, its companions
    and option files) of a store's `sources`: a list's files' (store/listed.py `complete`), or its
    one file's; none where it records no input."""
    return list(made["listed"]) if "listed" in made else [made] if made.get("input") else []


def recorded_files(ingest_manifest: dict) -> list[dict] | None:
    """The input files of a store as its record holds them: a file's path, size, digest and
    SHA-256 (store/sources.py); a list's files', or its one file's (`each_file`)."""
    made = ingest_manifest.get("sources") or {}
    listed: list = [s.get("input") for s in each_file(made)]
    if not listed or not all(isinstance(f, dict) and f.get("digest") for f in listed):
        return None
    if "listed" not in made:  # one file: the store's SHA-256 is its own
        listed = [{**listed[0], "sha256": ingest_manifest["input_sha256"]}]
    return [{key: f.get(key) for key in ("path", "size", "digest", "sha256")} for f in listed]


def _part(manifest: dict) -> dict:
    return {"store": store_identity(manifest), "key": part_key(manifest)}


def prefix_sha256(path, sizes: list[int], states: dict[int, str] | None = None) -> dict[int, str]:
    """{size: SHA-256 of the file's first `size` bytes} for each size, in one pass; `states`
    given (libcrypto at hand), {size: the SHA-256's state there} added to it."""
    digest = hashlib.sha256() if states is None else Sha256()
    done = 0
    out: dict[int, str] = {}
    wanted = sorted(set(sizes))
    with open(path, "rb", buffering=0) as fh:
        for size in wanted:
            while done < size:
                chunk = fh.read(min(READ, size - done))
                if not chunk:
                    return out
                digest.update(chunk)
                done += len(chunk)
            out[size] = digest.hexdigest()
            if isinstance(digest, Sha256) and states is not None:
                states[size] = digest.state()
    return out


@dataclass(frozen=True)
class Checks:
    """What an append's check of the earlier bytes found (`check_earlier`), and what the next
    append checks the grown file with.

    Attributes
    ----------
    earlier : bool
        The grown file's first bytes are the earlier file's (its recorded pieces' SHA-256s, or
        its recorded SHA-256).
    sha256 : str or None
        The grown file's SHA-256 (sha256sum's), where `earlier`.
    state : str or None
        The SHA-256's state after its last byte (util/sha256_state.py); None without libcrypto.
    pieces : list of str or None
        Its pieces' SHA-256s, hex (util/checksums.file_pieces); None without a state.
    how : str
        How the earlier bytes were checked, in words (the store job's log).
    """

    earlier: bool
    sha256: str | None
    state: str | None
    pieces: list[str] | None
    how: str

    @staticmethod
    def of(state: str | None, pieces: list[str] | None) -> dict:
        """The record's keys for them (none where either is missing: the next append then checks
        in one stream)."""
        return {"sha256_state": state, "pieces": pieces} if state and pieces is not None else {}


def check_earlier(path, recorded: dict, size: int) -> Checks:
    """Whether the file at `path` (`size` bytes) starts with the earlier input `recorded`
    (append.json's "input": size, SHA-256, and where the store job kept them, its pieces'
    SHA-256s and the SHA-256's state after its last byte), and the grown file's SHA-256.

    With the pieces and the state (and libcrypto: util/sha256_state.available), the earlier
    bytes are checked piece by piece on threads (util/checksums.range_digests: the last,
    partial piece's digest is of the bytes up to the earlier size), or against the pieces of
    the grown file the workflow's fingerprint recorded, trusted as its digest is
    (store/sources.recorded_pieces), or that this process hashed (`genotile run`:
    util/checksums.hashed_pieces), its partial earlier piece hashed; and the SHA-256 is resumed
    from the state over the new bytes alone, beside them. Otherwise (a record of an earlier
    version, no libcrypto) the whole file in one stream, as sha256sum reads it.
    """
    old = int(recorded["size"])
    state, earlier = recorded.get("sha256_state"), recorded.get("pieces")
    if not (isinstance(state, str) and isinstance(earlier, list) and sha256_state.available()):
        return _in_one_stream(path, recorded, size)
    n_full = old // checksums.PIECE  # the earlier pieces that are the grown file's too
    grown, whose = recorded_pieces(path), "the fingerprint's"
    if grown is None and (ahead := hashed_ahead(path)) is not None:  # hashed since the job started
        grown, whose = [p.hex() for p in ahead], "the job's"
    kept_at = None  # the stat the pieces this process hashed are of, checked again once read
    if grown is None and (kept := checksums.hashed_pieces(path)) is not None:  # `genotile run`'s (`_kept`)
        grown, whose, kept_at = [p.hex() for p in kept[0]], "this run's", kept[1]
    if grown is not None and len(grown) == len(pieces(size)) and grown[:n_full] == earlier[:n_full]:
        spans, known, how = pieces(old)[n_full:], grown, f"against {whose} pieces"
    else:
        spans, known, how = pieces(old) + pieces(size)[n_full:], None, "on threads"
    hashing = ThreadPoolExecutor(1, thread_name_prefix="genotile-resume")
    try:
        resumed = hashing.submit(file_sha256_resumable, path, old, state, end=size)
        digests = [d.hex() for d in range_digests(path, spans)]
        sha256, after = resumed.result()
    except (ValueError, RuntimeError):  # a damaged state: in one stream
        return _in_one_stream(path, recorded, size)
    finally:
        hashing.shutdown(wait=True)
    if kept_at is not None and known is not None and checksums.file_stat(path) != kept_at:
        return _in_one_stream(path, recorded, size)  # written to since: its pieces are not the bytes read
    n_old = len(pieces(old))
    if known is None:
        same, grown = digests[:n_old] == earlier, earlier[:n_full] + digests[n_old:]
    else:
        same, grown = digests == earlier[n_full:], known
    how = f"{n_old} pieces {how}, the SHA-256 resumed over the {size - old:,} new bytes"
    return Checks(True, sha256, after, grown, how) if same else Checks(False, None, None, None, how)


def _in_one_stream(path, recorded: dict, size: int) -> Checks:
    """`check_earlier` in one SHA-256 stream over the whole file (with its state at the end
    where libcrypto is at hand, and then the pieces, hashed beside it, for the next append)."""
    old = int(recorded["size"])
    states: dict[int, str] | None = {} if sha256_state.available() else None
    if states is None:
        digests, grown = prefix_sha256(path, [old, size]), None
    else:
        with ThreadPoolExecutor(1, thread_name_prefix="genotile-pieces") as beside:
            hashed = beside.submit(file_pieces, path, size)
            digests, grown = prefix_sha256(path, [old, size], states), [d.hex() for d in hashed.result()]
    if digests.get(old) != recorded["sha256"] or size not in digests:
        return Checks(False, None, None, None, "in one stream")
    return Checks(True, digests[size], (states or {}).get(size), grown, "in one stream")


def settings_changed(record: dict, settings: dict) -> str | None:
    """The first setting of `settings_of` the record's store was made with otherwise, in words
    (None: none; a `block_size` of auto takes the recorded plan's, unless the grown store
    outgrows its blocks: `planned_afresh`)."""
    have = record.get("settings") or {}
    for key in ("encoding", "options", "collapse", "seed"):
        if have.get(key) != settings[key]:
            return f"{key} changed ({have.get(key)!r} -> {settings[key]!r})"
    if settings["block_size"] != AUTO and settings["block_size"] != record["plan"]["block_size"]:
        return f"block_size changed ({record['plan']['block_size']} -> {settings['block_size']})"
    return None


# an append whose grown store's auto block size is more than this many times the earlier plan's
# block size is planned afresh (`planned_afresh`)
OUTGROWN = 2


def planned_afresh(block_size, recorded: int, n: int, auto: Callable[[], int]) -> str | None:
    """Why a grown store is planned afresh rather than appended to, as the one line the console
    says; None where the append is made.

    With `block_size` auto, an appended plan keeps the earlier plan's blocks (`recorded`
    vectors), sized by the earlier store. Where the grown store's auto block size (what a fresh
    plan would take) is more than OUTGROWN times that, the blocks are too small for it (a store
    of 2 vectors grown to 2,002 would be ~1,000 blocks of 2, half a million tiles, where a fresh
    plan has one): it is planned afresh, which, as a doubling array's copies, keeps every store
    made afresh within a constant factor of a fresh run's work. A block size the user set is
    kept (a fresh plan keeps it too).

    Parameters
    ----------
    block_size : int or "auto"
        The block size setting.
    recorded : int
        The earlier plan's block size.
    n : int
        The grown store's vectors (its distinct ones where identical ones are collapsed): named
        in the line.
    auto : callable
        The grown store's auto block size (stage.resolve_auto_block_size), asked only where
        `block_size` is auto.

    Returns
    -------
    str or None
    """
    if block_size != AUTO:
        return None
    size = auto()
    if size <= OUTGROWN * recorded:
        return None
    return (
        f"block_size auto: the earlier plan's blocks of {recorded:,} vectors are too small for {n:,} "
        f"(auto: {size:,}): the store is planned afresh"
    )


def afresh(job: "AppendJob", m: dict, index: np.ndarray) -> str | None:
    """`planned_afresh` of an append job's grown store, whose ingest manifest is `m`, its rows
    counted as the appended store numbers them (`index`, each input vector's appended store row:
    `index_appended`, `_distinct_index`; a new copy of an earlier vector is a row of its own), as
    every path that appends gives it: the same decision whether the new records were read alone
    or the whole input again. None where nothing was added."""
    if int(m["n_vectors"]) <= int(job.record["n_input"]):
        return None
    rows = int(index.max(initial=-1)) + 1
    grown = {k: v for k, v in m.items() if k not in ("n_distinct", "distinct_index")}
    if rows < index.size:
        grown["n_distinct"] = rows
    return planned_afresh(
        job.settings["block_size"],
        int(job.record["plan"]["block_size"]),
        int(grown.get("n_distinct", grown["n_vectors"])),
        lambda: stage.resolve_auto_block_size(grown, **job.auto, quiet=True),
    )


def _why_not(record: dict | None, input_path, settings: dict) -> str | None:
    """Why the store cannot be appended to (None: it may be, the prefix still to check), in words;
    "" where there is no earlier store to speak of, or no file to compare with it (the ingest
    refuses a missing input in its own words)."""
    if record is None or not os.path.isfile(input_path):
        return ""
    if len(record["input"].get("files") or []) > 1:
        return "the input was a list of files"
    if ENCODINGS[settings["encoding"]].source != "alignment":
        return "appends are recognised for FASTA alignments only"
    if str(input_path).lower().endswith(".gz"):
        return "the input is compressed (appends are recognised in an uncompressed FASTA)"
    changed = settings_changed(record, settings)
    if changed:
        return changed
    old = record["input"]["size"]
    size = os.path.getsize(input_path)
    if size < old:
        return f"the input is shorter than before ({size} < {old} bytes): records were removed or edited"
    if size > old and not record_starts_at(input_path, old):
        return "the earlier input's last record was extended, or its last line had no newline"
    return None


def record_starts_at(path, offset: int) -> bool:
    """Whether a FASTA record starts at byte `offset` of `path`, right after a line's end: where
    records were added after an earlier file of `offset` bytes (a query's FILE too,
    store/query_append.py)."""
    with open(path, "rb") as fh:
        fh.seek(offset - 1)
        return fh.read(2) == b"\n>"


def store(
    input_path,
    encoding: str,
    ingest_manifest_out,
    store_dir,
    block_size,
    seed: int,
    *,
    options: dict | None = None,
    collapse_duplicates: bool = False,
    metrics=(),
    backend="auto",
    dense_max=None,
    bounds: dict | None = None,
    after_pack: Callable[[Plan], None] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Plan:
    """stage.store, appending where the input grew at its end (above); the same files.

    Parameters
    ----------
    input_path, encoding, ingest_manifest_out, store_dir, block_size, seed, options,
    collapse_duplicates, metrics, backend, dense_max, bounds, after_pack
        As stage.store.
    say : callable, optional
        Given the one console line of what happened: an append (vectors appended, pairs to
        compute) or a store made in full though an earlier one was there, and why.

    Returns
    -------
    Plan
        With `segments` where vectors were appended: its `appended_tiles` are the ones to compute.
    """
    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    record = read_record(store_dir)
    settings = settings_of(encoding, options, stage.wants_collapse(encoding, collapse_duplicates), block_size, seed)
    why = _why_not(record, input_path, settings)
    if why is not None:
        if why:
            say(f"recomputing in full: {why}")
        made: list = []  # what the ingest made: its column counts and checksums, for the next append
        p = stage.store(
            input_path,
            encoding,
            ingest_manifest_out,
            store_dir,
            block_size,
            seed,
            options=options,
            collapse_duplicates=collapse_duplicates,
            metrics=metrics,
            backend=backend,
            dense_max=dense_max,
            bounds=bounds,
            on_ingest=made.append,
            # inside the store stage: a store made on the GPU computes its tiles while its
            # manifests wait for the input's SHA-256 (store/resident.py); the record after them
            after_pack=after_pack,
        )
        record_store(store_dir, ingest_manifest_out, settings, os.path.getsize(input_path), made[0])
        return p
    assert record is not None
    auto = {"metrics": metrics, "backend": backend, "dense_max": dense_max}
    size = os.path.getsize(input_path)
    p = _append(
        AppendJob(
            input_path, encoding, ingest_manifest_out, store_dir, record, settings, size, options, bounds, auto, say
        )
    )
    if after_pack is not None:
        after_pack(p)
    return p


def current_store(input_path, encoding: str, ingest_manifest_out, store_dir, block_size, seed: int, **given) -> None:
    """`genotile run`'s store of an alignment (store/reuse.current_store): kept where it is the one
    `store` made last from this input's content with these settings, else made by `store`
    (appending where the input grew at its end; the one line of `say` logged).

    Parameters
    ----------
    input_path, encoding, ingest_manifest_out, store_dir, block_size, seed
        As `store`.
    **given
        `store`'s keyword arguments (options, collapse_duplicates, metrics, backend, dense_max).
    """
    store_dir, options = Path(store_dir), given.get("options")
    settings = settings_of(
        encoding, options, stage.wants_collapse(encoding, given.get("collapse_duplicates", False)), block_size, seed
    )
    if not _kept(store_dir, ingest_manifest_out, input_path, options, settings):
        made = (input_path, encoding, ingest_manifest_out, store_dir, block_size, seed)
        store(*made, **given, say=lambda line: log.info("store (%s): %s", encoding, line))


def _kept(store_dir: Path, ingest_manifest, input_path, options, settings: dict) -> bool:
    """Whether `store_dir` holds, whole, the store `store` made last (its record written for its
    very manifest) with these settings, from the ingest beside it, of the input as it is now."""
    built = whole(store_dir, ingest_manifest, settings)
    if built is None:
        return False
    return os.path.isfile(input_path) and not differences(built.get("sources"), sources(input_path, options))


def whole(store_dir: Path, ingest_manifest, settings: dict) -> dict | None:
    """The store manifest of the store `store` made last in `store_dir` (its record written for
    its very manifest) with these settings, from the ingest beside it, its files all there; else
    None. Whether it is of the input as it is now is the caller's (`_kept`, store/listed.py)."""
    record = read_record(store_dir)
    if record is None or settings_changed(record, settings) is not None:
        return None
    built, ingested = stage.read_recorded(store_dir / "manifest.json"), stage.read_recorded(ingest_manifest)
    if built is None or ingested is None or not all((store_dir / f).exists() for f in stage.STORE_FILES):
        return None
    if (record.get("parts") or [{}])[-1].get("key") != part_key(built):
        return None
    if (built.get("input_sha256"), built.get("sources")) != (ingested.get("input_sha256"), ingested.get("sources")):
        return None
    return built


def record_store(store_dir: Path, ingest_manifest_out, settings: dict, size: int, made, links: bool = False) -> None:
    """The record of a store made in full from what its ingest made (`links`: as `_finish`)."""
    manifest = json.loads((store_dir / "manifest.json").read_text(encoding="utf-8"))
    ingested = json.loads(Path(ingest_manifest_out).read_text(encoding="utf-8"))
    _finish(store_dir, manifest, ingested, settings, size, _columns(made), _checks(made), links=links)


@dataclass(frozen=True)
class AppendJob:
    """An append's job: the grown input, the store's files and settings, the earlier record."""

    input_path: str | os.PathLike
    encoding: str
    ingest_manifest_out: str | os.PathLike
    store_dir: Path
    record: dict
    settings: dict
    size: int  # the grown input's bytes
    options: dict | None
    bounds: dict | None
    auto: dict  # stage.plan's keywords for `block_size: auto` (a plan made in full)
    say: Callable[[str], None]


def _append(job: AppendJob) -> Plan:
    """The store of the grown input, planned as the earlier plan plus a part of the new vectors:
    from the new records alone where the earlier store's encoding holds (store/extend.py), else
    from the whole grown input (`_reingest`: in full, saying why, where the grown input is not
    the earlier one with records added)."""
    old_size = job.record["input"]["size"]
    t0 = time.perf_counter()
    # the earlier bytes checked (their pieces on threads) and the grown file's SHA-256 (resumed
    # over the new bytes) beside the reading of the new records: `check_earlier`
    hashing = ThreadPoolExecutor(1, thread_name_prefix="genotile-prefix")
    hashes = hashing.submit(_checked, job.input_path, job.record["input"], job.size)
    hashing.shutdown(wait=False)
    before, why = extend.earlier(job.store_dir, job.record)
    new, why = extend.appended(job.input_path, old_size, before) if before is not None else (None, why)
    if before is not None and new is not None:
        p = _extend(job, before, new, hashes, t0)
        if p is not None:
            return p
    else:
        log.info("store: the whole grown input is read again: %s", why)
    return _reingest(job, hashes)


def _extend(job: AppendJob, before: extend.Earlier, new: extend.Appended, hashes, t0: float) -> Plan | None:
    """The grown store from the earlier one's files and the new records alone (store/extend.py);
    the same files as `_reingest` makes. None, with nothing written, where the earlier bytes
    changed, or the grown store outgrows the earlier blocks (`afresh`; then `_reingest` says so
    and makes the store in full)."""
    record = job.record
    n_old, n_fields = int(record["n_input"]), int(before.manifest["n_fields"])
    index, first = index_appended(record, n_old, new, job.settings["collapse"])
    checked = hashes.result()
    if not checked.earlier or checked.sha256 is None:
        return None
    t1 = time.perf_counter()
    ids, sha256 = [*before.manifest["ids"], *new.ids], checked.sha256
    m = alignment_manifest(job.input_path, FastaReader.kind, job.encoding, ids, n_fields, new.keep.size, sha256)
    # the input's digest is its pieces' (util/checksums.file_digest): not hashed again
    digest = None if checked.pieces is None else pieces_digest([bytes.fromhex(d) for d in checked.pieces])
    m["sources"] = sources(job.input_path, job.options, input_sha256=sha256, input_digest=digest)
    if digest is not None and checked.pieces is not None:  # a fingerprint that left them to this job
        complete_fingerprints(job.input_path, digest, [bytes.fromhex(d) for d in checked.pieces])
    if afresh(job, m, index) is not None:  # planned afresh from the whole grown input: `regrow` says so
        log.info("store: the whole grown input is read again: the store is planned afresh")
        return None
    keys = categorical_keys(NUCLEOTIDE.name, new.enc)
    grown = Grown(before.planes, new, index, first, keys, new.enc.layout, Checks.of(checked.state, checked.pieces))
    return grow(job, m, grown, (t0, t1))


@dataclass(frozen=True)
class Grown:
    """What an append made of its new vectors alone (`_extend`, or a list input's further files:
    store/listed.py), for `grow`.

    Attributes
    ----------
    earlier_planes : Path
        The earlier store's planes (its kept link: store/extend.py).
    new : extend.Appended or listed.NewSamples
        The new vectors: their IDs, `planes(rows)`, `distinct()`, `columns`, `earlier_enc`.
    index, first : numpy.ndarray
        Each input vector's store row, and the first new vector of each new row (`index_appended`).
    keys : dict
        The store manifest's keys of its encoding (store/pack.py).
    layout
        The grown store's plane layout (the earlier one's).
    checks : dict
        What the next append checks the input with (`Checks.of`; a list's files are in its
        ingest manifest's sources).
    """

    earlier_planes: Path
    new: Any
    index: np.ndarray
    first: np.ndarray
    keys: dict
    layout: Any
    checks: dict


def grow(job: "AppendJob", m: dict, grown: Grown, times: tuple[float, float]) -> Plan:
    """The grown store written from the earlier one's planes and the new vectors alone: the
    appended plan, the ingest manifest `m`, plan, planes (the earlier rows copied, or encoded
    again, then the new ones), the store manifest with its earlier parts, the record."""
    record, store_dir, new = job.record, job.store_dir, grown.new
    n_old, n = int(record["n_input"]), int(m["n_vectors"])
    t0, t1 = times
    if job.settings["collapse"]:
        record_distinct(m, None)  # the appended store's numbering: `_appended_plan`
    p, parts = _appended_plan(m, record, grown.index, n_old, job.bounds, job.say)
    write_record(job.ingest_manifest_out, m)
    write_plan(p, store_dir / "plan.json", store_dir / "perm.npy")
    t2 = time.perf_counter()
    old_rows = int(record["plan"]["n_vectors"])
    rows = grown.first[p.permutation()[old_rows:] - old_rows]  # the new vectors of the new store rows, in order
    extend.write_planes(store_dir / "planes.npy", grown.earlier_planes, new, rows, grown.layout.total_words)
    manifest = write_manifest(grown.keys, grown.layout, m, p, n, None)
    _with_parts(manifest, parts, p, n - n_old)
    write_record(store_dir / "manifest.json", manifest)
    log.info(
        "store stages (s): ingest %.3f (the %d new vectors), plan %.3f, pack %.3f",
        *(t1 - t0, n - n_old, t2 - t1, time.perf_counter() - t2),
    )
    links = ENCODINGS[job.encoding].source != "alignment"
    _finish(store_dir, manifest, m, job.settings, job.size, new.columns, grown.checks, links=links)
    return p


def index_appended(record: dict, n_old: int, new, collapse: bool) -> tuple[np.ndarray, np.ndarray]:
    """(each input vector's store row, the first new record of each new row) where the new
    records alone are read: the earlier vectors' rows as recorded, the new ones numbered after them
    by first occurrence among themselves (`_distinct_index`: the earlier groups are the same, the
    columns and their bases being the earlier ones)."""
    recorded = record.get("distinct_index")
    old = np.asarray(recorded, dtype=np.int64) if recorded is not None else np.arange(n_old)
    first, index = new.distinct() if collapse else (np.arange(len(new.ids)), np.arange(len(new.ids)))
    return np.concatenate([old, int(record["plan"]["n_vectors"]) + index]), first


def _reingest(job: AppendJob, hashes) -> Plan:
    """The grown store from an ingest of the whole grown input, planned as appended (or in
    full, saying why: `hashes`' SHA-256 of the earlier bytes changed, or the earlier records
    are not the first ones: `regrow`)."""
    t0 = time.perf_counter()
    codes = job.store_dir / "codes.partial.npy"
    try:
        made = stage.ingest(
            job.input_path,
            job.encoding,
            codes,
            job.ingest_manifest_out,
            collapse_duplicates=job.settings["collapse"],
            hold=True,
            **(job.options or {}),
        )
        why = None
        if not hashes.result().earlier:
            why = "the input's earlier bytes changed (an edit before the end, or records removed or reordered)"
        return regrow(job, made, why, t0)
    finally:
        codes.unlink(missing_ok=True)


def regrow(job: AppendJob, made, why: str | None, t0: float, links: bool = False) -> Plan:
    """The grown store from `made`, an ingest of the whole grown input (its manifest written),
    planned as appended: the earlier plan's blocks for the earlier vectors, the new ones after
    them, the earlier tiles kept (a pair's value is its two vectors'; the encoding may have
    changed). In full instead, saying why, where `why` (the earlier input changed) or the earlier
    vectors are not the first ones, or earlier identical vectors now differ; afresh, saying so,
    where the grown store outgrows the earlier plan's blocks (`afresh`). `links`: as `_finish`."""
    record, store_dir, settings = job.record, job.store_dir, job.settings
    m = made.manifest
    t1 = time.perf_counter()
    n_old = int(record["n_input"])
    if why is None and (m["n_vectors"] < n_old or ids_digest(m["ids"][:n_old]) != record["ids_sha256"]):
        why = "the earlier records are not the first ones of the input"
    index = None
    if why is None:
        index, why = _distinct_index(m, record, n_old)
    # the rows counted as the appended store numbers them (`index`), as `_extend` and a list's
    # further files count them: one decision whichever path read the new records
    outgrown = afresh(job, m, index) if index is not None else None  # (index: why is None)
    if why is not None or outgrown is not None:  # in full, from this ingest
        job.say(outgrown or f"recomputing in full: {why}")
        p = stage.plan(m, settings["block_size"], settings["seed"], bounds=job.bounds, **job.auto)
        parts: list[dict] = []
    else:
        assert index is not None
        p, parts = _appended_plan(m, record, index, n_old, job.bounds, job.say)
        write_record(job.ingest_manifest_out, m)
    write_plan(p, store_dir / "plan.json", store_dir / "perm.npy")
    t2 = time.perf_counter()
    manifest = stage.pack(
        made.stored,
        m,
        store_dir / "plan.json",
        store_dir / "perm.npy",
        store_dir / "planes.npy",
        store_dir / "manifest.json",
    )
    if _with_parts(manifest, parts, p, m["n_vectors"] - n_old):
        write_record(store_dir / "manifest.json", manifest)
    log.info("store stages (s): ingest %.3f, plan %.3f, pack %.3f", t1 - t0, t2 - t1, time.perf_counter() - t2)
    _finish(store_dir, manifest, m, settings, job.size, _columns(made), _checks(made), links=links)
    return p


def _appended_plan(m: dict, record: dict, index: np.ndarray, n_old: int, bounds, say) -> tuple[Plan, list[dict]]:
    """The appended plan of the grown input (the earlier plan, then a part of the new vectors'
    rows) and the earlier parts its store records; `m`'s identical vectors set to `index`'s,
    the append said."""
    old_plan = Plan.from_json(record["plan"])
    rows = int(index.max(initial=-1)) + 1 if index.size else 0
    new_rows = rows - old_plan.n_vectors
    segments = old_plan.segments + ((new_rows,) if new_rows else ())
    collapsed = rows < index.size
    for key in ("distinct_index", "n_distinct"):
        m.pop(key, None)
    if collapsed:
        m["distinct_index"], m["n_distinct"] = index.tolist(), rows
    p = Plan(rows, old_plan.block_size, old_plan.seed, n_input=index.size if collapsed else 0, segments=segments)
    if bounds is not None:
        check_plan(p.input_vectors, **bounds)
    parts = list(record["parts"]) if new_rows else list(record["parts"][:-1])
    n_new = m["n_vectors"] - n_old
    if n_new:
        pairs, every = n_new * n_old + n_new * (n_new - 1) // 2, p.input_vectors * (p.input_vectors - 1) // 2
        say(
            f"{n_new} vectors appended to {n_old}: {pairs:,} pairs to compute (of {every:,}), "
            f"{len(p.appended_tiles())} of {len(p.tiles())} tiles; the earlier tiles are kept"
        )
    return p, parts


def _with_parts(manifest: dict, parts: list[dict], p: Plan, n_new: int) -> bool:
    """The store manifest given the earlier parts whose tiles are accepted (written then, before
    any tile reads it); False where there are none."""
    if not parts[: len(p.segments)]:
        return False
    manifest["appended"] = {"parts": parts[: len(p.segments)], "vectors": n_new}
    return True


def _columns(made) -> ColumnCounts | None:
    """What an ingest kept of its columns for the next append (Ingested.columns: a nucleotide
    alignment's), else None."""
    return made.columns


def _checks(made) -> dict:
    """What an ingest kept of its input's checksums for the next append's check (Ingested's
    sha256_state and pieces: the store job's ingest of a FASTA file), as recorded."""
    return Checks.of(made.sha256_state, made.pieces)


def _checked(path, recorded: dict, size: int) -> Checks:
    """`check_earlier`, its time and how it checked logged in one line."""
    t0 = time.perf_counter()
    checked = check_earlier(path, recorded, size)
    log.info(
        "store: the earlier %s bytes checked in %.3f s (%s): %s",
        f"{int(recorded['size']):,}",
        time.perf_counter() - t0,
        checked.how,
        "the same" if checked.earlier else "changed",
    )
    return checked


def _finish(
    store_dir: Path,
    manifest: dict,
    ingest_manifest: dict,
    settings: dict,
    size: int,
    columns,
    checks: dict,
    links: bool = False,
) -> None:
    """The append record of the store just made, written last (with what the next append reads
    in place of this input, store/extend.py, and checks its earlier bytes with, `Checks.of`),
    then the earlier stores' kept files removed. `links`: the store's files kept without counts
    (a genotype list's, extend.keep)."""
    kept = extend.keep(store_dir, columns, links=links)
    _record(store_dir / RECORD, manifest, ingest_manifest, settings, size, kept, checks)
    extend.forget(store_dir, None if kept is None else kept["token"])


def _distinct_index(m: dict, record: dict, n_old: int) -> tuple[np.ndarray | None, str | None]:
    """Each input vector's store row in the appended store: the earlier vectors' as recorded, the
    appended ones numbered after them by first occurrence among themselves (a copy of an earlier
    vector is a row of its own); or why not (earlier copies that differ in the grown columns)."""
    n = int(m["n_vectors"])
    grown = np.asarray(m["distinct_index"], dtype=np.int64) if "distinct_index" in m else np.arange(n)
    recorded = record.get("distinct_index")
    old = np.asarray(recorded, dtype=np.int64) if recorded is not None else np.arange(n_old)
    old_rows = int(record["plan"]["n_vectors"])
    if old.shape != (n_old,):
        return None, "the earlier store's record of identical vectors does not match its input"
    # each earlier vector's grown row must be its recorded group's first's: groups only split
    _, first = np.unique(old, return_index=True)
    if not np.array_equal(grown[:n_old], grown[first[old]]):
        return None, "earlier identical sequences differ at a column the new ones made variable"
    _, new_first, new_inverse = np.unique(grown[n_old:], return_index=True, return_inverse=True)
    rank = np.empty(new_first.size, dtype=np.int64)
    rank[np.argsort(new_first, kind="stable")] = np.arange(new_first.size)  # by first occurrence
    return np.concatenate([old, old_rows + rank[new_inverse.ravel()]]), None
