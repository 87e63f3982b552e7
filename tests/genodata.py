"""Genotype test data: random ALT-count matrices and the VCF/BCF files that hold them."""

from pathlib import Path

import numpy as np

MISSING = 255
HEADER = """##fileformat=VCFv4.2
##contig=<ID=1,length=100000000>
##contig=<ID=2,length=100000000>
##FILTER=<ID=PASS,Description="All filters passed">
##FILTER=<ID=q10,Description="Quality below 10">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">
"""


def random_genotypes(
    n_samples: int, n_variants: int, *, p_missing: float = 0.1, seed: int = 0, special: bool = True
) -> np.ndarray:
    """(samples, variants) uint8 ALT counts, MISSING with probability p_missing.

    With `special`, the corner cases every metric must get right are planted:
    monomorphic variants (all 0, all 2), an all-missing variant, an all-missing
    sample (n = 0 for ibs), a sample without hets (king's -inf) and a duplicate sample.
    """
    rng = np.random.default_rng(seed)
    freq = rng.beta(0.5, 0.5, size=n_variants)
    g = rng.binomial(2, freq[None, :], size=(n_samples, n_variants)).astype(np.uint8)
    g[rng.random(g.shape) < p_missing] = MISSING
    if special and n_samples >= 6 and n_variants >= 4:
        g[:, 0], g[:, 1] = 0, 2
        g[:, 2] = MISSING
        g[1] = MISSING
        no_het = g[2] == 1
        g[2, no_het] = 2
        g[4] = g[3]
    return g


def _call(code: int, rng) -> str:
    if code == MISSING:
        return str(rng.choice(["./.", ".", "./1", "1/.", ".|."]))
    if code == 1:
        return str(rng.choice(["0/1", "1/0", "0|1", "1|0"]))
    return "0/0" if code == 0 else str(rng.choice(["1/1", "1|1"]))


def vcf_text(g: np.ndarray, samples=None, ids=None, *, seed: int = 0) -> str:
    """A VCF of the (samples, variants) matrix g, with varied spellings of each call."""
    rng = np.random.default_rng(seed)
    n_samples, n_variants = g.shape
    samples = samples or [f"s{i}" for i in range(n_samples)]
    lines = [HEADER + "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT", *samples])]
    for v in range(n_variants):
        vid = ids[v] if ids else "."
        calls = [_call(int(c), rng) for c in g[:, v]]
        lines.append("\t".join(["1", str(10 * v + 5), vid, "A", "G", ".", "PASS", ".", "GT", *calls]))
    return "\n".join(lines) + "\n"


def write_vcf(path, text: str, *, index: bool = False) -> Path:
    """Write VCF text as .vcf, .vcf.gz (bgzip) or .bcf, chosen by the name; optionally indexed.
    A plain .vcf needs no pysam (the GPU machine has none)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    name = str(path)
    if name.endswith(".vcf"):
        path.write_text(text)
        return path
    import pysam

    plain = path.with_name(path.name + ".src.vcf")
    plain.write_text(text)
    if name.endswith(".vcf.gz"):
        pysam.tabix_compress(str(plain), name, force=True)
        if index:
            pysam.tabix_index(name, preset="vcf", force=True)
    elif name.endswith(".bcf"):
        with pysam.VariantFile(str(plain)) as src, pysam.VariantFile(name, "wb", header=src.header) as dst:
            for rec in src:
                dst.write(rec)
        if index:
            from pysam import bcftools

            bcftools.index(name)
    else:
        raise ValueError(f"unknown VCF suffix: {name}")
    plain.unlink()
    return path


def read_float_matrix(path) -> tuple[list[str], np.ndarray]:
    """matrix.tsv -> (ids, float matrix); nan and inf as written."""
    lines = Path(path).read_text().splitlines()
    ids = lines[0].split("\t")[1:]
    rows = [line.split("\t") for line in lines[1:]]
    assert [r[0] for r in rows] == ids
    return ids, np.array([[float(v) for v in r[1:]] for r in rows])
