"""ccc3 triple files from the GPU backends (cupy-b1, cupy-int8) equal the numpy path's, byte for byte.

Skipped where there is no CUDA GPU / CuPy. On a GPU machine: every job of seeded plans whose
blocks and stages split unevenly (diagonal and off-diagonal block triples), missing and complete
data, thresholds None / passing about a fifth; small batches of middle rows and a passing-triples
buffer that overflows, so the batching and the regrow-and-rerun path run. And in bounded memory
(issue 30): a buffer held to a few triples, so every batch is cut into ranges read back one chunk
each, through the whole run (job files in several sorted runs, the merge) to the CPU's
triples.tsv.gz, byte for byte. On Hopper the streamed path's wgmma kernel, whose triples and value
bits are mma.sync's, and its fallback where it does not build; without a GPU, which kernel a job
gets (CuPy's device and NVRTC faked).
"""

import gzip

import numpy as np
import pytest
from ccc3ref import store
from genodata import random_genotypes, vcf_text, write_vcf

from genotile import pipeline
from genotile.backends.cuda import cupy_common
from genotile.core import ccc3
from genotile.errors import GenotileError
from genotile.io.tilefile import arrays_digest, read_tile
from genotile.store.reuse import current_store
from genotile.triples import runs
from genotile.triples.tile import compute_triples, iter_triples

needs_gpu = pytest.mark.skipif(
    not cupy_common.has_gpu(80), reason="no CUDA GPU (compute capability >= 8.0) / CuPy: ccc3 device path untestable"
)


def _hopper() -> bool:
    return cupy_common.has_gpu(80) and cupy_common.cupy_module().cuda.Device().compute_capability == "90"


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    if cupy_common.has_gpu(80):
        from genotile.backends.cuda import cupy_ccc3

        monkeypatch.setattr(cupy_common, "POISON", True)
        monkeypatch.setattr(cupy_ccc3, "BATCH_ROWS", 40)
        monkeypatch.setattr(cupy_ccc3, "INITIAL_CAPACITY", 17)


@needs_gpu
@pytest.mark.parametrize("backend", ["cupy-b1", "cupy-int8"])
@pytest.mark.parametrize("kind", ["missing", "complete"])
@pytest.mark.parametrize("threshold", [None, "fifth"])
def test_device_triples_equal_numpy(backend, kind, threshold):
    if kind == "missing":
        g = np.ascontiguousarray(random_genotypes(150, 26, p_missing=0.1, seed=31).T)
    else:
        g = np.ascontiguousarray(random_genotypes(150, 26, p_missing=0.0, seed=32, special=False).T)
    planes, layout, perm = store(g, 3)
    plan = ccc3.Plan3(g.shape[0], 9, 3, 2)  # blocks of 9, 9, 8; middle blocks in 2 stages
    params = ccc3.Params()
    if threshold == "fifth":
        arrays, _ = compute_triples(planes, layout, perm, plan, params, 0, 1, 2, 0, None, "numpy")
        threshold = float(np.quantile(np.max([arrays[c] for c in ccc3.COLUMNS], axis=0), 0.8))
    passing = 0
    for job in plan.jobs():
        want, _ = compute_triples(planes, layout, perm, plan, params, *job, threshold, "numpy")
        got, meta = compute_triples(planes, layout, perm, plan, params, *job, threshold, backend)
        assert meta["backend"] == backend
        assert arrays_digest(got) == arrays_digest(want), job
        passing += want["a"].size
    assert passing > 0


@needs_gpu
@pytest.mark.parametrize("backend", ["cupy-b1", "cupy-int8"])
@pytest.mark.parametrize("threshold", [None, 0.2])  # every triple; about half of them
def test_device_chunks_are_bounded_and_the_run_writes_the_cpus_bytes(tmp_path, monkeypatch, backend, threshold):
    from genotile.backends.cuda import cupy_ccc3

    path = write_vcf(tmp_path / "g.vcf", vcf_text(random_genotypes(11, 21, seed=9), seed=9))
    current_store(path, "genotype_t", tmp_path / "out", 64, 1)
    store_dir = tmp_path / "out" / "store" / "genotype_t"
    kwargs = {"block_size": 7, "stages": 2, "threshold": threshold}
    cpu = pipeline.run_ccc3(store_dir, tmp_path / "cpu", backend="numpy", **kwargs)
    monkeypatch.setattr(cupy_ccc3, "BATCH_ROWS", 9)  # a middle row or two a batch
    monkeypatch.setattr(cupy_ccc3, "INITIAL_CAPACITY", 1)
    monkeypatch.setattr(cupy_ccc3, "MAX_CAPACITY", 3)  # grows 1 -> 2 -> 3, then ranges are cut
    monkeypatch.setattr(runs, "RUN_ROWS", 4)
    # each chunk is one readback of at most MAX_CAPACITY triples
    g = np.ascontiguousarray(random_genotypes(30, 21, p_missing=0.1, seed=10).T)
    planes, layout, perm = store(g, 4)
    plan = ccc3.Plan3(g.shape[0], 8, 4, 1)
    for job in plan.jobs():
        sizes = [
            ids.shape[0] for ids, _ in iter_triples(planes, layout, perm, plan, ccc3.Params(), *job, threshold, backend)
        ]
        want, _ = compute_triples(planes, layout, perm, plan, ccc3.Params(), *job, threshold, "numpy")
        assert sum(sizes) == want["a"].size and all(1 <= t <= 3 for t in sizes), (job, sizes)
        assert len(sizes) >= -(-want["a"].size // 3)
    gpu = pipeline.run_ccc3(store_dir, tmp_path / "gpu", backend=backend, **kwargs)
    files = [read_tile(f) for f in sorted((tmp_path / "gpu" / "triples").glob("*.npz"))]
    assert all(meta["backend"] == backend for _, meta, _ in files)
    assert any(meta.get("runs", 1) > 1 for _, meta, _ in files)  # spilled in sorted runs
    got = gzip.decompress((tmp_path / "gpu" / "triples.tsv.gz").read_bytes())
    want = gzip.decompress((tmp_path / "cpu" / "triples.tsv.gz").read_bytes())
    assert got == want and gpu["triples_passing"] == cpu["triples_passing"] > 0
    if threshold is None:
        assert cpu["triples_passing"] == 21 * 20 * 19 // 6


@needs_gpu
@pytest.mark.parametrize("kernel", ["resident", "streamed", "wgmma"])
@pytest.mark.parametrize("samples", [26, 300, 1100])  # planes of 1, 5, 18 words: padded to 4 or 16 words
@pytest.mark.parametrize("threshold", ["fifth", "rare", -1.0, None])
def test_fused_kernel_equals_numpy_across_tiles(monkeypatch, kernel, samples, threshold):
    """The fused kernels (ccc3_fused, planes held whole; ccc3_fused_streamed, planes through
    cp.async stages of 16 words, 1100 samples in two; ccc3_fused_wgmma, the streamed one on
    Hopper's warpgroup MMA) over blocks of 70 rows (64-row tiles and their ragged ends, diagonal
    and off-diagonal block triples, middle blocks in 2 stages): the numpy path's triples byte for
    byte; a null threshold forced through them too."""
    from genotile.backends.cuda import b1_select, ccc3_fused, cupy_ccc3

    if kernel == "wgmma" and not _hopper():
        pytest.skip("the wgmma kernel needs a Hopper GPU (compute capability 9.0)")
    if kernel == "streamed":  # mma.sync's, Hopper's default being wgmma's
        monkeypatch.setattr(b1_select, "uses_wgmma", lambda wgmma=None: False)
    calls = []
    real = ccc3_fused.triples_fused

    def spy(*args, **kwargs):
        yield from real(*args, **kwargs)
        calls.append((args[5], kwargs["streamed"], args[8]["kernel"]))  # block ids, the path, the kernel run

    monkeypatch.setattr(ccc3_fused, "triples_fused", spy)
    monkeypatch.setattr(cupy_ccc3, "fused_kernel", lambda *a: "resident" if kernel == "resident" else "streamed")
    monkeypatch.setattr(ccc3_fused, "J_PER_LAUNCH", 24)  # several launches a stage, ragged at the end
    monkeypatch.setattr(ccc3_fused, "J_PER_BLOCK", 5)
    g = np.ascontiguousarray(random_genotypes(samples, 150, p_missing=0.05, seed=41).T)
    planes, layout, perm = store(g, 5)
    plan = ccc3.Plan3(g.shape[0], 70, 5, 2)  # blocks of 70, 70, 10
    params = ccc3.Params()
    if isinstance(threshold, str):
        arrays, _ = compute_triples(planes, layout, perm, plan, params, 0, 1, 1, 0, None, "numpy")
        values = np.max([arrays[c] for c in ccc3.COLUMNS], axis=0)
        threshold = float(np.quantile(values, 0.8 if threshold == "fifth" else 0.999))
    passing = 0
    for job in plan.jobs():
        want, _ = compute_triples(planes, layout, perm, plan, params, *job, threshold, "numpy")
        got, meta = compute_triples(planes, layout, perm, plan, params, *job, threshold, "cupy-b1")
        assert arrays_digest(got) == arrays_digest(want), job
        passing += want["a"].size
    assert passing > 0 and len(calls) == len(plan.jobs())
    assert {streamed for _, streamed, _ in calls} == {kernel != "resident"}
    names = {"resident": "ccc3_fused", "streamed": "ccc3_fused_streamed", "wgmma": "ccc3_fused_wgmma"}
    assert {name for _, _, name in calls} == {names[kernel]}


@needs_gpu
def test_planes_too_wide_to_hold_take_the_streamed_kernel():
    """cupy-b1 with a threshold: the resident kernel where the planes fit this GPU's shared
    memory, the streamed one past it where the GPU grants its stages (sm_90), else the select
    path; no threshold: the select path."""
    from types import SimpleNamespace

    from genotile.backends.cuda import ccc3_fused, cupy_b1, cupy_ccc3

    smem = ccc3_fused.device_smem()
    wide = "streamed" if ccc3_fused.streamed_smem_bytes() <= smem else None
    for words, want in ((1, "resident"), (313, wide), (4_000, wide)):
        assert cupy_ccc3.fused_kernel(cupy_b1.ENGINE, SimpleNamespace(words=words), 0.5) == want
    assert cupy_ccc3.fused_kernel(cupy_b1.ENGINE, SimpleNamespace(words=1), None) is None


@needs_gpu
def test_fused_kernel_cuts_its_launches_to_the_buffer(monkeypatch):
    """A buffer of 3 triples: launches cut down along j, i and k until each fits; every chunk
    one readback of at most 3; the same triples as numpy."""
    from genotile.backends.cuda import cupy_ccc3

    monkeypatch.setattr(cupy_ccc3, "INITIAL_CAPACITY", 1)
    monkeypatch.setattr(cupy_ccc3, "MAX_CAPACITY", 3)
    g = np.ascontiguousarray(random_genotypes(100, 80, p_missing=0.05, seed=43).T)
    planes, layout, perm = store(g, 6)
    plan = ccc3.Plan3(g.shape[0], 80, 6, 1)  # one block: the diagonal block triple
    params = ccc3.Params()
    want, _ = compute_triples(planes, layout, perm, plan, params, 0, 0, 0, 0, 0.05, "numpy")
    sizes = [ids.shape[0] for ids, _ in iter_triples(planes, layout, perm, plan, params, 0, 0, 0, 0, 0.05, "cupy-b1")]
    assert sum(sizes) == want["a"].size > 3 and all(1 <= t <= 3 for t in sizes)
    got, _ = compute_triples(planes, layout, perm, plan, params, 0, 0, 0, 0, 0.05, "cupy-b1")
    assert arrays_digest(got) == arrays_digest(want)


def test_the_fused_kernel_leaves_extreme_parameters_to_the_select_path():
    """Its float bound keeps a 1e-5 margin only for 2^-20 <= |M| <= 2^20 and |P| <= 2^20: further
    out (floats under- or overflow) the select path computes the exact values (runs without a GPU:
    decided before the device is asked)."""
    from types import SimpleNamespace

    from genotile.backends.cuda import cupy_ccc3

    b1 = SimpleNamespace(name="cupy-b1")
    layout = SimpleNamespace(words=32)
    for multiplier, param in ((1e-40, 2 / 3), (4.5, -1e9), (1e30, 2 / 3)):
        assert cupy_ccc3.fused_kernel(b1, layout, 0.3, ccc3.Params(multiplier, param)) is None


def _block_triple(n: int, samples: int, same: str, seed: int = 7):
    """Blocks I, J, K of n SNPs (`same`: which of them are one block: ijk, iij, iii, ijj), their
    stats, the layout and block ids: genotypes of beta-distributed frequencies, 5% missing."""
    from genotile.core.genotype import genotype_layout, genotype_planes

    rng = np.random.default_rng(seed)
    freq = rng.beta(0.5, 0.5, size=3 * n)
    g = rng.binomial(2, freq[:, None], size=(3 * n, samples)).astype(np.uint8)
    g[rng.random(g.shape) < 0.05] = 255
    layout = genotype_layout(g, "genotype_t")
    planes = genotype_planes(g, layout)
    ids = {"ijk": (0, 1, 2), "iij": (0, 0, 2), "iii": (0, 0, 0), "ijj": (0, 1, 1)}[same]
    blocks = [planes[b * n : (b + 1) * n] for b in ids]
    return blocks, [ccc3.vector_stats(b, layout) for b in blocks], layout, ids


def _fused_triples(blocks, stats, layout, ids, n, rows, threshold, wgmma):
    """Stage 0 (`rows` middle rows) of the block triple through the streamed path: (sorted (i, j, k),
    their values, the kernel that ran)."""
    from genotile.backends.cuda import ccc3_fused

    plan = ccc3.Plan3(3 * n, n, 1, max(1, n // rows))
    info: dict = {}
    chunks = list(
        ccc3_fused.triples_fused(
            blocks,
            stats,
            layout,
            plan,
            ccc3.Params(),
            ids,
            0,
            threshold,
            info=info,
            capacity=(64, 1 << 20),
            streamed=True,
            wgmma=wgmma,
        )
    )
    ti, tj, tk, values = (np.concatenate([c[q] for c in chunks]) for q in range(4))
    key = np.stack([ti, tj, tk], axis=1)
    order = np.lexsort(key.T[::-1])
    return key[order], values[order], info["kernel"]


# (SNPs a block, samples, middle rows, threshold, which blocks are one): thresholds near the 80th
# percentile of a triple's largest value; None keeps every triple
WGMMA_CASES = [
    (200, 1500, 40, 0.215, "ijk"),
    (130, 3000, 130, 0.215, "iij"),
    (150, 1100, 150, 0.215, "iii"),
    (140, 900, 140, 0.215, "ijj"),
    (100, 700, 100, None, "ijk"),
    (300, 2048, 30, None, "ijk"),
]


@needs_gpu
@pytest.mark.parametrize("case", WGMMA_CASES, ids=lambda c: f"{c[4]}-{c[3]}-{c[1]}")
def test_hopper_runs_the_wgmma_kernel_with_mma_syncs_triples(case):
    """On Hopper the streamed path runs ccc3_fused_wgmma (the warpgroup MMA), and its triples and
    values, bit for bit, are the mma.sync streamed kernel's: diagonal and off-diagonal block
    triples (i = j, j = k, all three), planes of 11-47 words (ragged 1024-bit k-tiles), thresholds
    passing about a fifth and none (every triple), the buffer grown and the launches cut."""
    if not _hopper():
        pytest.skip("the wgmma kernel needs a Hopper GPU (compute capability 9.0)")
    n, samples, rows, threshold, same = case
    blocks, stats, layout, ids = _block_triple(n, samples, same)
    want = _fused_triples(blocks, stats, layout, ids, n, rows, threshold, wgmma=False)
    got = _fused_triples(blocks, stats, layout, ids, n, rows, threshold, wgmma=None)
    assert (want[2], got[2]) == ("ccc3_fused_streamed", "ccc3_fused_wgmma")
    assert want[0].shape[0] > 0 and np.array_equal(got[0], want[0])
    assert np.array_equal(got[1].view(np.uint64), want[1].view(np.uint64))


@needs_gpu
def test_a_wgmma_kernel_that_cannot_be_built_gives_mma_syncs(monkeypatch, caplog):
    """A ccc3_fused_wgmma that does not compile or load (an NVRTC or driver that refuses it) leaves
    that GPU to the mma.sync streamed kernel with one warning, the triples unchanged, and the GPU
    remembered (b1_select's policy: no second try, for its GEMM either)."""
    from genotile.backends.cuda import b1_select, ccc3_fused

    if not _hopper():
        pytest.skip("the wgmma kernel needs a Hopper GPU (compute capability 9.0)")
    real = ccc3_fused._kernel

    def refused(device_id, spec):
        if spec.wgmma:
            raise GenotileError("NVRTC could not compile a sm_90a kernel: (a test)")
        return real(device_id, spec)

    monkeypatch.setattr(ccc3_fused, "_kernel", refused)
    monkeypatch.setattr(b1_select, "_WGMMA_FAILED", set())
    blocks, stats, layout, ids = _block_triple(140, 900, "ijj")
    first = _fused_triples(blocks, stats, layout, ids, 140, 70, 0.215, wgmma=None)
    again = _fused_triples(blocks, stats, layout, ids, 140, 70, 0.215, wgmma=None)
    assert first[2] == again[2] == "ccc3_fused_streamed" and first[0].shape[0] > 0
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1].view(np.uint64), again[1].view(np.uint64))
    assert not b1_select.uses_wgmma()
    assert sum("ccc3's wgmma kernel could not be built" in r.getMessage() for r in caplog.records) == 1


@needs_gpu
def test_each_fused_kernels_threads_are_its_launch_bounds():
    """`launch`'s threads a block are each kernel's own __launch_bounds__ (the most threads the
    driver lets it launch with), so the host and the kernel agree on the block's warps."""
    from cupy_backends.cuda.api import driver

    from genotile.backends.cuda import b1_select, ccc3_fused

    device = cupy_common.cupy_module().cuda.Device().id
    specs = [ccc3_fused.launch(32, False), ccc3_fused.launch(313, True)]
    if b1_select.uses_wgmma():
        specs.append(ccc3_fused.launch(313, True, wgmma=True))
    for spec in specs:
        if spec.smem > ccc3_fused.device_smem():
            continue  # the streamed kernels' stages: sm_90's opt-in only
        kernel = ccc3_fused._kernel(device, spec)
        func = kernel.func if hasattr(kernel, "func") else kernel.kernel  # sm_90a's _ArchKernel, CuPy's RawKernel
        max_threads = 0  # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        assert driver.funcGetAttribute(max_threads, func.ptr) == spec.threads, spec.name


class _FakeDevice:
    def __init__(self, capability: str):
        self.id, self.compute_capability = 0, capability


def _fake_gpu(monkeypatch, capability: str, nvrtc=(12, 4), refuse_wgmma: bool = False) -> list:
    """ccc3_fused.load's view of a GPU without one: CuPy's device, NVRTC's version, the kernels (a
    name each; `refuse_wgmma`: ccc3_fused_wgmma's build fails), b1_select's failed GPUs emptied.
    Returns the kernels built."""
    from types import SimpleNamespace

    from genotile.backends.cuda import b1_select, ccc3_fused

    fake = SimpleNamespace(cuda=SimpleNamespace(Device=lambda *a: _FakeDevice(capability)))
    monkeypatch.setattr(cupy_common, "cupy_module", lambda: fake)
    monkeypatch.setattr(b1_select, "_nvrtc_version", lambda: nvrtc)
    monkeypatch.setattr(b1_select, "_WGMMA_FAILED", set())
    monkeypatch.setattr(ccc3_fused, "device_smem", lambda: 227 * 1024)
    built: list = []

    def kernel(device_id, spec):
        if spec.wgmma and refuse_wgmma:
            raise GenotileError("NVRTC could not compile a sm_90a kernel: (a test)")
        built.append(spec.name)
        return spec.name

    monkeypatch.setattr(ccc3_fused, "_kernel", kernel)
    return built


@pytest.mark.parametrize(
    ("capability", "nvrtc", "wgmma", "want"),
    [
        ("90", (12, 4), None, "ccc3_fused_wgmma"),
        ("90", (12, 0), None, "ccc3_fused_wgmma"),
        ("90", (12, 4), False, "ccc3_fused_streamed"),  # asked for mma.sync's (tests compare both)
        ("90", (11, 8), None, "ccc3_fused_streamed"),  # an NVRTC without sm_90a
        ("80", (12, 4), None, "ccc3_fused_streamed"),
        ("80", (12, 4), True, "ccc3_fused_streamed"),  # no wgmma off Hopper, asked or not
        ("100", (12, 8), None, "ccc3_fused_streamed"),  # sm_90a's instructions run on Hopper alone
    ],
)
def test_the_streamed_path_runs_wgmma_on_hopper_alone(monkeypatch, capability, nvrtc, wgmma, want):
    """Which kernel a job gets (no GPU: CuPy's device and NVRTC's version faked): the streamed path's
    on the warpgroup MMA where b1_select.uses_wgmma says (compute capability 9.0, NVRTC 12.0 on,
    not refused), mma.sync's elsewhere; the resident kernel wherever the planes fit."""
    from genotile.backends.cuda import ccc3_fused

    _fake_gpu(monkeypatch, capability, nvrtc)
    kernel, spec = ccc3_fused.load(313, True, wgmma)
    assert kernel == spec.name == want
    assert (spec.threads, spec.smem) == (
        (ccc3_fused.WGMMA_THREADS, ccc3_fused.wgmma_smem_bytes())
        if want == "ccc3_fused_wgmma"
        else (ccc3_fused.THREADS, ccc3_fused.streamed_smem_bytes())
    )
    assert ccc3_fused.load(32, False, wgmma)[1] == ccc3_fused.launch(32, False)


def test_a_refused_wgmma_build_falls_back_once_and_is_remembered(monkeypatch, caplog):
    """A ccc3_fused_wgmma that does not build: mma.sync's streamed kernel, one warning, the GPU in
    b1_select's failed set (its GEMM's wgmma main loop not tried there either); no second try."""
    from genotile.backends.cuda import b1_select, ccc3_fused

    built = _fake_gpu(monkeypatch, "90", refuse_wgmma=True)
    assert b1_select.uses_wgmma()
    for _ in range(3):
        assert ccc3_fused.load(313, True)[1].name == "ccc3_fused_streamed"
    assert built == ["ccc3_fused_streamed"] * 3 and b1_select._WGMMA_FAILED == {0}
    assert not b1_select.uses_wgmma()
    assert sum("ccc3's wgmma kernel could not be built" in r.getMessage() for r in caplog.records) == 1


def test_the_wgmma_kernel_fits_wherever_mma_syncs_streamed_kernel_does():
    """ccc3_fused_wgmma's stages (four of 49 KB, 1 KB aligned) are fewer bytes than mma.sync's
    streamed kernel's, which `kernel_for` asks the GPU for: a Hopper that grants the one grants the
    other; both kernels take the same operands (planes of whole STREAM_CHUNK words) and grid."""
    from genotile.backends.cuda import ccc3_fused

    assert ccc3_fused.wgmma_smem_bytes() == 4 * (6 * 64 * 128 + 1024) + 1024 <= ccc3_fused.streamed_smem_bytes()
    assert ccc3_fused.kernel_for(313, limit=ccc3_fused.streamed_smem_bytes()) == "streamed"
    wg, ms = ccc3_fused.launch(313, True, wgmma=True), ccc3_fused.launch(313, True)
    assert (wg.name, wg.threads, wg.wgmma) == ("ccc3_fused_wgmma", 256, True)
    assert (ms.name, ms.threads, ms.wgmma) == ("ccc3_fused_streamed", 512, False)
