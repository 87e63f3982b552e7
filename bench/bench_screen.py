#!/usr/bin/env python3
"""Screening benchmark (issue 7): the published workload and adversarial inputs on the GPU,
numpy on a CI-sized workload, in one process.

    PYTHONPATH=src python3 bench/bench_screen.py [--samples 2048] [--sample-len 200000]
                                                 [--sigs 1024] [--sig-len 10240] [--out DIR]

Workloads (samples x signatures, all samples of one length, all signatures of one length):
- published: random ACGT, each sample and signature with its own N fraction drawn from 1-20%
  (single Ns), 10% of the samples carry a copy of a random signature at a random position.
- all-N samples against the published signatures: every pair matches at position 1 after
  checking every non-N base of the signature (the most work a matching pair costs).
- poly-A samples (1-20% N) against poly-A signatures: every pair matches at position 1.
- poly-A samples (no N) against poly-A signatures ending in C: no pair matches; rarest-first
  probing tests the C first.
- periodic samples (A^k C repeated, k = 1, 15, 999) against poly-A signatures: no match; base
  masks alone keep each start alive up to the next C (~500 probes a window for k = 999, 8.5 s
  before the run masks), the run mask of A^10240 kills every window in one or two probes.
- dinucleotide repeats: (AC)* samples against (AC)^5119 AA signatures (a mismatch at the last
  base; base masks alone: ~10,240 probes a window), and (AC)* samples with 1-20% N and a defect
  every 5,000 bases against (AC)^5120 signatures (every start spanning a defect survives up to it).
Time: the whole screen, `backend.first_matches_and_sums` from host arrays (the SequenceSets of
the workload) to host arrays (positions and quality sums of every pair), copies included;
median of 3 after a warm-up, wall clock. Stages from a
separate run with a synchronisation after each. numpy: a 64 x 20,000 by 32 x 1,024 published
workload, pairs/s and bases/s against the GPU on the same one.

`--smoke` (CI, tests/workflow/test_bench_smoke.py): tiny workloads (16 samples x 3,000 bases,
8 signatures x 200: published, all-N, poly-A with N, poly-A against ...C) on numpy, and on the
GPU too where there is one; each backend's positions and quality sums are checked against a
brute-force search over every window (numpy's sliding windows, no bit masks) and the cases'
known answers (every carrier found; every pair matching at 0; none). A mismatch fails the run.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

try:
    import cupy as cp  # noqa: E402
except ImportError:  # --smoke runs numpy without it
    cp = None

from genotile.backends.cuda import cupy_common  # noqa: E402
from genotile.screen import backend, cupy_search  # noqa: E402
from genotile.screen.encode import SequenceSet  # noqa: E402

ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)


def random_rows(rng, n, length, n_frac=(0.01, 0.2), chunk=128):
    out = np.empty((n, length), dtype=np.uint8)
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        out[a:b] = ACGT[rng.integers(0, 4, (b - a, length), dtype=np.uint8)]
        if n_frac:
            frac = rng.uniform(*n_frac, b - a).astype(np.float32)
            out[a:b][rng.random((b - a, length), dtype=np.float32) < frac[:, None]] = ord("N")
    return out


def as_set(rows, qual=None):
    n, length = rows.shape
    offsets = np.arange(n + 1, dtype=np.int64) * length
    return SequenceSet(
        [f"r{k}" for k in range(n)], rows.reshape(-1), offsets, None if qual is None else qual.reshape(-1)
    )


def quals(rng, n, length):
    return rng.integers(33 + 2, 33 + 42, (n, length), dtype=np.uint8)


def published(rng, n_s, len_s, n_g, len_g, carriers=0.10):
    samples = random_rows(rng, n_s, len_s)
    sigs = random_rows(rng, n_g, len_g)
    carry = rng.choice(n_s, int(round(carriers * n_s)), replace=False)
    for s in carry:
        at = int(rng.integers(0, len_s - len_g + 1))
        samples[s, at : at + len_g] = sigs[int(rng.integers(n_g))]
    return samples, sigs, carry


def timed(fn, repeats):
    fn()  # warm-up: kernels compiled, memory pool filled
    times = []
    for _ in range(repeats):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def gpu_case(name, S, G, repeats=3):
    secs, (pos, qs) = timed(lambda: backend.first_matches_and_sums(S, G, "cupy"), repeats)
    stages = {}
    cupy_search.first_matches(S, G, timings=stages)
    t = time.perf_counter()
    cupy_search.qual_sums(S, pos, G.lengths)
    stages["quality sums"] = time.perf_counter() - t
    row = {
        "case": name,
        "samples": len(S),
        "signatures": len(G),
        "seconds": secs,
        "matches": int((pos >= 0).sum()),
        "pairs_per_s": len(S) * len(G) / secs,
        "stages": {k: round(v, 4) for k, v in stages.items()},
    }
    print(json.dumps(row), flush=True)
    return row, pos, qs


def brute(samples, sigs, qual):
    """(positions, quality sums) of every pair by comparing every window base by base: the
    leftmost start where each base equals the signature's or either is N, -1 and 0 for none."""
    n_g, m = sigs.shape
    windows = np.lib.stride_tricks.sliding_window_view(samples, m, axis=1)  # (n_s, starts, m)
    pos = np.full((samples.shape[0], n_g), -1, np.int64)
    sums = np.zeros(pos.shape, np.int64)
    for g in range(n_g):
        ok = ((windows == sigs[g]) | (windows == ord("N")) | (sigs[g] == ord("N"))).all(axis=2)
        hit = ok.any(axis=1)
        pos[hit, g] = ok[hit].argmax(axis=1)
        for s in np.flatnonzero(hit):
            sums[s, g] = int(qual[s, pos[s, g] : pos[s, g] + m].astype(np.int64).sum()) - 33 * m
    return pos, sums


def smoke(args) -> int:
    """--smoke: tiny workloads on numpy (and the GPU where there is one), each checked."""
    families = ["numpy"] + (["cupy"] if cupy_common.has_gpu() else [])
    if len(families) == 1:
        why = "CuPy is not installed" if cp is None else "no CUDA device"
        print(f"bench_screen --smoke: {why}; the GPU rows skipped, the workloads run on numpy", flush=True)
    rng = np.random.default_rng(2024)
    n_s, len_s, n_g, len_g = 16, 3000, 8, 200
    samples, sigs, carry = published(rng, n_s, len_s, n_g, len_g, carriers=0.25)
    qual = quals(rng, n_s, len_s)
    poly_a = np.full((n_s, len_s), ord("A"), dtype=np.uint8)
    poly_a_n = poly_a.copy()
    poly_a_n[rng.random(poly_a.shape) < 0.1] = ord("N")
    sig_a = np.full((n_g, len_g), ord("A"), dtype=np.uint8)
    sig_ac = sig_a.copy()
    sig_ac[:, -1] = ord("C")
    everywhere = np.zeros((n_s, n_g), np.int64)
    cases = [  # name, samples, signatures, the positions known beforehand (None: brute force alone)
        ("published", samples, sigs, None),
        ("all-N samples x published signatures", np.full_like(samples, ord("N")), sigs, everywhere),
        ("poly-A samples (10% N) x poly-A signatures", poly_a_n, sig_a, everywhere),
        ("poly-A samples x poly-A signatures ending in C", poly_a, sig_ac, everywhere - 1),
    ]
    rows, failed = [], False
    for name, smp, sig, known in cases:
        want_pos, want_sums = brute(smp, sig, qual)
        if known is not None and not (want_pos == known).all():
            raise SystemExit(f"bench_screen --smoke: the brute force is wrong on {name}")
        for family in families:
            t = time.perf_counter()
            pos, sums = backend.first_matches_and_sums(as_set(smp, qual), as_set(sig), family)
            seconds = time.perf_counter() - t
            same = bool((pos == want_pos).all() and (sums == want_sums).all())
            if name == "published":  # every carrier holds a copy of a signature
                same = same and bool((pos[carry] >= 0).any(axis=1).all())
            rows.append(
                {"case": name, "backend": family, "seconds": seconds, "matches": int((pos >= 0).sum()), "equal": same}
            )
            failed = failed or not same
    lines = ["| case | backend | s | matching pairs | equals brute force |", "|---|---|---|---|---|"]
    for r in rows:
        same = "yes" if r["equal"] else "NO   <<< MISMATCH"
        lines.append(f"| {r['case']} | {r['backend']} | {r['seconds']:.3g} | {r['matches']} | {same} |")
    print("\n".join(lines), flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench_screen.json").write_text(json.dumps({"smoke": True, "rows": rows}, indent=1))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2048)
    ap.add_argument("--sample-len", type=int, default=200_000)
    ap.add_argument("--sigs", type=int, default=1024)
    ap.add_argument("--sig-len", type=int, default=10_240)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--skip-periodic", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="tiny workloads, checked by brute force (CI; no GPU needed)")
    args = ap.parse_args()
    if args.smoke:
        return smoke(args)
    rng = np.random.default_rng(2024)
    n_s, len_s, n_g, len_g = args.samples, args.sample_len, args.sigs, args.sig_len
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    info = {
        "gpu": props["name"].decode(),
        "sms": props["multiProcessorCount"],
        "cupy": cp.__version__,
        "date": datetime.date.today().isoformat(),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        or "unknown",
    }
    print(json.dumps(info), flush=True)
    rows = []

    t = time.perf_counter()
    samples, sigs, carry = published(rng, n_s, len_s, n_g, len_g)
    qual = quals(rng, n_s, len_s)
    print(f"generated the published workload in {time.perf_counter() - t:.1f} s", flush=True)
    S, G = as_set(samples, qual), as_set(sigs)
    row, pos, _ = gpu_case("published", S, G)
    found = (pos[carry] >= 0).any(axis=1).mean()
    row["carriers_found"] = float(found)
    rows.append(row)

    all_n = np.full((n_s, len_s), ord("N"), dtype=np.uint8)
    rows.append(gpu_case("all-N samples x published signatures", as_set(all_n, qual), G)[0])
    del all_n
    poly_a = np.full((n_s, len_s), ord("A"), dtype=np.uint8)
    frac = rng.uniform(0.01, 0.2, n_s).astype(np.float32)
    poly_a_n = poly_a.copy()
    for a in range(0, n_s, 128):
        blk = poly_a_n[a : a + 128]
        blk[rng.random(blk.shape, dtype=np.float32) < frac[a : a + 128, None]] = ord("N")
    sig_a = np.full((n_g, len_g), ord("A"), dtype=np.uint8)
    rows.append(gpu_case("poly-A samples (1-20% N) x poly-A signatures", as_set(poly_a_n, qual), as_set(sig_a))[0])
    del poly_a_n
    sig_ac = sig_a.copy()
    sig_ac[:, -1] = ord("C")
    rows.append(gpu_case("poly-A samples x poly-A signatures ending in C", as_set(poly_a, qual), as_set(sig_ac))[0])
    if not args.skip_periodic:
        for k in (1, 15, 999):
            periodic = np.full((n_s, len_s), ord("A"), dtype=np.uint8)
            periodic[:, k :: k + 1] = ord("C")
            rows.append(
                gpu_case(f"periodic samples (A^{k} C)* x poly-A signatures", as_set(periodic, qual), as_set(sig_a))[0]
            )
        del periodic
        ac = np.tile(np.frombuffer(b"AC", dtype=np.uint8), (n_s, len_s // 2))
        sig_ac_aa = np.tile(np.frombuffer(b"AC", dtype=np.uint8), (n_g, len_g // 2))
        sig_ac_aa[:, -1] = ord("A")
        rows.append(gpu_case("(AC)* samples x (AC)^5119 AA signatures", as_set(ac, qual), as_set(sig_ac_aa))[0])
        ac_n = ac.copy()
        ac_n[:, 2501::5000] = ord("A")  # a defect every 5,000 bases
        for a in range(0, n_s, 128):
            blk = ac_n[a : a + 128]
            blk[rng.random(blk.shape, dtype=np.float32) < frac[a : a + 128, None]] = ord("N")
        sig_ac = np.tile(np.frombuffer(b"AC", dtype=np.uint8), (n_g, len_g // 2))
        rows.append(
            gpu_case(
                "(AC)* samples (1-20% N, a defect every 5,000) x (AC)^5120 signatures",
                as_set(ac_n, qual),
                as_set(sig_ac),
            )[0]
        )
        del ac, ac_n
    del poly_a

    # numpy on a CI-sized published workload, the GPU on the same
    rng = np.random.default_rng(7)
    small_s, small_g, _ = published(rng, 64, 20_000, 32, 1024)
    Ss, Gs = as_set(small_s, quals(rng, 64, 20_000)), as_set(small_g)
    t = time.perf_counter()
    pos_np, qs_np = backend.first_matches_and_sums(Ss, Gs, "numpy")
    np_secs = time.perf_counter() - t
    gpu_secs, (pos_gpu, qs_gpu) = timed(lambda: backend.first_matches_and_sums(Ss, Gs, "cupy"), 3)
    equal = bool((pos_np == pos_gpu).all() and (qs_np == qs_gpu).all())
    rows.append(
        {
            "case": "CI-sized published (64 x 20,000 bases, 32 x 1,024)",
            "numpy_seconds": np_secs,
            "numpy_pairs_per_s": 64 * 32 / np_secs,
            "gpu_seconds": gpu_secs,
            "gpu_over_numpy": np_secs / gpu_secs,
            "numpy_equals_gpu": equal,
        }
    )
    print(json.dumps(rows[-1]), flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench_screen.json").write_text(json.dumps({"info": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
