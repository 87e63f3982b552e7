"""`chromosomes: autosomes` (the default, issue 28): PLINK's ibs and king count autosomes 1-22
only, so genotile leaves other contigs out, counts them, says so on the console, and keeps a
whole .bed of autosomes on its own reader."""

import numpy as np
import pytest
from genodata import HEADER, random_genotypes, vcf_text, write_vcf
from snakerun import read_pairs, snakemake
from test_bed import write_fileset

from genotile.errors import GenotileError
from genotile.io.readers.bed import BedReader
from genotile.io.readers.vcf import VcfReader


def codes(reader) -> np.ndarray:
    return np.concatenate([c for _, c in reader.blocks()]) if reader.stats is not None else None


def with_other_contigs(text: str, n_samples: int) -> str:
    """`text` (a VCF on contig 1) with chrX records of haploid calls (every male's), a chrY, MT
    and an unplaced contig appended."""
    header = HEADER + "##contig=<ID=X>\n##contig=<ID=chrY>\n##contig=<ID=MT>\n##contig=<ID=GL000192.1>\n"
    text = text.replace(HEADER, header)
    extra = []
    for k, chrom in enumerate(("X", "X", "chrY", "MT", "GL000192.1")):
        calls = ["1" if s % 2 else "0/1" for s in range(n_samples)]  # haploid and diploid
        extra.append("\t".join([chrom, str(100 + k), ".", "A", "G", ".", "PASS", ".", "GT", *calls]))
    return text + "\n".join(extra) + "\n"


@pytest.mark.parametrize("name", ["g.vcf", "g.vcf.gz", "g.bcf"])
def test_a_vcf_reads_its_autosomes_by_default(tmp_path, name):
    g = random_genotypes(7, 30, seed=3)
    plain = write_vcf(tmp_path / "plain.vcf", vcf_text(g))
    mixed = write_vcf(tmp_path / name, with_other_contigs(vcf_text(g), 7))
    with VcfReader(plain) as a, VcfReader(mixed) as b:
        assert np.array_equal(codes(a), codes(b))
        assert b.stats["non_autosomal_skipped"] == 5 and b.stats["records"] == 35 and b.stats["variants"] == 30
        assert a.stats["non_autosomal_skipped"] == 0
    # every contig on request: chrX's haploid calls are refused as before, by record and sample
    with VcfReader(mixed, chromosomes="all") as c, pytest.raises(GenotileError, match=r"record X:100, sample 's1'"):
        codes(c)
    with pytest.raises(GenotileError, match=r"chromosomes must be one of autosomes, all, not 'x'"):
        VcfReader(plain, chromosomes="x")


@pytest.mark.parametrize("name", ["u.vcf", "u.vcf.gz"])
def test_records_on_contigs_the_header_does_not_declare_are_left_out_too(tmp_path, name):
    """A header naming autosomes only, records on X and MT besides (htslib reads them with a
    warning): left out and counted as PLINK leaves them, not kept for want of a declaration."""
    g = random_genotypes(6, 20, seed=8)
    plain = write_vcf(tmp_path / "plain.vcf", vcf_text(g))
    undeclared = with_other_contigs(vcf_text(g), 6).replace(HEADER + "##contig=<ID=X>\n", HEADER)
    for line in ("##contig=<ID=chrY>\n", "##contig=<ID=MT>\n", "##contig=<ID=GL000192.1>\n"):
        undeclared = undeclared.replace(line, "")
    assert "##contig=<ID=X>" not in undeclared and "\nX\t100\t" in undeclared
    with VcfReader(plain) as a, VcfReader(write_vcf(tmp_path / name, undeclared)) as b:
        assert np.array_equal(codes(a), codes(b))
        assert b.stats["non_autosomal_skipped"] == 5 and b.stats["variants"] == 20


def test_chr_prefixed_names_are_autosomes_and_a_file_without_one_is_refused(tmp_path):
    g = random_genotypes(5, 8, seed=1)
    text = vcf_text(g).replace("\n1\t", "\nchr1\t").replace("ID=1,", "ID=chr1,")
    with VcfReader(write_vcf(tmp_path / "chr.vcf", text)) as r:
        assert codes(r).shape == (8, 5) and r.stats["non_autosomal_skipped"] == 0
    text = vcf_text(g).replace("\n1\t", "\nNC_000962.3\t").replace("ID=1,", "ID=NC_000962.3,")
    bacterial = write_vcf(tmp_path / "b.vcf", text.replace("##contig=<ID=2,length=100000000>\n", ""))
    refusal = r"b.vcf: no variant on an autosome.*NC_000962.3.*chromosomes: all"
    with VcfReader(bacterial) as r, pytest.raises(GenotileError, match=refusal):
        codes(r)
    with VcfReader(bacterial, chromosomes="all") as r:
        assert codes(r).shape == (8, 5)


def test_a_bed_of_autosomes_stays_plain_and_one_with_chrx_drops_it(tmp_path):
    g = random_genotypes(9, 120, seed=2)
    whole = write_fileset(tmp_path / "a", g)
    reader = BedReader(whole)
    assert reader.plain and reader.regions is None and reader.variants is None  # the .bim not parsed
    assert reader.stats["non_autosomal_skipped"] == 0
    # the same fileset with its last 20 variants moved to X, Y, MT and 0 (PLINK's codes 23-26 too)
    mixed = write_fileset(tmp_path / "m", g)
    lines = (tmp_path / "m.bim").read_text().splitlines()
    for k, chrom in zip(range(100, 120), ["X", "23", "Y", "24", "MT", "26", "0", "XY", "chrX", "25"] * 2, strict=True):
        lines[k] = "\t".join([chrom, *lines[k].split("\t")[1:]])
    (tmp_path / "m.bim").write_text("\n".join(lines) + "\n")
    r = BedReader(mixed)
    assert not r.plain and r.stats["non_autosomal_skipped"] == 20 and r.plan[0].size == 100
    head = write_fileset(tmp_path / "h", g[:, :100])
    assert np.array_equal(codes(r), codes(BedReader(head)))
    everything = BedReader(mixed, chromosomes="all")
    assert everything.plain and everything.plan[0].size == 120


def test_the_workflow_leaves_chrx_out_and_says_so(tmp_path):
    g = random_genotypes(8, 40, seed=4)
    plain = write_vcf(tmp_path / "plain.vcf", vcf_text(g))
    mixed = write_vcf(tmp_path / "mixed.vcf", with_other_contigs(vcf_text(g), 8))
    config = {
        "datasets": {"p": {"input": str(plain), "metrics": ["ibs"]}, "m": {"input": str(mixed), "metrics": ["ibs"]}}
    }
    proc = snakemake(tmp_path, config)
    assert read_pairs(tmp_path / "results/m/ibs/pairs.tsv.gz") == read_pairs(tmp_path / "results/p/ibs/pairs.tsv.gz")
    line = "genotile ingest for m (genotype): 5 of 45 records left out: 5 on a contig other than autosomes 1-22"
    assert line in proc.stderr and "genotile ingest for p" not in proc.stderr
