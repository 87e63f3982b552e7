"""A PLINK fileset's files and text tables: the sample table (.fam / .psam) and the variant
table (.bim / .pvar, or a zstd-compressed .pvar.zst).

A fileset is named by its genotype file (`x.bed` or `x.pgen`); its companions are the
files of the same prefix (`x.bim` + `x.fam`, or `x.pvar` / `x.pvar.zst` + `x.psam`), and a
companion named in its place is refused by name (`plink_format`).

Sample IDs: the IID when every FID is 0 or the .psam has no FID column, else FID_IID,
which is the ID `plink2 --export vcf` writes (its default id-paste=maybefid,iid). Both
are kept (`SampleTable.fids`, `SampleTable.iids`).

The genotypes themselves are read by plink.PlinkReader (pgenlib) and bed.BedReader (numpy).
"""

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genotile.errors import GenotileError
from genotile.io.ids import check_ids

GENOTYPE_SUFFIXES = {".bed": "plink1", ".pgen": "plink2"}
COMPANION_SUFFIXES = {".bim": ".bed", ".fam": ".bed", ".pvar": ".pgen", ".pvar.zst": ".pgen", ".psam": ".pgen"}


def _suffix(path) -> str:
    name = str(path).lower()
    return ".pvar.zst" if name.endswith(".pvar.zst") else os.path.splitext(name)[1]


def plink_format(path) -> str | None:
    """The fileset's format: "plink1" for a .bed, "plink2" for a .pgen, None for anything else.

    A companion file (.bim, .fam, .pvar, .psam) is refused by name: the fileset is named by
    its genotype file.
    """
    suffix = _suffix(path)
    if suffix in COMPANION_SUFFIXES:
        stem = str(path)[: -len(suffix)]
        raise GenotileError(
            f"{path}: a PLINK {suffix} file; name the fileset by its genotype file ({stem}{COMPANION_SUFFIXES[suffix]})"
        )
    return GENOTYPE_SUFFIXES.get(suffix)


def fileset(path) -> list[Path]:
    """The files of the PLINK fileset named by `path` (.bed or .pgen): genotypes, variants, samples."""
    path = Path(path)
    fmt = plink_format(path)
    if fmt is None:
        raise GenotileError(f"{path}: not a PLINK genotype file (.bed or .pgen)")
    stem = str(path)[: -len(path.suffix)]
    if fmt == "plink1":
        return [path, Path(stem + ".bim"), Path(stem + ".fam")]
    pvar = Path(stem + ".pvar")
    if not pvar.exists() and Path(stem + ".pvar.zst").exists():
        pvar = Path(stem + ".pvar.zst")
    return [path, pvar, Path(stem + ".psam")]


@dataclass(frozen=True)
class SampleTable:
    """The samples of a .fam / .psam: FIDs (None when absent), IIDs and the IDs genotile uses."""

    fids: list[str] | None
    iids: list[str]

    @property
    def ids(self) -> list[str]:
        return list(self._ids)  # a list of the caller's own

    @functools.cached_property
    def _ids(self) -> tuple[str, ...]:
        if self.fids is None or self.fids.count("0") == len(self.fids):  # every FID 0: at C speed
            return tuple(self.iids)
        return tuple(f"{f}_{i}" for f, i in zip(self.fids, self.iids, strict=True))


def read_samples(path) -> SampleTable:
    """FIDs and IIDs of a .fam (FID IID ... on every line) or .psam (#FID IID / #IID header)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()  # universal newlines: "\r\n" and "\r" read as "\n"
    except UnicodeDecodeError as exc:
        raise GenotileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise GenotileError(f"{path}: cannot read: {exc.strerror}") from None
    table = _fast_samples(text)
    if table is None:  # a header, "##" lines, blank lines or a short line: line by line
        table = _samples_by_line(path, text.split("\n"))
    if not table.iids:
        raise GenotileError(f"{path}: no samples")
    ids = table.ids
    check_ids(ids, path, "sample")
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise GenotileError(f"{path}: sample {dup!r} appears twice")
    return table


# A .fam line's first two fields (FID, IID): as str.split() finds them (any whitespace but the
# line's end separates fields).
_FAM_LINE = re.compile(r"^[^\S\n]*(\S+)[^\S\n]+(\S+)", re.M)


def _fast_samples(text: str) -> SampleTable | None:
    """The FIDs and IIDs of a .fam-shaped table (no header, no "##" or blank line, FID and IID on
    every line) in one regular-expression pass, at C speed: 1,000,000 samples in ~0.3 s where
    splitting each line took ~2 s. None for any other text (`_samples_by_line` reads it, and
    names the line at fault)."""
    if text.lstrip().startswith("#") or "\n#" in text:
        return None
    lines = text.count("\n") + (not text.endswith("\n"))
    found = _FAM_LINE.findall(text)
    if len(found) != lines or not found:  # a blank or short line (or an empty file)
        return None
    return SampleTable([fid for fid, _ in found], [iid for _, iid in found])


def _samples_by_line(path, lines: list[str]) -> SampleTable:
    """`read_samples`'s table from its lines, one at a time: a .psam's header names the columns;
    blank and "##" lines are skipped."""
    body = [(k, line) for k, line in enumerate(lines, start=1) if line.strip() and not line.startswith("##")]
    fid_col: int | None = 0  # .fam, and a .psam without a header line
    iid_col = 1
    if body and body[0][1].startswith("#"):
        header = body[0][1][1:].split()
        body = body[1:]
        if "IID" not in header:
            raise GenotileError(f"{path}: header line has no IID column: {' '.join(header)!r}")
        iid_col = header.index("IID")
        fid_col = header.index("FID") if "FID" in header else None
    fids: list[str] | None = [] if fid_col is not None else None
    iids: list[str] = []
    for k, line in body:
        fields = line.split()
        if len(fields) <= max(iid_col, fid_col or 0):
            raise GenotileError(f"{path}: line {k}: {len(fields)} column(s), expected FID and IID")
        iids.append(fields[iid_col])
        if fids is not None and fid_col is not None:  # both or neither
            fids.append(fields[fid_col])
    return SampleTable(fids, iids)


@dataclass
class VariantTable:
    """CHROM, POS, ID and alleles of each variant (.bim or .pvar), FILTER where a .pvar has it."""

    chrom: list[str]
    pos: np.ndarray  # int64
    ids: list[str]
    ref: list[str]
    alts: list[list[str]]
    filters: list[str] | None


def _open_text(path):
    if str(path).endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise GenotileError(
                f"{path}: a zstd-compressed .pvar needs the zstandard package (or decompress it: zstd -d)"
            ) from None
        import io

        return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open(path, "rb")), encoding="utf-8")
    return open(path, encoding="utf-8")


def read_variants(path) -> VariantTable:
    """The variant table of a .bim (CHROM ID CM POS A1 A2: ALT = A1, REF = A2) or a .pvar."""
    chrom: list[str] = []
    pos: list[int] = []
    ids: list[str] = []
    ref: list[str] = []
    alts: list[list[str]] = []
    filters: list[str] | None = None
    columns = ["CHROM", "ID", "CM", "POS", "ALT", "REF"]  # a .bim, or a .pvar without a header line
    c = {name: columns.index(name) for name in ("CHROM", "POS", "ID", "REF", "ALT")}
    try:
        with _open_text(path) as fh:
            for k, line in enumerate(fh, start=1):
                if line.startswith("##") or not line.strip():
                    continue
                if line.startswith("#") and not chrom:  # the header line of a .pvar
                    columns = line[1:].split()
                    absent = {"CHROM", "POS", "ID", "REF", "ALT"} - set(columns)
                    if absent:
                        raise GenotileError(f"{path}: line {k}: header line lacks {', '.join(sorted(absent))}")
                    c = {name: columns.index(name) for name in ("CHROM", "POS", "ID", "REF", "ALT")}
                    if "FILTER" in columns:
                        filters, c["FILTER"] = [], columns.index("FILTER")
                    continue
                fields = line.split()
                if len(fields) < len(columns):
                    raise GenotileError(f"{path}: line {k}: {len(fields)} column(s), expected {len(columns)}")
                try:
                    pos.append(int(fields[c["POS"]]))
                except ValueError:
                    raise GenotileError(f"{path}: line {k}: POS {fields[c['POS']]!r} is not a number") from None
                chrom.append(fields[c["CHROM"]])
                ids.append(fields[c["ID"]])
                ref.append(fields[c["REF"]])
                alts.append(fields[c["ALT"]].split(","))
                if filters is not None:
                    filters.append(fields[c["FILTER"]])
    except UnicodeDecodeError as exc:
        raise GenotileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise GenotileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not chrom:
        raise GenotileError(f"{path}: no variants")
    return VariantTable(chrom, np.array(pos, dtype=np.int64), ids, ref, alts, filters)


def count_lines(path) -> int:
    """Variants of a .bim without parsing it: its lines (a last line without a newline counted)."""
    n, last = 0, b"\n"
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 24), b""):
                n += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError as exc:
        raise GenotileError(f"{path}: cannot read: {exc.strerror}") from None
    n += last != b"\n"
    if n == 0:
        raise GenotileError(f"{path}: no variants")
    return n


def bim_contigs(path) -> set[str]:
    """The CHROM codes of a .bim (its first column), without parsing the rest of it: enough to
    tell whether `chromosomes: autosomes` drops anything (a .bim of autosomes only keeps the
    whole-.bed path, which reads no table)."""
    import re

    first = re.compile(rb"(?m)^[ \t]*([^\s]+)")
    found: set[bytes] = set()
    tail = b""
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 24), b""):
                text = tail + chunk
                cut = text.rfind(b"\n") + 1
                found.update(first.findall(text, 0, cut))
                tail = text[cut:]
    except OSError as exc:
        raise GenotileError(f"{path}: cannot read: {exc.strerror}") from None
    found.update(first.findall(tail))
    return {c.decode("utf-8", "replace") for c in found}
