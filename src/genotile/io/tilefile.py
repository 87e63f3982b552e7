"""Tile result files: an .npz of plain arrays that carries its own SHA-256s.

Each array has a digest: SHA-256 over its name, dtype, shape and the SHA-256s of its bytes in
pieces of DIGEST_PIECE (hashed on threads: a tile's dense block can be GBs). The file's
digest is the SHA-256 of every array's name and digest (the JSON metadata is an array too),
and both are stored in the file. A reader may leave arrays out (`skip`: the merge does not
read a dense block it does not need); every array it does read is checked against its digest,
and the digests against the file's. The file is written under a temporary name and renamed,
so a killed job leaves no tile behind.
"""

import hashlib
import json
import os
import struct
import zipfile
from typing import Any, Literal, NamedTuple

import numpy as np

from genotile.errors import GenotileError
from genotile.util.atomic import atomic_path
from genotile.util.checksums import digests_on_threads

META = "__meta__"
SHA = "__sha256__"
DIGESTS = "__digests__"
DIGEST_PIECE = 1 << 26  # bytes of an array hashed as one piece (on threads); part of the format


def _array_digests(arrays: dict[str, np.ndarray]) -> dict[str, str]:
    """{name: digest} of every array: the SHA-256 of its name, dtype, shape and the SHA-256s of
    its bytes in pieces of DIGEST_PIECE. Where the arrays hold HASH_MIN bytes or more, the pieces
    of all of them are hashed on threads together (checksums.digests_on_threads): a pairs tile's
    a, b and value columns are one piece each, so array by array they would be hashed on one
    core."""
    data = {}
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        data[name] = a.reshape(-1).view(np.uint8) if a.size else np.zeros(0, np.uint8)
    pieces = [(name, p0) for name, d in data.items() for p0 in range(0, d.size, DIGEST_PIECE)]

    def piece(job: tuple[str, int]) -> bytes:
        name, p0 = job
        return hashlib.sha256(data[name][p0 : p0 + DIGEST_PIECE].data).digest()

    if sum(d.size for d in data.values()) >= HASH_MIN:
        hashed = iter(digests_on_threads(piece, pieces))
    else:
        hashed = map(piece, pieces)
    out = {}
    for name, a in arrays.items():  # the pieces in the order they were listed: array by array
        h = hashlib.sha256(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        for _ in range(0, data[name].size, DIGEST_PIECE):
            h.update(next(hashed))
        out[name] = h.hexdigest()
    return out


def _file_digest(digests: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k} {digests[k]}\n" for k in sorted(digests)).encode()).hexdigest()


def arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    """The digest a tile file of exactly these arrays carries (its meta is one of them)."""
    return _file_digest(_array_digests(arrays))


def write_tile(path, arrays: dict[str, np.ndarray], meta: dict) -> str:
    """Write the arrays and the JSON-able `meta` as a tile file; returns the file's digest."""
    arrays = {**arrays, META: np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)}
    digests = _array_digests(arrays)
    digest = _file_digest(digests)  # arrays_digest(arrays)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            members: dict[str, Any] = {
                **arrays,
                DIGESTS: np.frombuffer(json.dumps(digests, sort_keys=True).encode(), dtype=np.uint8),
                SHA: np.frombuffer(bytes.fromhex(digest), dtype=np.uint8),
            }
            np.savez(fh, **members)
    return digest


class Column(NamedTuple):
    """An array held in a file: `items` items of `dtype` from byte `offset` on (a tile's stored
    member, or a raw column file written a part at a time)."""

    path: str
    offset: int
    dtype: np.dtype
    items: int

    def read(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Items start..stop-1, read (not mapped: the process keeps no page of the file)."""
        stop = self.items if stop is None else min(stop, self.items)
        n = max(0, stop - start)
        return np.fromfile(self.path, dtype=self.dtype, count=n, offset=self.offset + start * self.dtype.itemsize)


def _column_digest(name: str, col: Column) -> str:
    """The digest `_array_digests` gives the column's array, read a piece at a time."""
    h = hashlib.sha256(f"{name}|{col.dtype.str}|{(col.items,)}|".encode())
    size = col.items * col.dtype.itemsize
    with open(col.path, "rb") as fh:
        for p0 in range(0, size, DIGEST_PIECE):
            piece = os.pread(fh.fileno(), min(DIGEST_PIECE, size - p0), col.offset + p0)
            if len(piece) != min(DIGEST_PIECE, size - p0):
                raise ValueError(f"member {name} is shorter than its header says")
            h.update(hashlib.sha256(piece).digest())
    return h.hexdigest()


def write_tile_columns(path, arrays: dict[str, np.ndarray], columns: dict[str, Column], meta: dict) -> str:
    """`write_tile` of `arrays` and of 1-d `columns` held in files, copied a piece at a time:
    the same file as `write_tile` of all of them in memory, in bounded memory (a ccc3 job's
    sorted runs). Returns the file's digest."""
    arrays = {**arrays, META: np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)}
    digests = {**_array_digests(arrays), **{name: _column_digest(name, c) for name, c in columns.items()}}
    digest = _file_digest(digests)
    members = {
        **{name: arrays[name] for name in arrays if name != META},
        **columns,
        META: arrays[META],
        DIGESTS: np.frombuffer(json.dumps(digests, sort_keys=True).encode(), dtype=np.uint8),
        SHA: np.frombuffer(bytes.fromhex(digest), dtype=np.uint8),
    }
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, value in members.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as out:
                if isinstance(value, Column):
                    header = {"descr": np.lib.format.dtype_to_descr(value.dtype), "fortran_order": False}
                    np.lib.format.write_array_header_1_0(out, {**header, "shape": (value.items,)})
                    size = value.items * value.dtype.itemsize
                    with open(value.path, "rb") as fh:
                        for p0 in range(0, size, DIGEST_PIECE):
                            out.write(os.pread(fh.fileno(), min(DIGEST_PIECE, size - p0), value.offset + p0))
                else:
                    np.lib.format.write_array(out, np.asanyarray(value), allow_pickle=False)
    return digest


READ_MIN = 1 << 20  # members at least this large are read in place, not through zipfile
MAP_MIN = 1 << 26  # ... and memory-mapped from this size (each map holds a file descriptor, and a
# merge holds every tile's pairs: below it they are read, with no descriptor kept)
HASH_MIN = 1 << 20  # arrays of at least this many bytes in all are hashed on threads


def _stored_column(npz, path, name: str) -> tuple[Column, tuple, bool]:
    """(Column, shape, fortran) of stored member `name`: where its bytes lie in the file."""
    info = npz.zip.getinfo(f"{name}.npy")
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"no local header of {name}")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        start = info.header_offset + 30 + name_len + extra_len
        fh.seek(start)
        version = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(fh)
        offset = fh.tell()
    count = int(np.prod(shape, dtype=np.int64))
    if dtype.hasobject or offset - start + count * dtype.itemsize != info.file_size:
        raise ValueError(f"member {name} is not the array its header says")
    return Column(str(path), offset, dtype, count), shape, fortran


def _member(npz, path, name: str) -> np.ndarray:
    """Array `name` of the open .npz: a large stored (uncompressed) member memory-mapped in place
    (the digest check reads it on threads; zipfile would read it into a copy and CRC it on one:
    half of reading a 1M-pair tile's 24 MB of pairs), else read."""
    info = npz.zip.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED or info.file_size < READ_MIN:
        return npz[name]
    col, shape, fortran = _stored_column(npz, path, name)
    order: Literal["C", "F"] = "F" if fortran else "C"
    if info.file_size < MAP_MIN:
        values = col.read().reshape(shape, order=order)
        values.flags.writeable = False  # as a memory-mapped member is
        return values
    return np.memmap(path, dtype=col.dtype, mode="r", offset=col.offset, shape=shape, order=order)


def read_tile_columns(path, columns: tuple[str, ...]) -> tuple[dict[str, np.ndarray], dict[str, Column], dict, str]:
    """`read_tile` with the 1-d arrays named in `columns` left in the file: (the other arrays,
    {name: Column}, meta, file digest). Every array is checked against its digest, the columns
    read a piece at a time, so that memory stays bounded however large the file."""
    arrays, meta, digest = read_tile(path, skip=columns)
    try:
        with np.load(path, allow_pickle=False) as npz:
            digests = json.loads(bytes(npz[DIGESTS]).decode())
            found = {}
            for name in columns:
                if f"{name}.npy" not in npz.zip.namelist():
                    raise GenotileError(f"tile {path}: no array {name}; delete it and rerun")
                if npz.zip.getinfo(f"{name}.npy").compress_type != zipfile.ZIP_STORED:
                    raise ValueError(f"member {name} is compressed")
                col, shape, _ = _stored_column(npz, path, name)
                if len(shape) != 1:
                    raise ValueError(f"member {name} is not 1-d")
                found[name] = col
        bad = [name for name, col in found.items() if digests.get(name) != _column_digest(name, col)]
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, NotImplementedError, RuntimeError) as exc:
        raise GenotileError(f"tile {path}: unreadable (truncated or corrupted: {exc})") from None
    if bad:
        raise GenotileError(f"tile {path}: checksum mismatch, the file is corrupted; delete it and rerun")
    return arrays, found, meta, digest


def read_tile(path, skip: tuple[str, ...] = ()) -> tuple[dict[str, np.ndarray], dict, str]:
    """(arrays, meta, file digest) of a tile, without the arrays named in `skip`; a truncated,
    corrupted or foreign file is refused, naming it (only the arrays read are checked)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored = npz[SHA] if SHA in npz.files else None
            listed = npz[DIGESTS] if DIGESTS in npz.files else None
            arrays = {name: _member(npz, path, name) for name in npz.files if name not in (SHA, DIGESTS, *skip)}
    except FileNotFoundError:
        raise GenotileError(f"tile {path}: missing") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, NotImplementedError, RuntimeError) as exc:
        # zipfile raises NotImplementedError / RuntimeError when a flipped bit marks a member
        # as compressed by an unknown method, encrypted, or of an unknown zip version
        raise GenotileError(f"tile {path}: unreadable (truncated or corrupted: {exc})") from None
    if stored is None or listed is None or META not in arrays:
        raise GenotileError(f"tile {path}: not a genotile tile file (no checksums); delete it and rerun")
    try:
        digests = json.loads(bytes(listed).decode())
    except (UnicodeDecodeError, ValueError):
        digests = None
    if (
        not isinstance(digests, dict)
        or set(arrays) != set(digests) - set(skip)  # no array dropped from the file
        or _file_digest(digests) != bytes(stored).hex()
        or any(digests.get(name) != d for name, d in _array_digests(arrays).items())
    ):
        raise GenotileError(f"tile {path}: checksum mismatch, the file is corrupted; delete it and rerun")
    meta = json.loads(bytes(arrays.pop(META)).decode())
    return arrays, meta, bytes(stored).hex()
