#!/usr/bin/env python3
"""GPU benchmark (issue 4): instruction ceilings, then the GPU backends, in one process.

    PYTHONPATH=src python3 bench/bench_gpu.py [--rows 16384] [--fields 65536] [--out DIR]

1. Ceilings, measured here and now: a register-only loop of
   mma.sync.m16n8k256.b1.and.popc (kernels/b1_mma_peak.cu) and cuBLAS int8 gemmEx
   (CUDA_R_8I -> CUDA_R_32I, COMPUTE_32I) at 16384^3.
2. Tiles of rows x rows vectors (one off-diagonal tile: every pair computed):
   - product: one plane product over `fields` bits (random words);
   - snp: the snp metric's terms from random nucleotide codes (2-4 alleles a column, 3% N),
     `fields` informative columns; hamming likewise from a categorical alphabet;
     ibs, king, ccc2 from random genotypes (2% missing).
     The codes of 2048 distinct vectors are encoded and their planes repeated to fill the
     tile (the kernels' work does not depend on the values).
   For each: the cupy-b1 kernel alone (operands repacked on the device beforehand; every
   tile shape in cupy_b1.CONFIGS for the product), each backend's count on device-resident
   planes (repack / unpack, row sums, int64 result included); numpy (BLAS) on a 1024 x 1024
   tile of the same planes, whose values also give the threshold (the 1e-4 quantile of the
   dense column, 1 - 1e-4 for similarities: few pairs pass, plus the repeated vectors). Then
   the device tile path (cupy_tile.tile_pairs: counts, epilogue, threshold, compaction on the
   GPU) host arrays in, passing pairs out, for both backends; the whole tile job
   (pairs_stage.tile: the store's planes.npy memmap of 2 blocks -> tile (0, 1) -> tile file, page
   cache warm) against the kernel-alone time; and the upload alone (memmap -> pinned -> device).
   The cupy-b1 counts are checked equal to cupy-int8's on the full tile.
4. `--big-tile N` (issue 26's tile, 250,000 x 250,000 x 20,000 with `--fields 20000`): one
   off-diagonal N x N tile of king and of ibs through the device tile path alone (b1_select's
   GEMM, the workflow's path; no count matrix, which at that size would not fit), % of both
   ceilings. Its vectors: 2048 distinct ones, each copy of them with its 64-site words shuffled
   (the same shuffle for every plane of a vector: still genotypes, now distinct), so that only
   the thresholds' few pairs pass; the pairs passing are checked against the same tile's at a
   second timing.
3. GPU packing (backends/cuda/cupy_pack.py) against numpy packing of the same codes: genotype
   codes (rows x fields, 2% missing) and nucleotide codes; host to host (codes in, planes
   out, pinned pipelined copies) and device only.
Rates (docs/ceilings.md): element comparisons/s = pairs x fields / s; bit-MAC/s = sum over
plane products of rows x cols x bits / s; % of ceiling against the ceiling measured above
(b1 instruction ceiling for cupy-b1, cuBLAS int8 for cupy-int8, in bit-MACs = int8 MACs).
Packing rows: the comparisons/s column holds codes packed per second.
Times are medians of CUDA-event timings after a warm-up (wall clock for host-to-host rows).

`--smoke` (CI, tests/workflow/test_bench_smoke.py): tiny sizes, and any error fails the run. Without
CuPy or a GPU it runs the tile-job rows' code path (a store written as the pack stage writes it,
pairs_stage.tile from its memmap to a tile file) on the numpy backend and checks the tile's pairs
against counts computed directly, so the part that broke unnoticed at 47696fa is exercised.
"""

import argparse
import datetime
import functools
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

try:
    import cupy as cp  # noqa: E402
except ImportError:  # --smoke runs the tile-job path on the CPU without it
    cp = None

from genotile.backends.cpu import numpy_blas  # noqa: E402
from genotile.backends.cuda import cupy_b1, cupy_int8, cupy_pack, transfers  # noqa: E402
from genotile.backends.cuda import cupy_common as cc  # noqa: E402
from genotile.core.encode import CATEGORICAL, NUCLEOTIDE, categorical_encoding, categorical_planes, symbol_counts  # noqa: E402
from genotile.core.metrics import METRICS, Term  # noqa: E402
from genotile.core.plan import Plan  # noqa: E402
from genotile.pairs import stage as pairs_stage  # noqa: E402

BIT_MACS_PER_MMA = 16 * 8 * 256


def gpu_time(fn, reps=5, warmup=1):
    """Median seconds of fn() between CUDA events (after `warmup` untimed calls)."""
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def wall_time(fn, reps=1):
    times = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def b1_ceiling(sms: int) -> dict:
    """Best bit-MAC/s of the register-only mma loop over a few grid sizes."""
    best = None
    for per_sm, ilp in [(4, 8), (8, 8), (8, 4)]:
        kernel = cc.load_kernel("b1_mma_peak.cu", "b1_mma_peak", (f"-DGT_PEAK_INDEPENDENT={ilp}",))
        blocks, threads = sms * per_sm, 256
        sink = cp.zeros(blocks * threads, dtype=cp.int32)
        iters = 256
        t = gpu_time(functools.partial(kernel, (blocks,), (threads,), (np.int32(iters), sink)), reps=1)
        iters = max(256, int(iters * 0.05 / t))  # about 50 ms a launch
        t = gpu_time(functools.partial(kernel, (blocks,), (threads,), (np.int32(iters), sink)), reps=5)
        rate = blocks * (threads // 32) * iters * ilp * BIT_MACS_PER_MMA / t
        row = {"blocks_per_sm": per_sm, "independent_mmas": ilp, "seconds": t, "bit_mac_per_s": rate}
        print(
            f"  b1 peak: {per_sm} blocks/SM x 8 warps, {ilp} independent mma: {rate:.3e} bit-MAC/s "
            f"({2 * rate / 1e12:.0f} TOPS)",
            flush=True,
        )
        if best is None or rate > best["bit_mac_per_s"]:
            best = row
    return best


def wgmma_ceiling(sms: int) -> dict | None:
    """Best bit-MAC/s of wgmma's register-free loop (kernels/b1_wgmma_peak.cu), on Hopper only:
    b1_select's main loop there (bench/RESULTS.md "Session 17: wgmma")."""
    from genotile.backends.cuda import b1_select

    if not b1_select.uses_wgmma():
        return None
    cfg = b1_select.WGMMA_TILE
    kernel = cc.load_kernel("b1_wgmma_peak.cu", "b1_wgmma_peak", cfg.options, arch_specific=True)
    smem = (cfg.block_m + cfg.block_n) * 128 + b1_select.WGMMA_ALIGN  # one k-tile's stage, aligned
    best = None
    for per_sm in (1, 2):
        blocks = sms * per_sm
        sink = cp.zeros(blocks * 256, dtype=cp.int32)
        iters = 1000
        t = gpu_time(functools.partial(kernel, (blocks,), (256,), (np.int32(iters), sink), shared_mem=smem), reps=1)
        iters = max(1000, int(iters * 0.05 / t))  # about 50 ms a launch
        t = gpu_time(functools.partial(kernel, (blocks,), (256,), (np.int32(iters), sink), shared_mem=smem), reps=5)
        # a block: 2 warpgroups x 4 k-steps an iteration, each 64 x block_n x 256 bit-MACs
        rate = blocks * 2 * iters * 4 * 64 * cfg.block_n * 256 / t
        print(f"  wgmma b1 peak: {per_sm} blocks/SM x 2 warpgroups: {rate:.3e} bit-MAC/s", flush=True)
        if best is None or rate > best["bit_mac_per_s"]:
            best = {"blocks_per_sm": per_sm, "seconds": t, "bit_mac_per_s": rate}
    return best


def int8_ceiling(size: int) -> dict:
    lhs = cp.random.randint(-128, 128, (size, size), dtype=cp.int8)
    rhs = cp.random.randint(-128, 128, (size, size), dtype=cp.int8)
    out = cp.empty((size, size), dtype=cp.int32)
    t = gpu_time(functools.partial(cupy_int8.gemm_s8, lhs, rhs, out, size, accumulate=False), reps=5)
    # exactness spot check of the cuBLAS call against an int64 product of a few rows
    want = cp.asnumpy(lhs[:3]).astype(np.int64) @ cp.asnumpy(rhs[:64]).astype(np.int64).T
    assert (cp.asnumpy(out[:3, :64]) == want).all(), "cuBLAS int8 gemmEx result is wrong"
    rate = size**3 / t
    print(f"  cuBLAS int8 gemmEx {size}^3: {rate:.3e} MAC/s ({2 * rate / 1e12:.0f} TOPS)", flush=True)
    del lhs, rhs, out
    cp.get_default_memory_pool().free_all_blocks()
    return {"size": size, "seconds": t, "mac_per_s": rate}


def categorical_planes_for(alphabet, distinct: int, fields: int, rows: int, seed: int):
    """Planes of `rows` vectors (codes of `distinct` ones, repeated) with `fields` kept columns."""
    rng = np.random.default_rng(seed)
    cols = fields + fields // 50  # some columns come out monomorphic and are dropped
    if alphabet is NUCLEOTIDE:
        symbols, other = np.frombuffer(b"ACGT", np.uint8), np.frombuffer(b"N-", np.uint8)
    else:
        symbols, other = np.frombuffer(b"ACGTXYZ", np.uint8), np.frombuffer(b"N-", np.uint8)
    k = rng.choice([2, 2, 2, 2, 2, 2, 2, 2, 3, 4], size=cols)
    col_syms = np.stack([rng.permutation(symbols)[:4] for _ in range(cols)])
    pick = np.minimum(rng.integers(0, 4, size=(distinct, cols), dtype=np.uint8), (k - 1).astype(np.uint8))
    raw = col_syms[np.arange(cols)[None, :], pick]
    odd = rng.random((distinct, cols)) < 0.03
    raw[odd] = rng.choice(other, size=int(odd.sum()))
    codes = alphabet.encode(raw)
    enc = categorical_encoding(symbol_counts(codes), alphabet.has_missing)
    keep = enc.order[:fields]
    enc = categorical_encoding(symbol_counts(codes[:, np.sort(keep)]), alphabet.has_missing)
    planes = categorical_planes(codes[:, np.sort(keep)], enc)
    reps = -(-rows // distinct)
    return np.tile(planes, (reps, 1))[:rows], enc


def genotype_planes_for(encoding: str, distinct: int, fields: int, rows: int, seed: int, missing: float):
    """Genotype planes of `rows` vectors (codes of `distinct` ones, repeated), 0/1/2 at
    random allele frequencies, a fraction `missing` of the entries missing."""
    from genotile.core.encode import MISSING
    from genotile.core.genotype import genotype_layout, genotype_planes

    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.5, size=fields)
    codes = (rng.random((distinct, fields)) < p).astype(np.uint8) + (rng.random((distinct, fields)) < p)
    codes[rng.random((distinct, fields)) < missing] = MISSING
    layout = genotype_layout(codes, encoding)
    planes = genotype_planes(codes, layout)
    reps = -(-rows // distinct)
    return np.tile(planes, (reps, 1))[:rows], layout


# Kernel variants timed with --sweep (cupy_b1.CONFIGS are always timed on the product).
_T = cupy_b1.TileConfig
SWEEP = {
    "b128x256_w64x64_s4_early": _T(128, 256, 64, 64, 4, load_late=False),
    "b128x256_w64x64_s4_db": _T(128, 256, 64, 64, 4, double_buffer=True),
    "b128x256_w64x64_s4_nv": _T(128, 256, 64, 64, 4, mma_volatile=False),
    "b128x256_w64x64_s4_g16": _T(128, 256, 64, 64, 4, group_m=16),
    "b128x128_w64x32_s3_2cta_early": _T(128, 128, 64, 32, 3, min_blocks=2, load_late=False),
    "b128x128_w64x32_s3_2cta_db": _T(128, 128, 64, 32, 3, min_blocks=2, double_buffer=True),
    "b128x128_w64x32_s3_2cta_nv": _T(128, 128, 64, 32, 3, min_blocks=2, mma_volatile=False),
    "b128x128_w64x32_s3_2cta_db_nv": _T(128, 128, 64, 32, 3, min_blocks=2, double_buffer=True, mma_volatile=False),
    "b256x128_w64x64_s3": _T(256, 128, 64, 64, 3),
}


def profile_one(args):
    """One kernel launch of the default tile shape on the product tile (run under ncu)."""
    rng = np.random.default_rng(1)
    words = -(-args.fields // 64)
    planes = rng.integers(0, np.iinfo(np.uint64).max, size=(args.rows, words), dtype=np.uint64, endpoint=True)
    dl, dr = cc.to_device(planes), cc.to_device(planes.copy())
    cfg = cupy_b1.CONFIGS[cupy_b1.default_config()]
    launch = cupy_b1.prepare_launch(dl, dr, [cc.Product(1, 0, 0, words)], cfg)
    out = cp.empty((args.rows, args.rows), dtype=cp.int32)
    zero = cp.zeros(args.rows, dtype=cp.int32)
    cupy_b1.run_launch(launch, cfg, out, zero, zero)
    cp.cuda.Device().synchronize()
    print(f"profiled one launch of {cupy_b1.default_config()} on {args.rows}^2 x {words * 64} bits", flush=True)


def profile_select(args):
    """The device tile path of one metric on device-resident planes, twice (run under ncu)."""
    metric = METRICS[args.profile_select]
    if metric.encoding in ("nucleotide", "categorical"):
        planes, enc = categorical_planes_for(
            NUCLEOTIDE if metric.encoding == "nucleotide" else CATEGORICAL, 2048, args.fields, args.rows, seed=2
        )
        layout = enc.layout
    else:
        planes, layout = genotype_planes_for(metric.encoding, 2048, args.fields, args.rows, 3, args.missing)
    dl, dr = cp.asarray(planes), cp.asarray(planes.copy())
    thr = 0.0 if metric.keep == "le" else 1e9
    for _ in range(2):
        cupy_b1.tile_pairs(dl, dr, metric, layout, thr)
    cp.cuda.Device().synchronize()
    print(f"profiled the device tile path of {metric.name}", flush=True)


def all_counts(count_device, dl, dr, counts) -> None:
    for terms in counts.values():
        count_device(dl, dr, terms)


def product_bit_macs(counts, m, n) -> int:
    """Sum over every plane product of every count of rows x cols x bits."""
    return sum(
        m * n * 64 * (t.left[1] - t.left[0])
        for terms in counts.values()
        for t in terms
        if t.left is not None and t.right is not None
    )


def realistic_threshold(metric, counts_np):
    """A threshold that few pairs pass: the 1e-4 quantile of the dense column ("le"), the
    1 - 1e-4 quantile of it ("ge") or of every column's maximum ("ge_any"), from the numpy tile."""
    with np.errstate(all="ignore"):
        values = metric.epilogue(counts_np)
    if metric.keep == "ge_any":
        v = np.max(np.stack([np.broadcast_to(values[c], values[metric.dense_column].shape) for c in metric.columns]), 0)
    else:
        v = np.asarray(values[metric.dense_column], dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(np.quantile(v, 1e-4 if metric.keep == "le" else 1 - 1e-4))


def tile_rows(
    metric, mobj, planes, layout, threshold, shape, comparisons, bit_macs, kernel_row, r_np, add, results, args
):
    """The device tile path host -> host (both backends), the whole tile job, the upload alone."""
    m = planes.shape[0]
    left_host, right_host = planes, planes.copy()
    out = {}
    for name, module in (("cupy-b1", cupy_b1), ("cupy-int8", cupy_int8)):
        call = functools.partial(module.tile_pairs, left_host, right_host, mobj, layout, threshold)
        res = call()  # warm-up: compile, self-check, pinned ring
        t = wall_time(call, reps=3)
        out[name] = add(
            metric,
            name,
            f"tile_pairs host->host ({res.path}, {res.ri.size} pairs pass)",
            shape,
            t,
            comparisons,
            bit_macs,
        )
        out[name]["x_numpy"] = out[name]["comparisons_per_s"] / r_np["comparisons_per_s"]
    out["cupy-b1"]["x_int8"] = out["cupy-b1"]["comparisons_per_s"] / out["cupy-int8"]["comparisons_per_s"]
    print(f"  tile_pairs timings (last call): {res.timings}", flush=True)
    # the same on device-resident blocks: counts + epilogue + threshold + histograms + compaction, no copies
    dl, dr = cp.asarray(left_host), cp.asarray(right_host)
    call = functools.partial(cupy_b1.tile_pairs, dl, dr, mobj, layout, threshold)
    call()
    t = wall_time(call, reps=3)
    r = add(
        metric,
        "cupy-b1",
        f"tile_pairs on device ({100 * kernel_row['seconds'] / t:.0f}% of kernel rate)",
        shape,
        t,
        comparisons,
        bit_macs,
    )
    r["x_numpy"] = r["comparisons_per_s"] / r_np["comparisons_per_s"]
    stages = {}
    for stage in ("counts", "select"):  # where the device time goes: sub-tile counts, + select, + histograms
        call = functools.partial(cupy_b1.tile_pairs, dl, dr, mobj, layout, threshold, stages=stage)
        call()
        stages[stage] = wall_time(call, reps=3)
    stages["all"] = t
    print(
        f"  {metric} device stages (ms): counts {stages['counts'] * 1e3:.1f}, + select/epilogue/threshold "
        f"{(stages['select'] - stages['counts']) * 1e3:.1f}, + histograms {(t - stages['select']) * 1e3:.1f} "
        f"(kernel alone {kernel_row['seconds'] * 1e3:.1f})",
        flush=True,
    )
    results.setdefault("device_stages", {})[metric] = stages
    del dl, dr, call
    cp.get_default_memory_pool().free_all_blocks()
    # the whole tile job from a store of 2 blocks: pairs_stage.tile(0, 1) -> tile file
    store = Path(args.tmp) / f"genotile_bench_{metric}"
    write_tile_store(store, planes, layout)
    job = tile_job(store, metric, threshold, "cupy-b1")
    meta = job()
    t = wall_time(job, reps=3)
    ratio = kernel_row["seconds"] / t
    row = add(
        metric,
        "cupy-b1",
        f"tile job memmap->tile file ({meta['pairs_passing']} pairs; {100 * ratio:.0f}% of kernel rate)",
        shape,
        t,
        comparisons,
        bit_macs,
    )
    row["x_numpy"] = row["comparisons_per_s"] / r_np["comparisons_per_s"]
    row["x_int8"] = row["comparisons_per_s"] / out["cupy-int8"]["comparisons_per_s"]
    t_up, nbytes = upload_alone(store / "planes.npy", m)
    results.setdefault("tile_jobs", {})[metric] = {
        "threshold": threshold,
        "pairs_passing": meta["pairs_passing"],
        "job_s": t,
        "kernel_s": kernel_row["seconds"],
        "ratio": ratio,
        "upload_s": t_up,
        "upload_bytes": nbytes,
        "tile_pairs_b1_s": out["cupy-b1"]["seconds"],
        "tile_pairs_int8_s": out["cupy-int8"]["seconds"],
        "device_s": results.get("device_stages", {}).get(metric, {}).get("all"),
    }
    add(
        metric,
        "cupy-b1",
        f"upload alone, 2 blocks memmap->device ({nbytes / t_up / 1e9:.1f} GB/s)",
        shape,
        t_up,
        comparisons,
        0,
    )
    for f in ("planes.npy", "manifest.json", "perm.npy", "tile.npz"):
        (store / f).unlink(missing_ok=True)
    cp.get_default_memory_pool().free_all_blocks()


def write_tile_store(store: Path, planes: np.ndarray, layout) -> None:
    """A store of 2 blocks (`planes` twice: an off-diagonal tile (0, 1)), written with every key
    the pack stage writes, so that pairs_stage.tile reads it as it reads the pipeline's."""
    m = planes.shape[0]
    store.mkdir(parents=True, exist_ok=True)
    np.save(store / "planes.npy", np.concatenate([planes, planes]))
    np.save(store / "perm.npy", np.arange(2 * m, dtype=np.int64))
    manifest = {
        "genotile": "bench",
        "n_vectors": 2 * m,
        "n_fields": layout.total_words * 64,
        "layout": layout.to_json(),
        "plan": Plan(2 * m, m, 1).to_json(),
        "input": "bench_gpu.py (random planes)",
        "input_sha256": "0" * 64,
        "ids": [f"v{i}" for i in range(2 * m)],
    }
    (store / "manifest.json").write_text(json.dumps(manifest))


def tile_job(store: Path, metric: str, threshold, backend: str):
    """The tile job (0, 1) of the store, as the tile rule runs it: memmap -> tile file."""
    return functools.partial(
        pairs_stage.tile,
        store / "planes.npy",
        store / "manifest.json",
        store / "perm.npy",
        metric,
        0,
        1,
        threshold=threshold,
        dense=False,
        backend=backend,
        tile_out=store / "tile.npz",
    )


def shuffled_copies(planes: np.ndarray, layout, rows: int, seed: int) -> np.ndarray:
    """`rows` vectors from copies of `planes` ((distinct, planes x words) uint64), each copy's words
    shuffled alike in every plane (the last, partly padded word kept last): the same genotype
    counts a vector, distinct vectors."""
    rng = np.random.default_rng(seed)
    distinct, width = planes.shape
    n_planes = len(layout.planes)
    words = width // n_planes
    out = np.empty((rows, width), dtype=planes.dtype)
    for r0 in range(0, rows, distinct):
        n = min(distinct, rows - r0)
        order = np.concatenate([rng.permutation(words - 1), [words - 1]])
        out[r0 : r0 + n] = planes[:n].reshape(n, n_planes, words)[:, :, order].reshape(n, width)
    return out


def _passing_into(tile, got: list) -> None:
    got.append(int(tile().ri.size))


def big_tile_rows(args, add, ceil_wgmma: dict | None) -> dict:
    """Issue 26's tile (`--big-tile`): an off-diagonal N x N tile of king and ibs through
    cupy_tile.tile_pairs' GEMM path, the median of three after a warm-up; {metric: pairs passing}."""
    from genotile.backends.cuda import cupy_tile

    n, fields, passing = args.big_tile, args.fields, {}
    for metric, seed in (("king", 5), ("ibs", 6)):
        mobj = METRICS[metric]
        base, layout = genotype_planes_for(mobj.encoding, 2048, fields, 2048, seed, args.missing)
        counts = mobj.counts(layout)
        # king: the workflow's (third degree); ibs: half the least distance of 512 x 512 of the
        # vectors (realistic_threshold's 1e-4 quantile would pass millions of pairs at this size)
        dist = mobj.epilogue(numpy_blas.count_matrices(base[:512], base[512:1024], counts))[mobj.dense_column]
        threshold = 0.0442 if metric == "king" else float(np.nanmin(dist)) / 2
        t0 = time.perf_counter()
        both = shuffled_copies(base, layout, 2 * n, seed)
        print(
            f"{metric}: big tile {n}^2 x {fields}: planes {both.shape} in {time.perf_counter() - t0:.1f} s", flush=True
        )
        dl, dr = cc.to_device(both[:n]), cc.to_device(both[n:])
        del both
        tile = functools.partial(
            cupy_tile.tile_pairs, cupy_b1.ENGINE, dl, dr, mobj, layout, threshold, False, path="gemm"
        )
        first = tile()
        got: list[int] = []  # each timed run's passing pairs
        seconds = wall_time(functools.partial(_passing_into, tile, got), reps=3)
        if got != [first.ri.size] * 3:
            raise RuntimeError(f"{metric}: big tile passing pairs {first.ri.size}, then {got}")
        row = add(
            metric,
            "cupy-b1",
            f"big tile, tile_pairs gemm (thr {threshold:.4g})",
            f"{n}x{n}x{fields}",
            seconds,
            n * n * fields,
            product_bit_macs(counts, n, n),
        )
        if ceil_wgmma:
            row["pct_wgmma_ceiling"] = 100 * row["bit_mac_per_s"] / ceil_wgmma["bit_mac_per_s"]
            print(f"    {row['pct_wgmma_ceiling']:.1f}% of wgmma's ceiling; {first.ri.size} pairs pass", flush=True)
        passing[metric] = int(first.ri.size)
        del dl, dr, first
        cp.get_default_memory_pool().free_all_blocks()
    return passing


def smoke_without_gpu(args) -> int:
    """--smoke without CuPy or a GPU: the tile-job rows' path on the numpy backend, checked."""
    from genotile.io.tilefile import read_tile

    why = "CuPy is not installed" if cp is None else "no CUDA device"
    print(f"bench_gpu --smoke: {why}; GPU rows skipped, the tile-job path runs on the numpy backend", flush=True)
    # --big-tile's vectors: each a shuffle of its source's words, the same in every plane: every
    # two planes' common bits a vector kept (a shuffle differing between planes changes them)
    planes, layout = genotype_planes_for(METRICS["king"].encoding, 40, 300, 40, 3, args.missing)
    copies = shuffled_copies(planes, layout, 100, 7)
    sources = np.concatenate([planes, planes, planes[:20]])

    def common(a):
        bits = np.unpackbits(a.view(np.uint8), axis=1).reshape(len(a), len(layout.planes), -1)
        return np.einsum("vpk,vqk->vpq", bits, bits, dtype=np.int64)

    if not (common(copies) == common(sources)).all() or (copies == sources).all(axis=1).sum() > 40:
        print("  big tile: shuffled copies are not their sources' sites shuffled alike   <<< MISMATCH", flush=True)
        return 1
    print("  big tile: 100 shuffled copies of 40 vectors keep every two planes' common bits", flush=True)
    for metric, alphabet in (("snp", NUCLEOTIDE), ("king", None)):
        if alphabet is None:
            planes, layout = genotype_planes_for(METRICS[metric].encoding, 40, 300, 96, 3, args.missing)
        else:
            planes, enc = categorical_planes_for(alphabet, 40, 300, 96, seed=2)
            layout = enc.layout
        mobj = METRICS[metric]
        counts = numpy_blas.count_matrices(planes, planes, mobj.counts(layout))
        threshold = realistic_threshold(mobj, counts)
        store = Path(args.tmp) / f"genotile_bench_smoke_{metric}_{os.getpid()}"
        try:
            write_tile_store(store, planes, layout)
            meta = tile_job(store, metric, threshold, "numpy")()
            arrays, _, _ = read_tile(store / "tile.npz")
        finally:
            for f in ("planes.npy", "manifest.json", "perm.npy", "tile.npz"):
                (store / f).unlink(missing_ok=True)
            store.rmdir()
        values = mobj.epilogue(counts)
        want = int(mobj.passes(values, threshold).sum())
        got = (meta["pairs_passing"], int(arrays["a"].size))
        print(
            f"  {metric}: tile job (0, 1) of 2 x 96 vectors, threshold {threshold:.6g}: {got[0]} pairs pass", flush=True
        )
        if got != (want, want):
            print(f"  {metric}: {got} pairs in the tile job, {want} from the counts   <<< MISMATCH", flush=True)
            return 1
    return 0


def gpu_present() -> bool:
    if cp is None:
        return False
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except cp.cuda.runtime.CUDARuntimeError:
        return False


def upload_alone(path, m):
    """Seconds to bring both blocks of a 2-block store to the device (memmap -> pinned -> device)."""
    mm = np.load(path, mmap_mode="r")
    dl, dr = cp.empty((m, mm.shape[1]), dtype=cp.uint64), cp.empty((m, mm.shape[1]), dtype=cp.uint64)
    pieces = transfers.copy_pieces([("L", 0), ("R", 0)], {"L": [(0, m)], "R": [(0, m)]}, mm.shape[1] * 8)
    _, copy = transfers.streams(cp.cuda.Device().id)

    def up():
        info = transfers.upload({"L": mm[:m], "R": mm[m:]}, {"L": dl, "R": dr}, pieces, copy)
        copy.synchronize()
        return info

    up()
    t_up = wall_time(up, reps=3)
    nbytes = 2 * m * mm.shape[1] * 8
    info = up()
    print(
        f"  upload: {nbytes / t_up / 1e9:.1f} GB/s memmap -> device ({nbytes / 1e9:.2f} GB; reader threads busy "
        f"{info['read_busy_s'] * 1e3:.0f} ms in all)",
        flush=True,
    )
    return t_up, nbytes


def packing_rows(add, results, args):
    """GPU packing against numpy packing of the same codes."""
    from genotile.core.encode import MISSING
    from genotile.core.genotype import genotype_layout, genotype_planes

    rng = np.random.default_rng(5)
    cases = []
    codes = rng.integers(0, 3, size=(args.pack_rows, args.fields), dtype=np.uint8)
    codes[rng.random(codes.shape, dtype=np.float32) < 0.02] = MISSING
    layout = genotype_layout(codes, "genotype")
    cases.append(
        (
            "pack genotype",
            codes,
            lambda c: genotype_planes(c, layout),
            cupy_pack.genotype_packer(layout, codes.shape[1]),
        )
    )
    raw = np.frombuffer(b"ACGTN", np.uint8)[
        rng.choice(5, size=(args.pack_rows_cat, args.fields), p=[0.4, 0.3, 0.15, 0.13, 0.02])
    ]
    ncodes = NUCLEOTIDE.encode(raw)
    enc = categorical_encoding(symbol_counts(ncodes), True)
    cases.append(("pack nucleotide", ncodes, lambda c: categorical_planes(c, enc), cupy_pack.categorical_packer(enc)))
    for name, c, numpy_pack, packer in cases:
        shape = f"{c.shape[0]}x{c.shape[1]} codes"
        t0 = time.perf_counter()
        want = numpy_pack(c)
        t_np = time.perf_counter() - t0
        r_np = add(name, "numpy", "numpy packing", shape, t_np, c.size, 0)
        got = packer(c)
        same = bool(np.array_equal(got, want))
        print(f"  {name}: GPU planes == numpy planes: {same}" + ("" if same else "   <<< MISMATCH"), flush=True)
        results.setdefault("pack_equal", {})[name] = same
        t = wall_time(functools.partial(packer, c), reps=3)
        r = add(name, "gpu", "host->host (codes in, planes out)", shape, t, c.size, 0)
        r["x_numpy"] = r["comparisons_per_s"] / r_np["comparisons_per_s"]
        dcodes = cp.asarray(c)
        t = gpu_time(functools.partial(packer.device, dcodes), reps=5)
        r = add(name, "gpu", "device only (kernels)", shape, t, c.size, 0)
        r["x_numpy"] = r["comparisons_per_s"] / r_np["comparisons_per_s"]
        del dcodes, want, got
        cp.get_default_memory_pool().free_all_blocks()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--fields", type=int, default=65536)
    ap.add_argument("--gemm-size", type=int, default=16384)
    ap.add_argument("--numpy-rows", type=int, default=1024)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--git", default=None, help="revision to print (default: git rev-parse --short HEAD)")
    ap.add_argument("--cases", default="product,snp,hamming,ibs,king,ccc2,pack")
    ap.add_argument("--tmp", default=os.environ.get("TMPDIR", "/tmp"), help="where the tile jobs' stores go")
    ap.add_argument("--pack-rows", type=int, default=8192, help="genotype codes packed (rows x --fields)")
    ap.add_argument("--pack-rows-cat", type=int, default=512, help="nucleotide codes packed (rows x --fields)")
    ap.add_argument("--missing", type=float, default=0.02, help="fraction of missing genotypes")
    ap.add_argument("--sweep", action="store_true", help="time the kernel variants of SWEEP on the product")
    ap.add_argument(
        "--big-tile",
        type=int,
        default=0,
        metavar="N",
        help="also an N x N king and ibs tile through the device tile path alone (issue 26: 250000)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, errors fail the run (CI; CPU without a GPU)")
    ap.add_argument(
        "--profile-select",
        default=None,
        metavar="METRIC",
        help="run the device tile path of METRIC on the tile twice and exit (for ncu -k tile_select)",
    )
    ap.add_argument(
        "--profile", action="store_true", help="run one cupy-b1 kernel launch on the product tile and exit (for ncu)"
    )
    args = ap.parse_args()
    if args.smoke:
        if not gpu_present():
            return smoke_without_gpu(args)
        args.rows, args.fields, args.gemm_size, args.numpy_rows = 1024, 2048, 1024, 256
        args.pack_rows, args.pack_rows_cat = 256, 64
        args.big_tile = 4096 if args.big_tile else 0
    if args.profile:
        return profile_one(args)
    if args.profile_select:
        return profile_select(args)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    sms = int(props["multiProcessorCount"])
    head = args.git
    if head is None:
        try:
            head = (
                subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
                or "?"
            )
        except OSError:
            head = "?"
    print(
        f"GPU {gpu}, cc {dev.compute_capability}, {sms} SMs; CuPy {cp.__version__}; "
        f"CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}; git {head}",
        flush=True,
    )

    print("ceilings:", flush=True)
    ceil_b1 = b1_ceiling(sms)
    ceil_wgmma = wgmma_ceiling(sms)  # Hopper: the instruction b1_select's main loop uses there
    ceil_i8 = int8_ceiling(args.gemm_size)

    m = n = args.rows
    rows_table = []
    results = {
        "gpu": gpu,
        "sms": sms,
        "git": head,
        "date": datetime.date.today().isoformat(),
        "ceiling_b1": ceil_b1,
        "ceiling_wgmma_b1": ceil_wgmma,
        "ceiling_int8": ceil_i8,
        "rows": rows_table,
    }

    def add(metric, backend, what, shape, seconds, comparisons, bit_macs):
        ceiling = ceil_b1["bit_mac_per_s"] if backend.startswith("cupy-b1") else ceil_i8["mac_per_s"]
        row = {
            "metric": metric,
            "backend": backend,
            "what": what,
            "shape": shape,
            "seconds": seconds,
            "comparisons_per_s": comparisons / seconds,
            "bit_mac_per_s": bit_macs / seconds,
            "pct_ceiling": None if backend == "numpy" or not bit_macs else 100 * bit_macs / seconds / ceiling,
        }
        rows_table.append(row)
        pct = "" if row["pct_ceiling"] is None else f" {row['pct_ceiling']:.1f}% of ceiling"
        print(
            f"  {metric:8s} {backend:24s} {what:34s} {shape:22s} {seconds * 1e3:10.2f} ms "
            f"{row['comparisons_per_s']:.3e} cmp/s {row['bit_mac_per_s']:.3e} bit-MAC/s{pct}",
            flush=True,
        )
        return row

    rng = np.random.default_rng(1)
    words = -(-args.fields // 64)
    cases = {
        "product": (
            rng.integers(0, np.iinfo(np.uint64).max, size=(m, words), dtype=np.uint64, endpoint=True),
            None,
            {"product": [Term(1, (0, words), (0, words))]},
            words * 64,
        )
    }
    for metric, alphabet in [("snp", NUCLEOTIDE), ("hamming", CATEGORICAL)]:
        if metric not in args.cases.split(","):
            continue
        t0 = time.perf_counter()
        planes, enc = categorical_planes_for(alphabet, 2048, args.fields, m, seed=2)
        print(
            f"{metric}: planes {planes.shape} built in {time.perf_counter() - t0:.1f} s; layout {enc.layout}",
            flush=True,
        )
        cases[metric] = (planes, enc.layout, METRICS[metric].counts(enc.layout), enc.order.size)

    for metric in ("ibs", "king", "ccc2"):
        if metric not in args.cases.split(","):
            continue
        t0 = time.perf_counter()
        planes, layout = genotype_planes_for(METRICS[metric].encoding, 2048, args.fields, m, 3, args.missing)
        print(f"{metric}: planes {planes.shape} built in {time.perf_counter() - t0:.1f} s; layout {layout}", flush=True)
        cases[metric] = (planes, layout, METRICS[metric].counts(layout), args.fields)

    if "product" not in args.cases.split(","):
        del cases["product"]
    for metric, (planes, layout, counts, fields) in cases.items():
        bit_macs = product_bit_macs(counts, m, n)
        comparisons = m * n * fields
        shape = f"{m}x{n}x{fields}"
        print(
            f"{metric}: {len(counts)} counts, {sum(len(t) for t in counts.values())} terms, "
            f"{bit_macs / (m * n):.0f} product bits a pair",
            flush=True,
        )
        left_host = planes
        right_host = planes.copy()  # an off-diagonal tile: two distinct operands
        dl, dr = cc.to_device(left_host), cc.to_device(right_host)
        # cupy-b1 kernel alone: every launch of every count (row sums and the int64 result excluded)
        launches = [pieces for terms in counts.values() for pieces in cupy_b1.plan_launches(cc.split_terms(terms)[0])]
        configs = (
            dict(cupy_b1.CONFIGS)
            if metric == "product"
            else {cupy_b1.default_config(): cupy_b1.CONFIGS[cupy_b1.default_config()]}
        )
        if args.sweep:
            configs.update(SWEEP)
        optin = int(cp.cuda.runtime.deviceGetAttribute(97, dev.id))
        b1_kernel_best = None
        for cname, cfg in configs.items():
            if cfg.smem_bytes > optin:
                continue
            prepared = [cupy_b1.prepare_launch(dl, dr, pieces, cfg) for pieces in launches]
            out = cp.empty((m, n), dtype=cp.int32)
            zm, zn = cp.zeros(m, cp.int32), cp.zeros(n, cp.int32)

            def run_all(prepared=prepared, cfg=cfg, out=out, zm=zm, zn=zn):
                for launch in prepared:
                    cupy_b1.run_launch(launch, cfg, out, zm, zn)

            t = gpu_time(run_all, reps=5)
            row = add(metric, "cupy-b1", f"kernel {cname}", shape, t, comparisons, bit_macs)
            if b1_kernel_best is None or t < b1_kernel_best["seconds"]:
                b1_kernel_best = row
            del prepared, out
            cp.get_default_memory_pool().free_all_blocks()
        # device-resident counts (everything but PCIe), all counts of the metric
        t_b1 = gpu_time(functools.partial(all_counts, cupy_b1.count_device, dl, dr, counts), reps=3)
        r_b1 = add(metric, "cupy-b1", "counts on device", shape, t_b1, comparisons, bit_macs)
        t_i8 = gpu_time(functools.partial(all_counts, cupy_int8.count_device, dl, dr, counts), reps=3)
        r_i8 = add(metric, "cupy-int8", "counts on device", shape, t_i8, comparisons, bit_macs)
        same = all(
            bool((cupy_b1.count_device(dl, dr, terms) == cupy_int8.count_device(dl, dr, terms)).all())
            for terms in counts.values()
        )
        print(f"  cupy-b1 == cupy-int8 on the full tile: {same}" + ("" if same else "   <<< MISMATCH"), flush=True)
        results.setdefault("b1_equals_int8", {})[metric] = same
        cp.get_default_memory_pool().free_all_blocks()
        # numpy (BLAS) on a smaller tile; its values give the threshold
        k = args.numpy_rows
        sub_l, sub_r = np.ascontiguousarray(planes[:k]), np.ascontiguousarray(planes[k : 2 * k])
        t0 = time.perf_counter()
        counts_np = numpy_blas.count_matrices(sub_l, sub_r, counts)
        t = time.perf_counter() - t0
        r_np = add(
            metric,
            "numpy",
            f"count_matrices ({k}x{k} tile)",
            f"{k}x{k}x{fields}",
            t,
            k * k * fields,
            product_bit_macs(counts, k, k),
        )
        for r in (b1_kernel_best, r_b1, r_i8):
            r["x_numpy"] = r["comparisons_per_s"] / r_np["comparisons_per_s"]
        b1_kernel_best["x_int8"] = b1_kernel_best["comparisons_per_s"] / r_i8["comparisons_per_s"]
        r_b1["x_int8"] = r_b1["comparisons_per_s"] / r_i8["comparisons_per_s"]
        del dl, dr
        cp.get_default_memory_pool().free_all_blocks()
        if metric == "product":
            continue
        mobj = METRICS[metric]
        threshold = realistic_threshold(mobj, counts_np)
        try:
            tile_rows(
                metric,
                mobj,
                planes,
                layout,
                threshold,
                shape,
                comparisons,
                bit_macs,
                b1_kernel_best,
                r_np,
                add,
                results,
                args,
            )
        except Exception:  # noqa: BLE001 -- report and go on with the other metrics
            traceback.print_exc()
            results.setdefault("errors", []).append(f"tile rows {metric}: {traceback.format_exc(limit=3)}")

    if args.big_tile:
        try:
            results["big_tile_passing"] = big_tile_rows(args, add, ceil_wgmma)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            results.setdefault("errors", []).append(f"big tile: {traceback.format_exc(limit=3)}")

    if "pack" in args.cases.split(","):
        try:
            packing_rows(add, results, args)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            results.setdefault("errors", []).append(f"packing: {traceback.format_exc(limit=3)}")

    table = [
        f"GPU: {gpu} ({sms} SMs), CuPy {cp.__version__}, git {head}, {results['date']}",
        "",
        f"cupy-b1 counts == cupy-int8 counts on every full tile: {results.get('b1_equals_int8')}",
        "",
        "| ceiling (same process) | rate |",
        "|---|---|",
        f"| mma.sync m16n8k256 b1 AND+POPC, register-only loop | {ceil_b1['bit_mac_per_s']:.3e} bit-MAC/s "
        f"({2 * ceil_b1['bit_mac_per_s'] / 1e12:.0f} TOPS) |",
        *(
            [f"| wgmma m64n128k256 b1 AND+POPC, shared-memory operands | {ceil_wgmma['bit_mac_per_s']:.3e} bit-MAC/s |"]
            if ceil_wgmma
            else []
        ),
        f"| cuBLAS int8 gemmEx {ceil_i8['size']}^3 | {ceil_i8['mac_per_s']:.3e} MAC/s "
        f"({2 * ceil_i8['mac_per_s'] / 1e12:.0f} TOPS) |",
        "",
        "(% of ceiling: against mma.sync's b1 ceiling, as every earlier table; on Hopper wgmma's is higher)",
        "",
        "| metric | backend | what is timed | shape (M x N x fields) | time (ms) | comparisons/s | bit-MAC/s "
        "| % of ceiling | x numpy | x cupy-int8 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows_table:
        pct = "" if r["pct_ceiling"] is None else f"{r['pct_ceiling']:.1f}"
        xn = f"{r['x_numpy']:.0f}" if "x_numpy" in r else ""
        xi = f"{r['x_int8']:.2f}" if "x_int8" in r else ""
        bm = f"{r['bit_mac_per_s']:.3e}" if r["bit_mac_per_s"] else ""
        table.append(
            f"| {r['metric']} | {r['backend']} | {r['what']} | {r['shape']} | {r['seconds'] * 1e3:.2f} "
            f"| {r['comparisons_per_s']:.3e} | {bm} | {pct} | {xn} | {xi} |"
        )
    jobs = results.get("tile_jobs", {})
    if jobs:
        table += [
            "",
            "Tile jobs (cupy-b1, off-diagonal tile of 2 blocks): kernel alone = every count's kernel "
            "launches on prepared operands; tile job = pairs_stage.tile, store memmap -> tile file.",
            "",
            "| metric | threshold | pairs passing | kernel alone (ms) | device path: counts / + select / "
            "+ histograms (ms) | tile_pairs host->host (ms) | tile job (ms) | job rate / kernel rate "
            "| upload alone (ms, GB/s) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for metric, j in jobs.items():
            st = results.get("device_stages", {}).get(metric, {})
            dev = f"{st['counts'] * 1e3:.1f} / {st['select'] * 1e3:.1f} / {st['all'] * 1e3:.1f}" if len(st) == 3 else ""
            table.append(
                f"| {metric} | {j['threshold']:.6g} | {j['pairs_passing']} | {j['kernel_s'] * 1e3:.2f} "
                f"| {dev} | {j['tile_pairs_b1_s'] * 1e3:.2f} | {j['job_s'] * 1e3:.2f} | "
                f"{100 * j['ratio']:.0f}% | {j['upload_s'] * 1e3:.2f} "
                f"({j['upload_bytes'] / j['upload_s'] / 1e9:.1f}) |"
            )
    if "pack_equal" in results:
        table += ["", f"GPU planes == numpy planes: {results['pack_equal']}"]
    text = "\n".join(table) + "\n"
    (out_dir / "bench_gpu.md").write_text(text)
    (out_dir / "bench_gpu.json").write_text(json.dumps(results, indent=1) + "\n")
    print()
    print(text)
    if results.get("errors"):
        print(f"bench_gpu: {len(results['errors'])} part(s) failed (above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
