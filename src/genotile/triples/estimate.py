"""What a ccc3 run will cost before it runs: jobs, triples, memory, output (see estimate.py).

Jobs = block triples I <= J <= K (B (B + 1) (B + 2) / 6, B = ceil(n / b)) x stages; work =
C(n, 3) triples x m fields; bit-MACs per triple = the 27 plane products (19 on complete data,
ccc3.count_terms) x 64 bits a word; memory per job on the CPU (numba, backends/cpu/numba_ccc3.py:
counts, epilogue and threshold fused) = three blocks' planes + a kernel call's output buffers
(CAPACITY triples) + the passing triples it sorts at once (at most runs.RUN_ROWS, ~4 copies of 88
bytes each while sorting: bounded whatever passes); the numpy backend (where numba is missing)
adds one batch of masked rows (9 planes) and its 8 count and 8 value matrices;
output = density x triples rows: 24 bytes of indices + 64 of values in the triple files,
~8 columns x 20 characters / 3 in triples.tsv.gz.
A density of 1 is a null threshold: refused beyond ccc3.NULL_THRESHOLD_MAX vectors.
"""

from genotile.backends.cpu.numba_ccc3 import CAPACITY
from genotile.backends.cuda.ccc3_fused import kernel_for
from genotile.core import ccc3
from genotile.core import rates as measured
from genotile.core.bits import WORD_BITS, n_words
from genotile.core.encodings import ENCODINGS
from genotile.core.genotype import GenotypeLayout
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.triples.runs import RUN_ROWS
from genotile.triples.stage import ccc3_block_size, plan_triples
from genotile.triples.tile import ROW_BYTES


def _size(b: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB", "EB"):
        if b < 1000 or unit == "EB":
            return f"{b:.3g} {unit}"
        b /= 1000
    return ""


def describe(
    n_vectors: int,
    n_fields: int,
    *,
    block_size: int | str = 4096,
    stages: int = 1,
    density: float = 1.0,
    missing: bool = True,
    batch_rows: int = 4096,
    gpus: int = 0,
) -> str:
    """The plan's lines: jobs, triples, work, memory and output, and, on `gpus` GPUs where the
    fused kernel applies (a threshold, planes it holds on an sm_90 GPU), the time (core/rates:
    CCC3_FUSED_BIT_MACS a GPU over min(gpus, jobs) GPUs, the merge, the start).

    >>> last = describe(20_000, 2_000, block_size=32_768, stages=2, density=1e-6, gpus=2).splitlines()[-1]
    >>> last.split(":")[0], last.split(": ")[1].split(" (")[0]
    ('  time on 2 GPU(s)', '~24 s')
    """
    if not 0 <= density <= 1:
        raise GenotileError(f"density must be between 0 and 1, not {density}")
    # a density of 1 is a null threshold (any other: some threshold), held to the run's bound
    threshold = None if density >= 1 else density
    where = "--density 1 (a null threshold): "
    block_size = ccc3_block_size(block_size, n_words(n_fields))  # "auto": by the planes, as the workflow's
    plan = plan_triples(Plan(n_vectors, block_size, 0), block_size, stages, threshold, where=where)
    blocks = plan.n_blocks
    jobs = blocks * (blocks + 1) * (blocks + 2) // 6 * stages
    layout = GenotypeLayout(n_words(n_fields), ENCODINGS[ccc3.FACTS.encoding].planes, complete=not missing)
    products = sum(
        1 for terms in ccc3.count_terms(layout).values() for t in terms if t.left is not None and t.right is not None
    )
    triples = plan.n_triples
    b = min(block_size, max(n_vectors, 1))
    row_bytes = layout.total_words * 8
    passing = density * triples
    per_job = passing / max(1, jobs)
    sorted_at_once = 4 * ROW_BYTES * min(per_job, RUN_ROWS)
    job_memory = 3 * b * row_bytes + CAPACITY * ROW_BYTES + sorted_at_once
    numpy_batch = batch_rows * (3 * row_bytes + b * (8 * 8 + 8 * 8 + 1))
    bit_macs = float(triples) * products * layout.words * WORD_BITS
    lines = []
    if gpus > 0 and threshold is not None and kernel_for(layout.words):  # resident or streamed: alike
        counting = bit_macs / (measured.CCC3_FUSED_BIT_MACS * min(gpus, jobs))
        merge = measured.CCC3_MERGE["start"] + measured.CCC3_MERGE["per_triple"] * passing
        total = counting + merge + measured.START
        lines.append(
            f"  time on {gpus} GPU(s): ~{total:.2g} s: counting {counting:.3g} s (the fused kernel, "
            f"{measured.CCC3_FUSED_BIT_MACS:.3g} bit-MAC/s a GPU), merge {merge:.2g} s, start {measured.START} s "
            f"(one H100's rates; the store not counted)"
        )
    return "\n".join(
        [
            f"ccc3 on {n_vectors:,} SNPs x {n_fields:,} samples, blocks of {block_size:,}, {stages} stage(s):",
            f"  {jobs:,} triple jobs ({jobs // stages:,} block triples I <= J <= K x {stages} stages); "
            f"{triples:,} unique triples",
            f"  work: {float(triples) * n_fields:.3g} element comparisons, "
            f"{bit_macs:.3g} bit-MACs ({products} plane products a triple)",
            f"  memory per job: {_size(job_memory)} on the CPU (numba); the numpy backend's masked batches of "
            f"{batch_rows:,} rows add {_size(numpy_batch)}",
            f"  output: {passing:.3g} passing triples: triple files {_size(passing * 88)}, "
            f"triples.tsv.gz ~{_size(passing * (3 * 12 + 8 * 20) / 3)}",
            *lines,
        ]
    )
