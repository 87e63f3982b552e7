"""BGZF (bgzip's gzip of independent blocks of at most 64 KiB): the file cut into groups of
blocks, a group inflated on a thread.

`groups` reads the blocks' headers and hands out the blocks holding about `chunk` bytes of
text at a time; `inflate_group` inflates one group with the system's libdeflate through ctypes
when there is one (~2.5x zlib's inflate, straight into the output buffer), else with zlib. Both
release the GIL, so workers inflate groups side by side (pysam's BGZF reader holds it). Each
block's CRC32 and size are checked as htslib does. The VCF fast path reads a .vcf.gz through
these (vcf_spans.InflatedText).
"""

import struct
import threading
import zlib

import numpy as np

USE_LIBDEFLATE = True  # inflate BGZF with the system's libdeflate when there is one (else zlib)


class _Buffer:
    """A bytearray and, for libdeflate, its address (the ctypes view pins it until released)."""

    def __init__(self, buf: bytearray, lib):
        self.buf, self.view, self.addr = buf, None, 0
        if lib is not None and len(buf):
            import ctypes

            self.view = (ctypes.c_char * len(buf)).from_buffer(buf)
            self.addr = ctypes.addressof(self.view)

    def release(self):
        self.view = None


class _Libdeflate:
    """libdeflate through ctypes (the GIL is released during each call): ~2.5x zlib's inflate,
    straight into the output buffer. Used when the system has it (Debian's plink2 depends on it)."""

    def __init__(self, lib):
        import ctypes

        self.ct = ctypes
        lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
        lib.libdeflate_deflate_decompress.restype = ctypes.c_int
        lib.libdeflate_deflate_decompress.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_size_t),
        ]
        lib.libdeflate_crc32.restype = ctypes.c_uint32
        lib.libdeflate_crc32.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        lib.libdeflate_free_decompressor.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.d = lib.libdeflate_alloc_decompressor()
        if not self.d:
            raise OSError("libdeflate_alloc_decompressor failed")
        self.got = ctypes.c_size_t()

    def inflate(self, src: int, n_src: int, dst: int, size: int, crc: int) -> bool:
        """Inflate n_src bytes at address src into the `size` bytes at dst; True when it fills
        exactly those and the CRC32 holds."""
        if size == 0:
            return n_src >= 2 and crc == 0
        rc = self.lib.libdeflate_deflate_decompress(self.d, src, n_src, dst, size, self.ct.byref(self.got))
        return rc == 0 and self.got.value == size and self.lib.libdeflate_crc32(0, dst, size) == crc

    def __del__(self):
        if getattr(self, "d", None):
            self.lib.libdeflate_free_decompressor(self.d)


_LIBDEFLATE: list = []


def _libdeflate() -> "_Libdeflate | None":
    """The system's libdeflate, or None (then zlib)."""
    if not _LIBDEFLATE:
        lib = None
        if USE_LIBDEFLATE:
            try:
                import ctypes
                import ctypes.util

                name = ctypes.util.find_library("deflate")
                lib = _Libdeflate(ctypes.CDLL(name)) if name else None
            except (OSError, AttributeError):
                lib = None
        _LIBDEFLATE.append(lib)
    return _LIBDEFLATE[0]


_INFLATER = threading.local()  # each worker's own libdeflate decompressor (not shareable)


def _inflater() -> "_Libdeflate | None":
    """This thread's libdeflate decompressor, or None (then zlib)."""
    shared = _libdeflate()
    if shared is None:
        return None
    if getattr(_INFLATER, "of", None) is not shared:  # a new library handle (tests switch it)
        _INFLATER.lib, _INFLATER.of = _Libdeflate(shared.lib), shared
    return _INFLATER.lib


def inflate_group(comp: bytearray, blocks: list, size: int) -> np.ndarray:
    """(size,) uint8: the text of a group of BGZF blocks (`groups`), inflated in
    this thread; ValueError when a block fails to inflate, or its CRC32 or size is wrong.

    The text goes to a numpy buffer: a bytearray is zero-filled, its pages faulted in, while
    the GIL is held (~5 ms per 16 MiB here, which serialised the workers); numpy's is not
    filled, and takes huge pages where the system gives them."""
    lib = _inflater()
    out = np.empty(size, dtype=np.uint8)
    src = _Buffer(comp, lib)
    try:
        filled = 0
        for start, stop, isize, crc in blocks:
            if lib is not None:
                ok = lib.inflate(src.addr + start, stop - start, out.ctypes.data + filled, isize, crc)
            else:
                data = zlib.decompress(memoryview(comp)[start:stop], -15, max(1, isize))
                ok = len(data) == isize and zlib.crc32(data) == crc
                out[filled : filled + isize] = np.frombuffer(data, dtype=np.uint8)
            if not ok:
                raise ValueError("BGZF block fails to inflate, or its CRC32 or size")
            filled += isize
    finally:
        src.release()
    return out


def groups(fh, chunk: int, stopping: threading.Event):
    """(compressed bytes, blocks, text bytes) of consecutive BGZF blocks holding about
    `chunk` bytes of text: blocks are (start, stop, isize, crc), the deflate data of each at
    [start, stop) of the compressed bytes; none after `stopping` is set. Each block's header is
    checked here; a malformed or truncated one raises ValueError after the groups before it."""
    raw, pos = b"", 0
    blocks: list[tuple[int, int, int, int]]
    comp, blocks, size = bytearray(), [], 0
    unpack = struct.unpack_from
    while not stopping.is_set():
        if len(raw) - pos < 1 << 17:  # at least one whole block (<= 64 KiB) ahead
            raw = raw[pos:] + fh.read(1 << 22)
            pos = 0
            if not raw:
                break
        if len(raw) - pos < 18 or raw[pos : pos + 4] != b"\x1f\x8b\x08\x04":
            raise ValueError("not a BGZF block")
        xlen = unpack("<H", raw, pos + 10)[0]
        if xlen == 6 and raw[pos + 12 : pos + 14] == b"BC":  # the usual extra field: BC alone
            bsize = unpack("<H", raw, pos + 16)[0] + 1
        else:
            bsize, k = None, pos + 12
            while k + 4 <= pos + 12 + xlen:
                slen = unpack("<H", raw, k + 2)[0]
                if raw[k : k + 2] == b"BC" and slen == 2:
                    bsize = unpack("<H", raw, k + 4)[0] + 1
                k += 4 + slen
        if bsize is None or pos + bsize > len(raw) or bsize < 20 + xlen:
            raise ValueError("truncated or malformed BGZF block")
        crc, isize = unpack("<II", raw, pos + bsize - 8)
        if blocks and size + isize > chunk:
            yield comp, blocks, size
            comp, blocks, size = bytearray(), [], 0
        at = len(comp)
        comp += raw[pos + 12 + xlen : pos + bsize - 8]
        blocks.append((at, len(comp), isize, crc))
        size += isize
        pos += bsize
    if blocks:
        yield comp, blocks, size
