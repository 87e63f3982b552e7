"""PLINK filesets as genotype input: PLINK 1 (.bed/.bim/.fam) and PLINK 2 (.pgen/.pvar/.psam).

A fileset is named by its genotype file (`x.bed` or `x.pgen`); its files and its sample and
variant tables are plink_tables.py's. Genotypes are read by pgenlib (PLINK 2's own reader, on
PyPI as `pgenlib`), which reads both formats, a block of variants at a time, as int8 allele
counts (-9 missing) straight from the 2-bit records: no text step. `PlinkReader` (.pgen; bed.BedReader for a .bed, which
reads a whole .bed with numpy) yields the same (variant IDs, codes) blocks as the VCF reader
(vcf.VcfReader): a GenotypeReader (base.py), so ingest treats them alike.

Orientation: codes count the ALT allele, as in a VCF. In a .pgen that is allele 1 of
the .pvar's ALT column; in a .bed it is A1 (the .bim's 5th column), which is what PLINK 2
reads as ALT and writes there (`plink2 --vcf x --make-bed`): pgenlib counts allele 1 in
both. (PLINK 1.9 without --keep-allele-order sets A1 to the minor allele: ibs and king do
not change when the alleles trade places; ccc2 and ccc3 do, their 0 and 1 entries swapped.)

Sample IDs are the sample table's (plink_tables.SampleTable); the selected samples' FIDs and
IIDs are kept (`fids`, `iids`) for writers that want PLINK's own columns.
Variant IDs (ccc2, ccc3): the ID column, or CHROM:POS:REF:ALT where it is '.', as for a VCF.

The VCF options apply: `samples` (output IDs, one per line, selects and orders),
`regions` (by CHROM and POS, from the variant file; no index needed), `filter_pass`
(a .pvar FILTER column; a .bim has none, so every variant passes, as '.' does in a VCF),
`multiallelic` (.pgen: skip, or split into one ALT-vs-rest variant per ALT), `chromosomes`
(autosomes 1-22 by default, as PLINK's ibs and king; a .bim of autosomes only is not parsed, so a
whole .bed stays on its own reader, bed.BedReader.plain; one with other contigs is read as the
regions of its autosomes, the rest counted in `non_autosomal_skipped`).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from genotile.core.encode import MISSING
from genotile.errors import GenotileError
from genotile.io.readers.base import GenotypeReader
from genotile.io.readers.plink_tables import (
    bim_contigs,
    count_lines,
    fileset,
    plink_format,
    read_samples,
    read_variants,
)
from genotile.io.readers.streamed import (
    EVERY_COLUMN,
    BedFile,
    PgenRecords,
    pgenlib_error,
    pgenlib_module,
    read_counts,
    warm_kernel,
)
from genotile.io.readers.vcf import STATS, check_record_options, read_sample_list
from genotile.io.regions import (
    END,
    Region,
    check_chromosomes,
    is_autosome,
    merge_regions,
    no_autosome,
    parse_regions,
    regions_in,
)

BLOCK_BYTES = 1 << 22  # int8 bytes of one block of variants x samples
CHUNK_BYTES = 1 << 24  # bytes of one sample-major buffer of write_sample_rows
MISSING_INT8 = 247  # pgenlib's missing call (-9) read as uint8


EVERY_BYTE_7 = np.uint64(0x0707070707070707)


def set_missing(flat: np.ndarray) -> int:
    """pgenlib's missing calls (-9, read as uint8 247) set to MISSING in place; returns their number.

    A byte's top 3 bits are all set only for 247 among 0, 1, 2 and 247: so, 8 bytes at a time,
    t = (x >> 5) & 0x07.. marks each missing byte with 7 and x | (t << 3) turns 247 into 255.
    """
    head = min(flat.size, -flat.ctypes.data % 8)  # bytes before the first 8-byte boundary
    body = (flat.size - head) // 8 * 8
    missing = 0
    for part in (flat[:head], flat[head + body :]):
        hit = part == MISSING_INT8
        missing += int(np.count_nonzero(hit))
        part[hit] = MISSING
    words = flat[head : head + body].view(np.uint64)
    step = BLOCK_BYTES // 8
    for w0 in range(0, words.size, step):
        x = words[w0 : w0 + step]
        t = np.right_shift(x, np.uint64(5))
        np.bitwise_and(t, EVERY_BYTE_7, out=t)
        missing += int(np.bitwise_count(t).sum()) // 3
        np.left_shift(t, np.uint64(3), out=t)
        np.bitwise_or(x, t, out=x)
    return missing


class PlinkReader(GenotypeReader):
    """Genotypes of a PLINK fileset, block by block, as vcf.VcfReader gives a VCF's: a .pgen's
    (bed.BedReader, this class's subclass, reads a .bed)."""

    kind = "plink2"
    suffixes = (".pgen",)
    what = "a PLINK fileset"

    @classmethod
    def kind_of(cls, path) -> str | None:
        """`kind` for a .pgen; a companion file of either PLINK format is refused by name."""
        return cls.kind if plink_format(path) == cls.kind else None

    @classmethod
    def input_files(cls, path) -> list[Path]:
        """The fileset: genotypes, variants, samples."""
        return fileset(path)

    @classmethod
    def companions(cls, path) -> dict[str, Path]:
        """{"plink .bim": path, ...}: the fileset's variant and sample files that exist."""
        return {f"plink {p.name[len(Path(path).stem) :]}": p for p in fileset(path)[1:] if p.is_file()}

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
        self.path = str(path)
        self.format = plink_format(path) or self.kind
        self.files = fileset(path)
        for f in self.files:
            if not f.is_file():
                raise GenotileError(f"{path}: PLINK fileset incomplete: {f} is missing")
        self.want_ids = True  # False: variant IDs are not made (ibs, king)
        self.stats = dict.fromkeys(STATS, 0)
        self.table = read_samples(self.files[2])
        self.file_samples = self.table.ids
        wanted = read_sample_list(samples)
        if wanted is None:
            self._subset, self._order, self.samples = None, None, self.file_samples
        else:
            index = {s: k for k, s in enumerate(self.file_samples)}
            absent = [s for s in wanted if s not in index]
            if absent:
                raise GenotileError(f"{path}: {len(absent)} requested sample(s) not in the file, e.g. {absent[:3]}")
            rows = np.array([index[s] for s in wanted], dtype=np.int64)
            self._subset = np.sort(rows).astype(np.uint32)  # pgenlib reads a subset in file order
            self._order = np.searchsorted(self._subset, rows)  # then the list's order, as bcftools -S
            self.samples = wanted
        pick = self._subset if self._subset is not None else slice(None)
        self.fids = None if self.table.fids is None else list(np.asarray(self.table.fids, dtype=object)[pick])
        self.iids = list(np.asarray(self.table.iids, dtype=object)[pick])
        if self._order is not None:
            self.fids = None if self.fids is None else [self.fids[k] for k in self._order]
            self.iids = [self.iids[k] for k in self._order]
        self.multiallelic, self.filter_pass = multiallelic, filter_pass
        self.regions = merge_regions(parse_regions(regions)) if regions is not None else None
        self._regions_given = self.regions is not None  # else the autosomes' regions, below
        self.variants = read_variants(self.files[1]) if self.format == "plink2" or self.regions is not None else None
        self.autosomes_only = False  # variants on other contigs are dropped (`_select`)
        if self.chromosomes == "autosomes":
            contigs = set(self.variants.chrom) if self.variants is not None else bim_contigs(self.files[1])
            self.autosomes_only = not all(map(is_autosome, contigs))
            if self.autosomes_only and not any(map(is_autosome, contigs)):
                raise no_autosome(self.path, contigs)
            if self.autosomes_only and self.regions is None:  # read as a selection: not `plain`
                self.regions = [Region(c, 1, END) for c in sorted(filter(is_autosome, contigs))]
        if self.variants is None and self.regions is not None:
            self.variants = read_variants(self.files[1])
        n_var = len(self.variants.ids) if self.variants is not None else count_lines(self.files[1])
        self.n_file_variants = n_var
        self._reader_args = self._check_genotypes(n_var)
        self.plan = self._select(n_var)

    def _check_genotypes(self, n_var: int) -> dict:
        """Open the genotype file once: its magic bytes, sample and variant counts checked by
        pgenlib (a .bed's by bed.BedReader)."""
        n_samples = len(self.file_samples)
        args: dict = {"raw_sample_ct": n_samples, "variant_ct": n_var}
        if self.format == "plink2" and self.variants is not None and max(map(len, self.variants.alts)) > 1:
            offsets = np.zeros(n_var + 1, dtype=np.uintp)
            offsets[1:] = np.cumsum([1 + len(a) for a in self.variants.alts])
            args = {"raw_sample_ct": n_samples, "variant_ct": n_var, "allele_idx_offsets": offsets}
        pgenlib = pgenlib_module()
        try:
            pgenlib.PgenReader(os.fsencode(self.path), **args).close()
        except RuntimeError as exc:
            raise pgenlib_error(self.path, exc) from None
        return args

    def open(self):
        """A pgenlib reader of the genotype file, limited to the selected samples."""
        pgenlib = pgenlib_module()
        reader = pgenlib.PgenReader(os.fsencode(self.path), **self._reader_args)
        if self._subset is not None:
            reader.change_sample_subset(self._subset)
        return reader

    def _select(self, n_var: int) -> tuple[np.ndarray, np.ndarray]:
        """(variant index, allele index) of every output variant, in output order; counts the rules."""
        st = self.stats
        st["records"] = n_var
        keep = np.ones(n_var, dtype=bool)
        v = self.variants
        if self._regions_given:
            assert self.regions is not None
            assert v is not None  # read whenever there are regions (__init__)
            chrom = np.asarray(v.chrom, dtype=object)
            inside = np.zeros(n_var, dtype=bool)
            chosen = regions_in(self.regions, v.chrom, self.path, st)
            for r in chosen:
                inside |= (chrom == r.chrom) & (v.pos >= r.start) & (v.pos <= r.end)
            keep &= inside
            st["records"] = int(inside.sum())
        if self.autosomes_only:
            assert v is not None
            names = sorted(set(v.chrom))
            auto = np.isin(np.asarray(v.chrom, dtype=object), [c for c in names if is_autosome(c)])
            st["non_autosomal_skipped"] = int((keep & ~auto).sum())
            if keep.any() and not (keep & auto).any():
                raise no_autosome(self.path, [c for c in names if not is_autosome(c)])
            keep &= auto
        if v is not None and v.filters is not None:
            failed = ~np.isin(np.asarray(v.filters, dtype=object), ["PASS", "."]) & keep
            st["filter_failed"] = int(failed.sum())
            if self.filter_pass:
                st["filter_skipped"] = st["filter_failed"]
                keep &= ~failed
        n_alts = np.array([len(a) for a in v.alts], dtype=np.int64) if v is not None else np.ones(n_var, np.int64)
        multi = (n_alts > 1) & keep
        if self.multiallelic == "skip":
            st["multiallelic_skipped"] = int(multi.sum())
            keep &= ~multi
            index = np.flatnonzero(keep)
            return index.astype(np.uint32), np.ones(index.size, dtype=np.uint32)
        st["multiallelic_split"] = int(multi.sum())
        st["split_variants"] = int(n_alts[multi].sum())
        index = np.flatnonzero(keep)
        reps = n_alts[index]
        variant = np.repeat(index, reps)
        allele = np.ones(variant.size, dtype=np.int64)
        starts = np.cumsum(reps) - reps
        allele = np.arange(variant.size) - np.repeat(starts, reps) + 1
        return variant.astype(np.uint32), allele.astype(np.uint32)

    def variant_ids(self, variant: np.ndarray, allele: np.ndarray) -> list[str]:
        """IDs of output variants: the ID column, or CHROM:POS:REF:ALT ('.' IDs and split variants)."""
        v = self.variants or read_variants(self.files[1])
        self.variants = v
        out = []
        for i, a in zip(variant.tolist(), allele.tolist(), strict=True):
            split = len(v.alts[i]) > 1
            if v.ids[i] != "." and not split:
                out.append(v.ids[i])
            else:
                out.append(f"{v.chrom[i]}:{v.pos[i]}:{v.ref[i]}:{v.alts[i][a - 1]}")
        return out

    def block_rows(self) -> int:
        return max(64, BLOCK_BYTES // max(1, len(self.samples)))

    def read_block(self, reader, variant: np.ndarray, allele: np.ndarray, out: np.ndarray) -> np.ndarray:
        """int8 allele counts (-9 missing) of the given output variants, (variants, samples), into out."""
        rows = out[: variant.size]
        read_counts(reader, variant, allele, rows, self.path)
        if self._order is not None:
            rows[:] = rows[:, self._order]
        return rows

    def count(self, block: np.ndarray) -> None:
        """The VCF reader's per-variant counts, from a block of int8 counts (-9 missing)."""
        u = block.view(np.uint8)
        st = self.stats
        missing = u == MISSING_INT8
        n_missing = int(np.count_nonzero(missing))
        top = block.max(axis=1)
        low = u.min(axis=1)  # -9 reads 247: a 0 or 1 is the lowest when present
        st["variants"] += block.shape[0]
        st["missing_calls"] += n_missing
        st["monomorphic"] += int(np.count_nonzero(~((low <= 1) & (top >= 1))))
        st["all_missing"] += int(np.count_nonzero(top < 0))

    def blocks(self, max_rows: int = 4096) -> Iterator[tuple[list, np.ndarray]]:
        """Yield (variant IDs or None, uint8 codes (variants, samples)) blocks, MISSING for missing."""
        variant, allele = self.plan
        rows = min(max_rows, self.block_rows())
        buf = np.empty((rows, len(self.samples)), dtype=np.int8)
        reader = self.open()
        try:
            for v0 in range(0, variant.size, rows):
                block = self.read_block(reader, variant[v0 : v0 + rows], allele[v0 : v0 + rows], buf)
                self.count(block)
                codes = block.view(np.uint8).copy()
                codes[codes == MISSING_INT8] = MISSING
                ids = self.variant_ids(variant[v0 : v0 + rows], allele[v0 : v0 + rows]) if self.want_ids else None
                ids = ids if ids is not None else [None] * block.shape[0]  # type: ignore[list-item]
                yield ids, codes
        finally:
            reader.close()

    @property
    def direct(self) -> bool:
        """Can write_sample_rows take this selection (no multi-allelic variant split)?"""
        return bool((self.plan[1] == 1).all())

    def write_sample_rows(self, out_path, threads: int = 2) -> int | None:
        """Write the (samples, variants) codes matrix of the selected variants as an .npy; return
        the number of variants (the `genotype` store's orientation), or None, nothing written,
        where a multi-allelic variant is split (not `direct`).

        pgenlib reads a range of variants at a time sample-major (its 2-bit transpose, in C) into
        a buffer of about CHUNK_BYTES, which is counted, has its missing calls (-9) set to
        MISSING, and is copied into its columns of the memory-mapped output; `threads` threads
        take the ranges in turn, each with its own reader. (Slabs of samples read straight into
        the output rows cost twice the CPU: every reader then extracts its subset of each record.)
        """
        from concurrent.futures import ThreadPoolExecutor

        if not self.direct:
            return None
        variant = self.plan[0]
        n_samples, n_var = len(self.samples), int(variant.size)
        if n_var == 0:
            return 0
        out = np.lib.format.open_memmap(out_path, mode="w+", dtype=np.uint8, shape=(n_samples, n_var))
        width = max(256, CHUNK_BYTES // n_samples)
        starts = list(range(0, n_var, width))
        threads = max(1, min(threads, len(starts)))
        # rows of a subset read come in file order; `samples:` may ask for another order
        order = None if self._order is None or (np.diff(self._order) > 0).all() else self._order

        def share(first: int, out=out) -> tuple[int, int, int]:
            missing = monomorphic = all_missing = 0
            reader = self.open()
            buf = np.empty((n_samples, width), dtype=np.uint8)
            try:
                for v0 in starts[first::threads]:
                    v = variant[v0 : v0 + width]
                    block = buf[:, : v.size] if v.size == width else np.empty((n_samples, v.size), dtype=np.uint8)
                    target = block.view(np.int8)
                    if int(v[-1]) - int(v[0]) + 1 == v.size:
                        reader.read_range(int(v[0]), int(v[-1]) + 1, target, sample_maj=True)
                    else:
                        reader.read_list(np.ascontiguousarray(v), target, sample_maj=True)
                    top = target.max(axis=0)  # -9 is the lowest
                    low = block.min(axis=0)  # -9 reads 247: a 0 or 1 is the lowest when present
                    monomorphic += int(np.count_nonzero(~((low <= 1) & (top >= 1))))
                    all_missing += int(np.count_nonzero(top < 0))
                    missing += set_missing(block.reshape(-1))
                    out[:, v0 : v0 + v.size] = block if order is None else block[order]
            except RuntimeError as exc:
                raise pgenlib_error(self.path, exc) from None
            finally:
                reader.close()
            return missing, monomorphic, all_missing

        with ThreadPoolExecutor(threads, thread_name_prefix="genotile-plink") as pool:
            parts = list(pool.map(share, range(threads)))
        del out, share  # no msync: the page cache has it, as a written file would
        st = self.stats
        st["variants"] += n_var
        st["missing_calls"] += sum(p[0] for p in parts)
        st["monomorphic"] += sum(p[1] for p in parts)
        st["all_missing"] += sum(p[2] for p in parts)
        return n_var

    def held_bits(self, threads: int = 2, device: bool = False):
        """Every sample's calls of the selected variants as the store job reads them: not yet, but
        in the one pass that writes its store (bed.write_streamed), its records made of pgenlib's
        counts (streamed.BedFile.pgen) and counted there (a split multi-allelic variant a record an
        ALT); None where no variant is left. A `samples:` list is read as pgenlib's subset, its
        samples put in the list's order as the records are made."""
        variant, allele = self.plan
        if not variant.size:
            return None
        columns = EVERY_COLUMN
        if self._order is not None and not (np.diff(self._order) > 0).all():
            columns = self._order.astype(np.int64)
        alleles = None if self.direct else allele.astype(np.uint32)
        records = PgenRecords(self.path, variant.astype(np.uint32), self._reader_args, self._subset, columns, alleles)
        bed = BedFile(self.path, len(self.samples), int(variant.size), pgen=records)
        # its pass's compiled kernels loaded meanwhile (on the GPU, the one making its records)
        warm_kernel(self.path, bed.record_bytes, transposer=not device)
        return bed

    def manifest_keys(self) -> dict:
        """The fileset's files, and FID / IID of each sample (vectors or fields) for PLINK-style outputs."""
        return {"fileset": [str(f) for f in self.files], "fids": self.fids, "iids": self.iids}
