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
import zipfile
from typing import Any

import numpy as np

from genotile.errors import GenotileError
from genotile.io.atomic import atomic_path

META = "__meta__"
SHA = "__sha256__"
DIGESTS = "__digests__"
DIGEST_PIECE = 1 << 26  # bytes of an array hashed as one piece (on threads); part of the format


def _array_digest(name: str, a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    data = a.reshape(-1).view(np.uint8) if a.size else np.zeros(0, np.uint8)
    starts = range(0, data.size, DIGEST_PIECE)

    def piece(p0: int) -> bytes:  # hashlib releases the GIL on large buffers
        return hashlib.sha256(data[p0 : p0 + DIGEST_PIECE].data).digest()

    if len(starts) > 1:
        from concurrent.futures import ThreadPoolExecutor

        from genotile.runtime.cpus import usable_cpus

        with ThreadPoolExecutor(usable_cpus(8), thread_name_prefix="genotile-sha256") as pool:
            pieces = list(pool.map(piece, starts))
    else:
        pieces = [piece(p0) for p0 in starts]
    h = hashlib.sha256(f"{name}|{a.dtype.str}|{a.shape}|".encode())
    for d in pieces:
        h.update(d)
    return h.hexdigest()


def _file_digest(digests: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k} {digests[k]}\n" for k in sorted(digests)).encode()).hexdigest()


def arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    """The digest a tile file of exactly these arrays carries (its meta is one of them)."""
    return _file_digest({name: _array_digest(name, a) for name, a in arrays.items()})


def write_tile(path, arrays: dict[str, np.ndarray], meta: dict) -> str:
    """Write the arrays and the JSON-able `meta` as a tile file; returns the file's digest."""
    arrays = {**arrays, META: np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)}
    digests = {name: _array_digest(name, a) for name, a in arrays.items()}
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


def read_tile(path, skip: tuple[str, ...] = ()) -> tuple[dict[str, np.ndarray], dict, str]:
    """(arrays, meta, file digest) of a tile, without the arrays named in `skip`; a truncated,
    corrupted or foreign file is refused, naming it (only the arrays read are checked)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored = npz[SHA] if SHA in npz.files else None
            listed = npz[DIGESTS] if DIGESTS in npz.files else None
            arrays = {name: npz[name] for name in npz.files if name not in (SHA, DIGESTS, *skip)}
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
        or any(digests.get(name) != _array_digest(name, a) for name, a in arrays.items())
    ):
        raise GenotileError(f"tile {path}: checksum mismatch, the file is corrupted; delete it and rerun")
    meta = json.loads(bytes(arrays.pop(META)).decode())
    return arrays, meta, bytes(stored).hex()
