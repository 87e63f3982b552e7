"""A SHA-256 whose state can be kept and resumed: the SHA-256 of a file grown at its end, from the
state after its earlier bytes, over the new bytes alone (store/append.py).

Python's hashlib cannot give its state away. OpenSSL's libcrypto, which hashlib's `_hashlib` is
linked against, can: SHA256_Init / SHA256_Update / SHA256_Final over a plain SHA256_CTX
(openssl/sha.h: h[8], Nl, Nh, data[16], num, md_len; 112 bytes), called here through ctypes,
which releases the GIL during each call as hashlib does over large buffers. The state is kept
as hex of a form of its own, not OpenSSL's memory: the eight chaining words (big-endian), the
bytes hashed so far (8 bytes, big-endian) and the bytes of the partial 64-byte block after them.
The library is the one `_hashlib` loaded (looked up through `_hashlib`'s own handle, which
searches its dependencies, else found in /proc/self/maps), and it is checked once against
hashlib, a state kept and resumed on the way; where it is missing or differs, `available` says
so (one line logged) and callers hash in one stream with hashlib instead.
"""

import ctypes
import functools
import hashlib
import logging
import sys
from collections.abc import Iterator

import numpy as np

log = logging.getLogger("genotile")

BLOCK = 64  # bytes of a SHA-256 block


class _Ctx(ctypes.Structure):
    """openssl/sha.h SHA256_CTX, with room after it (a larger struct would not overrun it; the
    check in `_library` then tells the layout differs)."""

    _fields_ = [
        ("h", ctypes.c_uint32 * 8),
        ("Nl", ctypes.c_uint32),
        ("Nh", ctypes.c_uint32),
        ("data", ctypes.c_uint8 * BLOCK),
        ("num", ctypes.c_uint),
        ("md_len", ctypes.c_uint),
        ("_room", ctypes.c_uint8 * 144),
    ]


def _candidates() -> Iterator[str]:
    """Libraries that may hold SHA256_Init, in turn (the first that passes is taken): `_hashlib`
    itself (dlsym on its handle searches the libraries it loaded), the libcrypto mapped into
    this process, then the one the linker finds."""
    import _hashlib

    yield _hashlib.__file__
    try:
        with open("/proc/self/maps", encoding="utf-8") as fh:
            yield from sorted({line.split()[-1] for line in fh if "libcrypto" in line and "/" in line})
    except OSError:
        pass
    if sys.platform != "darwin":  # macOS's unversioned libcrypto aborts the process when loaded
        import ctypes.util

        found = ctypes.util.find_library("crypto")
        if found:
            yield found


def _bind(path: str):
    lib = ctypes.CDLL(path)
    init, update, final = lib.SHA256_Init, lib.SHA256_Update, lib.SHA256_Final
    init.argtypes, init.restype = [ctypes.POINTER(_Ctx)], ctypes.c_int
    update.argtypes, update.restype = [ctypes.POINTER(_Ctx), ctypes.c_void_p, ctypes.c_size_t], ctypes.c_int
    final.argtypes, final.restype = [ctypes.c_char_p, ctypes.POINTER(_Ctx)], ctypes.c_int
    return init, update, final


@functools.cache
def _library():
    """(SHA256_Init, SHA256_Update, SHA256_Final) of a libcrypto that gives hashlib's SHA-256 with
    a state kept and resumed between any two bytes (checked on a known input), else None."""
    data = bytes(range(256)) * 9
    want = hashlib.sha256(data).hexdigest()
    why = "no libcrypto found"
    for path in _candidates():
        try:
            functions = _bind(path)
        except (OSError, AttributeError, ImportError):
            continue
        try:
            ok = all(_resumed(functions, data, cut) == want for cut in (0, 1, 63, 64, 65, 1000, len(data)))
        except (ValueError, OSError):
            ok = False
        if ok:
            return functions
        why = f"{path}'s SHA256_* differ from hashlib's"
    log.info("sha256: the state is not kept (%s): an append hashes its input in one stream", why)
    return None


def _resumed(functions, data: bytes, cut: int) -> str:
    h = Sha256(functions=functions)
    h.update(data[:cut])
    g = Sha256(h.state(), functions=functions)
    g.update(data[cut:])
    return g.hexdigest()


def available() -> bool:
    """Whether `Sha256` can be used here (libcrypto found, and checked against hashlib once)."""
    return _library() is not None


class Sha256:
    """A SHA-256 (hashlib's value) whose state can be kept as text and resumed later.

    Parameters
    ----------
    state : str, optional
        A `state()` kept earlier: the hash goes on from there. None: a new hash.

    Raises
    ------
    RuntimeError
        Where libcrypto is not `available`.
    ValueError
        A state that is not one `state()` gives.

    Examples
    --------
    >>> import hashlib
    >>> if available():
    ...     h = Sha256(); h.update(b"abc" * 100); kept = h.state()
    ...     g = Sha256(kept); g.update(b"def")
    ...     assert g.hexdigest() == hashlib.sha256(b"abc" * 100 + b"def").hexdigest()
    ...     assert Sha256(kept).length == 300
    """

    def __init__(self, state: str | None = None, *, functions=None):
        functions = functions or _library()
        if functions is None:
            raise RuntimeError("no libcrypto with SHA256_Init here (sha256_state.available() is False)")
        self._init, self._update, self._final = functions
        self._ctx = _Ctx()
        if self._init(ctypes.byref(self._ctx)) != 1:
            raise RuntimeError("SHA256_Init failed")
        if state is not None:
            self._restore(state)

    @property
    def length(self) -> int:
        """Bytes hashed so far."""
        return (self._ctx.Nh << 32 | self._ctx.Nl) >> 3

    def update(self, data) -> None:
        """Hash `data` (bytes, bytearray, memoryview or any contiguous buffer) next."""
        view = np.frombuffer(data, dtype=np.uint8)
        if view.size and self._update(ctypes.byref(self._ctx), view.ctypes.data, view.size) != 1:
            raise RuntimeError("SHA256_Update failed")

    def hexdigest(self) -> str:
        """The SHA-256 of the bytes hashed so far, hex (the hash may go on after)."""
        ctx = _Ctx()
        ctypes.memmove(ctypes.byref(ctx), ctypes.byref(self._ctx), ctypes.sizeof(_Ctx))
        out = ctypes.create_string_buffer(32)
        if self._final(out, ctypes.byref(ctx)) != 1:
            raise RuntimeError("SHA256_Final failed")
        return out.raw.hex()

    def state(self) -> str:
        """The state after the bytes hashed so far, as hex: the chaining words, the length in
        bytes and the pending bytes of the partial block (up to 63)."""
        c = self._ctx
        length = self.length
        if c.num != length % BLOCK or c.md_len != 32:
            raise ValueError("SHA256_CTX is not laid out as openssl/sha.h has it")
        words = b"".join(int(w).to_bytes(4, "big") for w in c.h)
        return (words + length.to_bytes(8, "big") + bytes(c.data[: c.num])).hex()

    def _restore(self, state: str) -> None:
        raw = bytes.fromhex(state)
        if len(raw) < 40:
            raise ValueError("not a SHA-256 state")
        length = int.from_bytes(raw[32:40], "big")
        tail = raw[40:]
        if len(tail) != length % BLOCK:
            raise ValueError("not a SHA-256 state: its pending bytes are not its length's")
        c = self._ctx
        for i in range(8):
            c.h[i] = int.from_bytes(raw[4 * i : 4 * i + 4], "big")
        bits = length << 3
        c.Nl, c.Nh = bits & 0xFFFFFFFF, bits >> 32
        ctypes.memmove(c.data, tail, len(tail))
        c.num = len(tail)
