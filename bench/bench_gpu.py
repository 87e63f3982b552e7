#!/usr/bin/env python3
"""GPU benchmark (issue 4): instruction ceilings, then the GPU backends, in one process.

    PYTHONPATH=src python3 bench/bench_gpu.py [--rows 16384] [--fields 65536] [--out DIR]

1. Ceilings, measured here and now: a register-only loop of
   mma.sync.m16n8k256.b1.and.popc (kernels/b1_mma_peak.cu) and cuBLAS int8 gemmEx
   (CUDA_R_8I -> CUDA_R_32I, COMPUTE_32I) at 16384^3.
2. Tiles of rows x rows vectors (one off-diagonal tile: every pair computed):
   - product: one plane product over `fields` bits (random words);
   - snp: the snp metric's terms from random nucleotide codes (2-4 alleles a column, 3% N),
     `fields` informative columns; hamming likewise from a categorical alphabet.
     The codes of 2048 distinct vectors are encoded and their planes repeated to fill the
     tile (the kernels' work does not depend on the values).
   For each: the cupy-b1 kernel alone (operands repacked on the device beforehand; every
   tile shape in cupy_b1.CONFIGS for the product), each backend's count on device-resident
   planes (repack / unpack, row sums, int64 result included), and count_matrices from host
   numpy to host int64 (PCIe both ways). numpy (BLAS) is timed on a 1024 x 1024 tile.
   The cupy-b1 counts are checked equal to cupy-int8's on the full tile.
Rates (DESIGN.md section 6): element comparisons/s = pairs x fields / s; bit-MAC/s = sum over
plane products of rows x cols x bits / s; % of ceiling against the ceiling measured above
(b1 instruction ceiling for cupy-b1, cuBLAS int8 for cupy-int8, in bit-MACs = int8 MACs).
Times are medians of CUDA-event timings after a warm-up.
"""

import argparse
import datetime
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import cupy as cp  # noqa: E402

from genotile.backends import cupy_b1, cupy_int8, numpy_blas  # noqa: E402
from genotile.backends import cupy_common as cc  # noqa: E402
from genotile.encode import CATEGORICAL, NUCLEOTIDE, categorical_encoding, categorical_planes, symbol_counts  # noqa: E402
from genotile.metrics import METRICS, Term  # noqa: E402

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
        print(f"  b1 peak: {per_sm} blocks/SM x 8 warps, {ilp} independent mma: {rate:.3e} bit-MAC/s "
              f"({2 * rate / 1e12:.0f} TOPS)", flush=True)
        if best is None or rate > best["bit_mac_per_s"]:
            best = row
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
    from genotile.encode import MISSING
    from genotile.genotype import genotype_layout, genotype_planes

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


def all_counts(count_device, dl, dr, counts) -> None:
    for terms in counts.values():
        count_device(dl, dr, terms)


def product_bit_macs(counts, m, n) -> int:
    """Sum over every plane product of every count of rows x cols x bits."""
    return sum(m * n * 64 * (t.left[1] - t.left[0]) for terms in counts.values() for t in terms
               if t.left is not None and t.right is not None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--fields", type=int, default=65536)
    ap.add_argument("--gemm-size", type=int, default=16384)
    ap.add_argument("--numpy-rows", type=int, default=1024)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--git", default=None, help="revision to print (default: git rev-parse --short HEAD)")
    ap.add_argument("--cases", default="product,snp,hamming,ibs,king,ccc2")
    ap.add_argument("--missing", type=float, default=0.02, help="fraction of missing genotypes")
    ap.add_argument("--sweep", action="store_true", help="time the kernel variants of SWEEP on the product")
    ap.add_argument("--profile", action="store_true",
                    help="run one cupy-b1 kernel launch on the product tile and exit (for ncu)")
    args = ap.parse_args()
    if args.profile:
        return profile_one(args)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    sms = int(props["multiProcessorCount"])
    head = args.git
    if head is None:
        try:
            head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True).stdout.strip() or "?"
        except OSError:
            head = "?"
    print(f"GPU {gpu}, cc {dev.compute_capability}, {sms} SMs; CuPy {cp.__version__}; "
          f"CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}; git {head}", flush=True)

    print("ceilings:", flush=True)
    ceil_b1 = b1_ceiling(sms)
    ceil_i8 = int8_ceiling(args.gemm_size)

    m = n = args.rows
    rows_table = []
    results = {"gpu": gpu, "sms": sms, "git": head, "date": datetime.date.today().isoformat(),
               "ceiling_b1": ceil_b1, "ceiling_int8": ceil_i8, "rows": rows_table}

    def add(metric, backend, what, shape, seconds, comparisons, bit_macs):
        ceiling = ceil_b1["bit_mac_per_s"] if backend.startswith("cupy-b1") else ceil_i8["mac_per_s"]
        row = {"metric": metric, "backend": backend, "what": what, "shape": shape, "seconds": seconds,
               "comparisons_per_s": comparisons / seconds, "bit_mac_per_s": bit_macs / seconds,
               "pct_ceiling": None if backend == "numpy" else 100 * bit_macs / seconds / ceiling}
        rows_table.append(row)
        pct = "" if row["pct_ceiling"] is None else f" {row['pct_ceiling']:.1f}% of ceiling"
        print(f"  {metric:8s} {backend:24s} {what:34s} {shape:22s} {seconds * 1e3:10.2f} ms "
              f"{row['comparisons_per_s']:.3e} cmp/s {row['bit_mac_per_s']:.3e} bit-MAC/s{pct}", flush=True)
        return row

    rng = np.random.default_rng(1)
    words = -(-args.fields // 64)
    cases = {"product": (rng.integers(0, np.iinfo(np.uint64).max, size=(m, words), dtype=np.uint64, endpoint=True),
                         None, {"product": [Term(1, (0, words), (0, words))]}, words * 64)}
    for metric, alphabet in [("snp", NUCLEOTIDE), ("hamming", CATEGORICAL)]:
        if metric not in args.cases.split(","):
            continue
        t0 = time.perf_counter()
        planes, enc = categorical_planes_for(alphabet, 2048, args.fields, m, seed=2)
        print(f"{metric}: planes {planes.shape} built in {time.perf_counter() - t0:.1f} s; layout {enc.layout}",
              flush=True)
        cases[metric] = (planes, enc, METRICS[metric].counts(enc.layout), enc.order.size)

    for metric in ("ibs", "king", "ccc2"):
        if metric not in args.cases.split(","):
            continue
        t0 = time.perf_counter()
        planes, layout = genotype_planes_for(METRICS[metric].encoding, 2048, args.fields, m, 3, args.missing)
        print(f"{metric}: planes {planes.shape} built in {time.perf_counter() - t0:.1f} s; layout {layout}",
              flush=True)
        cases[metric] = (planes, layout, METRICS[metric].counts(layout), args.fields)

    if "product" not in args.cases.split(","):
        del cases["product"]
    for metric, (planes, _layout, counts, fields) in cases.items():
        bit_macs = product_bit_macs(counts, m, n)
        comparisons = m * n * fields
        shape = f"{m}x{n}x{fields}"
        print(f"{metric}: {len(counts)} counts, {sum(len(t) for t in counts.values())} terms, "
              f"{bit_macs / (m * n):.0f} product bits a pair", flush=True)
        left_host = planes
        right_host = planes.copy()  # an off-diagonal tile: two distinct operands
        dl, dr = cc.to_device(left_host), cc.to_device(right_host)
        # cupy-b1 kernel alone: every launch of every count (row sums and the int64 result excluded)
        launches = [pieces for terms in counts.values()
                    for pieces in cupy_b1.plan_launches(cc.split_terms(terms)[0])]
        configs = dict(cupy_b1.CONFIGS) if metric == "product" else {
            cupy_b1.default_config(): cupy_b1.CONFIGS[cupy_b1.default_config()]}
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
        same = all(bool((cupy_b1.count_device(dl, dr, terms) == cupy_int8.count_device(dl, dr, terms)).all())
                   for terms in counts.values())
        print(f"  cupy-b1 == cupy-int8 on the full tile: {same}" + ("" if same else "   <<< MISMATCH"), flush=True)
        results.setdefault("b1_equals_int8", {})[metric] = same
        cp.get_default_memory_pool().free_all_blocks()
        # host to host
        t = wall_time(functools.partial(cupy_b1.count_matrices, left_host, right_host, counts))
        add(metric, "cupy-b1", "count_matrices host->host", shape, t, comparisons, bit_macs)
        t = wall_time(functools.partial(cupy_int8.count_matrices, left_host, right_host, counts))
        add(metric, "cupy-int8", "count_matrices host->host", shape, t, comparisons, bit_macs)
        cp.get_default_memory_pool().free_all_blocks()
        # numpy (BLAS) on a smaller tile
        k = args.numpy_rows
        sub_l, sub_r = np.ascontiguousarray(planes[:k]), np.ascontiguousarray(planes[k : 2 * k])
        t = wall_time(functools.partial(numpy_blas.count_matrices, sub_l, sub_r, counts))
        r_np = add(metric, "numpy", f"count_matrices ({k}x{k} tile)", f"{k}x{k}x{fields}", t,
                   k * k * fields, product_bit_macs(counts, k, k))
        for r in (b1_kernel_best, r_b1, r_i8):
            r["x_numpy"] = r["comparisons_per_s"] / r_np["comparisons_per_s"]
        b1_kernel_best["x_int8"] = b1_kernel_best["comparisons_per_s"] / r_i8["comparisons_per_s"]
        r_b1["x_int8"] = r_b1["comparisons_per_s"] / r_i8["comparisons_per_s"]
        del dl, dr
        cp.get_default_memory_pool().free_all_blocks()

    table = [
        f"GPU: {gpu} ({sms} SMs), CuPy {cp.__version__}, git {head}, {results['date']}",
        "",
        f"cupy-b1 counts == cupy-int8 counts on every full tile: {results.get('b1_equals_int8')}",
        "",
        "| ceiling (same process) | rate |",
        "|---|---|",
        f"| mma.sync m16n8k256 b1 AND+POPC, register-only loop | {ceil_b1['bit_mac_per_s']:.3e} bit-MAC/s "
        f"({2 * ceil_b1['bit_mac_per_s'] / 1e12:.0f} TOPS) |",
        f"| cuBLAS int8 gemmEx {ceil_i8['size']}^3 | {ceil_i8['mac_per_s']:.3e} MAC/s "
        f"({2 * ceil_i8['mac_per_s'] / 1e12:.0f} TOPS) |",
        "",
        "| metric | backend | what is timed | shape (M x N x fields) | time (ms) | comparisons/s | bit-MAC/s "
        "| % of ceiling | x numpy | x cupy-int8 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows_table:
        pct = "" if r["pct_ceiling"] is None else f"{r['pct_ceiling']:.1f}"
        xn = f"{r['x_numpy']:.0f}" if "x_numpy" in r else ""
        xi = f"{r['x_int8']:.2f}" if "x_int8" in r else ""
        table.append(f"| {r['metric']} | {r['backend']} | {r['what']} | {r['shape']} | {r['seconds'] * 1e3:.2f} "
                     f"| {r['comparisons_per_s']:.3e} | {r['bit_mac_per_s']:.3e} | {pct} | {xn} | {xi} |")
    text = "\n".join(table) + "\n"
    (out_dir / "bench_gpu.md").write_text(text)
    (out_dir / "bench_gpu.json").write_text(json.dumps(results, indent=1) + "\n")
    print()
    print(text)


if __name__ == "__main__":
    main()
