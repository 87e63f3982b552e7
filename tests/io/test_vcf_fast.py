"""The VCF fast path (vcf_fast.py) against the cyvcf2 path of the same reader: the same
variant IDs, codes, stats and errors on varied files, and the same ingest output.

Each file is read twice by vcf.VcfReader, fast=True and fast=False. Files cover the
common case (GT-only 3-character calls; GT first of several keys) and everything the fast
path hands over to cyvcf2 (haploid, polyploid and two-digit calls, GT not first, errors,
malformed lines), in plain, bgzip and gzip form, with tiny text chunks so that lines
straddle chunks and hand-overs happen mid-file, and with sample subsets.
"""

import gzip
import os
import threading

import numpy as np
import pytest
from cpu_backends import NUMBA
from genodata import random_genotypes, vcf_text

from genotile.errors import GenotileError
from genotile.io import bgzf, vcf_fast, vcf_spans
from genotile.io.readers import vcf
from genotile.io.readers.vcf import VcfReader
from genotile.store import ingest_genotypes
from genotile.store.ingest import ingest

HEADER = """##fileformat=VCFv4.2
##contig=<ID=1,length=100000000>
##contig=<ID=2,length=100000000>
##FILTER=<ID=PASS,Description="All filters passed">
##FILTER=<ID=q10,Description="Quality below 10">
##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">
"""


def header(n):
    return (
        HEADER
        + "\t".join(
            ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *[f"s{i}" for i in range(n)]]
        )
        + "\n"
    )


def write(tmp_path, name, text, how):
    """text as .vcf, bgzip .vcf.gz or plain-gzip .vcf.gz."""
    import pysam

    if how == "vcf":
        path = tmp_path / f"{name}.vcf"
        path.write_text(text)
    elif how == "bgzip":
        src = tmp_path / f"{name}.src.vcf"
        src.write_text(text)
        path = tmp_path / f"{name}.vcf.gz"
        pysam.tabix_compress(str(src), str(path), force=True)
    else:
        path = tmp_path / f"{name}.gz.vcf.gz"
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    return path


def read(path, fast, **options):
    """('ok', ids, codes, stats, fast records) or ('error', message)."""
    try:
        with VcfReader(path, fast=fast, **options) as r:
            ids, blocks = [], []
            for block_ids, codes in r.blocks(max_rows=7):
                ids += block_ids
                blocks.append(codes)
            codes = np.concatenate(blocks) if blocks else np.zeros((0, len(r.samples)), np.uint8)
            return "ok", ids, codes, dict(r.stats), r.fast_records
    except GenotileError as exc:
        return "error", str(exc)


def assert_same(path, expect_fast=None, **options):
    """Fast and cyvcf2 paths agree; expect_fast: the number of records the fast path took (or 'all')."""
    fast, slow = read(path, True, **options), read(path, False, **options)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "error":
        assert fast[1] == slow[1]
        return fast
    assert fast[1] == slow[1], "variant IDs"
    assert fast[2].dtype == slow[2].dtype == np.uint8
    assert np.array_equal(fast[2], slow[2]), "codes"
    assert fast[3] == slow[3], "stats"
    if expect_fast == "all":
        assert fast[4] == fast[3]["records"], "the fast path should take every record"
    elif expect_fast is not None:
        assert fast[4] == expect_fast
    return fast


def calls_text(g, rng, spell="fixed"):
    """VCF call strings of codes g (variants, samples); fixed: 3 characters each."""
    out = []
    for code in g.ravel():
        if code == 255:
            out.append(str(rng.choice(["./.", ".|."] if spell == "fixed" else ["./.", ".", "./1", "1/.", ".|."])))
        elif code == 1:
            out.append(str(rng.choice(["0/1", "1/0", "0|1", "1|0"])))
        else:
            out.append("0/0" if code == 0 else str(rng.choice(["1/1", "1|1"])))
    return np.array(out, dtype=object).reshape(g.shape)


def records(g, rng, spell="fixed", fmt="GT", filters=("PASS",), ids=False):
    lines = []
    calls = calls_text(g, rng, spell)
    for v in range(g.shape[0]):
        vid = f"rs{v}" if ids and v % 3 else "."
        filt = filters[v % len(filters)]
        row = calls[v]
        if fmt == "GT:DP":
            row = [f"{c}:{rng.integers(0, 300)}" if rng.random() < 0.9 else c for c in row]
        lines.append("\t".join(["1" if v % 5 else "2", str(10 * v + 5), vid, "A", "G", "50", filt, ".", fmt, *row]))
    return lines


@pytest.fixture(scope="module")
def geno():
    return random_genotypes(23, 60, p_missing=0.1, seed=11).T.copy()  # (variants, samples)


@pytest.mark.parametrize("how", ["vcf", "bgzip", "gzip"])
@pytest.mark.parametrize("chunk", [97, 1 << 24])
def test_common_case(tmp_path, geno, how, chunk, monkeypatch):
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", chunk)
    rng = np.random.default_rng(1)
    n = geno.shape[1]
    text = header(n) + "\n".join(records(geno, rng, ids=True)) + "\n"
    path = write(tmp_path, "common", text, how)
    assert_same(path, expect_fast="all")
    for samples in (["s3", "s0", "s22"], [f"s{i}" for i in range(n)][::-1], ["s5"]):
        assert_same(path, expect_fast="all", samples=samples)


@pytest.mark.parametrize("chunk", [61, 1 << 24])
def test_other_keys_and_varied_spellings(tmp_path, geno, chunk, monkeypatch):
    """GT:DP calls of any width, '.', './1', '1/.': calls found by their tabs; '.' calls decoded
    through the reader's own rules."""
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", chunk)
    rng = np.random.default_rng(2)
    n = geno.shape[1]
    for fmt in ("GT:DP", "GT"):
        text = header(n) + "\n".join(records(geno, rng, spell="varied", fmt=fmt)) + "\n"
        path = write(tmp_path, f"varied_{fmt.replace(':', '')}", text, "bgzip")
        assert_same(path, expect_fast="all")
        assert_same(path, expect_fast="all", samples=["s7", "s1"])
    # the test suite's own generator (half-missing calls, phased, monomorphic, duplicates)
    g = random_genotypes(30, 40, p_missing=0.2, seed=3)
    assert_same(write(tmp_path, "genodata", vcf_text(g, seed=4), "bgzip"), expect_fast="all")


@pytest.mark.parametrize("filter_pass", [False, True])
@pytest.mark.parametrize("multiallelic", ["skip", "split"])
def test_rules(tmp_path, filter_pass, multiallelic, monkeypatch):
    """FILTER, multi-allelic records (skipped or split), records without GT, ALT '.'."""
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 150)
    h = header(4)
    body = [
        "1\t5\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t./.\t0|0",
        "1\t6\trsX\tA\tG,T\t.\tq10\t.\tGT\t1/2\t0/2\t2/2\t./1",
        "1\t7\t.\tA\tG\t.\t.\t.\tDP\t3\t4\t5\t6",
        "1\t8\t.\tA\t.\t.\tPASS\t.\tGT\t0/0\t0/0\t./.\t0/0",
        "1\t9\t.\tAC\tA,ACC,G\t.\tPASS\tAC=1,1,1\tGT:DP\t3/1:5\t0/0:2\t./.:.\t2|3:11",
        "1\t0010\t.\tA\tG\t.\tPASS;q10\t.\tGT\t0/1\t0/1\t0/1\t0/1",
        "2\t11\t.\tG\tC\t.\tPASS\t.\tGT:DP\t0/0:1\t1/1:2\t0/1:3\t./.:4",
    ]
    for how in ("vcf", "bgzip"):
        path = write(tmp_path, f"rules_{how}", h + "\n".join(body) + "\n", how)
        out = assert_same(path, expect_fast="all", filter_pass=filter_pass, multiallelic=multiallelic)
        st = out[3]
        assert st["no_gt_skipped"] == 1
        assert st["filter_failed"] == 2
        assert st[f"multiallelic_{'skipped' if multiallelic == 'skip' else 'split'}"] >= 1


@pytest.mark.parametrize(
    "line",
    [
        "1\t20\t.\tA\tG\t.\tPASS\t.\tDP:GT\t3:0/1\t4:1/1\t5:./.\t6:0|0",  # GT not the first key
        "1\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t0\t0|0",  # a haploid call: an error
        "1\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1/1\t1/1\t0/0\t0|0",  # polyploid: an error
        "1\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/2\t1/1\t0/0\t0|0",  # an allele past the ALTs: an error
        "1\t20\t.\tA\tC,G,T,AA,AC,AG,AT,CA,CC,CG\t.\tPASS\t.\tGT\t0/10\t1/1\t0/0\t9|10",  # two digits
        "1\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t0/0",  # a sample column short
        "1\tabc\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t0/0\t0|0",  # POS not a number
        "1\t20\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t0/0\t0|0\r",  # CRLF
        "",  # an empty line
    ],
)
@pytest.mark.parametrize("chunk", [80, 1 << 24])
def test_hand_over(tmp_path, line, chunk, monkeypatch):
    """A record the fast path does not take: cyvcf2 reads on from its block, same result or error."""
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", chunk)
    good = [f"1\t{p}\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1\t./.\t0|0" for p in range(1, 15)]
    text = header(4) + "\n".join([*good[:9], line, *good[9:]]) + "\n"
    for how in ("vcf", "bgzip"):
        for multiallelic in ("skip", "split"):
            out = assert_same(write(tmp_path, f"handover_{how}", text, how), multiallelic=multiallelic)
            if out[0] == "ok" and not (multiallelic == "skip" and "," in line):  # (skipped unread)
                assert out[4] < out[3]["records"]


@pytest.mark.parametrize(
    "line",
    [
        "1\t5\t.\tA\tG\tabc\tPASS\t.\tGT\t0/1\t1/1",  # QUAL not a number
        "1\t5\t.\tA\tG\t\tPASS\t.\tGT\t0/1\t1/1",  # empty QUAL
        "1\t5\t.\tA\tG\t.\tPASS\t=x;;\tGT\t0/1\t1/1",  # odd INFO
        "1\t5\t.\tA\tG\t.\tPASS\tFOO=1\tGT\t0/1\t1/1",  # INFO not in the header
        "1\t5\t.\tA\tG\t.\tBAR\t.\tGT\t0/1\t1/1",  # FILTER not in the header
        "1\t5\t.\tA\t\t.\tPASS\t.\tGT\t0/1\t1/1",  # empty ALT
        "1\t5\t.\t\tG\t.\tPASS\t.\tGT\t0/1\t1/1",  # empty REF
        "1\t5\t\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1",  # empty ID
        "7\t5\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1",  # contig not in the header
        "1\t0\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1",  # POS 0
        "1\t5\t.\tA\tG\t.\tPASS\t.\tGT:XX\t0/1:3\t1/1:4",  # FORMAT key not in the header
        "1\t5\t.\tA\tG\t.\tPASS\t.\tGT\t\t1/1",  # an empty call
        "1\t5\t.\tA\tG,.\t.\tPASS\t.\tGT\t0/1\t1/1",  # '.' among ALTs
        "1\t5\trs 1\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1",  # a space in the ID
        "1\t5\t.\tA\tG\t.\t\t.\tGT\t0/1\t1/1",  # empty FILTER
        "1\t5\t.\tA\tG\t.\tPASS\t.\t\t0/1\t1/1",  # empty FORMAT
        "1\t5\t.\tA\tG\t.\tPASS\t.\tGT\t0/1:5\t1/1",  # a subfield more than FORMAT's keys (issue 15)
        "1\t5\t.\tA\tG\t.\tPASS\t.\tGT:DP\t0/1:5:6\t1/1:3",  # the same after two keys
        "1\t3000000000\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1",  # POS past 2^31 (issue 15)
        "1\t5000000000\trs5\tA\tG,T\t.\tPASS\t.\tGT\t0/1\t1/2",  # ... and past 2^32, split
    ],
)
@pytest.mark.parametrize("multiallelic", ["skip", "split"])
def test_odd_lines(tmp_path, line, multiallelic):
    """Lines htslib reads in its own way: the same IDs, codes, stats or error either way."""
    text = header(2) + "1\t1\t.\tA\tG\t.\tPASS\t.\tGT\t0/0\t0/1\n" + line + "\n"
    assert_same(write(tmp_path, "odd", text, "vcf"), multiallelic=multiallelic)


def test_errors_name_the_record(tmp_path):
    text = header(3) + "1\t5\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1\t0/0\n"
    out = assert_same(write(tmp_path, "haploid", text, "bgzip"))
    assert out[0] == "error" and "1:5" in out[1] and "s1" in out[1]


@pytest.fixture(params=["libdeflate", "zlib"])
def inflater(request, monkeypatch):
    """BGZF inflated by the system's libdeflate (when it has one) or by zlib."""
    monkeypatch.setattr(bgzf, "_LIBDEFLATE", [])
    monkeypatch.setattr(bgzf, "USE_LIBDEFLATE", request.param == "libdeflate")
    if request.param == "libdeflate" and bgzf._libdeflate() is None:
        pytest.skip("no libdeflate on this system (Debian: libdeflate0)")
    yield request.param
    bgzf._LIBDEFLATE.clear()


def test_inflaters_agree(tmp_path, geno, inflater, monkeypatch):
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 5000)
    rng = np.random.default_rng(6)
    g = np.repeat(geno, 30, axis=0)
    text = header(g.shape[1]) + "\n".join(records(g, rng)) + "\n"
    assert_same(write(tmp_path, "inflate", text, "bgzip"), expect_fast="all")


def test_truncated_and_corrupt_bgzip(tmp_path, geno, inflater):
    rng = np.random.default_rng(3)
    g = np.repeat(geno, 40, axis=0)
    text = header(g.shape[1]) + "\n".join(records(g, rng)) + "\n"
    path = write(tmp_path, "big", text, "bgzip")
    data = path.read_bytes()
    cut = tmp_path / "cut.vcf.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    assert assert_same(cut)[0] == "error"
    bad = bytearray(data)
    bad[len(data) // 2] ^= 0xFF
    broken = tmp_path / "broken.vcf.gz"
    broken.write_bytes(bytes(bad))
    assert assert_same(broken)[0] == "error"


def test_no_trailing_newline_and_no_records(tmp_path):
    text = header(2) + "1\t5\t.\tA\tG\t.\tPASS\t.\tGT\t0/1\t1/1"
    assert_same(write(tmp_path, "nonl", text, "vcf"), expect_fast="all")
    assert_same(write(tmp_path, "nonl", text, "bgzip"), expect_fast="all")
    assert_same(write(tmp_path, "empty", header(2), "bgzip"))


def test_bcf_and_regions_use_cyvcf2(tmp_path, geno):
    from genodata import write_vcf

    g = random_genotypes(10, 30, p_missing=0.1, seed=5)
    bcf = write_vcf(tmp_path / "x.bcf", vcf_text(g), index=True)
    out = assert_same(bcf)
    assert out[4] == 0
    gz = write_vcf(tmp_path / "x.vcf.gz", vcf_text(g), index=True)
    out = assert_same(gz, regions=["1:1-200"])
    assert out[4] == 0


@pytest.mark.parametrize("memory", [1 << 30, 1000])
def test_ingest_same_codes(tmp_path, geno, memory, monkeypatch):
    """The genotype ingest through the fast path (codes in memory, or spilled) equals the cyvcf2 path."""
    monkeypatch.setattr(ingest_genotypes, "MEMORY_BYTES", memory)
    monkeypatch.setattr(ingest_genotypes, "TILE", 5)
    monkeypatch.setattr(ingest_genotypes, "TRANSPOSE_BYTES", 700)
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 300)
    rng = np.random.default_rng(4)
    text = header(geno.shape[1]) + "\n".join(records(geno, rng, ids=True)) + "\n"
    path = write(tmp_path, "ing", text, "bgzip")
    results = {}
    for fast in (True, False):
        monkeypatch.setattr(vcf, "FAST_PATH", fast)
        for enc in ("genotype", "genotype_t"):
            out = tmp_path / f"{enc}_{fast}"
            m = ingest(path, enc, out / "codes.npy", out / "m.json").manifest
            results[fast, enc] = (np.load(out / "codes.npy"), {k: v for k, v in m.items() if k != "input"})
    for enc in ("genotype", "genotype_t"):
        assert np.array_equal(results[True, enc][0], results[False, enc][0])
        assert results[True, enc][1] == results[False, enc][1]
    assert np.array_equal(results[True, "genotype"][0], results[True, "genotype_t"][0].T)


@pytest.mark.parametrize("members", [2, 3, 7])
def test_concatenated_gzip_members(tmp_path, geno, members):
    """`cat a.gz b.gz ...` (plain gzip members back to back, several in one read buffer): every
    record of every member is read, as cyvcf2 reads them."""
    text = header(geno.shape[1]) + "\n".join(records(geno, np.random.default_rng(5))) + "\n"
    lines = text.splitlines(keepends=True)
    first = sum(line.startswith("#") for line in lines) + 1  # the header and one record
    cuts = [0, *np.linspace(first, len(lines), members).astype(int)]
    parts = ["".join(lines[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    assert len(parts) == members and all(parts)
    path = tmp_path / "members.vcf.gz"
    path.write_bytes(b"".join(gzip.compress(part.encode()) for part in parts))
    out = assert_same(path, expect_fast="all")
    assert out[0] == "ok" and len(out[1]) == geno.shape[0]


def _read_compiled(path, compiled, monkeypatch, **options):
    """('ok', codes, stats, blocks decoded compiled, blocks handed back) or ('error', message);
    IDs not wanted."""
    monkeypatch.setattr(vcf_fast, "COMPILED", compiled)
    monkeypatch.setattr(vcf_fast, "COMPILED_MIN_BYTES", 0)
    taken = []
    if compiled:
        from genotile.io import vcf_kernels

        decode = vcf_kernels.decode_block

        def counting(*args):
            out = decode(*args)
            taken.append(out[0] >= 0)
            return out

        monkeypatch.setattr(vcf_kernels, "decode_block", counting)
    try:
        with VcfReader(path, **options) as r:
            r.want_ids = False
            blocks = [c for _, c in r.blocks(max_rows=7)]
            codes = np.concatenate(blocks) if blocks else np.zeros((0, len(r.samples)), np.uint8)
            return "ok", codes, dict(r.stats), sum(taken), len(taken) - sum(taken)
    except GenotileError as exc:
        return "error", str(exc)
    finally:
        monkeypatch.undo()


@pytest.mark.skipif(not NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("filter_pass", [False, True])
@pytest.mark.parametrize("multiallelic", ["skip", "split"])
@pytest.mark.parametrize("odd", ["none", "alt", "spell", "format", "long_line", "hash_chrom"])
def test_compiled_blocks_equal_the_numpy_path(tmp_path, geno, filter_pass, multiallelic, odd, monkeypatch):
    """vcf_kernels.decode_block gives the numpy path's codes and stats, block for block, and
    hands every block it does not take (an odd line in it) back to that path."""
    rng = np.random.default_rng(12)
    lines = records(geno, rng, filters=("PASS", ".", "q10", "PASSED"))
    k = 31  # one odd line, in the middle of the file
    if odd == "alt":  # several ALTs, and none
        lines = [
            ln.replace("\tA\tG\t", "\tA\tG,T\t" if v % 7 == 3 else "\tA\t.\t" if v % 11 == 5 else "\tA\tG\t", 1)
            for v, ln in enumerate(lines)
        ]
    elif odd == "spell":  # haploid and half-missing calls
        f = lines[k].split("\t")
        f[9], f[10] = "1", "./1"
        lines[k] = "\t".join(f)
    elif odd == "format":
        lines[k] = lines[k].replace("\tGT\t", "\tGT:DP\t", 1)
    elif odd == "long_line":  # a call of 4 characters: the line is longer than 4 per sample
        f = lines[k].split("\t")
        f[12] = "0/10"
        lines[k] = "\t".join(f)
    elif odd == "hash_chrom":
        lines[k] = "#" + lines[k]
    path = write(tmp_path, "c", header(geno.shape[1]) + "\n".join(lines) + "\n", "vcf")  # plain: small blocks
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 4 * geno.shape[1] * 9)  # blocks of ~8 lines
    got = _read_compiled(path, True, monkeypatch, filter_pass=filter_pass, multiallelic=multiallelic)
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 4 * geno.shape[1] * 9)
    want = _read_compiled(path, False, monkeypatch, filter_pass=filter_pass, multiallelic=multiallelic)
    assert got[0] == want[0]
    if got[0] == "error":
        assert got[1] == want[1]
        return
    assert np.array_equal(got[1], want[1]) and got[2] == want[2]
    assert got[3] > 0, "the compiled decoder took no block"
    if odd == "none":
        assert got[2]["filter_failed"] > 0 and got[4] == 0
    else:
        assert got[4] > 0, "the block with the odd line should go the numpy way"


@pytest.mark.skipif(not NUMBA, reason="numba is not installed")
def test_compiled_transpose_equals_numpy():
    """vcf_kernels.transpose_into (the genotype ingest's variant rows -> sample rows) against numpy."""
    from genotile.io import vcf_kernels

    rng = np.random.default_rng(3)
    blocks = [rng.integers(0, 256, size=(rows, 150), dtype=np.uint8) for rows in (70, 1, 129)]
    whole = np.concatenate(blocks)
    for c0, c1 in ((0, 150), (3, 67), (149, 150)):
        out = np.zeros((c1 - c0, whole.shape[0]), np.uint8)
        v0 = 0
        for block in blocks:
            vcf_kernels.transpose_into(block, out, c0, c1, v0)
            v0 += block.shape[0]
        assert np.array_equal(out, whole[:, c0:c1].T)


# -- plain text in parallel blocks (vcf_spans.PlainText, plain_spans) --------------------------


def _plain_text(geno, seed, odd=None):
    """Header and records of geno; odd: {record index: line} replacing those records."""
    lines = records(geno, np.random.default_rng(seed))
    for k, line in (odd or {}).items():
        lines[k] = line
    return header(geno.shape[1]) + "\n".join(lines) + "\n"


@pytest.mark.parametrize("threads", [1, 3])
def test_plain_spans_are_whole_lines(tmp_path, geno, threads, monkeypatch):
    """Every span is whole lines, the spans in order are the records' text exactly, and their
    nominal cuts (every CHUNK_BYTES) fall inside lines, on a newline and just after one."""
    text = _plain_text(geno, 7)
    path = write(tmp_path, "spans", text, "vcf")
    body = text[text.index("\n#CHROM") + 1 :].split("\n", 1)[1].encode()
    line = min(len(ln) + 1 for ln in body.split(b"\n")[:-1])  # the shortest record, with its newline
    assert body.count(b"\n") == geno.shape[0]
    cuts = [(c, 0) for c in (1, line - 1, line, line + 1, 3 * line + 5, 1 << 24)]
    for chunk, least in [*cuts, (1 << 24, 1 << 20)]:
        monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", chunk)
        monkeypatch.setattr(vcf_spans, "MAP_MIN_CHUNK", least)
        with VcfReader(path) as r:
            plain = vcf_spans.PlainText.open(path)
            try:
                spans = [bytes(buf.mm[s:e]) for buf, s, e in vcf_spans.plain_spans(plain, threads, r.file_samples)]
            finally:
                plain.close()
        assert b"".join(spans) == body
        assert all(s.endswith(b"\n") for s in spans)
        if chunk <= line:  # a cut in every line: a span per line
            assert len(spans) == geno.shape[0]
        elif least:  # a file smaller than MAP_MIN_CHUNK: one span
            assert len(spans) == 1
        elif chunk == 1 << 24:  # a file smaller than a chunk: about four spans a thread
            assert 4 * threads <= len(spans) <= 4 * threads + 1


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("threads", [1, 2, 5])
@pytest.mark.parametrize("chunk", [1, 250, 1 << 24])
def test_plain_blocks_in_parallel(tmp_path, geno, compiled, threads, chunk, monkeypatch):
    """Plain text decoded by several workers (compiled or numpy), blocks cut inside lines or the
    file smaller than a block: the cyvcf2 path's codes and stats, IDs not wanted."""
    monkeypatch.setattr(vcf_fast, "DECODERS", threads)
    monkeypatch.setattr(vcf_spans, "MAP_MIN_CHUNK", 0)
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", chunk)
    # records off the common case in the middle: GT:DP (numpy path), a half-missing call
    odd = {
        20: "1\t205\t.\tA\tG\t50\tPASS\t.\tGT:DP\t" + "\t".join(["0/1:7"] * geno.shape[1]),
        33: "1\t335\t.\tA\tG\t50\tq10\t.\tGT\t" + "\t".join(["./1"] * 2 + ["0|1"] * (geno.shape[1] - 2)),
    }
    path = write(tmp_path, "par", _plain_text(geno, 8, odd), "vcf")
    got = _read_compiled(path, compiled, monkeypatch)
    monkeypatch.setattr(vcf, "FAST_PATH", False)
    want = _read_compiled(path, False, monkeypatch)
    assert got[0] == want[0] == "ok"
    assert np.array_equal(got[1], want[1]) and got[2] == want[2]
    assert got[1].shape == geno.shape
    if compiled and chunk < 1000:  # several blocks: the kernel takes some, hands back the odd ones
        assert got[3] > 0 and got[4] > 0


@pytest.mark.parametrize("threads", [1, 4])
def test_plain_hand_over_in_the_middle(tmp_path, geno, threads, monkeypatch):
    """A record only cyvcf2 reads (a haploid call: an error; two-digit alleles: codes), in the
    middle of a file read by several workers in many blocks: the fast path stops at its block,
    cyvcf2 reads on from there, and the result is the cyvcf2 path's."""
    monkeypatch.setattr(vcf_fast, "DECODERS", threads)
    monkeypatch.setattr(vcf_spans, "MAP_MIN_CHUNK", 0)
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 500)
    n = geno.shape[1]
    two_digits = "1\t305\t.\tA\tC,G,T,AA,AC,AG,AT,CA,CC,CG\t.\tPASS\t.\tGT\t" + "\t".join(["0/10"] + ["1/1"] * (n - 1))
    for name, line in (("haploid", "1\t305\t.\tA\tG\t.\tPASS\t.\tGT\t" + "\t".join(["1"] + ["0/1"] * (n - 1))),
                       ("digits", two_digits)):  # fmt: skip
        path = write(tmp_path, name, _plain_text(geno, 9, {30: line}), "vcf")
        out = assert_same(path, multiallelic="split")
        if name == "haploid":
            assert out[0] == "error" and "1:305" in out[1] and "s0" in out[1]
        else:
            assert out[0] == "ok" and 0 < out[4] <= 30 < out[3]["records"]


def test_plain_last_line_without_newline(tmp_path, geno, monkeypatch):
    """The last record without its newline, in a file cut into many blocks."""
    monkeypatch.setattr(vcf_fast, "DECODERS", 3)
    monkeypatch.setattr(vcf_spans, "MAP_MIN_CHUNK", 0)
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 333)
    path = write(tmp_path, "nonl", _plain_text(geno, 10).rstrip("\n"), "vcf")
    assert assert_same(path, expect_fast="all")[2].shape == geno.shape
    got = _read_compiled(path, True, monkeypatch)
    assert got[0] == "ok" and got[1].shape == geno.shape


@pytest.mark.parametrize("threads", [1, 3])
def test_transpose_blocks_on_threads(tmp_path, threads, monkeypatch):
    """ingest_genotypes._transpose_blocks: the (samples, variants) .npy of the variant-row blocks,
    whatever the threads and the size of their blocks of samples."""
    rng = np.random.default_rng(5)
    blocks = [rng.integers(0, 256, size=(rows, 37), dtype=np.uint8) for rows in (11, 1, 30)]
    for transpose_bytes in (1, 200, 1 << 26):
        monkeypatch.setattr(ingest_genotypes, "TRANSPOSE_BYTES", transpose_bytes)
        monkeypatch.setattr(ingest_genotypes, "TILE", 4)
        out = tmp_path / f"t{transpose_bytes}.npy"
        ingest_genotypes._transpose_blocks(blocks, out, threads=threads)
        assert np.array_equal(np.load(out), np.concatenate(blocks).T)


def test_memory_bytes(monkeypatch):
    """The in-memory bound of a genotype ingest: MEMORY_BYTES when set, else at least 1 GiB."""
    monkeypatch.setattr(ingest_genotypes, "MEMORY_BYTES", 1234)
    assert ingest_genotypes.memory_bytes() == 1234
    monkeypatch.setattr(ingest_genotypes, "MEMORY_BYTES", None)
    limit = ingest_genotypes._cgroup_memory_limit()
    assert limit is None or limit > 0
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert ingest_genotypes.memory_bytes() == max(1 << 30, min(physical, limit or physical) // 4)


def _bgzf(text: bytes, block: int) -> bytes:
    """BGZF of text in blocks of `block` bytes of text (htslib writes 64 KiB), and the EOF block."""
    import struct
    import zlib

    out = []
    for k in range(0, len(text), block):
        data = text[k : k + block]
        z = zlib.compressobj(6, zlib.DEFLATED, -15)
        comp = z.compress(data) + z.flush()
        head = b"\x1f\x8b\x08\x04\0\0\0\0\0\xff\x06\0BC\x02\0" + struct.pack("<H", 18 + len(comp) + 8 - 1)
        out.append(head + comp + struct.pack("<II", zlib.crc32(data), len(data)))
    out.append(bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000"))
    return b"".join(out)


@pytest.mark.parametrize("threads", [1, 4])
def test_bgzf_groups_inflated_on_threads(tmp_path, geno, threads, inflater, monkeypatch):
    """BGZF of many small blocks, inflated in groups of several blocks by several workers: the
    cyvcf2 path's IDs, codes and stats; a bad CRC32 in a middle block: the same error."""
    monkeypatch.setattr(vcf_fast, "DECODERS", threads)
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 3500)  # about three blocks a group
    g = np.repeat(geno, 6, axis=0)
    text = (header(g.shape[1]) + "\n".join(records(g, np.random.default_rng(13), ids=True)) + "\n").encode()
    data = _bgzf(text, 1000)
    path = tmp_path / "small_blocks.vcf.gz"
    path.write_bytes(data)
    out = assert_same(path, expect_fast="all")
    assert out[2].shape == g.shape
    with open(path, "rb") as fh:
        groups = list(bgzf.groups(fh, vcf_spans.CHUNK_BYTES, threading.Event()))
    assert len(groups) > 2 * threads and all(size <= 3500 for _, _, size in groups)
    assert sum(len(blocks) for _, blocks, _ in groups) == len(text) // 1000 + 2  # and the EOF block
    bad = bytearray(data)
    crc_at = data.index(b"\x1f\x8b\x08\x04", len(data) // 2) - 8  # the CRC32 of a middle block
    bad[crc_at] ^= 0xFF
    path.write_bytes(bytes(bad))
    assert assert_same(path)[0] == "error"


def test_newline_search_in_arrays():
    """vcf_spans._newline on a uint8 array (BGZF text) finds what bytes.find / rfind find, the
    newline in the first window, past several windows, or nowhere."""
    rng = np.random.default_rng(14)
    for size, at in ((0, []), (1, [0]), (10, []), (300_000, [0]), (300_000, [299_999]), (300_000, [70_000, 200_000])):
        text = bytearray(rng.integers(11, 256, size=size, dtype=np.uint8).tobytes())
        for k in at:
            text[k] = 10
        arr = np.frombuffer(bytes(text), dtype=np.uint8)
        assert vcf_spans._newline(arr) == text.find(b"\n")
        assert vcf_spans._newline(arr, last=True) == text.rfind(b"\n")


def test_plain_read_without_preadv(tmp_path, geno, monkeypatch):
    """Where os has no preadv, the plain-text workers read with pread: the same codes and stats."""
    monkeypatch.delattr(vcf_spans.os, "preadv")
    monkeypatch.setattr(vcf_fast, "DECODERS", 2)
    monkeypatch.setattr(vcf_spans, "MAP_MIN_CHUNK", 0)
    monkeypatch.setattr(vcf_spans, "CHUNK_BYTES", 700)
    path = write(tmp_path, "pread", _plain_text(geno, 15), "vcf")
    got = _read_compiled(path, True, monkeypatch)
    want = _read_compiled(path, False, monkeypatch)
    assert got[0] == want[0] == "ok" and got[3] > 0
    assert np.array_equal(got[1], want[1]) and got[2] == want[2]
