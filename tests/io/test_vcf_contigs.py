"""The VCF fast path leaves out the contigs `chromosomes: autosomes` leaves out (issue 28) itself:
the same variant IDs, codes, stats (`non_autosomal_skipped`) and skipped contigs as the cyvcf2
path, on files with chrX, chrY, MT and unplaced records interleaved with the autosomes and at
either end, plain, bgzip and gzip, with `chromosomes: all` too -- and the fast path takes every
record, so that a human VCF does not fall back to cyvcf2 (~5x slower) for its chrX."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cpu_backends import NUMBA
from test_vcf_fast import HEADER, _read_compiled, records, write

from genotile.errors import GenotileError
from genotile.io import vcf_fast, vcf_spans
from genotile.io.readers.vcf import VcfReader

REPO = Path(__file__).resolve().parents[2]
OTHER = ("X", "chrY", "MT", "GL000192.1")  # declared in the header, none an autosome


def header(n: int) -> str:
    contigs = "".join(f"##contig=<ID={c}>\n" for c in OTHER)
    names = ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT"]
    return HEADER + contigs + "\t".join([*names, *[f"s{i}" for i in range(n)]]) + "\n"


def other_line(chrom: str, pos: int, n: int, rng, calls: str) -> str:
    """A record on `chrom`: haploid calls as every male's chrX (with diploid, as a female's),
    or diploid calls only."""
    if calls == "haploid":
        row = [str(rng.choice(["0", "1", ".", "0/1", "1|1", "./."])) for _ in range(n)]
    else:
        row = [str(rng.choice(["0/0", "0/1", "1|1", "./."])) for _ in range(n)]
    return "\t".join([chrom, str(pos), ".", "A", "G", "50", "PASS", ".", "GT", *row])


def mixed_text(geno, where: str, calls: str, seed: int = 5) -> tuple[str, int]:
    """(VCF text, records on other contigs): the autosomal records of `geno` (contigs 1 and 2)
    with runs of records on OTHER interleaved ('interleaved') or at both ends ('ends')."""
    rng = np.random.default_rng(seed)
    n = geno.shape[1]
    lines = records(geno, rng, ids=True)
    k = 0
    if where == "interleaved":
        for at in (50, 37, 20, 9, 3):  # from the end, so that the indices hold
            run = [other_line(OTHER[(at + j) % len(OTHER)], 1000 + at + j, n, rng, calls) for j in range(at % 4 + 1)]
            lines[at:at] = run
            k += len(run)
    else:
        head = [other_line("MT", 10 + j, n, rng, calls) for j in range(3)]
        tail = [other_line(c, 20 + j, n, rng, calls) for j, c in enumerate(("X", "X", "X", "chrY", "GL000192.1"))]
        lines = head + lines + tail
        k = len(head) + len(tail)
    return header(n) + "\n".join(lines) + "\n", k


def read(path, fast: bool, **options):
    """('ok', ids, codes, stats, skipped contigs, records the fast path took) or ('error', message)."""
    try:
        with VcfReader(path, fast=fast, **options) as r:
            ids, blocks = [], []
            for block_ids, codes in r.blocks(max_rows=7):
                ids += block_ids
                blocks.append(codes)
            codes = np.concatenate(blocks) if blocks else np.zeros((0, len(r.samples)), np.uint8)
            return "ok", ids, codes, dict(r.stats), r.skipped_contigs, r.fast_records
    except GenotileError as exc:
        return "error", str(exc)


def assert_same(path, all_fast: bool, **options):
    """The fast and cyvcf2 paths agree (IDs, codes, stats, skipped contigs, or the error);
    all_fast: the fast path took every record."""
    fast, slow = read(path, True, **options), read(path, False, **options)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "error":
        assert fast[1] == slow[1]
        return fast
    assert fast[1] == slow[1], "variant IDs"
    assert np.array_equal(fast[2], slow[2]), "codes"
    assert fast[3] == slow[3], "stats"
    assert fast[4] == slow[4], "skipped contigs"
    if all_fast:
        assert fast[5] == fast[3]["records"], "the fast path should take every record"
    return fast


@pytest.fixture(scope="module")
def geno():
    from genodata import random_genotypes

    return random_genotypes(11, 60, p_missing=0.1, seed=21).T.copy()  # (variants, samples)


@pytest.mark.parametrize("how", ["vcf", "bgzip", "gzip"])
@pytest.mark.parametrize("where", ["interleaved", "ends"])
@pytest.mark.parametrize("calls", ["haploid", "diploid"])
@pytest.mark.parametrize("chunk", [90, 1 << 24])
def test_the_fast_path_leaves_other_contigs_out_as_cyvcf2(tmp_path, geno, how, where, calls, chunk, monkeypatch):
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", chunk)
    text, k = mixed_text(geno, where, calls)
    path = write(tmp_path, "mixed", text, how)
    out = assert_same(path, all_fast=True)
    assert out[3]["non_autosomal_skipped"] == k and out[3]["variants"] == geno.shape[0]
    assert out[4] == ({"X", "chrY", "MT", "GL000192.1"} if where == "ends" else set(OTHER))
    # the autosomes alone, without the other records: the same IDs and codes
    alone = write(tmp_path, "alone", header(geno.shape[1]) + "".join(ln + "\n" for ln in records_of(text)), how)
    base = assert_same(alone, all_fast=True)
    assert base[1] == out[1] and np.array_equal(base[2], out[2])
    assert assert_same(path, all_fast=True, samples=["s7", "s0", "s3"])[3]["non_autosomal_skipped"] == k
    # every contig: haploid calls refused as before (cyvcf2's words), diploid ones read
    every = assert_same(path, all_fast=calls == "diploid", chromosomes="all")
    if calls == "diploid":
        assert every[3]["non_autosomal_skipped"] == 0 and every[3]["variants"] == geno.shape[0] + k
    else:
        assert every[0] == "error" and "haploid call" in every[1]


def records_of(text: str) -> list[str]:
    """The lines of `text` on autosomes 1 and 2."""
    return [ln for ln in text.splitlines() if ln.split("\t", 1)[0] in ("1", "2")]


@pytest.mark.skipif(not NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("where", ["interleaved", "ends"])
@pytest.mark.parametrize("calls", ["haploid", "diploid"])
def test_the_compiled_blocks_leave_them_out_too(tmp_path, geno, where, calls, monkeypatch):
    """vcf_kernels.decode_block takes blocks holding records on other contigs (IDs not wanted):
    the numpy path's codes and stats, and no block handed back."""
    text, k = mixed_text(geno, where, calls)
    path = write(tmp_path, "c", text, "vcf")
    for chromosomes in ("autosomes", "all"):
        monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 4 * geno.shape[1] * 9)  # blocks of ~8 lines
        got = _read_compiled(path, True, monkeypatch, chromosomes=chromosomes)
        monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 4 * geno.shape[1] * 9)
        want = _read_compiled(path, False, monkeypatch, chromosomes=chromosomes)
        assert got[0] == want[0]
        if got[0] == "error":
            assert got[1] == want[1] and chromosomes == "all" and calls == "haploid"
            continue
        assert np.array_equal(got[1], want[1]) and got[2] == want[2]
        assert got[2]["non_autosomal_skipped"] == (k if chromosomes == "autosomes" else 0)
        if chromosomes == "autosomes":
            assert got[3] > 0 and got[4] == 0, "every block compiled"


@pytest.mark.skipif(not NUMBA, reason="numba is not installed")
def test_a_block_of_more_runs_than_the_kernel_holds_goes_the_numpy_way(tmp_path, geno, monkeypatch):
    rng = np.random.default_rng(8)
    n = geno.shape[1]
    lines = []
    for v, line in enumerate(records(geno, rng)):
        lines += [line, other_line("X", 10 * v + 6, n, rng, "haploid")]  # a run of one, each
    path = write(tmp_path, "runs", header(n) + "\n".join(lines) + "\n", "vcf")
    monkeypatch.setattr(vcf_fast, "RUNS", 4)
    got = _read_compiled(path, True, monkeypatch)
    want = _read_compiled(path, False, monkeypatch)
    assert np.array_equal(got[1], want[1]) and got[2] == want[2] and got[2]["non_autosomal_skipped"] == len(geno)
    assert got[4] > 0, "more runs than RUNS: the numpy path"


@pytest.mark.parametrize(
    "line",
    [
        "X\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/a\t1/1\t0\t0|0",  # not an allele: htslib refuses the record
        "X\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1/1\t1/1\t0\t0|0",  # polyploid: read and left out
        "X\t20\t.\tA\tC,G,T,AA,AC,AG,AT,CA,CC,CG\t.\tPASS\t.\tGT\t0/10\t1\t0\t9|10",  # two digits
        "X\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1:5\t1/1\t0\t0|0",  # a subfield more than FORMAT's keys
        "X\t20\t.\tA\tG\t.\tPASS\t.\tDP:GT\t3:0/1\t4:1\t5:.\t6:0|0",  # GT not the first key
        "X\t20\t.\tA\tG\t.\tPASS\t.\tDP\t3\t4\t5\t6",  # no GT
        "X\t20\t.\tA\tG\t.\tPASS\t.\tGT:DP\t0/1:3\t1:4\t.:5\t0|0:6",  # GT first of two keys
        "X\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t0/0",  # a sample column short
        "X\tabc\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1\t0/0\t0|0",  # POS not a number
        "X\t20\t\tA\tG\t.\tPASS\t.\tGT\t0/1\t1\t0/0\t0|0",  # empty ID
        "chrZ\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1\t0/0\t0|0",  # a contig not in the header
        "chr7\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t0/0\t0|0",  # ... an autosome not in the header
        "X\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1\t0/0\t0|0\r",  # CRLF
    ],
)
@pytest.mark.parametrize("chunk", [80, 1 << 24])
def test_odd_records_left_out(tmp_path, line, chunk, monkeypatch):
    """A record on another contig that the fast path does not read (or htslib refuses): cyvcf2
    reads its block, the same result or error either way."""
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", chunk)
    good = [f"1\t{p}\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t./.\t0|0" for p in range(1, 15)]
    text = header(4) + "\n".join([*good[:9], line, *good[9:]]) + "\n"
    for how in ("vcf", "bgzip"):
        assert_same(write(tmp_path, f"odd_{how}", text, how), all_fast=False)
        assert_same(write(tmp_path, f"odd_{how}", text, how), all_fast=False, chromosomes="all")


def test_a_file_of_other_contigs_only_is_refused_the_same_way(tmp_path):
    rng = np.random.default_rng(2)
    lines = [other_line(c, 10 + j, 5, rng, "haploid") for j, c in enumerate(("X", "X", "chrY", "MT"))]
    path = write(tmp_path, "sex", header(5) + "\n".join(lines) + "\n", "vcf")
    out = assert_same(path, all_fast=False)
    assert out[0] == "error" and "no variant on an autosome" in out[1] and "['MT', 'X', 'chrY']" in out[1]
    with VcfReader(path) as r, pytest.raises(GenotileError):
        list(r.blocks())
    assert r.fast_records == 4  # refused after the fast path read every record


def test_bench_vcf_contigs_smoke(tmp_path):
    """bench/bench_vcf_contigs.py --smoke: the timing printout on a small file."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_vcf_contigs.py"), "--smoke", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| fast path, autosomes |" in proc.stdout and "| cyvcf2, autosomes |" in proc.stdout, proc.stdout
