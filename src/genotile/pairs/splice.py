"""pairs.tsv.gz of an append rerun: the earlier merge's text with the new pairs' rows spliced in
(issue 27).

Rows are sorted by id1 then id2 in input order, and appended vectors come after every earlier
one: a pair of a new tile (an earlier vector i and a new one j, or two new ones) goes after every
earlier row of id1 = i and before those of i + 1, and a pair of two new vectors after every
earlier row. So the grown file's text is the earlier text, opened at the end of each id1 group
that gains rows, with the new rows (formatted alone) put there. Cut into gzip blocks of as many
rows as write_tsv_gz cuts (io/tsvgz.rows_per_block: each column's widest text, the earlier
file's recorded and the new rows' own), its gzip is the full merge's, byte for byte
(io/pgzip.py: the bytes depend on the blocks' text and the level alone).

What is kept beside the store (Snakemake deletes pairs.tsv.gz before the merge runs again):
`merged-<metric>-<token>.tsv.gz`, a copy of the pairs.tsv.gz written (a reflink where the file
system shares blocks; not a hard link, which would make `gunzip pairs.tsv.gz` refuse the file and
its deletion free nothing); `merged-<metric>-<token>.groups.npy`,
where each id1's rows end, in rows and in bytes of text (so the text is never parsed for them);
and `merged-<metric>.json`, written last, which names them: the tile files the text was merged
from (name and digest), the settings, the IDs' and the collapsed duplicates' digests, each value
column's width and dtype, each gzip block's sizes and SHA-256 (checked, then inflated on
threads), the groups file's SHA-256. Other tokens' files go once the record is written, so a
merge killed at any point leaves a record whose files are whole.

The splice applies only where the text is provably the merge of tiles that are all still there
with the same digests, under the same settings, IDs and duplicates, and every other tile's pairs
(expanded, where duplicates are collapsed) have id2 among the vectors after those (checked);
otherwise the caller runs the full merge (`NotKept`).
"""

import hashlib
import io
import json
import logging
import os
import secrets
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.errors import GenotileError
from genotile.io import pgzip
from genotile.io.tsvgz import COMPRESSLEVEL, TEXT_FORMAT
from genotile.util.atomic import atomic_path, write_record, written
from genotile.util.cpus import usable_cpus
from genotile.version import __version__

log = logging.getLogger("genotile")

PREFIX = "merged-"  # merged-<metric>.json and merged-<metric>-<token>.*, in the store's folder
INFLATE_THREADS = 16  # threads checking and inflating the kept blocks, at most


class NotKept(Exception):
    """The kept text does not give this merge (the reason); the full merge runs."""


@dataclass(frozen=True)
class Kept:
    """The earlier merge's text as kept: its record, and the vectors it is over."""

    store_dir: Path
    record: dict
    n: int

    @property
    def tiles(self) -> dict[str, str]:
        """Tile file name -> the digest of the file merged into the text."""
        return self.record["tiles"]


def record_path(store_dir, metric: str) -> Path:
    return Path(store_dir) / f"{PREFIX}{metric}.json"


def _kept_path(store_dir, metric: str, token: str, name: str) -> Path:
    return Path(store_dir) / f"{PREFIX}{metric}-{token}.{name}"


def _settings(expect: dict | None) -> dict:
    """The tile settings as JSON gives them back (the record's form)."""
    return json.loads(json.dumps(expect or {}, sort_keys=True))


def _ids_digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def _distinct(distinct_index, n: int) -> np.ndarray:
    """Each of the n vectors' distinct row (itself where nothing is collapsed)."""
    if distinct_index is None:
        return np.arange(n, dtype=np.int64)
    return np.asarray(distinct_index, dtype=np.int64)


def _index_digest(index: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(index, dtype="<i8").tobytes()).hexdigest()


LAYOUT = 1  # of the record: bumped with any change to what it holds or how it is read


def identity(metric, expect, ids: list[str], distinct_index, n_distinct: int) -> dict:
    """What the text written now is a function of, besides its tiles (the record's head)."""
    return {
        "layout": LAYOUT,
        "text_format": TEXT_FORMAT,
        "genotile": __version__,
        "metric": metric.name,
        "columns": list(metric.columns),
        "settings": _settings(expect),
        "n": len(ids),
        "ids": _ids_digest(ids),
        "n_distinct": int(n_distinct),
        "distinct": _index_digest(_distinct(distinct_index, len(ids))),
    }


def load(store_dir, metric, expect, ids: list[str], distinct_index) -> Kept | None:
    """The kept text of the last merge of this metric, where its record matches the current
    settings, IDs and duplicates (for its first `n` vectors); else None, saying why in the log."""
    try:
        record = json.loads(record_path(store_dir, metric.name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        why = _mismatch(record, metric, expect, ids, distinct_index)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        why = f"its record is damaged ({exc!r})"
    if why:
        log.info("merge: the earlier pairs.tsv.gz kept beside the store is not used: %s", why)
        return None
    return Kept(Path(store_dir), record, int(record["n"]))


def _mismatch(record: dict, metric, expect, ids: list[str], distinct_index) -> str:
    """Why the record's text is not the merge of the current run's first vectors ('' if it is)."""
    if not isinstance(record, dict) or record.get("layout") != LAYOUT:
        return "a record of another layout"
    if record.get("text_format") != TEXT_FORMAT:
        return "rows formatted otherwise then (tsvgz.TEXT_FORMAT)"
    if record.get("genotile") != __version__:
        return f"written by genotile {record.get('genotile')}"
    if record["metric"] != metric.name or record["columns"] != list(metric.columns):
        return "another metric"
    if record["settings"] != _settings(expect):
        return f"other settings ({record['settings']})"
    n = int(record["n"])
    if n > len(ids) or record["ids"] != _ids_digest(ids[:n]):
        return "other IDs before the appended ones"
    index = _distinct(distinct_index, len(ids))
    # the earlier vectors' distinct rows the same, and no later vector a copy of one of them:
    # the earlier tiles' pairs then expand to the same earlier pairs, and to no other
    if record["distinct"] != _index_digest(index[:n]) or (index[n:] < int(record["n_distinct"])).any():
        return "other identical vectors collapsed"
    return _shape(record, len(metric.columns))


def _shape(record: dict, n_columns: int) -> str:
    """What is wrong with the parts of the record the splice reads ('' if nothing): a record
    damaged but still JSON gives the full merge, not a traceback."""
    tiles, cells, text, groups = record["tiles"], record["cells"], record["text"], record["groups"]
    ok = (
        isinstance(record["token"], str)
        and isinstance(tiles, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in tiles.items())
        and len(cells["words"]) == n_columns == len(cells["kinds"])
        and all(isinstance(w, int) and w > 0 for w in cells["words"])
        and all(isinstance(k, str) for k in cells["kinds"])
        and isinstance(text["size"], int)
        and len(text["blocks"]) >= 1
        and all(len(b) == 3 and [type(x) for x in b] == [int, int, str] for b in text["blocks"])
        and isinstance(groups["sha256"], str)
    )
    return "" if ok else "its record is damaged"


def inflate(kept: Kept, room: int) -> np.ndarray:
    """The kept file's text after its header line, followed by `room` bytes for the caller:
    every gzip block's SHA-256 checked against the record and the blocks inflated on threads
    (zlib and hashlib release the GIL). Raises NotKept where the file is not the recorded one."""
    text = kept.record["text"]
    blocks = [(int(t), int(p), str(d)) for t, p, d in text["blocks"]]
    path = _kept_path(kept.store_dir, kept.record["metric"], kept.record["token"], "tsv.gz")
    head = len(pgzip.header(COMPRESSLEVEL))
    packed_at = np.cumsum([head] + [p for _, p, _ in blocks])
    text_at = np.cumsum([0] + [t for t, _, _ in blocks[1:]])
    buf = np.empty(int(text_at[-1]) + room, dtype=np.uint8)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise NotKept(f"its text {path.name} is not there ({exc.strerror})") from None
    try:
        if os.fstat(fd).st_size != int(text["size"]):
            raise NotKept(f"its text {path.name} is not the size recorded")

        def one(k: int) -> bool:
            size, packed, digest = blocks[k]
            data = os.pread(fd, packed, int(packed_at[k]))
            if len(data) != packed or hashlib.sha256(data).hexdigest() != digest:
                return False
            if k == 0:  # the header line's block: checked, not part of the rows' text
                return True
            plain = pgzip.inflate(data)
            if len(plain) != size:
                return False
            buf[text_at[k - 1] : text_at[k]] = np.frombuffer(plain, dtype=np.uint8)
            return True

        with ThreadPoolExecutor(usable_cpus(INFLATE_THREADS), thread_name_prefix="genotile-inflate") as pool:
            whole = all(pool.map(one, range(len(blocks))))
    finally:
        os.close(fd)
    if not whole:
        raise NotKept(f"its text {path.name} is not the file recorded (a block's SHA-256 differs)")
    return buf


def groups(kept: Kept, text_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows_end, bytes_end), (n + 1,) int64 each: id1 = i's rows of the kept text are rows
    rows_end[i]..rows_end[i + 1] - 1, its bytes bytes_end[i]..bytes_end[i + 1] - 1 (after the
    header line); checked against the record's SHA-256 and the text's size."""
    g = kept.record["groups"]
    path = _kept_path(kept.store_dir, kept.record["metric"], kept.record["token"], "groups.npy")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise NotKept(f"its groups {path.name} are not there ({exc.strerror})") from None
    if hashlib.sha256(data).hexdigest() != g["sha256"]:
        raise NotKept(f"its groups {path.name} are not the file recorded")
    ends = np.load(io.BytesIO(data), allow_pickle=False)
    if ends.shape != (2, kept.n + 1) or ends.dtype != np.int64 or int(ends[1, -1]) != text_bytes:
        raise NotKept(f"its groups {path.name} do not fit its text")
    return ends[0], ends[1]


class Splice:
    """The grown text: id1 = i's kept rows, then its new rows, for every i.

    `buf` holds the kept text (`old_bytes_end[-1]` bytes) and then the new rows' text; new row k
    ends at byte new_row_ends[k] of the new text; the new rows are sorted by id1 (`a`)."""

    def __init__(self, buf, old_rows_end, old_bytes_end, a: np.ndarray, new_row_ends: np.ndarray, n: int):
        self.buf, self.old_rows_end, self.old_bytes_end = buf, old_rows_end, old_bytes_end
        self.old_bytes = int(old_bytes_end[-1])
        self.new_row_ends = new_row_ends
        n_old = old_rows_end.size - 1
        spread = np.minimum(np.arange(n + 1), n_old)  # the kept groups' ends, n_old on for the new ids
        new_rows = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(a, minlength=n), out=new_rows[1:])
        new_bytes = np.concatenate([[0], new_row_ends])[new_rows]
        self.new_rows_start, self.new_bytes_start = new_rows, new_bytes  # new rows of id1 < i
        self.rows_end = old_rows_end[spread] + new_rows  # the grown text's groups
        self.bytes_end = old_bytes_end[spread] + new_bytes
        self._pieces(np.flatnonzero(np.diff(new_rows)), n_old)

    def _pieces(self, gaining: np.ndarray, n_old: int) -> None:
        """The grown text as alternate pieces of `buf`: the kept text up to the end of a group
        gaining rows, then that group's new rows; the kept text's rest last."""
        cut = self.old_bytes_end[np.minimum(gaining + 1, n_old)]
        old_start = np.concatenate([[0], cut])
        old_stop = np.concatenate([cut, [self.old_bytes]])
        new_start = self.old_bytes + self.new_bytes_start[gaining]
        new_stop = self.old_bytes + self.new_bytes_start[gaining + 1]
        start = np.empty(2 * gaining.size + 1, dtype=np.int64)
        stop = np.empty_like(start)
        start[0::2], stop[0::2], start[1::2], stop[1::2] = old_start, old_stop, new_start, new_stop
        self.piece_start = start
        self.piece_at = np.concatenate([[0], np.cumsum(stop - start)])  # each piece's place in the grown text

    @property
    def n_rows(self) -> int:
        return int(self.rows_end[-1])

    def byte_of_row(self, r: int) -> int:
        """Where row r of the grown text starts (its size for r = n_rows)."""
        if r >= self.n_rows:
            return int(self.bytes_end[-1])
        g = int(np.searchsorted(self.rows_end, r, side="right")) - 1  # r's id1 group
        j = r - int(self.rows_end[g])  # its row j: the group's kept rows first, then its new ones
        start = int(self.bytes_end[g])
        n_old = self.old_rows_end.size - 1
        kept_rows = int(self.old_rows_end[g + 1] - self.old_rows_end[g]) if g < n_old else 0
        if j >= kept_rows:
            kept_bytes = int(self.old_bytes_end[g + 1] - self.old_bytes_end[g]) if g < n_old else 0
            k = int(self.new_rows_start[g]) + j - kept_rows
            new_at = int(self.new_row_ends[k - 1]) if k else 0
            return start + kept_bytes + new_at - int(self.new_bytes_start[g])
        if j == 0:
            return start
        lo, hi = int(self.old_bytes_end[g]), int(self.old_bytes_end[g + 1])
        newlines = np.flatnonzero(self.buf[lo:hi] == 10)  # the one group's text, no other
        return start + int(newlines[j - 1]) + 1

    def text(self, b0: int, b1: int) -> bytes:
        """Bytes b0..b1-1 of the grown text: the pieces over them, joined."""
        p0 = int(np.searchsorted(self.piece_at, b0, side="right")) - 1
        p1 = int(np.searchsorted(self.piece_at, b1, side="left"))
        at = self.piece_at[p0 : p1 + 1]
        lo = self.piece_start[p0:p1] + np.maximum(b0 - at[:-1], 0)
        hi = self.piece_start[p0:p1] + np.minimum(b1, at[1:]) - at[:-1]
        view = memoryview(self.buf)
        return b"".join([view[x:y] for x, y in zip(lo.tolist(), hi.tolist(), strict=True) if y > x])

    def blocks(self, rows: int) -> list:
        """Callables making each gzip block's text, `rows` rows a block (tsvgz.rows_per_block)."""
        cuts = [self.byte_of_row(r) for r in range(0, self.n_rows, rows)] + [int(self.bytes_end[-1])]
        return [(lambda b0=b0, b1=b1: self.text(b0, b1)) for b0, b1 in zip(cuts[:-1], cuts[1:], strict=True)]


def save(store_dir, head: dict, out_path, tiles: dict[str, str], columns: dict, ends, index: list) -> None:
    """Keep the pairs.tsv.gz just written for the next append's merge: a copy (`_copy`),
    its groups, then the record naming them (`head`: `identity`; `tiles`: file name -> digest;
    `columns`: each value column's words and text kind; `ends`: (rows_end, bytes_end); `index`:
    pgzip's blocks); then the earlier tokens' files removed. A file system that refuses costs
    the next append a full merge, nothing else (the earlier record stays, true of its files)."""
    store_dir = Path(store_dir)
    metric = head["metric"]
    token: str | None = secrets.token_hex(8)
    text = _kept_path(store_dir, metric, str(token), "tsv.gz")
    try:
        _copy(written(out_path), text)  # (its temporary file while its rename is held back: `genotile run`)
        groups = np.stack([np.asarray(e, dtype=np.int64) for e in ends])
        buf = io.BytesIO()
        np.save(buf, groups, allow_pickle=False)
        with atomic_path(_kept_path(store_dir, metric, str(token), "groups.npy")) as tmp:
            tmp.write_bytes(buf.getvalue())
        write_record(
            record_path(store_dir, metric),
            {
                **head,
                "token": token,
                "tiles": tiles,
                "cells": columns,
                "text": {"size": text.stat().st_size, "blocks": [list(b) for b in index]},
                "groups": {"sha256": hashlib.sha256(buf.getvalue()).hexdigest()},
            },
        )
    except (OSError, GenotileError) as exc:  # it only costs the next append a full merge
        log.info("merge: pairs.tsv.gz not kept for the next append (%s)", exc)
        token = None
    forget(store_dir, metric, token)


FICLONE = 0x40049409  # Linux's ioctl sharing a file's blocks (btrfs, XFS, ...)


def _copy(src: Path, dst: Path) -> None:
    """dst, a copy of src made whole under a temporary name: a reflink where the file system
    shares blocks (no bytes copied), else the kernel's copy (shutil.copyfile: sendfile)."""
    with atomic_path(dst) as tmp:
        try:
            import fcntl

            with open(src, "rb") as fin, open(tmp, "wb") as fout:
                fcntl.ioctl(fout.fileno(), FICLONE, fin.fileno())
        except (OSError, ImportError):
            shutil.copyfile(src, tmp)


def forget(store_dir, metric: str, token: str | None) -> None:
    """Remove this metric's kept files but `token`'s (every one where None and no record names
    them: a record naming a token keeps its files)."""
    store_dir = Path(store_dir)
    if token is None:
        try:
            token = json.loads(record_path(store_dir, metric).read_text(encoding="utf-8")).get("token")
        except (OSError, ValueError, AttributeError):
            token = None
    for path in store_dir.glob(f"{PREFIX}{metric}-*"):
        if path.name[len(f"{PREFIX}{metric}-") :].split(".")[0] != token:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
