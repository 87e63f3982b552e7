"""Plumbing shared by the CuPy backends (cupy-b1, cupy-int8).

CuPy is imported lazily: on a machine without CuPy or without a CUDA GPU every
`is_available()` returns False and nothing here raises, so CPU runs are unaffected.

Terms (metrics.Term) are split into
  products -- coef * popcount(left[:, l0:l0+w] AND right[:, r0:r0+w]), done on the tensor cores;
  row sums -- the all-ones-plane terms: coef * popcount(left[:, range]) added to every column
              (left=range, right=None) or coef * popcount(right[:, range]) added to every row.
Counts are exact: the int32 parts are bounded before launch (`bound`), everything is summed
into int64 where a bound could exceed 2**31 - 1.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.errors import GenotileError

KERNEL_DIR = Path(__file__).with_name("kernels")
WORD_BITS = 64
INT32_MAX = 2**31 - 1

# Tests set POISON: device outputs are then filled with POISON_VALUE before the kernels
# write them, so an element a kernel forgot to write shows up as a wrong count.
POISON = False
POISON_VALUE = -0x5A5A5A5B


@functools.cache
def _cupy():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        cupy.cuda.Device(0).compute_capability  # noqa: B018 -- touches the driver
        return cupy
    except Exception:  # no CuPy, no driver, no GPU: the backend is simply unavailable
        return None


def cupy_module():
    cp = _cupy()
    if cp is None:
        raise GenotileError("CuPy with a CUDA GPU is required for this backend")
    return cp


def has_gpu(min_cc: int = 0) -> bool:
    cp = _cupy()
    if cp is None:
        return False
    try:
        return int(cp.cuda.Device().compute_capability) >= min_cc
    except Exception:
        return False


def empty_pinned(nbytes: int) -> np.ndarray:
    """A uint8 host array of `nbytes` in pinned (page-locked) memory, as cupyx.empty_pinned
    makes it, without importing cupyx: its package import pulls in cupyx.scipy.sparse and with
    it SciPy (~0.7 s of a tile job on the H100 machine, py-spy, bench/RESULTS.md session 6)."""
    size = max(int(nbytes), 1)
    return np.ndarray((size,), dtype=np.uint8, buffer=cupy_module().cuda.alloc_pinned_memory(size))


def device_attr(name: str) -> int:
    return int(cupy_module().cuda.Device().attributes[name])


@functools.cache
def _load_module(filename: str, options: tuple[str, ...], device_id: int, arch_specific: bool = False):
    cp = cupy_module()
    # -D options become #define lines of the source: CuPy runs NVRTC on an empty file once per
    # process and distinct option set to key its kernel cache (~50 ms each on the H100 machine),
    # so kernels that differ only in their defines share one set; the cache still keys the source
    defines, rest = [], []
    for option in options:
        if option.startswith("-D") and len(option) > 2:  # -DNAME=VALUE, -DNAME= (empty), -DNAME (1)
            name, given, value = option[2:].partition("=")
            defines.append(f"#define {name} {value if given else 1}\n")
        else:
            rest.append(option)
    code = "".join(defines) + kernel_source(filename)
    if arch_specific:
        return _arch_specific_module(code, ("--std=c++17", *rest), device_id)
    return cp.RawModule(code=code, options=("--std=c++17", *rest))


_ARCH_LOCK = threading.Lock()  # the store job's tile threads (a GPU each) may ask for a kernel together


def _arch_specific_module(code: str, options: tuple[str, ...], device_id: int):
    """`code` compiled by NVRTC for this GPU's architecture-specific target (sm_90a on Hopper:
    wgmma), loaded as a module. CuPy's RawModule always adds its own -arch=sm_XX, which cannot name
    an "a" target, so NVRTC is called here; the cubin is kept in CuPy's kernel cache directory
    under the hash of source, options, target and NVRTC version, as CuPy keeps its own, behind its
    own SHA-256 (a damaged file is compiled again). The disk cache is best effort: none under
    CUPY_CACHE_IN_MEMORY, and a directory that cannot be written only costs the compile."""
    from cupy.cuda import function
    from cupy_backends.cuda.libs import nvrtc

    cp = cupy_module()
    arch = f"-arch=sm_{cp.cuda.Device(device_id).compute_capability}a"
    key = hashlib.sha256(repr((code, options, arch, nvrtc.getVersion())).encode()).hexdigest()
    path = _arch_cache_path(key)
    with _ARCH_LOCK:
        cubin = _read_cached(path)
        if cubin is not None:
            module = function.Module()
            try:
                module.load(cubin)
                return _ArchModule(module)
            except Exception:  # noqa: BLE001 -- a cubin the driver refuses: compiled again below
                pass
        prog = nvrtc.createProgram(code, "genotile.cu", (), ())
        try:
            try:
                nvrtc.compileProgram(prog, [*options, arch])
            except nvrtc.NVRTCError as e:
                raise GenotileError(f"NVRTC could not compile a {arch[6:]} kernel: {nvrtc.getProgramLog(prog)}") from e
            cubin = nvrtc.getCUBIN(prog)
        finally:
            nvrtc.destroyProgram(prog)
        module = function.Module()
        module.load(cubin)
        if path is not None:
            _write_cached(path, cubin)
        return _ArchModule(module)


def _arch_cache_path(key: str) -> Path | None:
    if os.environ.get("CUPY_CACHE_IN_MEMORY", "0").lower() in ("1", "true", "yes", "on"):
        return None
    try:  # CuPy's documented default when CUPY_CACHE_DIR is unset (its get_cache_dir is not in every release)
        cache = os.environ.get("CUPY_CACHE_DIR") or str(Path.home() / ".cupy" / "kernel_cache")
    except RuntimeError:  # no home directory
        return None
    return Path(cache) / f"genotile-{key}.cubin"


def _read_cached(path: Path | None) -> bytes | None:
    """A cached cubin whose SHA-256 (its file's first 32 bytes) holds, else None."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, cubin = data[:32], data[32:]
    return cubin if cubin and hashlib.sha256(cubin).digest() == digest else None


def _write_cached(path: Path, cubin: bytes) -> None:
    """The cubin behind its SHA-256, written whole or not at all (util/atomic.atomic_path: a
    concurrent reader sees the old file or the new one); a cache that cannot be written (any
    OSError, a full disk) is left as it was: it only costs the next process the compile."""
    from genotile.util.atomic import atomic_path

    with contextlib.suppress(OSError, GenotileError), atomic_path(path) as tmp:
        tmp.write_bytes(hashlib.sha256(cubin).digest() + cubin)


class _ArchModule:
    """A module loaded from a cubin: get_function as RawModule's."""

    def __init__(self, module):
        self.module = module

    def get_function(self, name: str):
        return _ArchKernel(self.module.get_function(name))


class _ArchKernel:
    """A cupy.cuda.function.Function called as a RawKernel: kernel(grid, block, args,
    shared_mem=...), and its max_dynamic_shared_size_bytes read and set through the driver."""

    _MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

    def __init__(self, func):
        self.func = func

    def __call__(self, grid, block, args, shared_mem: int = 0):
        self.func(grid, block, args, shared_mem=shared_mem)

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        from cupy_backends.cuda.api import driver

        return int(driver.funcGetAttribute(self._MAX_DYNAMIC_SHARED, self.func.ptr))

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        from cupy_backends.cuda.api import driver

        driver.funcSetAttribute(self.func.ptr, self._MAX_DYNAMIC_SHARED, int(value))


_INCLUDE = re.compile(r'[ \t]*#[ \t]*include[ \t]+"([^"]+)"')


def kernel_source(filename: str) -> str:
    """kernels/<filename> with each of its quoted #include's (kernels/select_params.cuh,
    kernels/epilogues/*.cuh; a path relative to the including file) written in its place,
    once a header, between #line directives that keep NVRTC's messages on the header's and
    the file's own lines. The headers' text is part of the source because CuPy keys its
    kernel cache on the source and options alone: with an include path, an edited header (or
    a newer genotile installed over an older one) would reuse the stale cubin."""
    seen: set[str] = set()

    def expand(path: str) -> str:
        name = os.path.relpath(path, KERNEL_DIR)
        out = [f'#line 1 "{name}"\n']
        with open(path) as fh:
            for lineno, line in enumerate(fh, 1):
                include = _INCLUDE.match(line)
                if include is None:
                    out.append(line)
                    continue
                header = os.path.normpath(os.path.join(os.path.dirname(path), include.group(1)))
                if header not in seen:
                    seen.add(header)
                    out.append(expand(header))
                out.append(f'#line {lineno + 1} "{name}"\n')
        return "".join(out)

    return expand(os.path.normpath(KERNEL_DIR / filename))


def load_kernel(filename: str, name: str, options: tuple[str, ...] = (), arch_specific: bool = False):
    """A kernel from kernels/<filename>, compiled by NVRTC for this GPU (CuPy picks sm_XX;
    `arch_specific`: the sm_XXa target, whose instructions, such as Hopper's wgmma, run on this
    architecture alone)."""
    cp = cupy_module()
    return _load_module(filename, tuple(options), cp.cuda.Device().id, arch_specific).get_function(name)


def new_output(shape, dtype):
    cp = cupy_module()
    if POISON:
        return cp.full(shape, POISON_VALUE, dtype=dtype)
    return cp.empty(shape, dtype=dtype)


@dataclass(frozen=True)
class Product:
    coef: int
    left: int  # first word of the left range
    right: int  # first word of the right range
    width: int  # words

    @property
    def bound(self) -> int:
        return abs(self.coef) * WORD_BITS * self.width


@dataclass(frozen=True)
class RowSum:
    coef: int
    start: int
    width: int

    @property
    def bound(self) -> int:
        return abs(self.coef) * WORD_BITS * self.width


def split_terms(terms) -> tuple[list[Product], list[RowSum], list[RowSum]]:
    """(products, sums over left rows, sums over right rows), dropping empty and zero terms."""
    products, left_sums, right_sums = [], [], []
    for term in terms:
        if term.coef == 0:
            continue
        if term.left is None and term.right is None:
            raise GenotileError("a term needs at least one plane range")
        if term.left is None:
            lo, hi = term.right
            if hi > lo:
                right_sums.append(RowSum(int(term.coef), int(lo), int(hi - lo)))
        elif term.right is None:
            lo, hi = term.left
            if hi > lo:
                left_sums.append(RowSum(int(term.coef), int(lo), int(hi - lo)))
        else:
            (l0, l1), (r0, r1) = term.left, term.right
            if l1 - l0 != r1 - r0:
                raise GenotileError(f"term ranges differ in length: {term}")
            if l1 > l0:
                products.append(Product(int(term.coef), int(l0), int(r0), int(l1 - l0)))
    return products, left_sums, right_sums


def split_product(p: Product, max_bound: int) -> list[Product]:
    """Cut a product along K so that each piece's bound is at most max_bound."""
    per_word = abs(p.coef) * WORD_BITS
    step = max(1, max_bound // per_word)
    if per_word > max_bound:
        raise GenotileError(f"coefficient {p.coef} too large for exact int32 accumulation")
    return [Product(p.coef, p.left + o, p.right + o, min(step, p.width - o)) for o in range(0, p.width, step)]


def to_device(arr: np.ndarray):
    cp = cupy_module()
    if isinstance(arr, cp.ndarray):
        return cp.ascontiguousarray(arr, dtype=cp.uint64)
    return cp.asarray(np.ascontiguousarray(arr, dtype=np.uint64))


def row_sums(words, sums: list[RowSum]):
    """int64 (rows,) = sum over `sums` of coef * popcount(words[:, range]) (device)."""
    cp = cupy_module()
    rows = words.shape[0]
    total = cp.zeros(rows, dtype=cp.int64)
    if rows == 0 or not sums:
        return total
    kernel = load_kernel("bitplane_utils.cu", "popcount_rows")
    part = cp.zeros(rows, dtype=cp.int32)
    warps = 8
    for s in sums:
        for piece in _split_sum(s):
            part.fill(0)
            kernel(
                ((rows + warps - 1) // warps,),
                (32 * warps,),
                (
                    words,
                    np.int64(words.shape[1]),
                    np.int32(rows),
                    np.int64(piece.start),
                    np.int64(piece.width),
                    np.int32(piece.coef),
                    part,
                ),
            )
            total += part
    return total


def _split_sum(s: RowSum) -> list[RowSum]:
    step = max(1, INT32_MAX // (abs(s.coef) * WORD_BITS))
    return [RowSum(s.coef, s.start + o, min(step, s.width - o)) for o in range(0, s.width, step)]


def sums_bound(sums: list[RowSum]) -> int:
    return sum(s.bound for s in sums)


def empty_result(counts, rows_left: int, rows_right: int) -> dict[str, np.ndarray]:
    return {name: np.zeros((rows_left, rows_right), dtype=np.int64) for name in counts}
