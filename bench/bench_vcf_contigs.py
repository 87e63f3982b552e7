"""VCF ingest speed on a human-like VCF with chrX, chrY and chrM records (issue 28).

`chromosomes: autosomes` (the default) leaves contigs other than 1-22 out. Until the fast path
filtered by CHROM itself, a VCF whose header declares such contigs (most human VCFs) was read
through cyvcf2, ~5x slower. This times reading every block of one file (the ingest's loop,
variant IDs not wanted, as for ibs and king) through:

  - the fast path, autosomes (the default);
  - cyvcf2, autosomes (vcf.FAST_PATH off: what the default did before);
  - the fast path, every contig (`chromosomes: all`);
  - with --baseline DIR: the same read in the checkout at DIR (e.g. a `git worktree` of the
    commit before the default changed, which had no `chromosomes` and read every contig).

The file: --samples x --variants GT-only calls on chr1-chr22, then chrX (5% of the records),
chrY and chrM, every call diploid (so that a checkout without the filter reads it too); plain
text and bgzip. Each read runs in a fresh process, --repeat times; the best is printed (the first
pays numba's start-up). `--smoke`: a small file, one repeat. Timings are printed, not asserted.

    python bench/bench_vcf_contigs.py --data /tmp/vcfbench [--baseline /tmp/genotile-3a72860]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CONTIGS = [*(f"chr{k}" for k in range(1, 23)), "chrX", "chrY", "chrM"]


def make_vcf(path: Path, n: int, m: int, seed: int = 1) -> None:
    """Plain text VCF of n samples x m records (see the module docstring)."""
    rng = np.random.default_rng(seed)
    head = "##fileformat=VCFv4.2\n" + "".join(f"##contig=<ID={c}>\n" for c in CONTIGS)
    head += '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
    head += "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT"])
    head += "".join(f"\ts{i}" for i in range(n)) + "\n"
    other = {"chrX": m // 20, "chrY": max(1, m // 500), "chrM": max(1, m // 1000)}
    auto = m - sum(other.values())
    per = [auto // 22 + (k < auto % 22) for k in range(22)]
    spell = np.frombuffer(b"0/00/11/1./.", dtype=np.uint8).reshape(4, 3)
    with open(path, "wb") as fh:
        fh.write(head.encode())
        for chrom, count in [*zip(CONTIGS[:22], per, strict=True), *other.items()]:
            for v0 in range(0, count, 2048):
                k = min(2048, count - v0)
                freq = rng.beta(0.5, 0.5, size=(k, 1))
                g = (rng.random((k, n)) < freq).astype(np.uint8) + (rng.random((k, n)) < freq)
                g[rng.random((k, n)) < 0.02] = 3
                cell = np.empty((k, n, 4), np.uint8)
                cell[..., :3] = spell[g]
                cell[..., 3] = ord("\t")
                cell[:, -1, 3] = ord("\n")
                for r in range(k):
                    fh.write(b"%s\t%d\t.\tA\tT\t.\tPASS\t.\tGT\t" % (chrom.encode(), v0 + r + 1) + cell[r].tobytes())


def child(a) -> None:
    """One timed read (in this process; the genotile imported is whatever PYTHONPATH names)."""
    from genotile.io.readers import vcf

    vcf.FAST_PATH = a.fast == "1"
    options = {} if a.chromosomes == "-" else {"chromosomes": a.chromosomes}
    best, stats = float("inf"), {}
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        with vcf.VcfReader(a.child, **options) as r:
            r.want_ids = False
            rows = sum(len(codes) for _, codes in r.blocks())
            stats = dict(r.stats, rows=rows, fast_records=r.fast_records)
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"seconds": best, "stats": stats, "module": vcf.__file__}))


def timed(path: Path, fast: bool, chromosomes: str, repeat: int, src: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, __file__, "--child", str(path), "--fast", "1" if fast else "0"]
    cmd += ["--chromosomes", chromosomes, "--repeat", str(repeat)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--variants", type=int, default=12_500, help="records (1,000 x 12,500: ~50 MB of text)")
    p.add_argument("--data", default="bench_data", help="folder of the generated VCFs")
    p.add_argument("--baseline", type=Path, help="a checkout (its src/ is imported) to time beside this one")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--smoke", action="store_true", help="a small file, one repeat")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--fast", help=argparse.SUPPRESS)
    p.add_argument("--chromosomes", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return child(a)
    if a.smoke:
        a.samples, a.variants, a.repeat = 40, 600, 1
    data = Path(a.data)
    data.mkdir(parents=True, exist_ok=True)
    plain = data / f"human_{a.samples}x{a.variants}.vcf"
    if not plain.exists():
        make_vcf(plain, a.samples, a.variants)
    gz = plain.with_suffix(".vcf.gz")
    if not gz.exists():
        import pysam

        pysam.tabix_compress(str(plain), str(gz), force=True)
    here = Path(__file__).resolve().parents[1] / "src"
    runs = [("fast path, autosomes", True, "autosomes", here), ("cyvcf2, autosomes", False, "autosomes", here)]
    runs.append(("fast path, all", True, "all", here))
    if a.baseline:
        runs.append((f"baseline {a.baseline.name}, fast path", True, "-", a.baseline / "src"))
    print(f"# {a.samples} samples x {a.variants} records; best of {a.repeat} (seconds, wall, this host)")
    print("| read | file | MB | seconds | MB/s | records left out | fast-path records |")
    print("|---|---|---|---|---|---|---|")
    for path in (plain, gz):
        mb = path.stat().st_size / 1e6
        for name, fast, chromosomes, src in runs:
            out = timed(path, fast, chromosomes, a.repeat, src)
            st, s = out["stats"], out["seconds"]
            print(
                f"| {name} | {path.name} | {mb:.1f} | {s:.2f} | {mb / s:.0f} | "
                f"{st.get('non_autosomal_skipped', '-')} | {st['fast_records']:,} of {st['records']:,} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
