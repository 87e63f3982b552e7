"""Fast path of the VCF reader: text VCF (plain, bgzip or gzip) parsed with numpy from raw bytes.

`FastText(reader).blocks()` yields the same (variant IDs, codes) blocks, and counts the
same `stats`, as the cyvcf2 path of `readers/vcf.VcfReader` -- for the records it handles.
It handles the common case: GT the first FORMAT key, every selected call diploid with
one-character allele indices ("0/1", "1|1", "./.", "./1"), records with one ALT (and,
through the reader's own `_codes`, records with none or several, split or skipped).
Everything else -- a GT that is not the first key, haploid or polyploid calls,
allele indices of two digits, a malformed line, a line that is not a record, any
record the rules reject with an error -- makes it stop at the first record of the
text block it is in; `records` then says how many records it handled, and the
reader goes on from there with cyvcf2 (which reports any error in its own words).
A block either is handled whole (stats counted, rows yielded) or not at all.

How: the text is cut into blocks of whole lines, handed to DECODERS worker threads (by
default every CPU the process may use), and their rows are handed out in file order.
Plain text is memory-mapped only to find where each block ends: the first newline about
CHUNK_BYTES past its start (less on smaller files, so that every worker gets several
blocks); a worker reads its block with pread into a buffer of its own and decodes it, so
blocks are scanned and decoded side by side, nothing serial but the cutting. BGZF is cut
by a thread into groups of blocks holding about CHUNK_BYTES of text, which DECODERS
workers inflate side by side (the system's libdeflate through ctypes when there is one,
else zlib; both release the GIL; pysam's BGZF reader holds it); plain gzip is one deflate
stream, inflated by that thread alone. The main thread cuts the inflated text into
blocks of lines, joining the line that straddles two pieces. Blocks of the commonest kind
go whole to a worker (compiled, below); for any other, the main thread splits each
line's first nine columns in Python and finds the calls by byte offsets: a GT-only line
whose calls are all three characters has them at fixed offsets from the line's end (the
common case: one copy per line); otherwise the tab offsets of the block give each call's
start. A worker then decodes the block's calls at once with numpy table lookups on the
two 16-bit halves of each call ((allele, separator), (allele, end)), in cache-sized
batches. Measured on 1,000 samples x 200,000 msprime variants (.vcf.gz, 2 cores): ~2.1 s
of CPU, ~2 s wall, where cyvcf2 takes ~11 s.

Compiled blocks: where numba is installed, variant IDs are not wanted (ibs, king), every
sample is read and the file is at least COMPILED_MIN_BYTES, a worker hands each block to
vcf_kernels.decode_block first, which scans its lines and decodes their calls in one
compiled pass (~1 GB/s of text per thread) when every line is of the commonest kind
(GT-only 3-character calls, one ALT); any other block goes the way above, in the worker.
Plain text of 2,000 samples x 200,000 variants (1.6 GB) comes at ~0.9 GB/s with one worker
and ~5.4 GB/s with 16 on a 16-core machine; 20,000 x 100,000 (8 GB) at ~4.9 GB/s. BGZF stops
scaling at 4-8 workers (~1 GB/s of text with zlib): its block-by-block Python holds the GIL
(bench/RESULTS.md, "Session 6: VCF ingest").

Contigs left out (`chromosomes: autosomes` where the header declares others; the reader's
`kept_contigs`, None for every contig): the fast path applies the reader's first rule itself, a
record whose CHROM is not kept counted (`non_autosomal_skipped`, the contig in the reader's
`skipped_contigs`) and its calls only checked (vcf_lines, vcf_calls, vcf_kernels), so that a human
VCF with chrX, chrY and chrM records stays on this path (through cyvcf2 it took ~5x longer).

Where: vcf_spans.py cuts the text into spans of whole lines (bgzf.py inflates BGZF),
vcf_lines.py scans a span's records' first nine columns, vcf_calls.py decodes their calls,
vcf_kernels.py does both at once (compiled); this module hands the spans to the workers and
their rows out, in file order.
"""

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from genotile.core.encode import MISSING
from genotile.io import vcf_lines
from genotile.io.vcf_calls import FIRST, SECOND_FIXED, CallDecoder
from genotile.io.vcf_lines import Lines
from genotile.io.vcf_spans import HandOver, InflatedText, PlainText, inflated_spans, own_span, plain_spans
from genotile.util.cpus import usable_cpus

DECODERS: int | None = None  # worker threads decoding blocks (None: every usable CPU)
RUNS = 64  # runs of records left out by CHROM that a compiled block may hold (more: the numpy path)
COMPILED = True  # decode common-case blocks with vcf_kernels (numba) when IDs are not wanted
# ... in files at least this large: numba's start-up (~0.75 s a process) costs more than it
# saves below (on 1,000 samples x 200,000 records, 40 MB of .vcf.gz, it saves ~0.4 s of ~2.8)
COMPILED_MIN_BYTES = 1 << 24


def decoders() -> int:
    """Worker threads decoding blocks: DECODERS, or the CPUs this process may use."""
    return usable_cpus() if DECODERS is None else max(1, DECODERS)


def compiled_kernels():
    """vcf_kernels (numba) when COMPILED and numba is installed, else None (the numpy path)."""
    if not COMPILED:
        return None
    try:
        from genotile.io import vcf_kernels
    except ImportError:
        return None
    return vcf_kernels


class FastText:
    def __init__(self, reader):
        self.r = reader
        self.nf = len(reader.file_samples)  # sample columns in the file
        order = {s: k for k, s in enumerate(reader.file_samples)}
        cols = np.array([order[s] for s in reader.samples], dtype=np.int64)
        self.cols = None if np.array_equal(cols, np.arange(self.nf)) else cols
        self.records = 0  # records handled, in file order
        self.finished = False
        self.want_ids = reader.want_ids  # False: IDs are None (callers that drop them)
        self.calls = CallDecoder(reader, self.nf, self.cols)
        kept = reader.kept_contigs  # the contigs read (None: every one)
        self.keep = None if kept is None else frozenset(name.encode() for name in kept)
        # ... as the compiled kernel takes them: the names one after the other, and their ends
        names = sorted(self.keep or ())
        self.names = np.frombuffer(b"".join(names), dtype=np.uint8)
        self.name_ends = np.cumsum([0, *map(len, names)], dtype=np.int64)

    def blocks(self):
        """Yield (ids, codes) per block; stop (finished False) at a block it does not handle.

        Plain text is memory-mapped and cut into spans of whole lines that the workers decode
        side by side; compressed text is inflated by a thread and its lines split here. Lines
        outside the compiled kernel are split in this thread while the workers decode other
        blocks' calls with numpy (which releases the GIL); stats are counted, and records the
        reader could not take handed over, in file order.
        """
        threads = decoders()
        try:
            plain = PlainText.open(self.r.path)
            text = None if plain is not None else InflatedText(self.r.path, threads=threads)
        except (OSError, ValueError):
            return
        pool = ThreadPoolExecutor(threads, thread_name_prefix="genotile-vcf-decode")
        pending: deque = deque()
        kernels = None
        if not self.want_ids and self.cols is None and os.path.getsize(self.r.path) >= COMPILED_MIN_BYTES:
            kernels = compiled_kernels()
        try:
            names = self.r.file_samples
            spans = plain_spans(plain, threads, names) if plain is not None else inflated_spans(text, names)
            while True:
                try:
                    span = next(spans, None)
                    if span is not None and kernels is not None:  # the whole block in a worker
                        pending.append((None, pool.submit(self._decode_compiled, kernels, span)))
                    elif span is not None:
                        span = own_span(span)
                        lines = self._scan(*span)
                        pending.append((lines, pool.submit(self.calls.decode, span[0], lines)))
                except HandOver:
                    span = None
                    stopped = True
                else:
                    stopped = False
                # hand out finished blocks in order; keep about two per worker in flight
                while pending and (span is None or len(pending) > 2 * threads):
                    lines, job = pending.popleft()
                    out = self._finish(lines, job)
                    if out is None:
                        return
                    if out[0]:
                        yield out
                if span is None:
                    self.finished = not stopped
                    return
        finally:
            for _, job in pending:
                job.cancel()
            pool.shutdown(wait=True)
            if text is not None:
                text.close()
            if plain is not None:
                plain.close()

    def _finish(self, lines: Lines | None, job):
        """(ids, codes) of a decoded block with its stats counted; None to hand over to cyvcf2."""
        st = self.r.stats
        saved = dict(st)
        try:
            if lines is None:  # _decode_compiled: the block's lines come with its codes
                lines, codes, clean_stats, slow = job.result()
            else:
                codes, clean_stats, slow = job.result()
            for key, k in (*lines.stats.items(), *clean_stats.items()):
                st[key] += k
            if slow is not None:  # records outside the common case: the reader's own rules
                rows, args = slow
                codes[rows] = self.calls.slow(*args)
        except HandOver:
            st.clear()
            st.update(saved)
            return None
        self.records += lines.records
        self.r.skipped_contigs |= lines.contigs
        return lines.ids, codes

    def _decode_compiled(self, kernels, span):
        """(lines, codes, stats, slow) of a block (in a worker thread): vcf_kernels.decode_block
        when it takes the block, else _scan and calls.decode as for any block (whose HandOver
        then reaches _finish through the job)."""
        buf, start, end = span
        n = len(self.r.samples)
        codes = np.empty(((end - start) // (4 * max(1, self.nf)) + 1, n), dtype=np.uint8)
        counts = np.zeros(kernels.N_COUNTS, dtype=np.int64)
        runs = np.empty((RUNS, 2), dtype=np.int64)
        if isinstance(buf, PlainText):  # read into this worker's buffer
            arr, start, end = buf.read(start, end), 0, end - start
        else:
            arr = np.frombuffer(buf, dtype=np.uint8)
        halves = (
            arr[start : start + (end - start) // 2 * 2].view(np.uint16),
            arr[start + 1 : start + 1 + (end - start - 1) // 2 * 2].view(np.uint16),
        )
        records, n_rows = kernels.decode_block(
            arr,
            halves,
            FIRST,
            SECOND_FIXED,
            start,
            end,
            self.nf,
            self.r.filter_pass,
            MISSING,
            codes,
            counts,
            self.keep is not None,
            self.names,
            self.name_ends,
            runs,
        )
        try:  # the contigs left out, read while `arr` holds this block
            contigs = {arr[s:e].tobytes().decode() for s, e in runs[: counts[kernels.RUNS]]}
        except UnicodeDecodeError:  # a CHROM that is not text: the numpy path hands it over
            records = -1
        if records < 0:
            buf, start, end = own_span(span)
            lines = self._scan(buf, start, end)
            return (lines, *self.calls.decode(buf, lines))
        lines = Lines()
        lines.records = lines.stats["records"] = records
        lines.stats["filter_failed"] = int(counts[kernels.FILTER_FAILED])
        lines.stats["filter_skipped"] = int(counts[kernels.FILTER_SKIPPED])
        lines.stats["non_autosomal_skipped"] = int(counts[kernels.LEFT_OUT])
        lines.contigs = contigs
        lines.ids = [None] * n_rows
        missing = int(counts[kernels.MISSING_CALLS])
        stats = {
            "variants": n_rows,
            "missing_calls": missing,
            "half_missing_calls": missing - int(counts[kernels.BOTH_MISSING]),
            "monomorphic": int(counts[kernels.MONOMORPHIC]),
            "all_missing": int(counts[kernels.ALL_MISSING]),
        }
        return lines, codes[:n_rows], stats, None

    def _scan(self, buf: bytes, start: int, end: int) -> Lines:
        """vcf_lines.scan of [start, end) of buf under this reader's rules."""
        return vcf_lines.scan(
            buf,
            start,
            end,
            nf=self.nf,
            skip_multiallelic=self.r.multiallelic == "skip",
            filter_pass=self.r.filter_pass,
            want_ids=self.want_ids,
            keep=self.keep,
        )
