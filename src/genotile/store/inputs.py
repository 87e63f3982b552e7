"""What a dataset's input is, by its name, and whether its metrics can read it.

Checked before any job runs (rules/common.smk, `genotile run`, the Python API), so that a PLINK
fileset given to `snp`, or a .bim named instead of its .bed, is one clear line and not a failed
store job. Kinds: "fasta" (.fa .fasta .fas .fna .aln, optionally .gz), "vcf" (.vcf, .vcf.gz,
.vcf.bgz, .bcf), "plink1" (.bed), "plink2" (.pgen); any other name is not judged here (the
metric's reader decides, as before).
"""

from pathlib import Path

from genotile.core.encodings import ENCODINGS
from genotile.errors import GenotileError
from genotile.io.plink import fileset, plink_format

FASTA_SUFFIXES = (".fa", ".fasta", ".fas", ".fna", ".aln")
VCF_SUFFIXES = (".vcf", ".vcf.gz", ".vcf.bgz", ".bcf")
GENOTYPE_KINDS = ("vcf", "plink1", "plink2")
VCF_OPTIONS = ("multiallelic", "filter_pass", "samples", "regions")


def input_kind(path) -> str | None:
    """The input's kind: "fasta", "vcf", "plink1", "plink2", or None for a name of none of these.

    A PLINK companion file (.bim .fam .pvar .psam) is refused by name (plink.plink_format).
    """
    plink = plink_format(path)
    if plink:
        return plink
    name = str(path).lower()
    if name.endswith(VCF_SUFFIXES):
        return "vcf"
    if name.removesuffix(".gz").endswith(FASTA_SUFFIXES):
        return "fasta"
    return None


def input_files(path) -> list[Path]:
    """Every file the input is read from: the three of a PLINK fileset, else the file itself."""
    return fileset(path) if plink_format(path) else [Path(path)]


def metric_encoding(metric: str) -> str:
    """The store encoding a metric (2-way or 3-way) reads, refused by name when unknown."""
    from genotile.core.registry import REGISTRY

    if metric not in REGISTRY:
        raise GenotileError(f"unknown metric {metric!r}")
    return REGISTRY[metric].encoding


def check_input(path, metrics, options: dict | None = None, where: str = "") -> str | None:
    """Refuse metrics (and VCF options) that the input's kind cannot feed; return the kind.

    `where` prefixes the message (e.g. "dataset x: "); options with a None value count as not given.
    """
    try:
        kind = input_kind(path)
    except GenotileError as exc:  # a PLINK companion file named
        raise GenotileError(f"{where}{exc}") from None
    given = sorted(k for k, v in (options or {}).items() if v is not None)
    if kind is None:
        return None
    genotype = kind in GENOTYPE_KINDS
    wrong = [m for m in metrics if ENCODINGS[metric_encoding(m)].genotypes != genotype]
    if wrong:
        what = {"fasta": "a FASTA alignment", "vcf": "a VCF/BCF"}.get(kind, "a PLINK fileset")
        needs = "a FASTA alignment" if genotype else "genotypes (VCF/BCF or PLINK .bed/.pgen)"
        raise GenotileError(f"{where}input {path} is {what}, but metric(s) {', '.join(wrong)} need {needs}")
    if given and not genotype:
        raise GenotileError(
            f"{where}option(s) {', '.join(given)} apply to genotype input (VCF/BCF, PLINK), not to the alignment {path}"
        )
    return kind


def check_datasets(config: dict) -> None:
    """check_input over every dataset of a (validated) config."""
    for name, spec in config["datasets"].items():
        options = {k: spec.get(k) for k in VCF_OPTIONS}
        if spec.get("multiallelic") == "skip":  # the schema's default, filled in for every dataset
            options.pop("multiallelic")
        if spec.get("filter_pass") is False:
            options.pop("filter_pass")
        check_input(spec["input"], spec["metrics"], options, where=f"dataset {name}: ")
