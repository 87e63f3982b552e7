"""What a 2-way run will cost before it runs: tiles, jobs, memory, output, time by stage.

The defaults are the workflow's (config/config.yaml and the schema): blocks of `auto` sized as
the store job sizes them (core/blocks.py), the metric's default threshold and the fraction of
pairs assumed to pass it (core/rates.py), and the GPUs and cores the caller found on this host.

The model, per metric, n vectors of m fields, blocks of b (B = ceil(n / b) blocks):
- tiles = B (B + 1) / 2; they run inside the store job where the workflow's `tiles_in_store:
  auto` would (a GPU and at most EARLY_TILES_MAX tiles), else as ceil(tiles / tiles_per_job) jobs;
- time = start + store + tiles + merge, one after another (core/rates.py: the rates and where each
  was measured). Tiles: each tile's pairs x m element comparisons at the metric's rate, spread
  over the GPUs (or over the CPU cores, tile_threads to a job) largest first, each to the device
  that frees first; the kernel's bit-MACs per pair are exact, read off the metric's own plane
  products, and printed with the rate in bit-MAC/s they imply;
- host memory per tile job = both blocks' packed planes + the count matrices (int64) and value
  columns (float64) of one b x b tile on the CPU; on a GPU, where the counts stay on the device,
  only the dense block (float64) where matrix.tsv is wanted;
- output = pass fraction x pairs rows: tile files (16 bytes of indices + 8 per value column a
  row) and pairs.tsv.gz (~ text row length / 3 after gzip), plus matrix.tsv when n <= dense_max.
Alignment metrics assume every kept column is biallelic (2 planes); more symbols cost more.
"""

import heapq
import math
from dataclasses import dataclass

from genotile.core import rates as measured
from genotile.core.bits import WORD_BITS, n_words
from genotile.core.blocks import auto_block_size, words_per_vector
from genotile.core.encode import ALPHABETS, PlaneLayout
from genotile.core.encodings import ENCODINGS
from genotile.core.genotype import GenotypeLayout
from genotile.core.limits import PAIRS_MAX, check_pairs_bound
from genotile.core.metrics import Metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.pairs.early import EARLY_TILES_MAX

TILE_THREADS = 2  # config `tile_threads`: the cores of one CPU tile job
SCHEDULED_TILES_MAX = 20_000  # past this many tiles an even spread stands in for the schedule


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


def backend_for(backend: str, gpus: int) -> str:
    """The backend whose rate applies: `auto` is cupy-b1 where there is a GPU, else numba (the
    fastest CPU backend; the workflow takes it where numba is installed)."""
    if backend == "auto":
        return "cupy-b1" if gpus > 0 else "numba"
    if backend.startswith("cupy") and gpus < 1:
        raise GenotileError(f"backend {backend} runs on a GPU, and 0 GPUs were given")
    return backend


def input_format(metric: Metric, given: str | None) -> str:
    """The store rate's key: `given` (an alias such as pgen taken as its measured kin), or the
    input a metric's encoding reads most (a .bed for genotypes, FASTA for alignments)."""
    name = given or ("bed" if ENCODINGS[metric.encoding].genotypes else "fasta")
    name = measured.STORE_ALIASES.get(name, name)
    if name not in measured.STORE:
        known = sorted([*measured.STORE, *measured.STORE_ALIASES])
        raise GenotileError(f"no measured store rate for input {given!r}; known: {', '.join(known)}")
    return name


def _stored_as_bits(metric: Metric, kind: str) -> bool:
    """Whether the store keeps its input's 2-bit calls as they are (store/bits.py: a .bed or a
    .pgen read in one pass, the vectors samples), not the planes."""
    return kind == "bed" and not ENCODINGS[metric.encoding].transposed


def _bits_row_bytes(n_fields: int) -> int:
    """Bytes of a store row of bits: lo and hi words, 64 variants a word."""
    return 16 * -(-int(n_fields) // 64)


def spread(works: list[float], slots: int) -> float:
    """The work of the busiest of `slots` equal devices, each work given to the device that frees
    first, largest first.

    >>> spread([4, 4, 2, 2, 2, 2], 2), spread([3, 1], 4)
    (8.0, 3.0)
    """
    loads = [0.0] * min(slots, len(works))
    for work in sorted(works, reverse=True):
        heapq.heapreplace(loads, loads[0] + work)
    return max(loads, default=0.0)


def tile_pairs(plan: Plan) -> list[int]:
    """Pairs of each tile I <= J: s (s - 1) / 2 on the diagonal, s_I s_J off it."""
    sizes = [plan.block(i).stop - plan.block(i).start for i in range(plan.n_blocks)]
    return [sizes[i] * (sizes[i] - 1) // 2 if i == j else sizes[i] * sizes[j] for i, j in plan.tiles()]


@dataclass
class Estimate:
    metric: str
    backend: str
    input_format: str
    n_vectors: int
    n_fields: int
    block_size: int
    block_auto: bool
    tiles: int
    jobs: int  # tile jobs; 0 where the store job computes the tiles
    gpus: int
    cores: int
    pairs: int
    element_comparisons: float
    bit_macs: float
    tile_rate: float  # element comparisons/s a GPU (a core on the CPU)
    pair_rate: float  # pairs/s of the epilogue a GPU where measured apart (core/rates.py TILE_PAIRS), else 0
    store_rate: float  # input vectors x fields/s on these cores
    start_seconds: float
    store_seconds: float  # its fixed part included
    store_fixed_seconds: float  # a store made on the GPU: its fixed start (core/rates.py STORE_GPU_START), else 0
    tile_seconds: float
    merge_seconds: float
    job_memory_bytes: int
    store_bytes: int
    threshold: float | None
    threshold_default: bool
    pass_fraction: float
    pass_fraction_why: str
    pairs_passing: float
    tile_output_bytes: float
    pairs_gz_bytes: float
    matrix_bytes: int
    dense_max: int
    refused: str  # why the workflow's plan would refuse this run ("" where it would not)

    @property
    def seconds(self) -> float:
        return self.start_seconds + self.store_seconds + self.tile_seconds + self.merge_seconds

    def describe(self) -> str:
        """The plan as `genotile plan` prints it: sizes, the time by stage and what it assumed."""
        gpu = self.backend.startswith("cupy")
        where = f"{self.gpus} GPU(s) and {self.cores} CPU cores" if gpu else f"{self.cores} CPU cores (no GPU)"
        runs = f"in {self.jobs:,} tile jobs" if self.jobs else "in the store job (tiles_in_store: auto)"
        auto = f" (auto, for {'GPU' if gpu else 'CPU'} tiles)" if self.block_auto else ""
        values = "genotypes" if self.input_format != "fasta" else "characters"
        bit_rate = self.tile_rate * self.bit_macs / self.element_comparisons
        threshold = "null" if self.threshold is None else f"{self.threshold:g}"
        default = " (the workflow's default)" if self.threshold_default else ""
        matrix = (
            f"matrix.tsv ~{_size(self.matrix_bytes)}"
            if self.matrix_bytes
            else f"no matrix.tsv ({self.n_vectors:,} vectors > dense_max {self.dense_max:,})"
        )
        lines = [
            f"{self.metric} on {self.n_vectors:,} vectors x {self.n_fields:,} fields, "
            f"blocks of {self.block_size:,}{auto}:",
            f"  {self.tiles:,} tile(s) (I <= J) {runs}; {self.pairs:,} unique pairs",
            f"  work: {self.element_comparisons:.3g} element comparisons, {self.bit_macs:.3g} bit-MACs",
            f"  time on {where}, {self.backend}: {_dur(self.seconds)} = store {_dur(self.store_seconds)} "
            f"+ tiles {_dur(self.tile_seconds)} + merge {_dur(self.merge_seconds)} + start {_dur(self.start_seconds)}",
            f"    store: {float(self.n_vectors) * self.n_fields:.3g} {values} of {self.input_format} at "
            f"{self.store_rate:.3g}/s on {self.cores} cores"
            + (
                f", plus {_dur(self.store_fixed_seconds)} fixed (made on the GPU: the sample table, pass, writes)"
                if self.store_fixed_seconds
                else ""
            ),
            f"    tiles: {self.tile_rate:.3g} comparisons/s ({bit_rate:.3g} bit-MAC/s)"
            + (f" and {self.pair_rate:.3g} pairs/s (the epilogue)" if self.pair_rate else "")
            + f" a {'GPU' if gpu else 'core'}, over {self.gpus if gpu else self.cores} {'GPU(s)' if gpu else 'cores'}",
            "    rates measured (bench/RESULTS.md) and kept in src/genotile/core/rates.py",
            f"  memory per {'tile' if self.jobs else 'store'} job: {_size(self.job_memory_bytes)} of planes and "
            f"tile arrays; packed store: {_size(self.store_bytes)}",
            f"  threshold {threshold}{default}: assumed {self.pass_fraction:.3g} of pairs pass "
            f"({self.pass_fraction_why}); --pass-fraction sets it",
            f"  output: {self.pairs_passing:.3g} passing pairs: tile files {_size(self.tile_output_bytes)}, "
            f"pairs.tsv.gz ~{_size(self.pairs_gz_bytes)}, {matrix}",
        ]
        if self.refused:
            lines.append(f"  the workflow would refuse this run: {self.refused}")
        return "\n".join(lines)


def _size(b: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if b < 1000 or unit == "PB":
            return f"{b:.3g} {unit}"
        b /= 1000
    return ""


def _dur(s: float) -> str:
    return f"{s:.3g} s" if s < 120 else f"{s / 3600:.3g} h" if s >= 7200 else f"{s / 60:.3g} min"


def pass_fraction_for(metric: str, threshold: float | None, given: float | None) -> tuple[float, str]:
    """The fraction of pairs assumed to pass and why: `given`; 1 for a null threshold; else the
    one assumed at the workflow's default threshold (core/rates.py)."""
    if given is not None:
        if not 0 <= given <= 1:
            raise GenotileError(f"the pass fraction must be between 0 and 1, not {given}")
        return given, "given"
    if threshold is None:
        return 1.0, "a null threshold keeps every pair"
    fraction, why = measured.PASS_FRACTION[metric]
    if threshold != measured.THRESHOLDS[metric]:
        why += f"; assumed at the default {measured.THRESHOLDS[metric]:g}, not measured at {threshold:g}"
    return fraction, why


def estimate(
    metric: Metric,
    n_vectors: int,
    n_fields: int,
    *,
    block_size: int | str = "auto",
    threshold: float | None | str = "default",
    pass_fraction: float | None = None,
    gpus: int = 1,
    cores: int = 16,
    backend: str = "auto",
    input_kind: str | None = None,
    tiles_per_job: int = 1,
    missing: bool = True,
    dense_max: int = 20000,
    pairs_max: int = PAIRS_MAX,
    device_bytes: int | None = None,
    rates: dict | None = None,
) -> Estimate:
    """The cost of computing `metric` on n_vectors x n_fields, with the workflow's defaults.

    Parameters
    ----------
    metric : Metric
        A 2-way metric (core/metrics.py).
    n_vectors, n_fields : int
        Vectors (at least 2) and fields per vector (at least 1).
    block_size : int or "auto"
        Vectors per block; auto sizes it as the store job would (core/blocks.py).
    threshold : float, None or "default"
        The metric's threshold; "default": the workflow's (core/rates.py THRESHOLDS); None keeps
        every pair.
    pass_fraction : float or None
        Fraction of pairs passing; None: 1 for a null threshold, else the one assumed for the metric.
    gpus, cores : int
        GPUs the tiles spread over (0: CPU tiles) and CPU cores of the host.
    backend : str
        Whose measured rate applies; auto: cupy-b1 with GPUs, numba without.
    input_kind : str or None
        The input's format for the store's rate (bed, pgen, vcf, bcf, vcz, fasta); None: bed for
        genotype metrics, fasta for alignments.
    tiles_per_job, missing, dense_max, pairs_max : as the config's keys (missing: the data has
        missing calls, which cost more plane products).
    device_bytes : int or None
        The GPU's memory for the auto block (None: GPU_DEFAULT_BYTES).
    rates : dict or None
        {backend: {rate key: element comparisons/s}} replacing entries of core/rates.py TILES; a
        rate given here is the whole tile's (no TILE_PAIRS term beside it).

    Returns
    -------
    Estimate
    """
    if n_vectors < 2 or n_fields < 1:
        raise GenotileError(
            f"nothing to compare in {n_vectors} vectors of {n_fields} fields: a plan needs at least 2 vectors "
            "and 1 field"
        )
    if (block_size != "auto" and int(block_size) < 1) or gpus < 0 or cores < 1 or tiles_per_job < 1:
        raise GenotileError("block size (or auto), cores and tiles per job must be >= 1, GPUs >= 0")
    backend = backend_for(backend, gpus)
    table = {name: dict(row) for name, row in measured.TILES.items()}
    for name, row in (rates or {}).items():
        if name.startswith("_"):  # a note such as "_source"
            continue
        if not isinstance(row, dict) or not all(isinstance(v, (int, float)) and v > 0 for v in row.values()):
            raise GenotileError(f"rates of {name}: expected {{metric: element comparisons/s > 0}}, not {row!r}")
        table.setdefault(name, {}).update(row)
    tile_rate = table.get(backend, {}).get(metric.rate_key or "")
    if tile_rate is None:
        raise GenotileError(f"no measured rate for {metric.name} on {backend}")
    # a rate given in `rates` is the whole tile's: no epilogue term beside it
    given = metric.rate_key in (rates or {}).get(backend, {})
    pair_rate = None if given else measured.TILE_PAIRS.get(backend, {}).get(metric.rate_key or "")
    gpu = backend.startswith("cupy")
    dense = n_vectors <= dense_max
    auto = block_size == "auto"
    if auto:
        words = words_per_vector(metric.encoding, n_fields)
        block = auto_block_size(n_vectors, words, [metric.name], gpu=gpu, device_bytes=device_bytes, dense=dense)
    else:
        block = int(block_size)
    plan = Plan(n_vectors, block, 0)
    blocks = plan.n_blocks
    tiles = blocks * (blocks + 1) // 2
    in_store = gpu and tiles <= EARLY_TILES_MAX
    jobs = 0 if in_store else math.ceil(tiles / tiles_per_job)
    # CPU tiles: a job of TILE_THREADS cores each, as many at once as the cores allow
    slots = gpus if gpu else max(1, cores // TILE_THREADS)
    slot_rate = tile_rate * measured.at_cores(measured.MULTI_GPU, gpus) if gpu else tile_rate * min(TILE_THREADS, cores)
    # a tile's work in comparisons: its pairs x fields, plus its pairs' epilogue in comparisons'
    # time where that is measured apart (core/rates.py TILE_PAIRS)
    pair_work = n_fields + (tile_rate / pair_rate if pair_rate else 0.0)
    if tiles <= SCHEDULED_TILES_MAX:
        busiest = spread([p * pair_work for p in tile_pairs(plan)], slots)
    else:  # so many tiles that they spread evenly
        busiest = float(plan.n_pairs) * pair_work / slots
    tile_seconds = busiest / slot_rate

    layout = layout_for(metric, n_fields, missing)
    pairs = plan.n_pairs
    b = min(block, n_vectors)
    row_bytes = layout.total_words * 8
    per_pair = 8 * len(metric.counts(layout)) + 8 * len(metric.columns) + 1
    # host memory: both blocks' planes; on the CPU the tile's count and value matrices too, on a
    # GPU only the dense block where matrix.tsv is wanted (the counts stay on the device)
    tile_bytes = (8 * b * b if dense else 0) if gpu else b * b * per_pair
    job_memory = 2 * b * row_bytes + tile_bytes

    default = isinstance(threshold, str)
    if isinstance(threshold, str) and threshold != "default":
        raise GenotileError(f"threshold must be a number, None or 'default', not {threshold!r}")
    chosen = measured.THRESHOLDS[metric.name] if isinstance(threshold, str) else threshold
    fraction, why = pass_fraction_for(metric.name, chosen, pass_fraction)
    refused = ""
    if chosen is None:
        try:
            check_pairs_bound(n_vectors, [metric.name], pairs_max)
        except GenotileError as exc:
            refused = str(exc)
    passing = fraction * pairs
    text_row = 2 * 12 + 12 * len(metric.columns)
    matrix_bytes = n_vectors * n_vectors * 10 if dense else 0
    merge = (
        measured.MERGE_RUN
        + measured.MERGE_TILE * tiles
        + passing * text_row / measured.at_cores(measured.TEXT_BYTES, cores)
        + matrix_bytes / measured.at_cores(measured.MATRIX_BYTES, cores)
    )
    kind = input_format(metric, input_kind)
    # a .bed stored as bits by a store job computing its tiles on the GPU: made on the device
    on_device = in_store and _stored_as_bits(metric, kind) and kind in measured.STORE_GPU
    store_rate = measured.at_cores((measured.STORE_GPU if on_device else measured.STORE)[kind], cores)
    store_start = measured.STORE_GPU_START if on_device else 0.0
    return Estimate(
        metric=metric.name,
        backend=backend,
        input_format=kind,
        n_vectors=n_vectors,
        n_fields=n_fields,
        block_size=block,
        block_auto=auto,
        tiles=tiles,
        jobs=jobs,
        gpus=gpus,
        cores=cores,
        pairs=pairs,
        element_comparisons=float(pairs) * n_fields,
        bit_macs=float(pairs) * bit_macs_per_pair(metric, layout),
        tile_rate=tile_rate,
        pair_rate=pair_rate or 0.0,
        store_rate=store_rate,
        start_seconds=measured.START + jobs * measured.JOB_START / slots,
        store_seconds=store_start + float(n_vectors) * n_fields / store_rate,
        store_fixed_seconds=store_start,
        tile_seconds=tile_seconds,
        merge_seconds=merge,
        job_memory_bytes=job_memory,
        store_bytes=n_vectors * (_bits_row_bytes(n_fields) if _stored_as_bits(metric, kind) else row_bytes),
        threshold=chosen,
        threshold_default=default,
        pass_fraction=fraction,
        pass_fraction_why=why,
        pairs_passing=passing,
        tile_output_bytes=passing * (16 + 8 * len(metric.columns)),
        pairs_gz_bytes=passing * text_row / 3,
        matrix_bytes=matrix_bytes,
        dense_max=dense_max,
        refused=refused,
    )
