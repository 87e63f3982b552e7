"""PLINK filesets as input: the same outputs as the VCF they were made from.

The filesets are PLINK 2's own conversions of a VCF (`plink2 --vcf x.vcf --make-bed` and
`--make-pgen`), so orientation (ALT counts), IDs and missing calls are checked against the tool
users would have made them with. Every metric that takes genotypes (ibs, king, ccc2, ccc3) is
run on the VCF, the .bed and the .pgen, and the output files compared byte for byte.
"""

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf

from genotile.errors import GenotileError
from genotile.io.readers.bed import BedReader
from genotile.io.readers.plink_tables import fileset, plink_format, read_samples
from genotile.pipeline import run_all, run_ccc3
from genotile.store import ingest as ingest_module

REPO = Path(__file__).resolve().parents[2]


def ingest(*args, **kwargs) -> dict:
    """The ingest manifest of store/ingest.ingest."""
    return ingest_module.ingest(*args, **kwargs).manifest


def plink2(*args) -> None:
    if shutil.which("plink2") is None:
        pytest.skip("plink2 is not installed (Debian: apt-get install -y plink2)")
    subprocess.run(["plink2", *map(str, args), "--threads", "1"], check=True, capture_output=True)


def no_half_calls(text: str) -> str:
    """PLINK refuses half-missing calls (./1) by default; make them ./. as it would with --vcf-half-call m."""
    for half in ("./1", "1/.", ".|1", "1|."):
        text = text.replace(f"\t{half}", "\t./.")
    return text


@pytest.fixture(scope="module")
def filesets(tmp_path_factory):
    root = tmp_path_factory.mktemp("plink")
    g = random_genotypes(23, 150, p_missing=0.1, seed=3)  # all-missing sample and variant, no-het sample...
    ids = [f"rs{v}" if v % 3 else "." for v in range(g.shape[1])]  # '.' IDs: CHROM:POS:REF:ALT
    vcf = write_vcf(root / "x.vcf", no_half_calls(vcf_text(g, ids=ids, seed=3)))
    plink2("--vcf", vcf, "--make-bed", "--out", root / "b")
    plink2("--vcf", vcf, "--make-pgen", "--out", root / "p")
    return {"vcf": vcf, "bed": root / "b.bed", "pgen": root / "p.pgen", "root": root}


def _outputs(outdir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(outdir)): p.read_bytes()
        for p in sorted(outdir.rglob("*"))
        if p.name in ("pairs.tsv.gz", "matrix.tsv", "histogram.tsv", "triples.tsv.gz")
    }


@pytest.mark.parametrize("kind", ["bed", "pgen"])
@pytest.mark.peers  # needs plink2 / plink1.9
def test_every_genotype_metric_gives_the_vcf_outputs(filesets, kind, tmp_path):
    for name, source in (("vcf", filesets["vcf"]), (kind, filesets[kind])):
        out = tmp_path / name
        run_all(source, out, ["ibs", "king", "ccc2"], block_size=7, backend="numpy")
        run_ccc3(out / "store" / "genotype_t", out / "ccc3", block_size=40, threshold=0.5, backend="numpy")
    ours, theirs = _outputs(tmp_path / kind), _outputs(tmp_path / "vcf")
    assert sorted(ours) == sorted(theirs) and len(ours) == 3 * 3 + 1
    for name in theirs:
        assert ours[name] == theirs[name], name
    # and the outputs are not empty: every pair of the 23 samples is written (null threshold)
    with gzip.open(tmp_path / kind / "ibs" / "pairs.tsv.gz", "rt") as fh:
        assert len(fh.read().splitlines()) == 1 + 23 * 22 // 2


@pytest.mark.parametrize("kind", ["bed", "pgen"])
@pytest.mark.parametrize("encoding", ["genotype", "genotype_t"])
@pytest.mark.peers  # needs plink2 / plink1.9
def test_codes_ids_and_counts_equal_the_vcf(filesets, kind, encoding, tmp_path):
    vcf = ingest(filesets["vcf"], encoding, tmp_path / "v.npy", tmp_path / "v.json")
    ours = ingest(filesets[kind], encoding, tmp_path / "p.npy", tmp_path / "p.json")
    assert np.array_equal(np.load(tmp_path / "v.npy"), np.load(tmp_path / "p.npy"))
    assert ours["ids"] == vcf["ids"] and ours.get("field_ids") == vcf.get("field_ids")
    assert ours["counts"] == vcf["counts"]
    assert ours["format"] == {"bed": "plink1", "pgen": "plink2"}[kind]
    assert [Path(f).name for f in ours["fileset"]] == [
        {"bed": n, "pgen": m}[kind] for n, m in (("b.bed", "p.pgen"), ("b.bim", "p.pvar"), ("b.fam", "p.psam"))
    ]
    assert ours["iids"] == [f"s{i}" for i in range(23)]


@pytest.mark.peers  # needs plink2 / plink1.9
def test_fid_iid_sample_ids_are_what_plink2_exports_to_vcf(filesets, tmp_path):
    """With FIDs (here --double-id), a sample is FID_IID, as `plink2 --export vcf` names it; FIDs are
    kept in the ingest and store manifests."""
    root = filesets["root"]
    plink2("--vcf", filesets["vcf"], "--double-id", "--make-bed", "--out", tmp_path / "d")
    plink2("--bfile", tmp_path / "d", "--export", "vcf", "--out", tmp_path / "e")
    exported = next(ln for ln in (tmp_path / "e.vcf").read_text().splitlines() if ln.startswith("#CHROM"))
    out = tmp_path / "run"
    run_all(tmp_path / "d.bed", out, ["king"], backend="numpy")
    store = json.loads((out / "store" / "genotype" / "manifest.json").read_text())
    assert store["ids"] == exported.split("\t")[9:] == [f"s{i}_s{i}" for i in range(23)]
    assert store["fids"] == store["iids"] == [f"s{i}" for i in range(23)]
    # FIDs of 0 (plink2's default import) are no FIDs: the ID is the IID
    assert read_samples(root / "b.fam").ids == [f"s{i}" for i in range(23)]
    assert read_samples(root / "p.psam").fids is None


def test_mixed_fids_and_a_psam_header(tmp_path):
    (tmp_path / "a.fam").write_text("0 x 0 0 0 -9\nfam1 y 0 0 1 -9\n")
    assert read_samples(tmp_path / "a.fam").ids == ["0_x", "fam1_y"]
    (tmp_path / "b.psam").write_text("#FID\tIID\tSEX\nf\tx\t1\nf\ty\tNA\n")
    assert read_samples(tmp_path / "b.psam").ids == ["f_x", "f_y"]
    (tmp_path / "c.fam").write_text("f x 0 0 0 -9\nf x 0 0 0 -9\n")
    with pytest.raises(GenotileError, match=r"c\.fam: sample 'f_x' appears twice"):
        read_samples(tmp_path / "c.fam")


@pytest.mark.parametrize(
    "text, fast",
    [
        ("0 a 0 0 1 -9\n0 b 0 0 2 -9\n", True),
        ("f1\ta\t0\t0\t1\t-9\r\nf2 \t b 0 0 2 -9", True),  # tabs, CRLF, no final newline
        ("  f1   a\nf2 b 0\x0c0\n", True),  # leading blanks, two columns, a form feed between fields
        ("f1 a 0 0 1 -9\n\nf2 b 0 0 2 -9\n", False),  # a blank line
        ("##meta\nf1 a\n", False),
        ("#FID IID SEX\nf1 a 1\n", False),  # a header: its columns named
        ("#IID SEX\na 1\nb 2\n", False),
        ("f1 a\nb\n", False),  # a short line: refused by the line-by-line reader, naming it
    ],
)
def test_a_fam_read_in_one_pass_equals_it_read_line_by_line(tmp_path, text, fast):
    """read_samples' one-pass reading (`_fast_samples`) of a .fam-shaped table, and where it
    declines, the line-by-line reader: the same FIDs and IIDs (and errors) as splitting each line."""
    from genotile.io.readers import plink_tables

    path = tmp_path / "x.fam"
    path.write_bytes(text.encode())
    lines = path.read_text().split("\n")  # universal newlines, as read_samples reads
    assert (plink_tables._fast_samples(path.read_text()) is not None) == fast
    if text.startswith("f1 a\nb"):
        with pytest.raises(GenotileError, match=r"x\.fam: line 2: 1 column\(s\), expected FID and IID"):
            read_samples(path)
        return
    table = read_samples(path)
    assert table == plink_tables._samples_by_line(path, lines)
    body = [ln.split() for ln in lines if ln.strip() and not ln.startswith("#")]
    assert table.iids == [f[1] if not text.startswith("#IID") else f[0] for f in body]


@pytest.mark.peers  # needs plink2 / plink1.9
def test_vcf_options_select_as_for_the_vcf(filesets, tmp_path):
    root = filesets["root"]
    bgz = write_vcf(tmp_path / "x.vcf.gz", filesets["vcf"].read_text(), index=True)
    (tmp_path / "keep.txt").write_text("s9\ns2\ns17\ns0\n")
    options = {"samples": str(tmp_path / "keep.txt"), "regions": ["1:200-900", "1:1201-1400"]}
    for encoding in ("genotype", "genotype_t"):
        vcf = ingest(bgz, encoding, tmp_path / "v.npy", tmp_path / "v.json", **options)
        for source in (root / "b.bed", root / "p.pgen"):
            ours = ingest(source, encoding, tmp_path / "p.npy", tmp_path / "p.json", **options)
            assert np.array_equal(np.load(tmp_path / "v.npy"), np.load(tmp_path / "p.npy")), (source, encoding)
            assert ours["ids"] == vcf["ids"] and ours["counts"]["variants"] == vcf["counts"]["variants"] > 0
    assert ours["iids"] == ["s9", "s2", "s17", "s0"]


@pytest.mark.peers  # needs plink2 / plink1.9
def test_multiallelic_and_filter_pass_on_a_pgen(tmp_path):
    text = (
        "##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n"
        '##FILTER=<ID=q10,Description="low">\n'
        '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\td\n"
        "1\t5\trs1\tA\tG,T\t.\tPASS\t.\tGT\t0/1\t1/2\t2/2\t./.\n"
        "1\t7\t.\tA\tG\t.\tq10\t.\tGT\t0/1\t1/1\t./.\t0/0\n"
        "1\t9\trs3\tC\tT\t.\t.\t.\tGT\t1/1\t0/1\t0/0\t0/1\n"
    )
    vcf = write_vcf(tmp_path / "m.vcf", text)
    plink2("--vcf", vcf, "--make-pgen", "--out", tmp_path / "m")
    for options in (
        {},
        {"multiallelic": "split"},
        {"filter_pass": True},
        {"multiallelic": "split", "filter_pass": True},
    ):
        a = ingest(vcf, "genotype_t", tmp_path / "v.npy", tmp_path / "v.json", **options)
        b = ingest(tmp_path / "m.pgen", "genotype_t", tmp_path / "p.npy", tmp_path / "p.json", **options)
        assert np.array_equal(np.load(tmp_path / "v.npy"), np.load(tmp_path / "p.npy")), options
        assert a["ids"] == b["ids"] and a["counts"] == b["counts"], options
        # the samples-major path takes the split variants through the block reader
        a = ingest(vcf, "genotype", tmp_path / "v.npy", tmp_path / "v.json", **options)
        b = ingest(tmp_path / "m.pgen", "genotype", tmp_path / "p.npy", tmp_path / "p.json", **options)
        assert np.array_equal(np.load(tmp_path / "v.npy"), np.load(tmp_path / "p.npy")), options
    assert b["counts"]["split_variants"] == 2 and b["n_fields"] == 3  # split, filter_pass: rs1 as 2, rs3


@pytest.mark.peers  # needs plink2 / plink1.9
def test_fileset_naming_and_broken_filesets(filesets, tmp_path):
    root = filesets["root"]
    assert plink_format("x.bed") == "plink1" and plink_format("x.pgen") == "plink2" and plink_format("x.vcf") is None
    assert [p.name for p in fileset(root / "p.pgen")] == ["p.pgen", "p.pvar", "p.psam"]
    with pytest.raises(GenotileError, match=r"b\.bim: a PLINK \.bim file; name the fileset by its genotype file"):
        ingest(root / "b.bim", "genotype", tmp_path / "c.npy", tmp_path / "c.json")
    for name in ("b.bed", "b.bim", "b.fam"):
        shutil.copy(root / name, tmp_path / name)
    (tmp_path / "b.fam").unlink()
    with pytest.raises(GenotileError, match=r"fileset incomplete: .*b\.fam is missing"):
        ingest(tmp_path / "b.bed", "genotype", tmp_path / "c.npy", tmp_path / "c.json")
    shutil.copy(root / "b.fam", tmp_path / "b.fam")
    data = (root / "b.bed").read_bytes()
    (tmp_path / "b.bed").write_bytes(data[:-5])
    with pytest.raises(GenotileError, match=r"b\.bed: \d+ bytes, but 150 variants .* x 23 samples .* need \d+"):
        ingest(tmp_path / "b.bed", "genotype", tmp_path / "c.npy", tmp_path / "c.json")
    (tmp_path / "b.bed").write_bytes(b"\x6c\x1b\x00" + data[3:])
    with pytest.raises(GenotileError, match="not a variant-major PLINK 1 .bed"):
        ingest(tmp_path / "b.bed", "genotype", tmp_path / "c.npy", tmp_path / "c.json")
    with pytest.raises(GenotileError, match="holds genotypes .* not an alignment"):
        ingest(root / "b.bed", "nucleotide", tmp_path / "c.npy", tmp_path / "c.json")
    assert not list(tmp_path.glob("c.*"))  # nothing half-written


@pytest.mark.peers  # needs plink2 / plink1.9
def test_a_minor_allele_a1_bed_gives_the_same_ibs_and_king(filesets, tmp_path):
    """PLINK 1.9 sets A1 to the minor allele: ibs and king do not depend on which allele is counted."""
    if shutil.which("plink1.9") is None:
        pytest.skip("plink1.9 is not installed")
    subprocess.run(
        ["plink1.9", "--vcf", filesets["vcf"], "--const-fid", "--make-bed", "--out", tmp_path / "m"],
        check=True,
        capture_output=True,
    )  # --const-fid: FID 0, so IDs are the IIDs (plink1.9's default FID is the IID: s0_s0)
    swapped = [line.split("\t")[4] != "G" for line in (tmp_path / "m.bim").read_text().splitlines()]
    assert any(swapped)  # some A1 alleles are the REF
    run_all(tmp_path / "m.bed", tmp_path / "m", ["ibs", "king"], backend="numpy")
    run_all(filesets["vcf"], tmp_path / "v", ["ibs", "king"], backend="numpy")
    for metric in ("ibs", "king"):
        a = (tmp_path / "m" / metric / "pairs.tsv.gz").read_bytes()
        assert a == (tmp_path / "v" / metric / "pairs.tsv.gz").read_bytes()


@pytest.mark.peers  # needs plink2 / plink1.9
def test_plink_reader_blocks_match_sample_rows(filesets, tmp_path):
    """The two read paths (variant blocks for ccc2, sample rows for ibs/king) agree."""
    reader = BedReader(filesets["bed"])
    rows = np.concatenate([codes for _, codes in reader.blocks(max_rows=17)])
    reader = BedReader(filesets["bed"])
    reader.write_sample_rows(tmp_path / "s.npy", threads=2)
    assert np.array_equal(rows.T, np.load(tmp_path / "s.npy"))


def test_bench_plink_smoke():
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_plink.py"), "--smoke"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| .bed -> store, wall |" in proc.stdout and "planes and counts checked" in proc.stdout
    assert all(f"| {stage} |" in proc.stdout for stage in ("imports", "ingest", "plan", "pack"))


@pytest.mark.peers  # needs plink2 / plink1.9
def test_workflow_takes_a_fileset_and_refuses_a_wrong_input_by_name(filesets, tmp_path):
    from snakerun import snakemake

    for name in ("b.bed", "b.bim", "b.fam", "p.pgen", "p.pvar", "p.psam"):
        shutil.copy(filesets["root"] / name, tmp_path / name)
    shutil.copy(filesets["vcf"], tmp_path / "x.vcf")
    config = {
        "datasets": {
            "bed": {"input": "b.bed", "metrics": ["king"]},
            "pgen": {"input": "p.pgen", "metrics": ["ibs"]},
            "vcf": {"input": "x.vcf", "metrics": ["ibs", "king"]},
        },
        "backend": "numpy",
    }
    dry = snakemake(tmp_path, config, "-n")
    assert "rule store" in dry.stdout or "checkpoint store" in dry.stdout
    for spec, message in (
        ({"input": "b.bed", "metrics": ["snp"]}, "dataset bad: input b.bed is a PLINK fileset, but metric(s) snp need"),
        ({"input": "b.bim", "metrics": ["king"]}, "dataset bad: b.bim: a PLINK .bim file; name the fileset by its"),
        ({"input": "x.vcf", "metrics": ["hamming"]}, "dataset bad: input x.vcf is a VCF/BCF, but metric(s) hamming"),
    ):
        proc = snakemake(tmp_path, {**config, "datasets": {"bad": spec}}, "-n", check=False)
        assert proc.returncode != 0 and message in proc.stdout + proc.stderr, proc.stderr[-2000:]
    (tmp_path / "b.fam").rename(tmp_path / "b.fam.away")
    proc = snakemake(tmp_path, config, "-n", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Missing input files for rule store" in out and "b.fam" in out
    (tmp_path / "b.fam.away").rename(tmp_path / "b.fam")
    snakemake(tmp_path, config)
    for dataset, metric in (("bed", "king"), ("pgen", "ibs")):
        ours = (tmp_path / "results" / dataset / metric / "pairs.tsv.gz").read_bytes()
        assert ours == (tmp_path / "results" / "vcf" / metric / "pairs.tsv.gz").read_bytes(), dataset


def test_a_zstd_pvar_reads_as_the_pvar(tmp_path):
    """`.pvar.zst` is listed as an input, so its reader (zstandard) is a dependency of genotile
    (pyproject.toml, envs/*.yaml), imported plainly here: not skipped when absent."""
    import zstandard

    from genotile.io.readers.plink_tables import read_variants

    text = "##fileformat=PVARv1.0\n#CHROM\tPOS\tID\tREF\tALT\tFILTER\n1\t5\trs1\tA\tG\tPASS\nX\t9\t.\tC\tT,G\tq10\n"
    plain, packed = tmp_path / "x.pvar", tmp_path / "y.pvar.zst"
    plain.write_text(text)
    packed.write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    a, b = read_variants(packed), read_variants(plain)
    assert (a.chrom, a.ids, a.ref, a.alts, a.filters) == (b.chrom, b.ids, b.ref, b.alts, b.filters)
    assert a.pos.tolist() == b.pos.tolist() == [5, 9] and a.alts == [["G"], ["T", "G"]]
