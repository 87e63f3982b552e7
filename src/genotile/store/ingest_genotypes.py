"""A genotype reader's calls as the store's codes matrix, or in the form the reader holds them.

`genotype_t` (vectors = variants, fields = samples; ccc2) is the readers' own
order: blocks of variant rows are appended to an .npy whose row count grows.
`genotype` (vectors = samples, fields = variants; ibs, king) is its transpose:
written straight by a reader that can (PLINK, io/readers/plink.py and bed.py:
`write_sample_rows`), or, where the codes would be temporary, left to the reader's own pass (a
whole .bed, `held_bits`: read by the pass that writes its store); otherwise the variant rows are
held in memory up to `memory_bytes()` (a quarter of the memory the process may use, at least
1 GiB) and written transposed: blocks of samples are transposed on up to TRANSPOSE_THREADS
threads and written in order by one, in one sequential write; past that they go to a temporary
.npy first, then blocks of variants are written transposed into the columns of the final
memmap, so memory stays bounded by one block of variants x samples bytes. Every variant is kept
(monomorphic ones change n for ibs): n_kept = n_fields.
"""

import contextlib
import os
import sys
import tempfile
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from genotile.core.encodings import ENCODINGS
from genotile.errors import GenotileError
from genotile.io.ids import check_ids, check_unique
from genotile.io.readers.base import GENOTYPE_OPTIONS, GenotypeReader
from genotile.store import resident
from genotile.util.atomic import atomic_path
from genotile.util.cpus import usable_cpus
from genotile.util.progress import Progress
from genotile.version import __version__

TRANSPOSE_BYTES = 1 << 26  # bytes of one transposed block (_transpose_blocks: of all its threads, 4x)
TRANSPOSE_THREADS = 4  # _transpose_blocks' threads at most (more were slower: see its docstring)
# codes of a `genotype` ingest held in memory at most (then a temporary file); None: memory_bytes()
MEMORY_BYTES: int | None = None
TILE = 256  # rows x columns of one step of the in-memory transpose (cache-sized)


class RowAppender:
    """An .npy file that grows along axis 0.

    numpy leaves room in a header for the first axis to grow to 21 digits
    (format.GROWTH_AXIS_MAX_DIGITS), so the header is rewritten in place at the end.
    """

    def __init__(self, path, n_cols: int, dtype=np.uint8):
        self.fh = open(path, "wb")
        self.n_cols, self.dtype, self.rows = n_cols, np.dtype(dtype), 0
        self.header_bytes = self._header()

    def _header(self) -> int:
        self.fh.seek(0)
        np.lib.format.write_array_header_1_0(
            self.fh,
            {
                "descr": np.lib.format.dtype_to_descr(self.dtype),
                "fortran_order": False,
                "shape": (self.rows, self.n_cols),
            },
        )
        return self.fh.tell()

    def append(self, block: np.ndarray) -> None:
        self.fh.write(np.ascontiguousarray(block, dtype=self.dtype).data)
        self.rows += block.shape[0]

    def close(self) -> None:
        end = self.fh.tell()
        if self._header() != self.header_bytes:
            raise RuntimeError("npy header changed length")
        self.fh.seek(end)
        self.fh.close()


def check_options(options: dict) -> dict:
    unknown = sorted(set(options) - set(GENOTYPE_OPTIONS))
    if unknown:
        raise GenotileError(f"unknown VCF option(s) {', '.join(unknown)}; known: {', '.join(GENOTYPE_OPTIONS)}")
    return {k: v for k, v in options.items() if v is not None}


def stream_bytes() -> int:
    """Bytes of rows of bits the store job's pass over a plain .bed holds at a time at most
    (io/readers/bed.py): bed.STREAM_BYTES, within `memory_bytes()`."""
    from genotile.io.readers import bed

    return min(bed.STREAM_BYTES, memory_bytes())


def memory_bytes() -> int:
    """Bytes of codes a `genotype` ingest holds in memory before it spills them to a file:
    MEMORY_BYTES when set, else a quarter of the memory this process may use (the machine's,
    or its cgroup's limit where lower: SLURM, containers), at least 1 GiB."""
    if MEMORY_BYTES is not None:
        return MEMORY_BYTES
    try:
        usable = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 30
    limit = _cgroup_memory_limit()
    return max(1 << 30, min(usable, limit or usable) // 4)


def _cgroup_memory_limit() -> int | None:
    """The lowest memory limit of this process's cgroup (v2 memory.max, v1
    memory.limit_in_bytes; by its path in /proc/self/cgroup, or at the root of a container's
    view), None when there is none or none can be read (not Linux)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    names = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            names += [f"/sys/fs/cgroup{path.rstrip('/')}/memory.max", "/sys/fs/cgroup/memory.max"]
        elif "memory" in controllers.split(","):
            v1 = "/sys/fs/cgroup/memory"
            names += [f"{v1}{path.rstrip('/')}/memory.limit_in_bytes", f"{v1}/memory.limit_in_bytes"]
    limits = []
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            text = Path(name).read_text().strip()
            if text != "max" and int(text) < 1 << 60:  # v1 writes "no limit" as a huge number
                limits.append(int(text))
    return min(limits) if limits else None


class _Rows:
    """Variant rows of codes: in memory while they fit in memory_bytes(), then in a RowAppender
    at `spill_path` (None: in memory, whatever their size)."""

    def __init__(self, spill_path, n_cols: int):
        self.spill_path, self.n_cols = spill_path, n_cols
        self.blocks: list[np.ndarray] = []
        self.bytes = 0
        self.limit = memory_bytes() if spill_path is not None else sys.maxsize
        self.file: RowAppender | None = None

    def append(self, block: np.ndarray) -> None:
        if self.file is None and self.bytes + block.nbytes > self.limit:
            self.file = RowAppender(self.spill_path, self.n_cols)
            for held in self.blocks:
                self.file.append(held)
            self.blocks = []
        if self.file is not None:
            self.file.append(block)
        else:
            self.blocks.append(block)
            self.bytes += block.nbytes

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _read_rows(reader: GenotypeReader, rows) -> list[str]:
    """Append every block of variant rows to `rows` (a RowAppender or _Rows); return the variant IDs."""
    ids: list = []
    progress = Progress("ingest genotypes (variants)")
    try:
        for block_ids, codes in reader.blocks():
            rows.append(codes)
            ids.extend(block_ids)
            progress.update(len(ids))
    finally:
        rows.close()
    progress.finish(len(ids))
    return ids


def _transpose(rows_path, out_path) -> None:
    """Write the (variants, samples) matrix at rows_path as (samples, variants), block by block."""
    src = np.load(rows_path, mmap_mode="r", allow_pickle=False)
    n_var, n_samp = src.shape
    step = max(64, TRANSPOSE_BYTES // max(1, n_samp))
    out = np.lib.format.open_memmap(out_path, mode="w+", dtype=np.uint8, shape=(n_samp, n_var))
    for v0 in range(0, n_var, step):
        out[:, v0 : v0 + step] = np.asarray(src[v0 : v0 + step]).T
    out.flush()
    del out, src


def _transpose_blocks(blocks: list[np.ndarray], out_path, threads: int | None = None) -> None:
    """Write variant-row blocks held in memory as one (samples, variants) .npy.

    Blocks of samples (`_sample_rows`) are transposed on `threads` threads (default: the
    usable CPUs, at most TRANSPOSE_THREADS; the compiled tiles and numpy's copies release
    the GIL) while this thread writes the finished ones in order, one sequential write
    each. 20,000 samples x 100,000 variants (2 GB) on a 16-core machine: 4.7 s on one
    thread, 2.0 s on 4, 2.3 s on 8, 2.8 s on 16 (memory-bound); each of 16 threads writing
    its own blocks with pwrite took 3.5 s, of which the transposing alone 1.65 s.
    """
    kernels = None
    if "numba" in sys.modules:  # compiled tiles (~4x faster) when numba is loaded already (vcf_fast's decoding)
        from genotile.io import vcf_fast

        kernels = vcf_fast.compiled_kernels()
    n_var = sum(b.shape[0] for b in blocks)
    n_samp = blocks[0].shape[1]
    threads = usable_cpus(TRANSPOSE_THREADS) if threads is None else max(1, threads)
    share = max(TILE, -(-n_samp // (4 * threads)))  # about four blocks a thread, whole tiles where it can
    # buffers in flight (2 a thread) within 4 x TRANSPOSE_BYTES
    rows = min(n_samp, share, max(1, 2 * TRANSPOSE_BYTES // (threads * max(1, n_var))))

    def transpose(s0: int) -> np.ndarray:
        s1 = min(n_samp, s0 + rows)
        buf = np.empty((s1 - s0, n_var), dtype=np.uint8)
        _sample_rows(blocks, buf, s0, s1, kernels)
        return buf

    with open(out_path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "|u1", "fortran_order": False, "shape": (n_samp, n_var)})
        with ThreadPoolExecutor(threads, thread_name_prefix="genotile-transpose") as pool:
            pending: deque = deque()
            for s0 in range(0, n_samp, rows):
                pending.append(pool.submit(transpose, s0))
                if len(pending) >= 2 * threads:
                    fh.write(pending.popleft().result().data)
            while pending:
                fh.write(pending.popleft().result().data)


def _sample_rows(blocks: list[np.ndarray], buf: np.ndarray, s0: int, s1: int, kernels) -> None:
    """buf[:s1 - s0] = samples s0..s1 of the variant-row blocks, transposed: (samples, variants)
    uint8, TILE x TILE at a time (cache-sized tiles transpose several times faster than whole
    blocks)."""
    v0 = 0
    for block in blocks:
        if kernels is not None:
            kernels.transpose_into(block, buf, s0, s1, v0)
        else:
            for t0 in range(0, block.shape[0], TILE):
                t1 = min(block.shape[0], t0 + TILE)
                for c0 in range(s0, s1, TILE):
                    c1 = min(s1, c0 + TILE)
                    buf[c0 - s0 : c1 - s0, v0 + t0 : v0 + t1] = block[t0:t1, c0:c1].T
        v0 += block.shape[0]


def read_genotypes(reader: GenotypeReader, path, encoding: str, codes_out, hold: bool = False):
    """Read a genotype input's calls for `encoding`: as its codes matrix written to `codes_out`,
    or (`hold`, a `genotype` store whose codes would be temporary) held as the reader offers them.

    Parameters
    ----------
    reader : GenotypeReader
        The opened input (io/readers/base.py).
    path : str or os.PathLike
        The input, for errors.
    encoding : str
        "genotype" or "genotype_t".
    codes_out : str or os.PathLike or None
        The codes (.npy, uint8 (vectors, fields)); None: held in memory (the Python API), nothing written.
    hold : bool
        Take the reader's `held_bits` where it has them (a whole .bed, read later by its own
        pass; nothing written).

    Returns
    -------
    ids_variants : list
        The variant IDs (None each where the vectors are samples).
    stored : pathlib.Path or BedFile or numpy.ndarray
        `codes_out`, written, or the .bed to read (io/readers/bed.py), or (no `codes_out`) the codes.
    """
    transposed = ENCODINGS[encoding].transposed
    # a store made on the GPU (store/resident.py on_device) is transposed there: none compiled here
    held = reader.held_bits(device=resident.wanted()) if hold and not transposed else None
    if held is not None:  # a plain .bed, read by the pass that writes its store
        return [None] * held.n_variants, held
    if codes_out is None:  # the blocks of variant rows held, transposed where the vectors are samples
        reader.want_ids = transposed
        rows = _Rows(None, len(reader.samples))
        ids_held: list = _read_rows(reader, rows)
        _check_variants(reader, path, ids_held, transposed)
        codes = np.concatenate(rows.blocks)
        return ids_held, codes if transposed else np.ascontiguousarray(codes.T)
    with atomic_path(codes_out) as tmp:
        if transposed:
            ids_variants: list = _read_rows(reader, RowAppender(tmp, len(reader.samples)))
        else:
            reader.want_ids = False  # vectors are samples: variant IDs are not kept
            direct = reader.write_sample_rows(tmp, threads=usable_cpus(2))  # samples x variants straight
            ids_variants = [None] * direct if direct is not None else _transposed_rows(reader, codes_out, tmp)
        _check_variants(reader, path, ids_variants, transposed)
    return ids_variants, Path(codes_out)


def _check_variants(reader: GenotypeReader, path, ids_variants: list, transposed: bool) -> None:
    """Refuse an input with no variant left, or (the vectors are variants) variant IDs that
    cannot name the outputs' rows."""
    if not ids_variants:
        raise GenotileError(f"{path}: no variants left after the VCF rules ({_describe(reader.stats)})")
    if transposed:  # variant IDs are vector IDs: they go to the TSV outputs
        check_ids(ids_variants, path, "variant")
        check_unique(
            ids_variants,
            path,
            "variant",
            " in file order, after the VCF rules",
            ": variant IDs name the rows and columns of the outputs; give each its own "
            "(bcftools annotate --set-id) or drop repeated records (bcftools norm -d exact)",
        )


def _transposed_rows(reader: GenotypeReader, codes_out, tmp) -> list:
    """Blocks of variant rows written transposed to `tmp` (held in memory where they fit, else
    through a temporary .npy beside it); returns the variant IDs (None each)."""
    fd, rows_tmp = tempfile.mkstemp(prefix=f".{Path(codes_out).name}.", suffix=".rows.npy", dir=Path(tmp).parent)
    os.close(fd)
    try:
        rows = _Rows(rows_tmp, len(reader.samples))
        ids_variants = _read_rows(reader, rows)
        if ids_variants:
            if rows.file is None:
                _transpose_blocks(rows.blocks, tmp)
            else:
                _transpose(rows_tmp, tmp)
        del rows
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(rows_tmp)
    return ids_variants


def genotype_manifest(reader: GenotypeReader, path, encoding: str, ids_variants: list, options: dict, sha256) -> dict:
    """The ingest manifest of a genotype input (`sha256`: a future of the input's SHA-256, or None
    where it is filled in later)."""
    samples, stats = list(reader.samples), dict(reader.stats)
    transposed = ENCODINGS[encoding].transposed
    ids, n_fields = (ids_variants, len(samples)) if transposed else (samples, len(ids_variants))
    return {
        "genotile": __version__,
        "input": str(path),
        "input_sha256": None if sha256 is None else sha256.result(),  # None: filled in by the pass (store/ingest.py)
        "format": reader.format,
        "encoding": encoding,
        "n_vectors": len(ids),
        "n_fields": n_fields,
        "n_kept": n_fields,
        "options": {k: (str(v) if isinstance(v, os.PathLike) else v) for k, v in options.items()},
        "counts": stats,
        "ids": ids,
        **({"field_ids": samples} if transposed else {}),
        **reader.manifest_keys(),  # PLINK: the fileset's files, FIDs and IIDs
    }


def _describe(stats: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in stats.items() if v)
