"""What a store is computed from: the input's content, the reader's options and the content of
the option files (`samples:` and `regions:` files, a VCF's .tbi/.csi index).

`sources(input, options)` describes them (SHA-256 and size of every file, the options as
given); the ingest records it in its manifest and the pack copies it into the store's, so a
later run can tell what changed (`differences`) whatever the files' modification times say:
`genotile run` recomputes a store whose recorded sources differ, and the workflow keeps a
small fingerprint file per dataset (`write_fingerprint`) whose modification time moves only
when the content does, as an input of the store rule. The store job then takes its input's
digest from that fingerprint while the input's stat is the one recorded with it
(`recorded_digest`), rather than hashing the input once more.

An input that is a directory (a VCF-Zarr store) counts as the content of its files: its size
their sizes' sum, its SHA-256 and digest ones over each file's path and content (`content_sha256`,
`content_digest`), its stat every file's; an edit of any file changes them.
"""

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

from genotile.util.atomic import write_text
from genotile.util.checksums import file_digest, file_pieces, file_sha256, file_stat, pieces_digest


def index_files(path) -> list[Path]:
    """The tabix / CSI indexes beside a VCF/BCF (htslib looks for these names)."""
    return [p for p in (Path(f"{path}.tbi"), Path(f"{path}.csi")) if p.is_file()]


def option_files(options: dict | None) -> dict[str, Path]:
    """{option: path} of the options that name a file (`samples:` list file, `regions:` file)."""
    out = {}
    for key in ("samples", "regions"):
        value = (options or {}).get(key)
        if isinstance(value, (str, os.PathLike)) and os.path.isfile(value):
            out[key] = Path(value)
    return out


def fileset_files(path) -> dict[str, Path]:
    """{"plink .bim": path, ...}: the files besides the input that its reader reads with it (a
    PLINK fileset's, named by its .bed / .pgen; io/readers/base.py `Reader.companions`)."""
    from genotile.io.readers.base import reader_for

    reader = reader_for(path)
    return {} if reader is None else reader.companions(path)


def tree_files(path) -> list[Path]:
    """The files under a directory, in the order of their paths relative to it (as POSIX)."""
    root = Path(path)
    return sorted((p for p in root.rglob("*") if p.is_file()), key=lambda p: p.relative_to(root).as_posix())


def _over_tree(path, of_file) -> str:
    """A SHA-256 over a directory's files: each one's relative path, size and `of_file` digest."""
    root = Path(path)
    digest = hashlib.sha256()
    for p in tree_files(root):
        digest.update(f"{p.relative_to(root).as_posix()}\0{p.stat().st_size}\0{of_file(p)}\n".encode())
    return digest.hexdigest()


def content_sha256(path) -> str:
    """The SHA-256 of an input: of the file (`sha256sum`), or over a directory's files."""
    return _over_tree(path, file_sha256) if os.path.isdir(path) else file_sha256(path)


def content_digest(path) -> str:
    """The content digest of an input (util/checksums.file_digest): of the file, or over a directory's files."""
    if os.path.isdir(path):
        return _over_tree(path, file_digest)
    ahead = hashed_ahead(path)
    return file_digest(path) if ahead is None else pieces_digest(ahead)


def content_size(path) -> int:
    """Bytes of an input: the file's, or the sum of a directory's files'."""
    return sum(p.stat().st_size for p in tree_files(path)) if os.path.isdir(path) else os.path.getsize(path)


def _plain(value):
    """An option as JSON: paths as strings, tuples as lists."""
    if isinstance(value, os.PathLike):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _file(path, sha256: str | None = None, digest: str | None = None, pending: bool = False) -> dict:
    """Size and content digest (pieces hashed on threads), `digest` where it is known; the
    SHA-256 as well where it is known already (a store's ingest computed it). `pending`: the
    digest left out (None) where it is not known, not hashed (a workflow fingerprint of an input
    whose content changed for certain: `write_fingerprint`)."""
    digest = digest or (None if pending else content_digest(path))
    return {"size": content_size(path), "digest": digest, **({"sha256": sha256} if sha256 else {})}


# Where the workflow keeps its fingerprints (rules/common.smk writes them as the workflow is
# parsed), relative to the directory its jobs run in.
FINGERPRINTS = Path(".snakemake/genotile/sources")


def recorded_digest(path, records=FINGERPRINTS) -> str | None:
    """The digest of `path` a workflow fingerprint (`write_fingerprint`, in `records`) recorded
    as its input's, where the file's stat (device, inode, size, mtime, ctime) is still the one
    recorded with it (as write_fingerprint trusts it); else None.

    The fingerprints were written when the workflow was parsed, the input hashed then: the store
    job need not hash it again (a second of CPU on a few GB)."""
    found = _recorded(path, records)
    return None if found is None else found[1]["digest"]


def recorded_pieces(path, records=FINGERPRINTS) -> list[str] | None:
    """The SHA-256s (hex) of `path`'s pieces (util/checksums.file_pieces) a workflow fingerprint
    recorded with its digest, trusted as `recorded_digest` is (they are the digest's: checked);
    else None. What the store job keeps for an append's check of the earlier bytes
    (store/append.py), without hashing the input once more."""
    found = _recorded(path, records)
    if found is None:
        return None
    pieces = found[0].get("pieces")
    if not isinstance(pieces, list) or not all(isinstance(p, str) and len(p) == 64 for p in pieces):
        return None
    try:
        return pieces if pieces_digest([bytes.fromhex(p) for p in pieces]) == found[1]["digest"] else None
    except ValueError:
        return None


def _recorded(path, records) -> tuple[dict, dict] | None:
    """(the fingerprint, its input's record) of the fingerprint in `records` recorded for
    `path` as its stat is now, else None."""
    for _, record, recorded in _fingerprints_of(path, records, pending=False):
        return record, recorded
    return None


def _fingerprints_of(path, records, pending: bool) -> Iterator[tuple[Path, dict, dict]]:
    """(file, fingerprint, its input's record) of each fingerprint in `records` recorded for
    `path` as its stat is now: with a digest, or (`pending`) with its digest left pending."""
    try:
        key = _stat_key(path)
        candidates = sorted(Path(records).glob("*.json"))
    except OSError:
        return
    for candidate in candidates:
        record = _parsed(candidate)
        if not isinstance(record, dict) or not isinstance(record.get("stat"), dict):
            continue
        recorded = (record.get("sources") or {}).get("input") if isinstance(record.get("sources"), dict) else None
        if not isinstance(recorded, dict) or "digest" not in recorded:
            continue
        if (recorded["digest"] is not None) if pending else not isinstance(recorded["digest"], str):
            continue
        if record["stat"].get(recorded.get("path")) == key and recorded.get("size") == key[2]:
            yield candidate, record, recorded


def _parsed(candidate: Path):
    """The JSON of a fingerprint file, parsed once a process while its stat
    (util/checksums.file_stat) holds: a list input's store job looks each of its files up among every fingerprint
    (`_fingerprints_of`), N files x N fingerprints of a list grown by a file a day; None where
    it cannot be read."""
    try:
        key = file_stat(candidate)
    except OSError:
        return None
    kept = _PARSED.get(str(candidate))
    if kept is not None and kept[0] == key:
        return kept[1]
    try:
        record = json.loads(candidate.read_text())
    except (OSError, ValueError):
        return None
    _PARSED[str(candidate)] = (key, record)
    return record


_PARSED: dict[str, tuple[list, object]] = {}  # `_parsed`: a fingerprint's path -> (its stat, its JSON)


# a file's pieces being hashed since its store job started (`hash_ahead`): its absolute path ->
# (its stat then, the pieces' future)
_AHEAD: dict[str, tuple[list, Future]] = {}


def hash_ahead(path, records=FINGERPRINTS) -> None:
    """Start hashing the pieces of the file at `path` on threads, where a workflow fingerprint in
    `records` left its digest pending for the file as it is now (`write_fingerprint`'s `defer`):
    the store job that reruns on it needs them (its digest; an append's check of the earlier
    bytes), and starting them first thing in the job hashes them while its modules are imported
    (scripts/store.py). What hashes the file later in the process takes them (`input_pieces`,
    `content_digest`, store/append.py), where its stat is still the one they were started on."""
    if os.path.abspath(path) in _AHEAD or not os.path.isfile(path):
        return
    if not any(_fingerprints_of(path, records, pending=True)):
        return
    import threading

    key = _stat_key(path)
    pieces: Future = Future()

    def run() -> None:
        try:
            pieces.set_result(file_pieces(path))
        except BaseException as error:  # noqa: BLE001 -- handed to whoever waits for the pieces
            pieces.set_exception(error)

    # a daemon: a job that fails before it needs the pieces exits at once, not after the whole
    # file is hashed (an executor's thread is waited for at exit; helper-37's review)
    threading.Thread(target=run, name="genotile-ahead", daemon=True).start()
    _AHEAD[os.path.abspath(path)] = (key, pieces)


def hashed_ahead(path) -> list[bytes] | None:
    """The pieces `hash_ahead` hashed for `path` (waiting for them), where the file's stat is
    still the one they were started on; else None."""
    started = _AHEAD.get(os.path.abspath(path))
    if started is None:
        return None
    key, future = started
    try:
        pieces = future.result()
        return pieces if _stat_key(path) == key else None
    except OSError:
        return None


def input_pieces(path) -> list[bytes]:
    """util/checksums.file_pieces of the file at `path`, those `hash_ahead` hashed where it did."""
    ahead = hashed_ahead(path)
    return file_pieces(path) if ahead is None else ahead


def sources(
    input_path,
    options: dict | None = None,
    input_sha256: str | None = None,
    input_digest: str | None = None,
    pending: bool = False,
) -> dict:
    """{"input": {path, size, digest[, sha256]}, "options": {...}, "files": {name: {size, digest}}}.

    `files` holds the option files and, where `regions:` is given (the only case the index
    is read), the VCF's index files. `input_sha256`, `input_digest`: the input's checksum and
    digest (`file_digest`) when already known; `pending`: the input's digest None where it is
    not known, not hashed (`write_fingerprint`).
    """
    options = {k: _plain(v) for k, v in sorted((options or {}).items()) if v is not None}
    digest = input_digest or (recorded_digest(input_path) if pending else known_digest(input_path))
    files = {key: _file(p) for key, p in option_files(options).items()}
    files.update({key: _file(p) for key, p in fileset_files(input_path).items()})
    if options.get("regions") is not None:
        files.update({f"index {p.suffix[1:]}": _file(p) for p in index_files(input_path)})
    return {
        "input": {
            "path": str(input_path),
            **_file(input_path, input_sha256, digest, pending),
        },
        "options": options,
        "files": files,
    }


def known_digest(path) -> str:
    """An input's content digest: its workflow fingerprint's, else hashed here, and then filled
    into the fingerprints that left it pending, so that the next run hashes only a new or
    changed file."""
    digest = recorded_digest(path)
    if digest is None:
        digest = content_digest(path)
        complete_fingerprints(path, digest)
    return digest


def _content(record) -> tuple | None:
    return None if not isinstance(record, dict) else (record.get("size"), record.get("digest"))


def differences(recorded, current: dict) -> list[str]:
    """What differs between two `sources` records, in words ([] when they agree)."""
    if not isinstance(recorded, dict):
        return ["the record of the inputs (none)"]
    out = []
    old, new = recorded.get("input") or {}, current["input"]
    if old.get("path") != new["path"]:
        out.append(f"input path ({old.get('path')} -> {new['path']})")
    if (old.get("digest"), old.get("size")) != (new["digest"], new["size"]):
        out.append(
            f"input content of {new['path']} (digest {str(old.get('digest'))[:12]} -> {str(new['digest'])[:12]})"
        )
    old_opts, new_opts = recorded.get("options") or {}, current["options"]
    for key in sorted(set(old_opts) | set(new_opts)):
        if old_opts.get(key) != new_opts.get(key):
            out.append(f"option {key} ({old_opts.get(key)!r} -> {new_opts.get(key)!r})")
    old_files, new_files = recorded.get("files") or {}, current["files"]
    for key in sorted(set(old_files) | set(new_files)):
        if _content(old_files.get(key)) != _content(new_files.get(key)):
            out.append(f"content of the {key} file")
    return out


def stat_of(path) -> list | None:
    """`_stat_key` of a file or directory (None where it is gone): what says it was not written to
    between two looks."""
    try:
        return _stat_key(path)
    except OSError:
        return None


def stat_of_read(files, options: dict | None) -> list:
    """`stat_of` of every file a store reads: `files`, then their companions (a PLINK fileset's
    .bim/.fam, .pvar/.psam) and the option files (`samples:`, `regions:`). Taken before the read
    and after it: a file written to in between may not be what the store holds, so the store
    records nothing to append to (store/listed.py `fresh`, store/query_append.py `write`)."""
    besides = [p for f in files for p in fileset_files(f).values()] + list(option_files(options).values())
    return [stat_of(f) for f in (*files, *besides)]


def _stat_key(path) -> list:
    """Device, inode, size, mtime and ctime of a file; of a directory, its device and inode,
    its files' size, then each file's relative path, size, mtime and ctime."""
    # the cache below is trusted only while all of these stay the same (util/checksums.file_stat)
    if not os.path.isdir(path):
        return file_stat(path)
    st = os.stat(path)
    files = [(p.relative_to(path).as_posix(), p.stat()) for p in tree_files(path)]
    each = [[name, f.st_size, f.st_mtime_ns, f.st_ctime_ns] for name, f in files]
    return [st.st_dev, st.st_ino, sum(f.st_size for _, f in files), each]


def write_fingerprint(out, input_path, options: dict | None = None, defer: bool = False) -> Path:
    """Keep `out` (a JSON of `sources`) current; rewrite it (new mtime) only when content changed.

    The files are hashed only when their stat (device, inode, size, mtime, ctime) differs from
    the one recorded with the last hashes; when only the stat moved, the record is refreshed
    with `out`'s old modification time kept, so nothing downstream reruns.

    `defer`: where the input's content changed for certain without hashing it (no earlier
    record, or the input's path or size differ from the recorded ones: records appended to a
    FASTA), its digest and pieces are left pending (None) rather than hashed here, as the workflow
    is parsed: the record is rewritten (new mtime) all the same, the store job that reruns on it
    hashes the input beside its own work (store/ingest.py, store/append.py: as with no
    fingerprint) and fills them in (`complete_fingerprints`). The workflow's dataset inputs:
    an append's 6 GB took ~0.7 s of the parse on 16 cores, before any job could start.
    """
    out = Path(out)
    watched = [Path(input_path), *option_files(options).values(), *fileset_files(input_path).values()]
    if options and options.get("regions") is not None:
        watched += index_files(input_path)
    stats = {str(p): _stat_key(p) for p in watched}
    try:
        old = json.loads(out.read_text())
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and old.get("stat") == stats:
        return out
    pending = defer and _changed_for_certain(old, input_path)
    # a file's pieces kept with its digest (theirs): the store job keeps them for appends; those
    # another fingerprint beside this one recorded for the file as it is now are taken (a query's
    # FILE, another dataset's input: hashed once, not again at the parse that adds the query)
    pieces = None
    if os.path.isfile(input_path):
        known = recorded_pieces(input_path, out.parent)
        if known is not None:
            pieces = [bytes.fromhex(p) for p in known]
        elif not pending:
            pieces = file_pieces(input_path)
            # another fingerprint beside this one that left them pending (the same file as
            # another dataset's input, deferred just before) takes them too
            complete_fingerprints(input_path, pieces_digest(pieces), pieces, out.parent)
    current = sources(
        input_path, options, input_digest=None if pieces is None else pieces_digest(pieces), pending=pending
    )
    record = {
        "sources": current,
        "stat": stats,
        **({"pieces": [p.hex() for p in pieces]} if pieces is not None else {}),
    }
    if isinstance(old, dict) and not differences(old.get("sources"), current):
        mtime = out.stat().st_mtime_ns
        write_text(out, json.dumps(record, indent=1) + "\n")
        os.utime(out, ns=(mtime, mtime))
    else:
        write_text(out, json.dumps(record, indent=1) + "\n")
    return out


def _changed_for_certain(old, input_path) -> bool:
    """Whether the input's content differs from what the fingerprint `old` recorded, its digest
    unseen: no record, or another path or size."""
    recorded = (old.get("sources") or {}).get("input") if isinstance(old, dict) else None
    if not isinstance(recorded, dict):
        return True
    return recorded.get("path") != str(input_path) or recorded.get("size") != content_size(input_path)


def complete_fingerprints(path, digest: str, pieces: list[bytes] | None = None, records=FINGERPRINTS) -> None:
    """Fill in the digest (and a file's pieces) of the fingerprints in `records` that left them
    pending for `path` (`write_fingerprint`'s `defer`), where its stat is still the one recorded
    there: unchanged since they were written, the content hashed since is the recorded one. Their
    modification time is kept, so nothing reruns; later parses and store jobs take the digest
    from them as from any (`recorded_digest`, `recorded_pieces`), and a later stat change of the
    same content (`touch`) is told apart by it. What the store job calls once it has hashed its
    input (store/ingest.py, store/append.py)."""
    if pieces is not None and pieces_digest(pieces) != digest:
        pieces = None
    for candidate, record, recorded in _fingerprints_of(path, records, pending=True):
        recorded["digest"] = digest
        if pieces is not None and os.path.isfile(path):
            record["pieces"] = [p.hex() for p in pieces]
        try:
            mtime = candidate.stat().st_mtime_ns
            write_text(candidate, json.dumps(record, indent=1) + "\n")
            os.utime(candidate, ns=(mtime, mtime))
        except OSError:
            continue


def recorded_count(out, input_path, count: Callable[[Path], int]) -> int:
    """`count(input_path)` (a count that takes a pass over the input: a FASTA's records), kept in
    the input's fingerprint `out` (`write_fingerprint`) while the input's stat is the one recorded
    there: counted again only once the input changed (the record is then written anew, without it).

    Added to a record that lacks it with the record's modification time kept, so nothing
    downstream reruns; where there is no current record, counted and not kept."""
    out, path = Path(out), Path(input_path)
    try:
        record = json.loads(out.read_text())
    except (OSError, ValueError):
        record = None
    current = (
        isinstance(record, dict)
        and isinstance(record.get("stat"), dict)
        and record["stat"].get(str(path)) == _stat_key(path)
    )
    if current and isinstance(record.get("count"), int):
        return record["count"]
    n = count(path)
    if current:
        mtime = out.stat().st_mtime_ns
        write_text(out, json.dumps(record | {"count": n}, indent=1) + "\n")
        os.utime(out, ns=(mtime, mtime))
    return n
