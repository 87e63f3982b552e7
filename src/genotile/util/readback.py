"""Files the pipeline reads back (manifests, plans, the store's .npy arrays), loaded safely.

JSON through `json` only, arrays through `numpy.load(allow_pickle=False)`; a file that is
missing, truncated, damaged or not what it should be (keys of a manifest, dtype and shape
of an array, a permutation that is not one) is refused in one line naming the file.
Tiles carry their own SHA-256 (tilefile.py).
"""

import json

import numpy as np

from genotile.errors import GenotileError

RERUN = "delete it and rerun"


def load_json(path, what: str, keys=()) -> dict:
    """A JSON object with at least `keys`; `what` names the kind of file in errors."""
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except FileNotFoundError:
        raise GenotileError(f"{what} {path}: missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GenotileError(f"{what} {path}: not valid JSON (truncated or damaged: {exc}); {RERUN}") from None
    if not isinstance(d, dict):
        raise GenotileError(f"{what} {path}: not a genotile {what} (a JSON {type(d).__name__}); {RERUN}")
    absent = [k for k in keys if k not in d]
    if absent:
        raise GenotileError(f"{what} {path}: not a genotile {what} (no {', '.join(map(repr, absent))}); {RERUN}")
    return d


def load_npy(path, what: str, *, dtype=None, ndim: int | None = None, mmap: bool = False) -> np.ndarray:
    """An .npy array (memory-mapped when `mmap`), checked for dtype and number of dimensions."""
    try:
        arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise GenotileError(f"{what} {path}: missing") from None
    except (ValueError, OSError, EOFError) as exc:  # truncated, bad header, object arrays (pickles)
        raise GenotileError(f"{what} {path}: unreadable .npy (truncated or damaged: {exc}); {RERUN}") from None
    if not isinstance(arr, np.ndarray):
        raise GenotileError(f"{what} {path}: not a single .npy array; {RERUN}")
    if (dtype is not None and arr.dtype != np.dtype(dtype)) or (ndim is not None and arr.ndim != ndim):
        raise GenotileError(
            f"{what} {path}: holds {arr.dtype} of shape {arr.shape}, not the "
            f"{np.dtype(dtype) if dtype is not None else ''} {ndim}-d array expected; {RERUN}"
        )
    return arr


def load_permutation(path, n: int) -> np.ndarray:
    """perm.npy of a plan for n vectors: each of 0 .. n-1 exactly once."""
    perm = load_npy(path, "permutation", ndim=1)
    if perm.dtype.kind not in "iu" or perm.shape != (n,):
        raise GenotileError(f"permutation {path}: {perm.dtype} of shape {perm.shape}, not {n} indices; {RERUN}")
    seen = np.zeros(n, dtype=bool)
    inside = (perm >= 0) & (perm < n)
    seen[perm[inside]] = True
    if not (inside.all() and seen.all()):
        raise GenotileError(f"permutation {path}: not a permutation of 0 .. {n - 1}; {RERUN}")
    return perm
