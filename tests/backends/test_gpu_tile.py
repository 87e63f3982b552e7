"""Tile files from the GPU backends' device path (tile_pairs) equal the numpy path's, byte for byte.

Skipped where there is no CUDA GPU / CuPy. On a GPU machine, for every metric (snp, hamming,
ibs, king, ccc2 -- with missing data and on complete data, ccc2 also with other parameters):
every tile of a seeded plan whose blocks are multiples of no tile size, diagonal and
off-diagonal tiles, thresholds None / passing few pairs / passing all pairs, with and without
the dense block, from cupy-b1 (fused kernels; king's select in the GEMM, b1_select.py), cupy-b1
with the select kernel alone, cupy-int8 (fused) and cupy-b1 with the generic path
(metric.epilogue on CuPy arrays). The device path is run with small sub-tiles, small copy
pieces (the pinned ring reused), a passing-pairs buffer that overflows, and poisoned outputs.
nan / inf cases: ibs with n = 0 (an all-missing vector), king with no hets, ccc2 with c_i = 0.
"""

import numpy as np
import pytest

from genotile.backends.cuda import b1_select, cupy_b1, cupy_common, cupy_tile, tile_select, transfers
from genotile.core.encode import (
    CATEGORICAL,
    MISSING,
    NUCLEOTIDE,
    categorical_encoding,
    categorical_planes,
    symbol_counts,
)
from genotile.core.genotype import genotype_layout, genotype_planes
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.errors import GenotileError
from genotile.pairs.tile import compute_tile

HAS_GPU = cupy_common.has_gpu()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU / CuPy: the device tile path is not testable here")

GPU_VARIANTS = ("cupy-b1", "cupy-b1-select", "cupy-int8", "cupy-b1-generic")


@pytest.fixture(autouse=True)
def small_device_pieces(monkeypatch):
    """Poisoned outputs; sub-tiles, copy pieces and the pairs buffer far smaller than a tile."""
    monkeypatch.setattr(cupy_common, "POISON", True)
    monkeypatch.setattr(cupy_tile, "CHUNK_ROWS", 24)
    monkeypatch.setattr(transfers, "PIECE_BYTES", 2048)
    monkeypatch.setattr(transfers, "STAGING_BUFFERS", 3)
    monkeypatch.setattr(cupy_tile, "INITIAL_CAPACITY", 37)


def categorical_codes(alphabet, n: int, fields: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    symbols = np.frombuffer(b"ACGT" if alphabet is NUCLEOTIDE else b"ACGTXYZ", dtype=np.uint8)
    k = rng.choice([1, 2, 2, 2, 3, 4], size=fields)
    col_syms = np.stack([rng.permutation(symbols)[:4] for _ in range(fields)])
    pick = np.minimum(rng.integers(0, 4, size=(n, fields)), k[None, :] - 1)
    raw = col_syms[np.arange(fields)[None, :], pick]
    # close relatives: a few vectors copy another one with a few changes (pairs under a threshold)
    for i in range(1, n, 7):
        raw[i] = raw[i - 1]
        flip = rng.random(fields) < 0.01
        raw[i, flip] = rng.choice(symbols, size=int(flip.sum()))
    odd = rng.random((n, fields)) < 0.03
    raw[odd] = rng.choice(np.frombuffer(b"N-?" if alphabet is NUCLEOTIDE else b"acN-", np.uint8), size=int(odd.sum()))
    return alphabet.encode(raw)


def genotype_codes(n: int, fields: int, seed: int, missing: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.5, size=fields)
    codes = (rng.random((n, fields)) < p).astype(np.uint8) + (rng.random((n, fields)) < p)
    for i in range(1, n, 5):  # relatives
        codes[i] = codes[i - 1]
        redo = rng.random(fields) < 0.05
        codes[i, redo] = rng.integers(0, 3, size=int(redo.sum()))
    if missing > 0:
        codes[rng.random((n, fields)) < missing] = MISSING
        if n > 3:
            codes[3] = MISSING  # ibs: n = 0 with everyone (nan); ccc2: c_i = 0
    if n > 2:
        codes[2] = np.where(rng.random(fields) < 0.5, 0, 2)  # king: no hets (kinship -inf / nan)
    if n > 4:
        codes[4] = 0  # monomorphic
    return codes


def store(metric, n: int, fields: int, seed: int, missing: float):
    """(planes in permuted order, layout) of random vectors for `metric`."""
    if metric.encoding in ("nucleotide", "categorical"):
        alphabet = NUCLEOTIDE if metric.encoding == "nucleotide" else CATEGORICAL
        codes = categorical_codes(alphabet, n, fields, seed)
        enc = categorical_encoding(symbol_counts(codes), alphabet.has_missing)
        return categorical_planes(codes, enc), enc.layout
    codes = genotype_codes(n, fields, seed, missing)
    layout = genotype_layout(codes, metric.encoding)
    return genotype_planes(codes, layout), layout


def thresholds(metric, planes, layout, perm, plan) -> dict:
    """None, one passing few pairs, one passing all pairs (nan values never pass)."""
    arrays, _ = compute_tile(planes, layout, perm, plan, metric, 0, 0, None, True, "numpy")
    cols = [arrays["dense"]] if metric.keep != "ge_any" else [arrays[c] for c in metric.columns]
    values = np.concatenate([np.ravel(c) for c in cols]).astype(np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"none": None}
    if metric.keep == "le":
        few, everything = float(np.quantile(values, 0.1)), float(values.max())
    else:
        few, everything = float(np.quantile(values, 0.9)), float(values.min())
    return {"none": None, "few": few, "all": everything}


def run_tile(backend, planes, layout, perm, plan, metric, bi, bj, threshold, dense, monkeypatch):
    if backend == "cupy-b1-select":  # the fused path with its select kernel, never b1_select's GEMM
        with monkeypatch.context() as m:
            m.setattr(b1_select, "gemm_plan", lambda *a, **k: None)
            return compute_tile(planes, layout, perm, plan, metric, bi, bj, threshold, dense, "cupy-b1")
    if backend == "cupy-b1-generic":
        with monkeypatch.context() as m:
            m.setattr(cupy_tile, "fused_spec", lambda metric, counts: None)
            return compute_tile(planes, layout, perm, plan, metric, bi, bj, threshold, dense, "cupy-b1")
    return compute_tile(planes, layout, perm, plan, metric, bi, bj, threshold, dense, backend)


def differences(got: dict, want: dict) -> list[str]:
    if list(got) != list(want):
        return [f"arrays {list(got)} != {list(want)}"]
    out = []
    for name, w in want.items():
        g = got[name]
        if g.dtype != w.dtype or g.shape != w.shape:
            out.append(f"{name}: {g.dtype} {g.shape} != {w.dtype} {w.shape}")
        elif np.ascontiguousarray(g).tobytes() != np.ascontiguousarray(w).tobytes():
            gb = np.ascontiguousarray(g).reshape(-1).view(np.uint8).reshape(g.size, -1)
            wb = np.ascontiguousarray(w).reshape(-1).view(np.uint8).reshape(w.size, -1)
            bad = np.flatnonzero((gb != wb).any(axis=1))
            first = int(bad[0])
            out.append(
                f"{name}: {bad.size} of {w.size} elements differ, first at {first}: "
                f"got {np.ravel(g)[first]!r}, want {np.ravel(w)[first]!r}"
            )
    return out


# (metric, params, vectors, block_size, fields, missing, seed)
CASES = [
    ("snp", None, 150, 64, 700, 0.0, 1),
    ("snp", None, 1, 64, 10, 0.0, 2),
    ("snp", None, 2, 1, 100, 0.0, 3),
    ("hamming", None, 90, 40, 300, 0.0, 4),
    ("ibs", None, 150, 64, 500, 0.1, 5),
    ("ibs", None, 70, 32, 200, 0.0, 6),
    ("king", None, 150, 64, 500, 0.1, 7),
    ("king", None, 70, 32, 200, 0.0, 8),
    ("ccc2", None, 150, 64, 500, 0.1, 9),
    ("ccc2", None, 70, 32, 200, 0.0, 10),
    ("ccc2", {"multiplier": 3.0, "param": 0.9}, 65, 33, 129, 0.2, 11),
    ("snp", None, 40, 16, 70_000, 0.0, 12),  # K >= 65,536 fields
    ("ccc2", None, 40, 16, 70_000, 0.05, 13),
]


@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[2]}x{c[4]}-b{c[3]}-miss{c[5]}")
def test_tile_files_equal_numpy(case, monkeypatch, tmp_path):
    name, params, n, block, fields, missing, seed = case
    metric = get_metric(name, **(params or {}))
    planes_orig, layout = store(metric, n, fields, seed, missing)
    plan = Plan(n, block, seed)
    perm = plan.permutation()
    # the store's rows are permuted, and tile jobs read it as a memmap
    np.save(tmp_path / "planes.npy", planes_orig[perm])
    planes = np.load(tmp_path / "planes.npy", mmap_mode="r")
    errors = []
    for label, thr in thresholds(metric, planes, layout, perm, plan).items():
        for dense in (False, True):
            if label == "all" and dense:
                continue
            for bi, bj in plan.tiles():
                want, meta_np = compute_tile(planes, layout, perm, plan, metric, bi, bj, thr, dense, "numpy")
                for backend in GPU_VARIANTS:
                    got, meta = run_tile(backend, planes, layout, perm, plan, metric, bi, bj, thr, dense, monkeypatch)
                    errs = differences(got, want)
                    if (
                        meta["pairs_passing"] != meta_np["pairs_passing"]
                        or meta["pairs_computed"] != meta_np["pairs_computed"]
                    ):
                        errs.append(f"meta {meta} vs {meta_np}")
                    errors += [f"{backend} tile {bi},{bj} threshold {label}={thr} dense={dense}: {e}" for e in errs]
    assert not errors, "\n".join(errors[:20])
    failed = [key[0] for key, ok in tile_select._CHECKED.items() if not ok]
    assert not failed, f"fused kernels fell back to the generic path: {failed}"


@needs_gpu
@pytest.mark.parametrize("name", ["snp", "hamming", "ibs", "king", "ccc2"])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_fused_kernels_pass_self_check(name, missing):
    """Every fused kernel agrees with metrics.py (int32 and int64 counts), so no metric falls back."""
    metric = get_metric(name)
    _, layout = store(metric, 20, 100, 1, missing)
    counts = metric.counts(layout)
    spec = tile_select.fused_spec(metric, counts)
    assert spec is not None
    plans = tile_select.plan_counts(counts)
    for count64 in (False, True):
        assert tile_select._self_check(spec, metric, plans, count64) == ""


@needs_gpu
def test_fused_path_is_used_and_dense_only(monkeypatch):
    """compute_tile on cupy-b1 takes the fused path (the generic one is not called)."""
    metric = get_metric("king")
    planes, layout = store(metric, 50, 300, 3, 0.05)
    plan = Plan(50, 50, 1)

    def fail(*a, **k):
        raise AssertionError("generic path used")

    monkeypatch.setattr(cupy_tile, "_generic", fail)
    got, _ = compute_tile(planes, layout, plan.permutation(), plan, metric, 0, 0, 0.1, True, "cupy-b1")
    want, _ = compute_tile(planes, layout, plan.permutation(), plan, metric, 0, 0, 0.1, True, "numpy")
    assert not differences(got, want)


@needs_gpu
def test_large_chunks_default_settings(monkeypatch):
    """The default sub-tile / piece sizes (one sub-tile, one piece) on a bigger diagonal and
    off-diagonal tile, snp with a threshold."""
    monkeypatch.setattr(cupy_tile, "CHUNK_ROWS", 4096)
    monkeypatch.setattr(transfers, "PIECE_BYTES", 32 << 20)
    monkeypatch.setattr(transfers, "STAGING_BUFFERS", 4)
    monkeypatch.setattr(cupy_tile, "INITIAL_CAPACITY", 1 << 22)
    assert_tiles_equal_numpy(get_metric("snp"), Plan(1300, 700, 2), store_args=(2000, 4, 0.0), threshold=30)


def assert_tiles_equal_numpy(metric, plan: Plan, store_args: tuple, threshold) -> None:
    """Every tile of `plan` from cupy-b1 equal numpy's, byte for byte (store(metric, n, *store_args))."""
    planes, layout = store(metric, plan.n_vectors, *store_args)
    perm = plan.permutation()
    planes = planes[perm]
    for bi, bj in plan.tiles():
        want, _ = compute_tile(planes, layout, perm, plan, metric, bi, bj, threshold, False, "numpy")
        got, _ = compute_tile(planes, layout, perm, plan, metric, bi, bj, threshold, False, "cupy-b1")
        assert not differences(got, want), (bi, bj)


def test_nan_canonicalization_and_specs():
    """Host-side helpers (no GPU needed): nan bits and the fused specs' agreement with metrics.py."""
    a = np.array([1.0, np.nan, -np.inf, 0.0])
    a.view(np.uint64)[1] = 0x7FF800000000BEEF  # some other nan
    tile_select.canonical_nans(a)
    with np.errstate(invalid="ignore"):
        host = (np.zeros(1) / np.zeros(1)).view(np.uint64)[0]
    assert a.view(np.uint64)[1] == host and a[0] == 1.0 and a[2] == -np.inf
    for name in ("snp", "hamming", "ibs", "king", "ccc2"):
        metric = get_metric(name)
        _, layout = store(metric, 6, 70, 1, 0.1)
        assert tile_select.fused_spec(metric, metric.counts(layout)) is not None, name


@needs_gpu
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (24, 24), (700, 600), (1500, 1100)])
def test_window_start_is_the_rounded_mean_less_half_the_window(dtype, shape):
    """kernels/hist_window.cu: base[k] = max(round-half-up(mean) - HIST_WINDOW // 2, 0), the other
    starts untouched, its scratch left zero for the next sub-tile."""
    cp = cupy_common.cupy_module()
    rng = np.random.default_rng(shape[0])
    hist = tile_select.DeviceHist(cp, [], 3)
    hist.base.fill(-1)
    for k, centre in enumerate((0, tile_select.HIST_WINDOW // 2 + 3, 50_000)):
        counts = rng.integers(max(0, centre - 40), centre + 41, size=shape).astype(dtype)
        hist.centre_window(k, cp.asarray(counts))
        total, size = int(counts.sum()), counts.size
        want = max((total + size // 2) // size - tile_select.HIST_WINDOW // 2, 0)
        got = hist.base.get()
        assert got[k] == want, (k, got, want)
        assert (got[k + 1 :] == -1).all()
        assert (hist.scratch.get() == 0).all()


@needs_gpu
def test_gpu_tile_imports_no_scipy(tmp_path):
    """A GPU tile job imports neither SciPy nor cupyx.scipy: cupy's mean() did, through cupyx,
    about a second of every tile job (the histogram window now starts in kernels/hist_window.cu)."""
    import subprocess
    import sys

    code = """
import sys
import numpy as np
from genotile.core.encode import NUCLEOTIDE, categorical_encoding, categorical_planes, symbol_counts
from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.pairs.tile import compute_tile
codes = np.random.default_rng(1).integers(0, 4, size=(300, 500)).astype(np.uint8)
enc = categorical_encoding(symbol_counts(codes), NUCLEOTIDE.has_missing)
p = Plan(300, 300, 1)
perm = p.permutation()
planes = categorical_planes(codes[perm], enc)
compute_tile(planes, enc.layout, perm, p, get_metric("snp"), 0, 0, 200, False, "cupy-b1")
bad = sorted(m for m in sys.modules if m == "scipy" or m.startswith(("scipy.", "cupyx.scipy")))
print(bad)
sys.exit(1 if bad else 0)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def _record_gemm_selects(monkeypatch) -> list:
    """Every b1_select.GemmSelect the tile path makes, kept (to ask which main loop it ran)."""
    made: list = []

    class Recorded(b1_select.GemmSelect):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(b1_select, "GemmSelect", Recorded)
    return made


def _hopper() -> bool:
    return cupy_common.has_gpu() and cupy_common.cupy_module().cuda.Device().compute_capability == "90"


@needs_gpu
@pytest.mark.parametrize("mainloop", ["wgmma", "mma.sync"])
@pytest.mark.parametrize("missing", [0.0, 0.05])
@pytest.mark.parametrize("chunk", [4096, 200])
@pytest.mark.parametrize("name", ["king", "ibs"])
def test_select_in_the_gemm(name, missing, chunk, mainloop, monkeypatch):
    """King and ibs tiles with b1_select's fused GEMM (path "gemm") equal numpy's, byte for byte,
    over block tiles cut by the edges of the tile and of the sub-tiles (1,100 vectors, blocks of
    600, sub-tiles of `chunk` rows), thresholds passing none, few and many pairs (the pairs buffer
    overflowing), on complete data (counts with row sums) and with missing calls; with each main
    loop: wgmma's (Hopper's, the default there) and mma.sync's (every other GPU's)."""
    if mainloop == "wgmma" and not _hopper():
        pytest.skip("wgmma's main loop needs a Hopper GPU (compute capability 9.0)")
    if mainloop == "mma.sync":
        monkeypatch.setattr(b1_select, "uses_wgmma", lambda wgmma=None: False)
    made = _record_gemm_selects(monkeypatch)
    monkeypatch.setattr(cupy_tile, "CHUNK_ROWS", chunk)
    monkeypatch.setattr(transfers, "PIECE_BYTES", 1 << 20)
    metric = get_metric(name)
    planes, layout = store(metric, 1100, 3000, 21, missing)
    assert layout.complete == (missing == 0.0)
    plan = Plan(1100, 600, 3)
    perm = plan.permutation()
    planes = planes[perm]
    for thr in (0.45, 0.1, -0.2) if name == "king" else (0.02, 0.3, 0.9):
        for bi, bj in plan.tiles():
            want, meta_np = compute_tile(planes, layout, perm, plan, metric, bi, bj, thr, False, "numpy")
            rows, cols = plan.block(bi), plan.block(bj)
            right = None if bi == bj else planes[cols]
            perms = (perm[rows], perm[cols])
            res = cupy_tile.tile_pairs(
                cupy_b1.ENGINE, planes[rows], right, metric, layout, thr, bi == bj, perms=perms, path="gemm"
            )
            assert res.path == "gemm"
            got, meta = compute_tile(planes, layout, perm, plan, metric, bi, bj, thr, False, "cupy-b1")
            assert meta["pairs_passing"] == meta_np["pairs_passing"] == res.ri.size, (thr, bi, bj)
            assert not differences(got, want), (thr, bi, bj)
    assert made and {g.wgmma for g in made} == {mainloop == "wgmma"}
    assert {g.cfg for g in made} == {b1_select.WGMMA_TILE if mainloop == "wgmma" else b1_select.GEMM_TILE}


@needs_gpu
def test_wgmma_that_cannot_be_built_gives_mma_sync(monkeypatch, caplog):
    """A wgmma GEMM that does not compile or load (an NVRTC or driver that refuses it) leaves that
    GPU to mma.sync's main loop with one warning, the tile's bytes unchanged."""
    if not _hopper():
        pytest.skip("wgmma's main loop needs a Hopper GPU (compute capability 9.0)")
    real = b1_select._kernels.__wrapped__

    def refused(fused_id, device_id, bins, wgmma, *epilogue):
        if wgmma:
            raise GenotileError("NVRTC could not compile a sm_90a kernel: (a test)")
        return real(fused_id, device_id, bins, wgmma, *epilogue)

    monkeypatch.setattr(b1_select, "_kernels", refused)
    monkeypatch.setattr(b1_select, "_WGMMA_FAILED", set())
    made = _record_gemm_selects(monkeypatch)
    assert_tiles_equal_numpy(get_metric("king"), Plan(700, 400, 3), store_args=(2000, 5, 0.05), threshold=0.1)
    assert made and not any(g.wgmma for g in made)
    assert not b1_select.uses_wgmma()  # this GPU is remembered: no second try a tile
    assert sum("the wgmma GEMM could not be built" in r.getMessage() for r in caplog.records) == 1


def test_gemm_plan_applies_to_king_and_ibs():
    """Which tiles b1_select's GEMM takes (host side, no GPU): king and ibs with a threshold and no
    dense block, king's het counts packed in one accumulator while they fit 16 bits; not without a
    threshold, with a dense block, king past 65,535 sites, or for another metric."""
    metric = get_metric("king")

    def plan_for(fields, missing, threshold=0.1, dense=False, name="king"):
        m = get_metric(name)
        _, layout = store(m, 8, fields, 1, missing)
        counts = m.counts(layout)
        spec = tile_select.fused_spec(m, counts)
        plans = tile_select.plan_counts(counts)
        return b1_select.gemm_plan(m, spec, plans, tile_select.hist_plan(m, spec, plans), threshold, dense)

    p = plan_for(20_000, 0.05)
    assert p is not None and p.value_col == list(metric.columns).index("kinship")
    assert [c for _, c in p.recount] == ["nsnp", "hethet", "ibs0"]
    assert [q.coef for q in p.pieces[: p.group_start]] == [2, 2, -1] and p.final == (-1, 1)
    assert [q.coef for q in p.pieces[p.group_start :]] == [1 << 16, 1]
    assert p.term_mult == (1, 1, -2, 1, 1 << 16)
    complete = plan_for(20_000, 0.0)  # het_i and het_j are row sums: accumulator 1 has no product
    assert complete is not None and complete.group_start == len(complete.pieces)
    assert [r.coef for r in complete.left_sums[1]] == [1 << 16] and [r.coef for r in complete.right_sums[1]] == [1]
    assert not complete.left_sums[0] and not complete.right_sums[0]
    # the kernel's GT_ADDS: 1 row_add0, 2 col_add0, 4 row_add1, 8 col_add1 (b1_select.cu)
    assert b1_select._adds(p) == 0 and b1_select._adds(complete) == 4 | 8, b1_select._adds(complete)
    assert plan_for(65_472, 0.05) is not None
    assert plan_for(65_600, 0.05) is None
    assert plan_for(2_000, 0.05, threshold=None) is None
    assert plan_for(2_000, 0.05, dense=True) is None
    ibs = plan_for(2_000, 0.0, name="ibs")  # complete: ibs_count's L.V terms and n are row sums
    assert ibs is not None and [c for _, c in ibs.recount] == ["ibs_count", "n"] and ibs.final == (-2, 1)
    assert [q.coef for q in ibs.pieces] == [-2, -2] and ibs.group_start == 2 and len(ibs.left_sums[1]) == 1
    assert b1_select._adds(ibs) == 1 | 2 | 4, b1_select._adds(ibs)  # ibs_count's sums both sides; n's one
    assert plan_for(70_000, 0.05, name="ibs") is not None  # no packing: any site count int32 holds
    assert plan_for(2_000, 0.05, name="ccc2") is None
