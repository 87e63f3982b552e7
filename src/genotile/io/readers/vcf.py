"""Streaming VCF/BCF genotype reader (cyvcf2 over htslib), with the rules a user relies on.

`VcfReader.blocks()` yields (variant IDs, codes) blocks, codes uint8 of shape
(variants, samples): g = number of ALT alleles of a diploid call (0, 1, 2), or
MISSING for `./.`, `.` and half-missing calls such as `./1`. The file is read one
record at a time, so memory is bounded by one block, never by the file.

Rules, applied in this order to each record and counted in `stats`:
  - CHROM not an autosome (1-22, with or without `chr`): skipped (`non_autosomal_skipped`),
    unless `chromosomes: all`. PLINK's ibs and king count autosomes only by default, and
    every male's chrX call is haploid;
  - no GT in FORMAT: skipped (`no_gt_skipped`);
  - FILTER neither PASS nor '.': counted (`filter_failed`), skipped only with
    `filter_pass=True` ('.' means no filter was applied; it passes, as in PLINK);
  - more than one ALT: skipped (`multiallelic: skip`), or split into one
    biallelic ALT-vs-rest variant per ALT, named CHROM:POS:REF:ALT (`split`);
  - haploid calls other than the missing `.`, polyploid calls, allele indices
    past the record's ALTs: GenotileError naming file, record and sample;
  - monomorphic and all-missing variants are kept (they change n for ibs), counted.
Duplicate sample IDs are an error. Variant IDs are the ID column, or
CHROM:POS:REF:ALT where it is '.'.

cyvcf2 was chosen over pysam by measured speed: its `genotype.array()` hands
over a whole record's alleles as one int16 array, where pysam needs a Python
call per sample (1,000 samples x 65,216 variants, to codes: cyvcf2 2.6 s from
.vcf.gz and 0.9 s from .bcf; pysam through its text form 3.3 s and 1.9 s;
pysam per sample ~18 s).

Text VCFs (plain, bgzip or gzip) are read by a fast path first (io/vcf_fast.py):
the common case -- GT the first FORMAT key, diploid calls with one-character
allele indices -- parsed from the decompressed bytes with numpy, the same IDs,
codes and stats as above (tests/io/test_vcf_fast.py), the contigs left out too
(`kept_contigs`, tests/io/test_vcf_contigs.py). From the first block of text
it does not handle (anything else, or any record these rules reject with an
error), cyvcf2 reads on, so every rule and error message is cyvcf2's. BCF and
`regions` always go through cyvcf2. (1,000 samples x 200,000 variants, msprime,
.vcf.gz, to codes, CPU seconds: fast path ~2.1; cyvcf2 ~10 with gt_types, and ~6.7 just
iterating the records -- htslib's parsing alone is over 2x `plink2 --make-pgen`, so no
cyvcf2 or pysam path can meet issue 3's ingest target.)
"""

import gzip
import os
from collections.abc import Iterator

import numpy as np

from genotile.core.encode import MISSING
from genotile.errors import GenotileError
from genotile.io.gzcheck import check_bgzf_end, diagnose, quiet_htslib
from genotile.io.ids import check_ids
from genotile.io.readers.base import GenotypeReader
from genotile.io.regions import (
    AUTOSOME_NAMES,
    check_chromosomes,
    merge_regions,
    no_autosome,
    parse_regions,
    regions_in,
)

FAST_PATH = True  # text VCFs through vcf_fast.py first (same output; False: cyvcf2 only)
BLOCK_BYTES = 1 << 26  # bound on the int16 allele buffer of one block (64 MiB)
MULTIALLELIC = ("skip", "split")


def check_record_options(multiallelic, filter_pass) -> None:
    """The genotype readers' record options (GENOTYPE_OPTIONS), refused in one line each: VCF,
    PLINK and VCF-Zarr alike."""
    if multiallelic not in MULTIALLELIC:
        raise GenotileError(f"multiallelic must be one of {', '.join(MULTIALLELIC)}, not {multiallelic!r}")
    if not isinstance(filter_pass, bool):
        raise GenotileError(f"filter_pass must be true or false, not {filter_pass!r}")


STATS = (
    "records",
    "variants",
    "no_gt_skipped",
    "filter_failed",
    "filter_skipped",
    "multiallelic_skipped",
    "multiallelic_split",
    "split_variants",
    "missing_calls",
    "half_missing_calls",
    "monomorphic",
    "all_missing",
    "regions_unknown_contig",
    "non_autosomal_skipped",
)
# the rules that leave records out, in words, with the key that keeps them (`left_out`)
LEFT_OUT = (
    ("non_autosomal_skipped", "on a contig other than autosomes 1-22 (`chromosomes: all` keeps them)"),
    ("multiallelic_skipped", "multi-allelic (`multiallelic: split` splits them)"),
    ("filter_skipped", "failing FILTER (`filter_pass: false` keeps them)"),
    ("no_gt_skipped", "without GT"),
)


def left_out(stats: dict) -> str | None:
    """The records the rules left out, in one phrase (the console's line at the end of the
    ingest); None where none was.

    >>> left_out({"records": 10, "non_autosomal_skipped": 3, "multiallelic_skipped": 1}).split(": ", 1)[0]
    '4 of 10 records left out'
    >>> left_out({"records": 10, "no_gt_skipped": 0}) is None
    True
    """
    parts = [(stats.get(key, 0), words) for key, words in LEFT_OUT if stats.get(key, 0)]
    if not parts:
        return None
    total = sum(n for n, _ in parts)
    return f"{total:,} of {stats.get('records', 0):,} records left out: " + ", ".join(f"{n:,} {w}" for n, w in parts)


# cyvcf2's genotype.array(): allele index >= 0, -1 = missing allele, -2 = no such
# allele (the call has fewer alleles than the widest call of the record)
MISSING_ALLELE, NO_ALLELE = -1, -2


def read_sample_list(samples) -> list[str] | None:
    """A list of sample IDs, or a file of them, one per line (blank lines ignored)."""
    if samples is None:
        return None
    if isinstance(samples, (str, os.PathLike)):
        try:
            with open(samples) as fh:
                names = [line.strip() for line in fh if line.strip()]
        except OSError as exc:
            raise GenotileError(f"samples file {samples}: cannot read: {exc.strerror}") from None
        where = f"samples file {samples}"
    else:
        names, where = [str(s) for s in samples], "samples"
    if not names:
        raise GenotileError(f"{where}: no sample IDs")
    seen = set()
    for name in names:
        if name in seen:
            raise GenotileError(f"{where}: sample {name!r} listed twice")
        seen.add(name)
    return names


def header_samples(path) -> list[str] | None:
    """Sample IDs of a VCF's #CHROM line (text, plain or gzip/BGZF, or a BCF's header text),
    read from the header alone: for errors htslib reports poorly, and to count a dataset's
    samples before its store (store/inputs.py). None where there is no such line to read."""
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rb") if gz else open(path, "rb") as fh:
            if fh.read(5)[:3] == b"BCF":  # magic, version, the header text's length, the text
                lines = iter(fh.read(int.from_bytes(fh.read(4), "little")).split(b"\n"))
            else:
                fh.seek(0)
                lines = iter(fh)
            for raw in lines:
                line = raw.decode(errors="replace").rstrip("\r\n\0")
                if line.startswith("#CHROM"):
                    return line.split("\t")[9:]
                if not line.startswith("##"):
                    return None
    except (OSError, EOFError):
        return None
    return None


def _open_error(path, exc) -> GenotileError:
    """Why htslib could not open `path`, said in one line."""
    if not os.path.exists(path):
        return GenotileError(f"{path}: no such file")
    if os.path.isdir(path):
        return GenotileError(f"{path}: is a directory, not a VCF/BCF file")
    names = header_samples(path)
    if names:
        seen: dict[str, int] = {}
        for col, name in enumerate(names, start=10):
            if not name.strip():
                return GenotileError(
                    f"{path}: empty sample ID in column {col} of the #CHROM line (a doubled or trailing tab?)"
                )
            if name in seen:
                return GenotileError(f"{path}: duplicate sample ID {name!r} (columns {seen[name]} and {col})")
            seen[name] = col
    hint = " (it looks like a FASTA file)" if _head(path, 1) == b">" else ""
    if _head(path, 3) == b"\xef\xbb\xbf":
        hint = " (it starts with a UTF-8 byte-order mark, which htslib does not skip: remove it)"
    hint += f" ({diagnose(path)})" if diagnose(path) else ""
    return GenotileError(f"{path}: not a readable VCF/BCF file{hint}: {exc}")


def _head(path, size: int) -> bytes:
    """The first bytes of a file, decompressed when it is gzip/BGZF; b"" when unreadable."""
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rb") if gz else open(path, "rb") as fh:
            return fh.read(size)
    except (OSError, EOFError):
        return b""


def _pos(rec) -> int:
    """A record's 1-based POS. cyvcf2's `POS` is a 32-bit int (a POS past 2^31 wraps, negative);
    `start` is htslib's 64-bit 0-based position, as the fast path reads POS from the text."""
    return rec.start + 1


def _sniff_format(path) -> str:
    return "bcf" if _head(path, 3) == b"BCF" else "vcf"


class DiploidCalls:
    """The rules of a record's calls, as allele slots (cyvcf2's genotype.array(), VCF-Zarr's
    call_genotype): two per sample, MISSING_ALLELE (-1) a missing allele, NO_ALLELE (-2) none
    (a haploid call); shared by the VCF and VCF-Zarr readers (vcz.py), which have `path`,
    `samples` (output order) and `stats`."""

    path: str
    samples: list[str]
    stats: dict

    def _block_rows(self, max_rows: int) -> int:
        """Rows of a block: at most `max_rows`, its int16 allele slots within BLOCK_BYTES."""
        return max(1, min(max_rows, BLOCK_BYTES // (4 * len(self.samples))))

    def _polyploid(self, where: str, sample: int, width: int):
        self._fail(where, sample, f"a call of {width} alleles (only diploid GT is supported)")

    def _fail(self, where: str, sample: int, what: str):
        raise GenotileError(f"{self.path}: record {where}, sample {self.samples[sample]!r}: {what}")

    def _codes(self, alleles, alt_index, n_alts, where) -> np.ndarray:
        """Allele slots -> ALT counts of each block row, every rule checked at once."""
        a0, a1 = alleles[..., 0], alleles[..., 1]
        bad = np.minimum(a0, a1) < NO_ALLELE  # an index no reader gives (a VCF-Zarr store written otherwise)
        if bad.any():
            r, s = np.argwhere(bad)[0]
            self._fail(where[r], s, f"allele index {min(a0[r, s], a1[r, s])}: not an allele, -1 (missing) or -2 (none)")
        haploid = a1 == NO_ALLELE
        bad = haploid & (a0 != MISSING_ALLELE)
        if bad.any():
            r, s = np.argwhere(bad)[0]
            self._fail(where[r], s, f"haploid call (allele {a0[r, s]}); only diploid GT is supported")
        bad = np.maximum(a0, a1) > n_alts[:, None]  # e.g. 0/2 at a site with one ALT
        if bad.any():
            r, s = np.argwhere(bad)[0]
            self._fail(where[r], s, f"allele index {max(a0[r, s], a1[r, s])} but {n_alts[r]} ALT allele(s)")
        missing = (a0 < 0) | (a1 < 0)
        k = alt_index[:, None]
        codes = (a0 == k).astype(np.uint8) + (a1 == k)
        codes[missing] = MISSING
        st = self.stats
        st["variants"] += codes.shape[0]
        st["missing_calls"] += int(missing.sum())
        st["half_missing_calls"] += int((((a0 == MISSING_ALLELE) != (a1 == MISSING_ALLELE)) & ~haploid).sum())
        called = ~missing
        has_ref = (called & (codes < 2)).any(axis=1)
        has_alt = (called & (codes > 0)).any(axis=1)
        st["monomorphic"] += int((~(has_ref & has_alt)).sum())
        st["all_missing"] += int((~called.any(axis=1)).sum())
        return codes


class VcfReader(DiploidCalls, GenotypeReader):
    """Diploid genotypes of a VCF/BCF, block by block; see the module docstring."""

    kind = "vcf"
    suffixes = (".vcf", ".vcf.gz", ".vcf.bgz", ".bcf")
    what = "a VCF/BCF"

    def __init__(
        self,
        path,
        multiallelic: str = "skip",
        filter_pass: bool = False,
        samples=None,
        regions=None,
        chromosomes: str = "autosomes",
        fast: bool | None = None,
    ):
        try:
            import cyvcf2
        except ImportError:
            raise GenotileError("VCF/BCF input needs the cyvcf2 package: pip install cyvcf2") from None
        check_record_options(multiallelic, filter_pass)
        self.path, self.multiallelic, self.filter_pass = str(path), multiallelic, filter_pass
        self.fast = FAST_PATH if fast is None else fast  # False: cyvcf2 for every record
        self.want_ids = True  # False: the fast path may yield None for variant IDs (callers that drop them)
        self.fast_records = 0  # records the fast path took (the rest came from cyvcf2)
        quiet_htslib()  # its errors are reported here, one line each
        check_bgzf_end(self.path)
        try:
            vcf = cyvcf2.VCF(self.path, lazy=True)
        except Exception as exc:  # htslib reports through OSError or a bare Exception
            raise _open_error(self.path, exc) from None
        try:
            all_samples = list(vcf.samples)
        except UnicodeDecodeError as exc:
            raise GenotileError(
                f"{path}: a sample ID in the #CHROM line is not UTF-8 text ({exc.reason}, "
                f"byte 0x{exc.object[exc.start]:02x})"
            ) from None
        check_ids(all_samples, path, "sample")
        if not all_samples:
            raise GenotileError(f"{path}: no samples (a sites-only VCF): genotype metrics need sample columns")
        wanted = read_sample_list(samples)
        if wanted is not None:
            absent = [s for s in wanted if s not in set(all_samples)]
            if absent:
                raise GenotileError(f"{path}: {len(absent)} requested sample(s) not in the file, e.g. {absent[:3]}")
            vcf.close()
            vcf = cyvcf2.VCF(self.path, lazy=True, samples=wanted)
            # htslib keeps the file's order; put the columns in the list's order, as bcftools -S does
            col = {s: k for k, s in enumerate(vcf.samples)}
            self._order: np.ndarray | None = np.array([col[s] for s in wanted], dtype=np.int64)
            self.samples = wanted
        else:
            self._order, self.samples = None, all_samples
        self._vcf = vcf
        self.file_samples = all_samples  # every sample column of the file, in file order
        self.format = _sniff_format(self.path)
        self.stats = dict.fromkeys(STATS, 0)
        self.regions = merge_regions(parse_regions(regions)) if regions is not None else None
        # `chromosomes: autosomes`: each record's CHROM is looked up in the names kept (on the fast
        # path too), whatever contigs the header declares (htslib reads a record on an undeclared
        # contig with a warning: a chrX record is left out where the header names autosomes only)
        self.chromosomes = check_chromosomes(chromosomes)
        self.contig_filter = self.chromosomes == "autosomes"
        self.kept_contigs: frozenset[str] | None = AUTOSOME_NAMES if self.contig_filter else None
        self.skipped_contigs: set[str] = set()

    # -- records -------------------------------------------------------------------

    def _records(self):
        if self.regions is None:
            yield from self._vcf
            return
        self._check_index()
        chosen = regions_in(self.regions, self._vcf.seqnames, self.path, self.stats)
        rank = {name: k for k, name in enumerate(self._vcf.seqnames)}
        for region in sorted(chosen, key=lambda r: (rank[r.chrom], r.start)):
            for rec in self._query(region):
                # a record is selected by its POS, so no record is read twice
                if region.start <= _pos(rec) <= region.end:
                    yield rec

    def _check_index(self) -> None:
        """Refuse an index older than the data, which htslib only warns about (silenced here): a
        VCF rewritten beside its old index would be read at the old offsets, records lost."""
        data = os.stat(self.path).st_mtime_ns
        for index in (f"{self.path}.tbi", f"{self.path}.csi"):
            if os.path.isfile(index) and os.stat(index).st_mtime_ns < data:
                raise GenotileError(
                    f"{index}: index older than the data file {self.path} (was the file rewritten?): "
                    "index it again (`bcftools index -f` or `tabix -f -p vcf`)"
                )

    def _query(self, region):
        records = self._vcf(region.htslib())  # a generator: the index loads at the first next()
        try:
            first = next(records)
        except StopIteration:
            return
        except AssertionError:  # cyvcf2's way of saying that no index could be loaded
            raise GenotileError(
                f"{self.path}: regions need an index beside the file (.tbi or .csi): "
                "bgzip it and run `bcftools index` or `tabix -p vcf`"
            ) from None
        yield first
        yield from records

    def _checked(self, records: Iterator):
        """Records, with htslib's read errors (truncated or corrupt file) turned into one line."""
        last = "the header"
        while True:
            try:
                rec = next(records)
            except StopIteration:
                return
            except GenotileError:
                raise
            except Exception as exc:
                why = diagnose(self.path) or exc
                raise GenotileError(f"{self.path}: cannot read the record after {last}: {why}") from None
            last = f"{rec.CHROM}:{_pos(rec)}"
            yield rec

    # -- blocks --------------------------------------------------------------------

    def blocks(self, max_rows: int = 4096) -> Iterator[tuple[list[str], np.ndarray]]:
        """Yield (variant IDs, uint8 codes (variants, samples)) blocks of at most max_rows.

        Text VCFs go through the fast path (io/vcf_fast.py) first; from the first block of
        text it does not handle on, and for BCF or `regions`, records come from cyvcf2.
        """
        rows = self._block_rows(max_rows)
        skip = 0
        if self.fast and self.regions is None and self.format == "vcf":
            from genotile.io.vcf_fast import FastText

            fast = FastText(self)
            for block_ids, codes in fast.blocks():  # cut (not joined: no copy) to at most `rows`
                self.fast_records = fast.records
                for r0 in range(0, len(block_ids), rows):
                    yield block_ids[r0 : r0 + rows], codes[r0 : r0 + rows]
            self.fast_records = fast.records
            if fast.finished:
                self._some_autosome()
                return
            skip = fast.records
        yield from self._cyvcf2_blocks(max_rows, skip)

    def _cyvcf2_blocks(self, max_rows: int, skip: int = 0) -> Iterator[tuple[list[str], np.ndarray]]:
        """blocks() through cyvcf2, from the record after the first `skip` (already counted)."""
        n = len(self.samples)
        rows = self._block_rows(max_rows)
        alleles = np.empty((rows, n, 2), dtype=np.int16)
        alt_index = np.empty(rows, dtype=np.int16)
        n_alts = np.empty(rows, dtype=np.int16)
        ids: list[str] = []
        where: list[str] = []
        st = self.stats
        kept = self.kept_contigs
        for rec in self._checked(self._records()):
            if skip:
                skip -= 1
                continue
            st["records"] += 1
            if kept is not None and rec.CHROM not in kept:
                st["non_autosomal_skipped"] += 1
                self.skipped_contigs.add(rec.CHROM)
                continue
            gt = self._genotypes(rec)
            if gt is None:
                st["no_gt_skipped"] += 1
                continue
            if rec.FILTER is not None:  # cyvcf2: None for PASS and '.'
                st["filter_failed"] += 1
                if self.filter_pass:
                    st["filter_skipped"] += 1
                    continue
            alts = rec.ALT
            if len(alts) > 1:
                if self.multiallelic == "skip":
                    st["multiallelic_skipped"] += 1
                    continue
                st["multiallelic_split"] += 1
                st["split_variants"] += len(alts)
            gt = self._diploid(rec, gt)
            name = f"{rec.CHROM}:{_pos(rec)}"
            for k in range(1, len(alts) + 1) if len(alts) > 1 else (1,):
                row = len(ids)
                alleles[row] = gt
                alt_index[row], n_alts[row] = k, len(alts)
                if len(alts) > 1:
                    ids.append(f"{name}:{rec.REF}:{alts[k - 1]}")
                else:
                    ids.append(rec.ID or f"{name}:{rec.REF}:{alts[0] if alts else '.'}")
                where.append(name)
                if len(ids) == rows:
                    yield ids, self._codes(alleles, alt_index, n_alts, where)
                    ids, where = [], []
        if ids:
            yield ids, self._codes(alleles[: len(ids)], alt_index[: len(ids)], n_alts[: len(ids)], where)
        self._some_autosome()

    def _some_autosome(self) -> None:
        """At the end of the file: refuse one whose every record was left out by its CHROM."""
        if self.stats["non_autosomal_skipped"] and not self.stats["variants"]:
            raise no_autosome(self.path, self.skipped_contigs)

    def _genotypes(self, rec) -> np.ndarray | None:
        """cyvcf2's allele array of the record, None when FORMAT has no GT.

        The reader is lazy (records unpacked on demand, ~10% faster), and in that
        mode rec.FORMAT is only safe to read once the genotypes were asked for.
        """
        try:
            return rec.genotype.array()
        except Exception as exc:
            if "GT" not in rec.FORMAT:
                return None
            raise GenotileError(f"{self.path}: record {rec.CHROM}:{_pos(rec)}: unreadable GT: {exc}") from None

    def _diploid(self, rec, gt: np.ndarray) -> np.ndarray:
        """The record's two allele slots per sample (n, 2); polyploid calls are an error."""
        if self._order is not None:
            gt = gt[self._order]
        width = gt.shape[1] - 1  # the last column is the phase flag
        if width > 2:
            poly = np.flatnonzero((gt[:, 2:width] != NO_ALLELE).any(axis=1))
            self._polyploid(f"{rec.CHROM}:{_pos(rec)}", int(poly[0]), width)
        if width == 1:  # every call of the record has one allele: haploid or '.'
            return np.column_stack([gt[:, 0], np.full(gt.shape[0], NO_ALLELE, dtype=gt.dtype)])
        return gt[:, :2]

    def close(self) -> None:
        self._vcf.close()
