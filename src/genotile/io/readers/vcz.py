"""VCF-Zarr input: the layout `bio2zarr vcf2zarr` writes and sgkit reads, read with zarr.

A .vcz directory is a Zarr group (format 2 or 3, whatever `zarr.open_group` reads) of arrays
(the VCF Zarr specification):

- call_genotype: int8 (variants, samples, ploidy), allele indices, -1 a missing allele, -2 no
  allele (a call of fewer alleles than the widest, e.g. the haploid "."); call_genotype_mask
  is not read, since the -1s are in call_genotype itself;
- sample_id (samples); contig_id (contigs) and variant_contig (variants), an index into it;
  variant_position (variants); variant_allele (variants, alleles), REF first, "" past the
  record's ALTs; variant_id (variants), "." for none;
- filter_id (filters) and variant_filter (variants, filters) bool, where the VCF had FILTERs
  (a record passes with PASS, or with no filter set: '.').

The rules, IDs, codes and counts are the VCF reader's (vcf.py, its DiploidCalls for the calls),
so a .vcz gives the store of the VCF it was made from: `multiallelic` skip or split, `filter_pass`,
`samples` (select and order), `regions` (by contig and position, no index needed), haploid and
polyploid calls refused naming record and sample. One thing a .vcz cannot tell: a record whose
FORMAT has no GT (which the VCF reader skips, `no_gt_skipped`) is stored by bio2zarr as missing
calls, and is read as such.
"""

import contextlib
import os
from collections.abc import Iterator

import numpy as np

from genotile.errors import GenotileError
from genotile.io.ids import check_ids, check_unique
from genotile.io.readers.base import GenotypeReader
from genotile.io.readers.vcf import NO_ALLELE, STATS, DiploidCalls, check_record_options, read_sample_list
from genotile.io.regions import check_chromosomes, is_autosome, merge_regions, no_autosome, parse_regions, regions_in

ARRAYS = ("call_genotype", "sample_id", "contig_id", "variant_contig", "variant_position", "variant_allele")


class VczReader(DiploidCalls, GenotypeReader):
    """Diploid genotypes of a VCF-Zarr store, block by block, as vcf.VcfReader gives a VCF's."""

    kind = "vcz"
    suffixes = (".vcz",)
    what = "a VCF-Zarr store"

    def __init__(
        self,
        path,
        multiallelic: str = "skip",
        filter_pass: bool = False,
        samples=None,
        regions=None,
        chromosomes: str = "autosomes",
    ):
        self.chromosomes = check_chromosomes(chromosomes)
        check_record_options(multiallelic, filter_pass)
        self.path, self.multiallelic, self.filter_pass = str(path), multiallelic, filter_pass
        self.format = self.kind
        self.want_ids = True
        self.stats = dict.fromkeys(STATS, 0)
        root = _open_group(self.path)
        with _reading(self.path, "the store's arrays"):
            self._open_arrays(root, samples, regions)

    def _open_arrays(self, root, samples, regions) -> None:
        """The samples, variants and their checks (a damaged array: `_reading` names it)."""
        path = self.path
        self._gt = root["call_genotype"]
        if self._gt.ndim != 3:
            raise GenotileError(f"{path}: call_genotype has shape {self._gt.shape}, not (variants, samples, ploidy)")
        self.file_samples = _sample_ids(root)
        if not self.file_samples:
            raise GenotileError(f"{path}: no samples: genotype metrics need sample columns")
        check_ids(self.file_samples, path, "sample")
        check_unique(self.file_samples, path, "sample")
        wanted = read_sample_list(samples)
        if wanted is None:
            self._cols: np.ndarray | None = None
            self.samples = self.file_samples
        else:
            index = {s: k for k, s in enumerate(self.file_samples)}
            absent = [s for s in wanted if s not in index]
            if absent:
                raise GenotileError(f"{path}: {len(absent)} requested sample(s) not in the file, e.g. {absent[:3]}")
            self._cols, self.samples = np.array([index[s] for s in wanted], dtype=np.int64), wanted
        self.regions = merge_regions(parse_regions(regions)) if regions is not None else None
        self.contigs = [str(c) for c in root["contig_id"][:]]
        self.contig = np.asarray(root["variant_contig"][:], dtype=np.int64)
        self.pos = np.asarray(root["variant_position"][:], dtype=np.int64)
        self.alleles = np.asarray(root["variant_allele"][:]).astype(object)
        self.ids = np.asarray(root["variant_id"][:]).astype(object) if "variant_id" in root else None
        n = self._gt.shape[0]
        if not (self.contig.shape == self.pos.shape == (n,) and self.alleles.ndim == 2 and len(self.alleles) == n):
            raise GenotileError(f"{path}: its variant arrays do not have call_genotype's {n} variants")
        bad = np.flatnonzero((self.contig < 0) | (self.contig >= len(self.contigs)))
        if bad.size:
            k = int(bad[0])
            raise GenotileError(
                f"{path}: variant {k} (position {int(self.pos[k])}) has contig index {int(self.contig[k])}, "
                f"but contig_id holds {len(self.contigs)} contig(s)"
            )
        self.failed = _failed_filters(root, n, path)
        self.plan = self._select()

    def _select(self) -> tuple[np.ndarray, np.ndarray]:
        """(record, ALT index) of every output variant, in output order; counts the rules."""
        st = self.stats
        records = np.arange(self.pos.size)
        if self.regions is not None:
            rank = {name: k for k, name in enumerate(self.contigs)}
            chosen = regions_in(self.regions, rank, self.path, st)
            parts = [
                np.flatnonzero((self.contig == rank[r.chrom]) & (self.pos >= r.start) & (self.pos <= r.end))
                for r in sorted(chosen, key=lambda r: (rank[r.chrom], r.start))
            ]
            records = np.concatenate(parts)
        st["records"] = int(records.size)
        if self.chromosomes == "autosomes":  # PLINK's default (io/regions.is_autosome)
            auto = np.array([is_autosome(c) for c in self.contigs], dtype=bool)[self.contig[records]]
            st["non_autosomal_skipped"] = int((~auto).sum())
            if records.size and not auto.any():
                raise no_autosome(self.path, [self.contigs[c] for c in np.unique(self.contig[records])])
            records = records[auto]
        failed = self.failed[records]
        st["filter_failed"] = int(failed.sum())
        if self.filter_pass:
            st["filter_skipped"] = st["filter_failed"]
            records = records[~failed]
        n_alts = self._n_alts(records)
        multi = n_alts > 1
        if self.multiallelic == "skip":
            st["multiallelic_skipped"] = int(multi.sum())
            records = records[~multi]
            return records, np.ones(records.size, dtype=np.int16)
        st["multiallelic_split"] = int(multi.sum())
        st["split_variants"] = int(n_alts[multi].sum())
        reps = np.maximum(n_alts, 1)
        starts = np.cumsum(reps) - reps
        allele = np.arange(int(reps.sum())) - np.repeat(starts, reps) + 1
        return np.repeat(records, reps), allele.astype(np.int16)

    def _n_alts(self, records: np.ndarray) -> np.ndarray:
        """ALT alleles of each record (the non-empty alleles after REF)."""
        return (self.alleles[records, 1:] != "").sum(axis=1).astype(np.int16)

    def _calls(self, records: np.ndarray) -> np.ndarray:
        """int16 (records, samples, ploidy) allele slots of the records, in output sample order."""
        lo, hi = int(records.min()), int(records.max()) + 1
        with _reading(self.path, f"call_genotype (records {lo}-{hi - 1})"):
            if hi - lo <= 2 * records.size:  # a run of records (the usual case): one slice, read once
                gt = np.asarray(self._gt[lo:hi])[records - lo]
            else:
                wanted = np.unique(records)
                gt = np.asarray(self._gt.get_orthogonal_selection((wanted,)))[np.searchsorted(wanted, records)]
        if self._cols is not None:
            gt = gt[:, self._cols]
        return gt.astype(np.int16)

    def blocks(self, max_rows: int = 4096) -> Iterator[tuple[list, np.ndarray]]:
        """Yield (variant IDs, uint8 codes (variants, samples)) blocks of at most max_rows."""
        record, allele = self.plan
        rows = self._block_rows(max_rows)
        for b0 in range(0, record.size, rows):
            rec, k = record[b0 : b0 + rows], allele[b0 : b0 + rows]
            gt = self._calls(rec)
            where = [
                f"{self.contigs[c]}:{p}" for c, p in zip(self.contig[rec].tolist(), self.pos[rec].tolist(), strict=True)
            ]
            codes = self._codes(self._diploid(gt, where), k, self._n_alts(rec), where)
            yield (self._variant_ids(rec, k, where) if self.want_ids else [None] * rec.size), codes

    def _diploid(self, gt: np.ndarray, where: list[str]) -> np.ndarray:
        """Two allele slots per call (records, samples, 2); a call of more alleles is an error, as
        the VCF reader finds it: the first such record, its widest call's width."""
        if gt.shape[2] > 2:
            used = gt[:, :, 2:] != NO_ALLELE
            poly = np.flatnonzero(used.any(axis=(1, 2)))
            if poly.size:
                r = int(poly[0])
                width = 2 + int((np.flatnonzero(used[r].any(axis=0)).max()) + 1)
                self._polyploid(where[r], int(np.flatnonzero(used[r].any(axis=1))[0]), width)
            return gt[:, :, :2]
        if gt.shape[2] == 1:  # a haploid file: every call one allele or "."
            return np.concatenate([gt, np.full_like(gt, NO_ALLELE)], axis=2)
        return gt

    def _variant_ids(self, records: np.ndarray, alt: np.ndarray, where: list[str]) -> list[str]:
        """The ID column, or CHROM:POS:REF:ALT ('.' IDs and split variants), as the VCF reader names them."""
        out = []
        for r, k, name in zip(records.tolist(), alt.tolist(), where, strict=True):
            alleles = [a for a in self.alleles[r] if a]
            ref, alts = alleles[0], alleles[1:]
            given = None if self.ids is None or self.ids[r] in (".", "") else self.ids[r]
            if len(alts) > 1:
                out.append(f"{name}:{ref}:{alts[k - 1]}")
            else:
                out.append(given or f"{name}:{ref}:{alts[0] if alts else '.'}")
        return out


@contextlib.contextmanager
def _reading(path: str, what: str):
    """Any error of zarr or its codecs while reading `what` (a damaged chunk, metadata that does not
    fit) as one GenotileError naming the store and what was read; genotile's own pass through."""
    try:
        yield
    except GenotileError:
        raise
    except Exception as exc:  # zarr and numcodecs raise their own types (RuntimeError, ValueError, ...)
        raise GenotileError(f"{path}: cannot read {what}: {type(exc).__name__}: {exc}") from None


def _open_group(path: str):
    """The store's root group, its VCF-Zarr arrays checked for."""
    try:
        import zarr
    except ImportError:
        raise GenotileError("VCF-Zarr input needs the zarr package: pip install zarr") from None
    if not os.path.exists(path):
        raise GenotileError(f"{path}: no such directory")
    if not os.path.isdir(path):
        raise GenotileError(f"{path}: a VCF-Zarr store is a directory (.vcz), not a file")
    try:
        root = zarr.open_group(path, mode="r")
        absent = [name for name in ARRAYS if name not in root]
    except Exception as exc:  # zarr says why in its own exception types
        raise GenotileError(f"{path}: not a readable Zarr group: {exc}") from None
    if absent:
        raise GenotileError(f"{path}: not a VCF-Zarr store: no {', '.join(absent)} array")
    return root


def _sample_ids(root) -> list[str]:
    return [str(s) for s in root["sample_id"][:]]


def sample_ids(path) -> list[str]:
    """The samples of a VCF-Zarr store (its sample_id array), its genotypes not read: what
    store/inputs.known_vectors counts before the store is made."""
    root = _open_group(str(path))
    with _reading(str(path), "sample_id"):
        return _sample_ids(root)


def _failed_filters(root, n: int, path) -> np.ndarray:
    """bool (variants,): a FILTER other than PASS set (False for all where no filters were stored)."""
    if "variant_filter" not in root or "filter_id" not in root:
        return np.zeros(n, dtype=bool)
    names = np.asarray(root["filter_id"][:]).astype(object)
    flags = np.asarray(root["variant_filter"][:], dtype=bool)
    if flags.shape != (n, names.size):
        raise GenotileError(f"{path}: variant_filter has shape {flags.shape}, not ({n}, {names.size})")
    return np.asarray(flags[:, names != "PASS"].any(axis=1))
