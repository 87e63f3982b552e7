"""Tile result files: an .npz of plain arrays that carries its own SHA-256.

The checksum covers every array (name, dtype, shape, bytes) and the JSON
metadata, so a merge can prove it read the whole tile; the file is written
under a temporary name and renamed, so a killed job leaves no tile behind.
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


def _digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        if a.size:  # the array's own bytes, not a tobytes() copy (a dense block can be GBs)
            h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()


def write_tile(path, arrays: dict[str, np.ndarray], meta: dict) -> str:
    arrays = {**arrays, META: np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)}
    digest = _digest(arrays)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            members: dict[str, Any] = {**arrays, SHA: np.frombuffer(bytes.fromhex(digest), dtype=np.uint8)}
            np.savez(fh, **members)
    return digest


def read_tile(path) -> tuple[dict[str, np.ndarray], dict, str]:
    """(arrays, meta, sha256); a truncated, corrupted or foreign file is refused, naming it."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise GenotileError(f"tile {path}: missing") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, NotImplementedError, RuntimeError) as exc:
        # zipfile raises NotImplementedError / RuntimeError when a flipped bit marks a member
        # as compressed by an unknown method, encrypted, or of an unknown zip version
        raise GenotileError(f"tile {path}: unreadable (truncated or corrupted: {exc})") from None
    stored = arrays.pop(SHA, None)
    if stored is None or META not in arrays:
        raise GenotileError(f"tile {path}: not a genotile tile file (no checksum)")
    digest = _digest(arrays)
    if bytes(stored).hex() != digest:
        raise GenotileError(f"tile {path}: checksum mismatch, the file is corrupted; delete it and rerun")
    meta = json.loads(bytes(arrays.pop(META)).decode())
    return arrays, meta, digest
