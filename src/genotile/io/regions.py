"""Region selection as bcftools users write it: 1-based, inclusive positions.

A region is `CHROM`, `CHROM:POS`, `CHROM:BEG-END` or `CHROM:BEG-`. The `regions`
option is a list of such strings, one comma-separated string, or a file: one
region per line, either in that form or tab-separated `CHROM BEG [END]` (1-based,
inclusive, as `bcftools -R`), except that files named .bed / .bed.gz are BED
(0-based, half-open). Blank lines and lines starting with '#' are skipped.
"""

import gzip
import itertools
import os
from dataclasses import dataclass

from genotile.errors import GenotileError

END = 2**31 - 1  # htslib's largest position


@dataclass(frozen=True)
class Region:
    chrom: str
    start: int  # 1-based, inclusive
    end: int  # 1-based, inclusive

    def htslib(self) -> str:
        return f"{self.chrom}:{self.start}-{self.end}"


def _position(text: str, where: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise GenotileError(f"{where}: {text!r} is not a position") from None
    if value < 0:
        raise GenotileError(f"{where}: negative position {value}")
    return value


def parse_region(text: str, where: str = "regions") -> Region:
    text = text.strip()
    chrom, sep, span = text.rpartition(":")
    if not sep or not chrom:
        return Region(text, 1, END)
    if "-" in span:
        beg, _, end = span.partition("-")
        start, stop = _position(beg, where), (_position(end, where) if end else END)
    else:
        start = stop = _position(span, where)
    if start < 1 or stop < start:
        raise GenotileError(f"{where}: region {text!r} is empty (positions are 1-based, inclusive)")
    return Region(chrom, start, stop)


def _region_file(path) -> list[Region]:
    name = str(path)
    bed = name.endswith((".bed", ".bed.gz"))
    opener = gzip.open if name.endswith(".gz") else open
    regions = []
    try:
        with opener(path, "rt") as fh:
            for number, line in enumerate(fh, start=1):
                line = line.rstrip("\r\n")
                if not line.strip() or line.startswith(("#", "track ", "browser ")):
                    continue
                where = f"regions file {name}, line {number}"
                cols = line.split("\t")
                if len(cols) == 1:
                    regions.append(parse_region(cols[0], where))
                    continue
                start = _position(cols[1], where)
                stop = _position(cols[2], where) if len(cols) > 2 and cols[2] else start
                if bed:
                    start += 1  # BED: 0-based start, exclusive end
                if start < 1 or stop < start:
                    raise GenotileError(f"{where}: empty region {line!r}")
                regions.append(Region(cols[0], start, stop))
    except OSError as exc:
        raise GenotileError(f"regions file {name}: cannot read: {exc.strerror or exc}") from None
    if not regions:
        raise GenotileError(f"regions file {name}: no regions")
    return regions


def parse_regions(regions) -> list[Region]:
    """Regions from a file path, a comma-separated string or a list of strings."""
    if isinstance(regions, (str, os.PathLike)) and os.path.isfile(regions):
        return _region_file(regions)
    if isinstance(regions, str):
        regions = regions.split(",")
    out = [parse_region(str(r)) for r in regions if str(r).strip()]
    if not out:
        raise GenotileError("regions: no regions given")
    return out


def merge_regions(regions: list[Region]) -> list[Region]:
    """Overlapping or adjacent regions of a contig merged, so no record is read twice."""
    merged: list[Region] = []
    for r in sorted(regions, key=lambda r: (r.chrom, r.start)):
        last = merged[-1] if merged else None
        if last and last.chrom == r.chrom and r.start <= last.end + 1:
            merged[-1] = Region(r.chrom, last.start, max(last.end, r.end))
        else:
            merged.append(r)
    return merged


def regions_in(regions: list[Region], contigs, path, stats: dict) -> list[Region]:
    """The regions on a contig of the file, in the given order; the others counted in
    `stats["regions_unknown_contig"]`. None left: a GenotileError naming the file and a few of its
    contigs (every genotype reader refuses it so)."""
    known = set(contigs)
    chosen = [r for r in regions if r.chrom in known]
    stats["regions_unknown_contig"] = len(regions) - len(chosen)
    if not chosen:
        raise GenotileError(
            f"{path}: no region's contig is in the file (e.g. {regions[0].chrom!r}; the file has {sorted(known)[:5]})"
        )
    return chosen


# -- the contigs PLINK counts: ibs and king read autosomes only by default --------------------

CHROMOSOMES = ("autosomes", "all")  # the genotype option `chromosomes`
AUTOSOMES = frozenset(str(k) for k in range(1, 23))
# every name of an autosome: 1-22, bare or after `chr` in any case (8 spellings): 198 names. A
# set, not a rule, so that the VCF fast path's compiled kernel (io/vcf_kernels.py) looks a
# CHROM up in the very names every reader asks `is_autosome` about
AUTOSOME_NAMES = frozenset(
    "".join(prefix) + name for prefix in [(), *itertools.product("cC", "hH", "rR")] for name in AUTOSOMES
)


def is_autosome(contig: str) -> bool:
    """A human autosome as PLINK names one: 1-22, with or without a `chr` prefix (any case).

    >>> [is_autosome(c) for c in ("1", "chr22", "CHR7", "X", "chrX", "23", "MT", "chr1_KI270706v1_random")]
    [True, True, True, False, False, False, False, False]
    >>> len(AUTOSOME_NAMES)
    198
    """
    return contig in AUTOSOME_NAMES


def check_chromosomes(value) -> str:
    """The `chromosomes` option checked: "autosomes" (PLINK's default) or "all"."""
    if value not in CHROMOSOMES:
        raise GenotileError(f"chromosomes must be one of {', '.join(CHROMOSOMES)}, not {value!r}")
    return value


def no_autosome(path, contigs) -> GenotileError:
    """The refusal of an input whose every variant is on a contig other than autosomes 1-22."""
    shown = sorted(set(contigs))[:5]
    return GenotileError(
        f"{path}: no variant on an autosome (1-22, as PLINK counts ibs and king; contigs {shown}): "
        "set `chromosomes: all` to read every contig (a non-human genome, or chrX on purpose)"
    )
