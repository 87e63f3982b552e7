"""What a run will cost before it runs: tiles, jobs, memory, output, time.

The model, per 2-way metric, n vectors of m fields, blocks of b:
- tiles  = B (B + 1) / 2 with B = ceil(n / b); jobs = ceil(tiles / tiles_per_job);
- work   = n (n - 1) / 2 pairs x m fields ("element comparisons"); the kernel's bit-MACs
  per pair are exact, read off the metric's own plane-product terms;
- time   = work / (rate x devices), rate = measured element comparisons/s of the backend for
  that metric (data/rates.json under Metric.rate_key, from bench/RESULTS.md), assuming tiles spread evenly, plus
  reading both blocks' planes for every tile at `read_gbps` per device (not overlapped: an
  upper bound when I/O and compute overlap);
- memory per tile job = both blocks' packed planes + the metric's count matrices (int64) and
  value columns (float64) for one b x b tile;
- output = density x pairs rows: tile files (16 bytes of indices + 8 per value column a row)
  and pairs.tsv.gz (~ text row length / 3 after gzip), plus matrix.tsv when n <= dense_max.
Alignment metrics assume every kept column is biallelic (2 planes); more symbols cost more.
"""

import json
import math
from dataclasses import dataclass
from importlib import resources

from genotile.core.bits import WORD_BITS, n_words
from genotile.core.encode import ALPHABETS, PlaneLayout
from genotile.core.encodings import ENCODINGS
from genotile.core.genotype import GenotypeLayout
from genotile.core.metrics import Metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError


def load_rates(path=None) -> dict:
    if path is None:
        text = resources.files("genotile").joinpath("data/rates.json").read_text()
    else:
        with open(path) as fh:
            text = fh.read()
    return json.loads(text)


def layout_for(metric: Metric, n_fields: int, missing: bool = True):
    encoding = ENCODINGS[metric.encoding]
    if encoding.genotypes:
        return GenotypeLayout(n_words(n_fields), encoding.planes, complete=not missing)
    has_valid = ALPHABETS[metric.encoding].has_missing  # a V plane where the alphabet has a missing symbol
    return PlaneLayout(words_b=n_words(n_fields), words_m=0, has_valid=has_valid, s_words=())


def bit_macs_per_pair(metric: Metric, layout) -> int:
    return sum(
        (t.left[1] - t.left[0]) * WORD_BITS
        for terms in metric.counts(layout).values()
        for t in terms
        if t.left is not None and t.right is not None
    )


@dataclass
class Estimate:
    metric: str
    backend: str
    n_vectors: int
    n_fields: int
    block_size: int
    tiles: int
    jobs: int
    devices: int
    pairs: int
    element_comparisons: float
    bit_macs: float
    seconds: float
    io_bytes: float
    io_seconds: float
    job_seconds: float
    job_memory_bytes: int
    store_bytes: int
    pairs_passing: float
    tile_output_bytes: float
    pairs_gz_bytes: float
    matrix_bytes: int

    def describe(self) -> str:
        def size(b):
            for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
                if b < 1000 or unit == "PB":
                    return f"{b:.3g} {unit}"
                b /= 1000

        def dur(s):
            return f"{s:.3g} s" if s < 120 else f"{s / 3600:.3g} h" if s >= 7200 else f"{s / 60:.3g} min"

        lines = [
            f"{self.metric} on {self.n_vectors:,} vectors x {self.n_fields:,} fields, blocks of {self.block_size:,}:",
            f"  {self.tiles:,} tiles (I <= J) in {self.jobs:,} jobs; {self.pairs:,} unique pairs",
            f"  work: {self.element_comparisons:.3g} element comparisons, {self.bit_macs:.3g} bit-MACs",
            f"  time on {self.devices} x {self.backend}: {dur(self.seconds + self.io_seconds)} = compute "
            f"{dur(self.seconds)} + reading {size(self.io_bytes)} of planes {dur(self.io_seconds)} "
            f"(one job: {dur(self.job_seconds)})",
            f"  memory per job: {size(self.job_memory_bytes)}; packed store: {size(self.store_bytes)}",
            f"  output: {self.pairs_passing:.3g} passing pairs: tile files {size(self.tile_output_bytes)}, "
            f"pairs.tsv.gz ~{size(self.pairs_gz_bytes)}"
            + (f", matrix.tsv ~{size(self.matrix_bytes)}" if self.matrix_bytes else ", no matrix.tsv (n > dense_max)"),
        ]
        return "\n".join(lines)


def estimate(
    metric: Metric,
    n_vectors: int,
    n_fields: int,
    *,
    block_size: int = 4096,
    density: float = 1.0,
    devices: int = 1,
    tiles_per_job: int = 1,
    backend: str = "cupy-b1",
    missing: bool = True,
    dense_max: int = 20000,
    rates: dict | None = None,
    read_gbps: float = 2.0,
) -> Estimate:
    if n_vectors < 0 or n_fields < 0 or block_size < 1 or devices < 1 or tiles_per_job < 1:
        raise GenotileError("vectors and fields must be >= 0; block size, devices and tiles per job >= 1")
    if not 0 <= density <= 1:
        raise GenotileError(f"density must be between 0 and 1, not {density}")
    rates = rates or load_rates()
    try:
        rate = rates[backend][metric.rate_key]
    except KeyError:
        raise GenotileError(f"no measured rate for {metric.name} on {backend}") from None
    plan = Plan(n_vectors, block_size, 0)
    tiles = len(plan.tiles()) if plan.n_blocks < 2000 else plan.n_blocks * (plan.n_blocks + 1) // 2
    jobs = math.ceil(tiles / tiles_per_job)
    layout = layout_for(metric, n_fields, missing)
    pairs = plan.n_pairs
    work = float(pairs) * n_fields
    b = min(block_size, max(n_vectors, 1))
    n_counts = len(metric.counts(layout))
    row_bytes = layout.total_words * 8
    job_memory = 2 * b * row_bytes + b * b * (8 * n_counts + 8 * len(metric.columns) + 1)
    passing = density * pairs
    text_row = 2 * 12 + 12 * len(metric.columns)
    seconds = work / (rate * devices)
    io_bytes = float(tiles) * 2 * b * row_bytes
    io_seconds = io_bytes / (read_gbps * 1e9 * devices)
    return Estimate(
        metric=metric.name,
        backend=backend,
        n_vectors=n_vectors,
        n_fields=n_fields,
        block_size=block_size,
        tiles=tiles,
        jobs=jobs,
        devices=devices,
        pairs=pairs,
        element_comparisons=work,
        bit_macs=float(pairs) * bit_macs_per_pair(metric, layout),
        seconds=seconds,
        io_bytes=io_bytes,
        io_seconds=io_seconds,
        job_seconds=(seconds + io_seconds) * devices / max(jobs, 1),
        job_memory_bytes=job_memory,
        store_bytes=n_vectors * row_bytes,
        pairs_passing=passing,
        tile_output_bytes=passing * (16 + 8 * len(metric.columns)),
        pairs_gz_bytes=passing * text_row / 3,
        matrix_bytes=n_vectors * n_vectors * 10 if n_vectors <= dense_max else 0,
    )
