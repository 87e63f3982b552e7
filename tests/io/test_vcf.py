"""The VCF/BCF reader's rules and the genotype ingest, on small hand-written files."""

import gzip
import json

import numpy as np
import pytest
from genodata import HEADER, MISSING, random_genotypes, vcf_text, write_vcf

from genotile.errors import GenotileError
from genotile.io.readers import vcf
from genotile.io.readers.vcf import VcfReader
from genotile.store import ingest as ingest_module
from genotile.store import ingest_genotypes

M = MISSING


def ingest(*args, **kwargs) -> dict:
    """The ingest manifest of store/ingest.ingest."""
    return ingest_module.ingest(*args, **kwargs).manifest


def make_vcf(records, samples=("a", "b", "c")) -> str:
    """VCF text from records written with single spaces between columns."""
    head = "#CHROM POS ID REF ALT QUAL FILTER INFO FORMAT " + " ".join(samples)
    return HEADER + "\n".join(line.replace(" ", "\t") for line in [head, *records]) + "\n"


def read_all(path, **options):
    with VcfReader(path, **options) as reader:
        blocks = list(reader.blocks())
        ids = [i for b, _ in blocks for i in b]
        codes = np.concatenate([c for _, c in blocks]) if blocks else np.zeros((0, len(reader.samples)), np.uint8)
        return ids, codes, reader.samples, dict(reader.stats)


@pytest.fixture
def vcf_file(tmp_path):
    def write(records, samples=("a", "b", "c"), name="x.vcf", index=False):
        return write_vcf(tmp_path / name, make_vcf(records, samples), index=index)

    return write


def test_calls_become_alt_counts_and_missing(vcf_file):
    path = vcf_file(
        [
            "1 10 rs1 A G . PASS . GT 0/0 0/1 1/1",
            "1 20 . A G . PASS . GT 1|0 0|1 1|1",
            "1 30 . A G . PASS . GT ./. . ./1",
            "1 40 . A G . PASS . GT:DP 1/.:3 0/0:. 0/1:7",
            "1 50 . A G . PASS . DP:GT 3:0/1 4:1/1 5:0/0",
        ]
    )
    ids, codes, samples, stats = read_all(path)
    assert samples == ["a", "b", "c"]
    assert ids == ["rs1", "1:20:A:G", "1:30:A:G", "1:40:A:G", "1:50:A:G"]
    assert codes.tolist() == [[0, 1, 2], [1, 1, 2], [M, M, M], [M, 0, 1], [1, 2, 0]]
    assert stats["missing_calls"] == 4 and stats["half_missing_calls"] == 2
    assert stats["all_missing"] == 1 and stats["variants"] == 5 and stats["records"] == 5


def test_monomorphic_sites_are_kept_and_counted(vcf_file):
    path = vcf_file(
        [
            "1 10 . A G . PASS . GT 0/0 0/0 ./.",
            "1 20 . A G . PASS . GT 1/1 1/1 1/1",
            "1 30 . A . . PASS . GT 0/0 0/0 0/0",
            "1 40 . A G . PASS . GT 0/1 0/1 0/1",
        ]
    )
    ids, codes, _, stats = read_all(path)
    assert len(ids) == 4 and ids[2] == "1:30:A:."
    assert stats["monomorphic"] == 3  # 0/1 everywhere carries both alleles


def test_multiallelic_skip_and_split(vcf_file):
    records = [
        "1 10 . A G . PASS . GT 0/1 1/1 0/0",
        "1 20 rs2 A G,T . PASS . GT 0/2 1/2 2/2",
        "1 30 . A G . PASS . GT 0/0 0/1 ./.",
    ]
    ids, codes, _, stats = read_all(vcf_file(records))
    assert ids == ["1:10:A:G", "1:30:A:G"]
    assert stats["multiallelic_skipped"] == 1 and stats["records"] == 3
    ids, codes, _, stats = read_all(vcf_file(records, name="y.vcf"), multiallelic="split")
    # ALT-vs-rest: each ALT counts its own copies; the split variants are named by allele
    assert ids == ["1:10:A:G", "1:20:A:G", "1:20:A:T", "1:30:A:G"]
    assert codes[1].tolist() == [0, 1, 0] and codes[2].tolist() == [1, 1, 2]
    assert stats["multiallelic_split"] == 1 and stats["split_variants"] == 2
    with pytest.raises(GenotileError, match="multiallelic must be one of skip, split"):
        VcfReader(vcf_file(records, name="z.vcf"), multiallelic="keep")


def test_records_without_gt_are_skipped_and_counted(vcf_file):
    path = vcf_file(["1 10 . A G . PASS . DP 3 4 5", "1 20 . A G . PASS . GT 0/1 0/0 1/1"])
    ids, _, _, stats = read_all(path)
    assert ids == ["1:20:A:G"] and stats["no_gt_skipped"] == 1


def test_filter_is_counted_and_applied_on_request(vcf_file):
    path = vcf_file(
        ["1 10 . A G . PASS . GT 0/1 0/0 1/1", "1 20 . A G . q10 . GT 0/1 0/0 1/1", "1 30 . A G . . . GT 0/1 0/0 1/1"]
    )
    ids, _, _, stats = read_all(path)
    assert len(ids) == 3 and stats["filter_failed"] == 1 and stats["filter_skipped"] == 0
    ids, _, _, stats = read_all(path, filter_pass=True)
    assert ids == ["1:10:A:G", "1:30:A:G"]  # '.' (no filter applied) passes, as in PLINK
    assert stats["filter_failed"] == 1 and stats["filter_skipped"] == 1


@pytest.mark.parametrize(
    "call, what",
    [
        ("0", "haploid call"),
        ("1", "haploid call"),
        ("0/0/1", "a call of 3 alleles"),
        ("0/2", "allele index 2 but 1 ALT"),
    ],
)
def test_bad_calls_are_errors_naming_file_record_and_sample(vcf_file, call, what):
    path = vcf_file(["1 10 . A G . PASS . GT 0/1 0/0 1/1", f"1 20 . A G . PASS . GT 0/1 {call} 1/1"])
    with pytest.raises(GenotileError) as err:
        read_all(path)
    message = str(err.value)
    assert str(path) in message and "record 1:20" in message and "sample 'b'" in message and what in message
    assert "\n" not in message


def test_all_haploid_record_is_an_error_but_all_missing_is_not(vcf_file):
    ids, codes, _, _ = read_all(vcf_file(["1 10 . A G . PASS . GT . . ."]))
    assert codes.tolist() == [[M, M, M]]
    with pytest.raises(GenotileError, match="record 1:10, sample 'a': haploid"):
        read_all(vcf_file(["1 10 . A G . PASS . GT 0 1 ."], name="h.vcf"))


def test_duplicate_sample_ids_are_an_error(vcf_file):
    path = vcf_file(["1 10 . A G . PASS . GT 0/1 0/0 1/1"], samples=("a", "b", "a"))
    with pytest.raises(GenotileError, match=r"duplicate sample ID 'a' \(columns 10 and 12\)"):
        VcfReader(path)


def test_sample_selection_follows_the_list(vcf_file, tmp_path):
    path = vcf_file(["1 10 . A G . PASS . GT 0/0 0/1 1/1", "1 20 . A G . PASS . GT 1/1 ./. 0/1"])
    listing = tmp_path / "samples.txt"
    listing.write_text("c\n\na\n")
    ids, codes, samples, _ = read_all(path, samples=listing)
    assert samples == ["c", "a"] and codes.tolist() == [[2, 0], [1, 2]]
    _, codes, samples, _ = read_all(path, samples=["b"])
    assert samples == ["b"] and codes.tolist() == [[1], [M]]
    with pytest.raises(GenotileError, match=r"1 requested sample\(s\) not in the file, e.g. \['zz'\]"):
        VcfReader(path, samples=["a", "zz"])
    listing.write_text("a\na\n")
    with pytest.raises(GenotileError, match="sample 'a' listed twice"):
        VcfReader(path, samples=listing)


REGION_RECORDS = [
    "1 10 . A G . PASS . GT 0/0 0/1 1/1",
    "1 20 . A G . PASS . GT 0/1 0/1 1/1",
    "1 30 . A G . PASS . GT 1/1 0/1 1/1",
    "2 15 . A G . PASS . GT 0/0 0/0 0/1",
    "2 25 . A G . PASS . GT 0/0 0/0 1/1",
]


@pytest.mark.parametrize("suffix", [".vcf.gz", ".bcf"])
def test_regions_select_records_by_position(vcf_file, tmp_path, suffix):
    path = vcf_file(REGION_RECORDS, name=f"r{suffix}", index=True)

    def selected(regions):
        ids, _, _, stats = read_all(path, regions=regions)
        return [i.rsplit(":", 2)[0] for i in ids], stats

    assert selected("1:15-30")[0] == ["1:20", "1:30"]
    assert selected(["2", "1:10"])[0] == ["1:10", "2:15", "2:25"]  # in file order, whatever the list's
    assert selected("1:5-20,1:18-40")[0] == ["1:10", "1:20", "1:30"]  # overlaps merged: nothing twice
    bed = tmp_path / "r.bed"
    bed.write_text("# comment\n1\t9\t20\n2\t15\t25\n")  # 0-based, half-open: 1:10-20 and 2:16-25
    assert selected(bed)[0] == ["1:10", "1:20", "2:25"]
    tsv = tmp_path / "r.tsv"
    tsv.write_text("1\t20\t30\n2\t15\n")  # bcftools -R: 1-based, inclusive
    assert selected(tsv)[0] == ["1:20", "1:30", "2:15"]
    ids, stats = selected(["chr7:1-100", "1:30"])
    assert ids == ["1:30"] and stats["regions_unknown_contig"] == 1
    with pytest.raises(GenotileError, match="no region's contig is in the file"):
        read_all(path, regions="chr1:1-100")
    with pytest.raises(GenotileError, match="is empty"):
        read_all(path, regions="1:30-20")


def test_regions_need_an_index(vcf_file):
    for name, index in (("p.vcf", False), ("q.vcf.gz", False)):
        path = vcf_file(REGION_RECORDS, name=name, index=index)
        with pytest.raises(GenotileError, match=r"regions need an index beside the file \(.tbi or .csi\)"):
            read_all(path, regions="1:1-100")


def test_vcf_vcfgz_and_bcf_read_the_same(tmp_path):
    g = random_genotypes(13, 70, p_missing=0.15, seed=1)
    text = vcf_text(g, ids=[f"v{k}" for k in range(70)])
    results = {}
    for suffix in (".vcf", ".vcf.gz", ".bcf"):
        path = write_vcf(tmp_path / f"g{suffix}", text)
        with VcfReader(path) as reader:
            assert reader.format == ("bcf" if suffix == ".bcf" else "vcf")
        results[suffix] = read_all(path)
    for suffix in (".vcf.gz", ".bcf"):
        assert results[suffix][0] == results[".vcf"][0] and results[suffix][2] == results[".vcf"][2]
        assert np.array_equal(results[suffix][1], results[".vcf"][1])
    assert np.array_equal(results[".vcf"][1], g.T)


def test_blocks_are_bounded_and_seamless(tmp_path, monkeypatch):
    g = random_genotypes(9, 101, seed=2)
    path = write_vcf(tmp_path / "b.vcf", vcf_text(g))
    monkeypatch.setattr(vcf, "BLOCK_BYTES", 4 * 9 * 10)  # 10 variants per block
    with VcfReader(path) as reader:
        blocks = [codes for _, codes in reader.blocks()]
    assert [b.shape[0] for b in blocks] == [10] * 10 + [1]
    assert np.array_equal(np.concatenate(blocks), g.T)


# -- ingest: codes matrices and manifests ------------------------------------------------------


@pytest.mark.parametrize("suffix", [".vcf", ".vcf.gz", ".bcf"])
def test_ingest_writes_both_orientations(tmp_path, monkeypatch, suffix):
    g = random_genotypes(21, 203, p_missing=0.05, seed=5)
    ids = [f"v{k}" if k % 2 else "." for k in range(203)]
    path = write_vcf(tmp_path / f"in{suffix}", vcf_text(g, ids=ids))
    # small blocks: several reader blocks and several transposed blocks, unevenly cut
    monkeypatch.setattr(vcf, "BLOCK_BYTES", 4 * 21 * 50)
    monkeypatch.setattr(ingest_genotypes, "TRANSPOSE_BYTES", 21 * 70)
    mg = ingest(path, "genotype", tmp_path / "g.npy", tmp_path / "g.json")
    mt = ingest(path, "genotype_t", tmp_path / "t.npy", tmp_path / "t.json")
    assert np.array_equal(np.load(tmp_path / "g.npy"), g)
    assert np.array_equal(np.load(tmp_path / "t.npy"), g.T)
    assert json.loads((tmp_path / "g.json").read_text()) == mg
    samples = [f"s{i}" for i in range(21)]
    variant_ids = [v if v != "." else f"1:{10 * k + 5}:A:G" for k, v in enumerate(ids)]
    assert mg["ids"] == samples and mt["ids"] == variant_ids and mt["field_ids"] == samples
    assert (mg["n_vectors"], mg["n_fields"], mg["n_kept"]) == (21, 203, 203)
    assert (mt["n_vectors"], mt["n_fields"], mt["n_kept"]) == (203, 21, 21)
    for m, enc in ((mg, "genotype"), (mt, "genotype_t")):
        assert m["encoding"] == enc and m["format"] == ("bcf" if suffix == ".bcf" else "vcf")
        assert m["counts"]["missing_calls"] == int((g == MISSING).sum())
        assert {"genotile", "input", "input_sha256", "options"} <= m.keys()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "g.npy", f"in{suffix}", "t.json", "t.npy"]


def test_ingest_options_pass_through_and_are_checked(tmp_path, vcf_file):
    path = vcf_file(["1 10 . A G . q10 . GT 0/1 0/0 1/1", "1 20 . A G,T . PASS . GT 0/2 0/0 1/1"])
    m = ingest(
        path,
        "genotype",
        tmp_path / "g.npy",
        tmp_path / "g.json",
        multiallelic="split",
        filter_pass=True,
        samples=["c", "a"],
        regions=None,
    )
    assert m["ids"] == ["c", "a"] and m["n_fields"] == 2
    assert m["options"] == {"multiallelic": "split", "filter_pass": True, "samples": ["c", "a"]}
    # the q10 record is dropped; 0/2 0/0 1/1 splits into G: a 0, c 2 and T: a 1, c 0
    assert np.array_equal(np.load(tmp_path / "g.npy"), [[2, 0], [0, 1]])
    with pytest.raises(GenotileError, match="unknown VCF option"):
        ingest(path, "genotype", tmp_path / "h.npy", tmp_path / "h.json", multialelic="split")
    with pytest.raises(GenotileError, match="must be true or false"):
        ingest(path, "genotype", tmp_path / "h.npy", tmp_path / "h.json", filter_pass="yes")


def _bad_inputs(tmp_path):
    fasta = tmp_path / "x.fa"
    fasta.write_text(">a\nACGT\n>b\nACGA\n")
    sites_only = tmp_path / "sites.vcf"
    sites_only.write_text(HEADER + "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n1\t1\t.\tA\tT\t.\t.\t.\n")
    big = write_vcf(tmp_path / "big.vcf.gz", vcf_text(random_genotypes(200, 3000, seed=1)))
    truncated = tmp_path / "trunc.vcf.gz"
    truncated.write_bytes(big.read_bytes()[: big.stat().st_size // 2])
    big.unlink()
    haploid = tmp_path / "hap.vcf"
    haploid.write_text(make_vcf(["1 10 . A G . PASS . GT 0/1 0/0 1/1", "1 20 . A G . PASS . GT 0/1 1 1/1"]))
    dup = tmp_path / "dup.vcf.gz"
    with gzip.open(dup, "wt") as fh:
        fh.write(make_vcf(["1 10 . A G . PASS . GT 0/1 0/0 1/1"], samples=("a", "a")))
    none_left = tmp_path / "none.vcf"
    none_left.write_text(make_vcf(["1 10 . A G,T . PASS . GT 0/1 0/0 1/1"]))
    return [
        (fasta, "a FASTA alignment holds an alignment"),
        (sites_only, "no samples"),
        (truncated, "BGZF file without its end-of-file block: truncated?"),  # plain gzip: test_hostile.py
        (haploid, "record 1:20, sample 'b': haploid call"),
        (dup, "duplicate sample ID 'a'"),
        (none_left, "no variants left after the VCF rules (records 1, multiallelic_skipped 1)"),
        (tmp_path / "absent.vcf", "no such file"),
    ]


@pytest.mark.parametrize("encoding", ["genotype", "genotype_t"])
def test_bad_input_is_one_clear_line_and_leaves_nothing(tmp_path, encoding):
    cases = _bad_inputs(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for path, message in cases:
        out = tmp_path / "out"
        with pytest.raises(GenotileError) as err:
            ingest(path, encoding, out / "codes.npy", out / "manifest.json")
        assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)
        assert not out.exists() or list(out.iterdir()) == [], f"{path.name}: left {list(out.iterdir())}"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "out") == before


def test_alignments_take_no_vcf_options(tmp_path):
    fasta = tmp_path / "x.fa"
    fasta.write_text(">a\nACGT\n>b\nACGA\n")
    with pytest.raises(GenotileError, match="apply to a VCF/BCF, a PLINK fileset or a VCF-Zarr store, not to"):
        ingest(fasta, "nucleotide", tmp_path / "c.npy", tmp_path / "c.json", multiallelic="split")
