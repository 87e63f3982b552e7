"""Outputs in the formats of the tools users already have: PLINK 2 `.kin0`, PLINK 1.9
`.mdist` + `.mdist.id`, snp-dists' molten (`-m`) and CSV (`-c`) forms, and PLINK 2's
`--king-cutoff` ID lists.

Each writer takes arrays (the merge's own) and writes the bytes the peer tool writes for
the same data (README, "Peer formats", says what was compared with which version).
Numbers are printed as PLINK prints them (`plink_g`); the formats a dataset wants are
listed under its `formats:` key (`FORMATS` says which metric and files each one has).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from genotile.errors import GenotileError
from genotile.io.tsvgz import format_rows
from genotile.util.atomic import atomic_path

# -- PLINK's number printing ------------------------------------------------------------
#
# PLINK 1.9 and 2 print doubles with their own routine (dtoa_g), not printf: 6 significant
# digits, trailing zeros dropped, "e-05" / "e+06" exponents outside [1e-4, 1e6), `nan`, `inf`.
# It rounds half to even, and counts a fraction within 5e-9 of one half (after scaling to
# the 6 digits) as a tie, so a value that is a tie in exact arithmetic prints the same
# whichever way the last bit of its double went: 0.001171875 prints 0.00117188 where
# printf("%g") gives 0.00117187. What follows is that algorithm, step for step (the same
# scalings in the same order, so the same doubles), written from its description.

_TIE = (0.499999995, 0.500000005)  # added to the fraction of an even / odd integer part
# (bound, factor, exponent bit) of the scalings of a small (< 1e-4) or large (>= 1e6)
# number into [1, 10): multiply by 10^k or 10^-k when below 9.9999949999999e-k / at least
# 9.9999949999999e(k-1), just where 6 digits would round to the next power of ten
_SMALL = [(float(f"9.9999949999999e-{p}"), float(f"1e{p}"), p) for p in (256, 128, 64, 32, 16, 8, 4, 2, 1)]
_LARGE = [(float(f"9.9999949999999e{p - 1}"), float(f"1e-{p}"), p) for p in (256, 128, 64, 32, 16, 8, 4, 2, 1)]
# (upper bound, digits after the point) of a number in [1, 1e6), by its integer digits
_MIDDLE = [(9.9999949999999, 5), (99.999949999999, 4), (999.99949999999, 3), (9999.9949999999, 2), (99999.949999999, 1)]


def _round_even(x: np.ndarray) -> np.ndarray:
    """Each x >= 0 (below 2^31) rounded to an integer, half to even within the tie window."""
    whole = x.astype(np.int64)  # truncation, as C's cast
    return whole + ((x - whole) + np.where(whole & 1, _TIE[1], _TIE[0])).astype(np.int64)


_STR = np.dtypes.StringDType()


def _text(ints: np.ndarray, width: int = 0) -> np.ndarray:
    """Non-negative integers as decimal strings, zero-padded to `width`."""
    text = ints.astype(_STR)
    return np.strings.zfill(text, width) if width else text


def _fraction(digits: np.ndarray, places: int) -> np.ndarray:
    """'.ddd' of `digits` written in `places` decimals, trailing zeros dropped ('' for 0)."""
    text = np.strings.add(".", np.strings.rstrip(_text(digits, places), "0"))
    return np.where(digits > 0, text, "").astype(_STR)


def _join(*parts) -> np.ndarray:
    out = parts[0]
    for part in parts[1:]:
        out = np.strings.add(out, part)
    return out


def plink_g_array(values) -> np.ndarray:
    """Each value as PLINK 1.9 and 2 print a double (their dtoa_g): 6 significant digits.

    Parameters
    ----------
    values : (k,) float64 (any shape, read flat)

    Returns
    -------
    (k,) numpy StringDType array
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    out = np.empty(x.size, dtype=_STR)
    negative, y = x < 0, np.abs(x)
    nan, inf, zero = np.isnan(x), np.isinf(x), y == 0.0
    out[nan], out[inf & ~negative], out[inf & negative], out[zero] = "nan", "inf", "-inf", "0"
    finite = ~(nan | inf | zero)
    small = finite & (y < 9.9999949999999e-5)
    large = finite & (y >= 999999.49999999)
    middle = finite & (y >= 0.99999949999999) & ~large
    below_one = finite & ~small & ~large & ~middle  # 0.0001 <= y < 1: "0." and digits
    sign = np.where(negative, "-", "")  # fixed-width strings: indexed faster than StringDType

    for mask, steps, compare, mark in ((small, _SMALL, np.less, "e-"), (large, _LARGE, np.greater_equal, "e+")):
        idx = np.flatnonzero(mask)
        v, exponent = y[idx], np.zeros(idx.size, dtype=np.int64)
        for bound, factor, bit in steps:  # one scaling after another, as PLINK does
            hit = compare(v, bound)
            v[hit] *= factor
            exponent[hit] |= bit
        lead, rest = np.divmod(_round_even(v * 100000), 100000)
        out[idx] = _join(sign[idx], _text(lead), _fraction(rest, 5), mark, _text(exponent, 2))

    idx = np.flatnonzero(middle)
    places = np.zeros(idx.size, dtype=np.int64)  # decimals kept: 5 for [1, 10), ..., 0 from 99999.95
    for bound, p in reversed(_MIDDLE):
        places[y[idx] < bound] = p
    for p in np.unique(places).tolist():
        sub = idx[places == p]
        scaled = y[sub] * 10**p if p else y[sub]
        whole, frac = np.divmod(_round_even(scaled), 10**p)
        out[sub] = _join(sign[sub], _text(whole), _fraction(frac, p))

    idx = np.flatnonzero(below_one)
    v, zeros = y[idx], np.zeros(idx.size, dtype=np.int64)
    hit = v < 9.9999949999999e-3
    v[hit] *= 100
    zeros[hit] += 2
    hit = v < 9.9999949999999e-2
    v[hit] *= 10
    zeros[hit] += 1
    digits = np.strings.rstrip(_text(_round_even(v * 1000000), 6), "0")
    lead = np.array(["0.", "0.0", "0.00", "0.000"])[zeros]
    out[idx] = _join(sign[idx], lead, digits)
    return out


def plink_g(x: float) -> str:
    """`x` as PLINK prints it (`plink_g_array` of one value).

    >>> [plink_g(v) for v in (0.5, 0.001171875, -1 / 3, 2e-5, 1234567.0, float("-inf"))]
    ['0.5', '0.00117188', '-0.333333', '2e-05', '1.23457e+06', '-inf']
    """
    return str(plink_g_array([x])[0])


# -- which formats exist, for which metric, as which files --------------------------------


@dataclass(frozen=True)
class PeerFormat:
    name: str  # as listed under a dataset's `formats:`
    metrics: tuple[str, ...]  # metrics it is written for
    files: tuple[str, ...]  # under results/<dataset>/<metric>/
    dense: bool  # holds every pair: needs the dense matrix (n <= dense_max)
    peer: str  # the command whose output it reproduces


FORMATS = {
    f.name: f
    for f in (
        PeerFormat("kin0", ("king",), ("plink2.kin0",), False, "plink2 --make-king-table"),
        PeerFormat(
            "mdist", ("ibs",), ("plink.mdist", "plink.mdist.id"), True, "plink1.9 --distance square 1-ibs flat-missing"
        ),
        PeerFormat("snp-dists-molten", ("snp", "hamming"), ("snp-dists.molten.tsv",), True, "snp-dists -m"),
        PeerFormat("snp-dists-csv", ("snp", "hamming"), ("snp-dists.csv",), True, "snp-dists -b -c"),
    )
}
# relatedness outputs of king (dataset keys `king_degrees: true`, `king_cutoff: value`)
DEGREES_FILE = "degrees.tsv.gz"
# named after what they hold, not after plink2: the largest unrelated set genotile finds, which is
# plink2's own wherever plink2's greedy finds one as large and larger elsewhere (docs/outputs.md,
# Relatedness); in plink2's --king-cutoff format, so `plink2 --keep` reads them
KING_CUTOFF_FILES = ("king.unrelated.in.id", "king.unrelated.out.id")
DATASET_KEYS = ("formats", "king_degrees", "king_cutoff")  # a dataset's keys of these outputs
# PLINK's tables of all pairs of one set (a .kin0 of cross pairs would read as a whole cohort's,
# an .mdist is square): not written in query mode (issue 27), refused by name
QUERY_REFUSED = ("kin0", "mdist")


def check_dataset(name: str, spec: dict, king_threshold) -> None:
    """Refuse a dataset whose peer or relatedness outputs cannot be made, in one line."""
    metrics = spec.get("metrics", [])
    for fmt in spec.get("formats") or []:
        if fmt not in FORMATS:
            raise GenotileError(f"dataset {name}: unknown format {fmt!r}; known: {', '.join(FORMATS)}")
        if not set(FORMATS[fmt].metrics) & set(metrics):
            raise GenotileError(
                f"dataset {name}: format {fmt} is written for metric {' or '.join(FORMATS[fmt].metrics)}, "
                "which is not in its metrics"
            )
    for key in ("king_degrees", "king_cutoff"):
        if spec.get(key) not in (None, False) and "king" not in metrics:
            raise GenotileError(f"dataset {name}: {key} needs metric king in its metrics")
    if spec.get("against") is not None:  # query mode (issue 27): the cross pairs of two sets
        one_set = [f"formats: {f}" for f in spec.get("formats") or [] if f in QUERY_REFUSED]
        one_set += ["king_cutoff"] if spec.get("king_cutoff") is not None else []
        if one_set:
            raise GenotileError(
                f"dataset {name}: {', '.join(one_set)} describe all pairs of one set, not a query's cross "
                "pairs (against:); pairs.tsv.gz, matrix.tsv, snp-dists-molten, snp-dists-csv and king_degrees "
                "hold them"
            )
    cutoff = spec.get("king_cutoff")
    if cutoff is not None and king_threshold is not None and king_threshold > cutoff:
        raise GenotileError(
            f"dataset {name}: king_cutoff {cutoff} needs every pair above it, but thresholds: king "
            f"({king_threshold}) drops pairs below {king_threshold}; set the king threshold <= {cutoff} or null"
        )


def output_files(spec: dict, metric: str) -> tuple[list[str], bool]:
    """(file names under results/<dataset>/<metric>/, whether one needs the dense matrix)."""
    files: list[str] = []
    dense = False
    for fmt in spec.get("formats") or []:
        f = FORMATS[fmt]
        if metric in f.metrics:
            files += f.files
            dense |= f.dense
    if metric == "king":
        if spec.get("king_degrees"):
            files.append(DEGREES_FILE)
        if spec.get("king_cutoff") is not None:
            files += KING_CUTOFF_FILES
    return files, dense


def refuse_past_dense_max(dataset: str, spec: dict, metric: str, n_vectors: int, dense_max: int) -> None:
    """Formats holding every pair are made from the dense matrix: refuse them past dense_max."""
    wanted = [f for f in spec.get("formats") or [] if FORMATS[f].dense and metric in FORMATS[f].metrics]
    if wanted and n_vectors > dense_max:
        raise GenotileError(
            f"dataset {dataset}: format {wanted[0]} holds every pair, written only up to dense_max "
            f"({dense_max}) vectors; {metric} has {n_vectors} (raise dense_max or drop the format)"
        )


# -- writers ------------------------------------------------------------------------------


def check_plink_ids(out_path, *columns) -> None:
    """Refuse an ID holding whitespace in a PLINK output (.kin0, .mdist.id, the cut-off lists):
    PLINK reads these files split at any whitespace (`plink2 --keep`, --remove), so such an ID
    would be read as two (genotile's own TSV outputs keep it verbatim). PLINK itself refuses
    such IDs on import rather than rename them, and so does this: one line naming the ID."""
    for column in columns:
        if column is None:
            continue
        for name in column:
            if any(ch.isspace() for ch in str(name)):
                raise GenotileError(
                    f"{out_path}: ID {str(name)!r} contains whitespace, which PLINK reads as a column break: "
                    "rename the sample (bcftools reheader -s, or the .fam / .psam) or drop this format"
                )


def _write_lines(out_path, lines) -> None:
    with atomic_path(out_path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line)


def kin0_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row order of a .kin0: PLINK 2 writes pair (j, i), i < j, by j then i (the lower triangle)."""
    return np.lexsort((a, b))


def write_kin0(
    out_path,
    ids: Sequence[str],
    a: np.ndarray,
    b: np.ndarray,
    nsnp: np.ndarray,
    hethet: np.ndarray,
    ibs0: np.ndarray,
    kinship: np.ndarray,
    fids: Sequence[str] | None = None,
) -> int:
    """A .kin0 as `plink2 --make-king-table` writes it; returns the number of rows.

    Parameters
    ----------
    ids : the vectors' IDs (IIDs), length n
    a, b : (pairs,) int, vector indices of each pair, a < b
    nsnp, hethet, ibs0 : (pairs,) int, counts (genotile's king columns)
    kinship : (pairs,) float64
    fids : family IDs, length n, or None when the input has none (a VCF): then the header
        is ``#IID1 IID2 NSNP HETHET IBS0 KINSHIP``, else ``#FID1 IID1 FID2 IID2 ...``

    Rows are (later, earlier) in input order, by the later sample then the earlier, as PLINK 2
    writes its lower triangle; HETHET and IBS0 are proportions of NSNP computed as PLINK 2
    does ((1 / NSNP) * count; `nan` when NSNP is 0), every float printed by `plink_g`.
    """
    check_plink_ids(out_path, ids, fids)
    order = kin0_order(a, b)
    first, second = b[order], a[order]
    nsnp = np.asarray(nsnp)[order].astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        recip = 1.0 / nsnp.astype(np.float64)
        hethet_p = recip * np.asarray(hethet)[order].astype(np.float64)
        ibs0_p = recip * np.asarray(ibs0)[order].astype(np.float64)
    ids_arr = np.asarray(ids, dtype=_STR)
    columns = [ids_arr[first], ids_arr[second]]
    header = ["IID1", "IID2"]
    if fids is not None:
        fids_arr = np.asarray(fids, dtype=_STR)
        columns = [fids_arr[first], columns[0], fids_arr[second], columns[1]]
        header = ["FID1", "IID1", "FID2", "IID2"]
    columns += [
        _text(nsnp),
        plink_g_array(hethet_p),
        plink_g_array(ibs0_p),
        plink_g_array(np.asarray(kinship, dtype=np.float64)[order]),
    ]
    header_line = "#" + "\t".join([*header, "NSNP", "HETHET", "IBS0", "KINSHIP"]) + "\n"
    _write_lines(out_path, _rows(header_line, columns))
    return len(order)


def _rows(header_line: str, columns, chunk: int = 100_000):
    """The header, then the rows of string columns (numpy string arrays), tab-separated."""
    yield header_line
    n = len(columns[0]) if columns else 0
    for start in range(0, n, chunk):
        parts = [c[start : start + chunk] for c in columns]
        cells = [x for part in parts for x in (part, "\t")]
        cells[-1] = "\n"
        yield "".join(_join(*cells).tolist())


def write_mdist(mdist_path, id_path, ids: Sequence[str], matrix: np.ndarray, fids: Sequence[str] | None = None):
    """`.mdist` and `.mdist.id` as `plink1.9 --distance square 1-ibs flat-missing` writes them.

    Parameters
    ----------
    ids : sample IDs (IIDs), length n
    matrix : (n, n) float64 dist_1ibs, symmetric; the diagonal is written as 0 whatever it holds
        (PLINK writes 0 there, even for a sample without calls)
    fids : family IDs, or None: then FID = IID, as `plink1.9 --vcf ... --double-id` names samples

    The .mdist is n lines of n tab-separated `plink_g` values; the .mdist.id n lines `FID<TAB>IID`.
    """
    n = len(ids)
    if matrix.shape != (n, n):
        raise ValueError(f"{mdist_path}: matrix of shape {matrix.shape} for {n} IDs")
    fids = ids if fids is None else fids
    check_plink_ids(id_path, ids, fids)

    def lines():
        for i, row in enumerate(matrix):
            cells = plink_g_array(row)
            cells[i] = "0"
            yield "\t".join(cells.tolist()) + "\n"

    _write_lines(mdist_path, lines())
    _write_lines(id_path, (f"{f}\t{i}\n" for f, i in zip(fids, ids, strict=True)))


def write_snp_dists_molten(
    out_path, ids: Sequence[str], matrix: np.ndarray, columns: Sequence[str] | None = None
) -> None:
    """`snp-dists -m`: one line `id_i<TAB>id_j<TAB>distance` for every ordered pair (i, j),
    i = 0..n-1 then j = 0..n-1 (the self pairs included), no header.

    Parameters
    ----------
    ids : sequence IDs, length n
    matrix : (n, n) integer distances; a query's (n, r) rectangle with `columns`
    columns : sequence IDs, length r, optional
        A query's FILE IDs (issue 27): one line for every (input, FILE) pair, input-major.
    """
    names = np.asarray(ids if columns is None else columns, dtype=object)

    def lines():
        for name, row in zip(ids, format_rows(matrix), strict=True):
            cells = zip(names, row.split("\t"), strict=True)
            yield "".join(f"{name}\t{other}\t{value}\n" for other, value in cells)

    _write_lines(out_path, lines())


def write_snp_dists_csv(out_path, ids: Sequence[str], matrix: np.ndarray, columns: Sequence[str] | None = None) -> None:
    """`snp-dists -b -c`: the square matrix, comma-separated, an empty top-left cell.

    Parameters
    ----------
    ids : sequence IDs, length n (written as they are: snp-dists does not quote either)
    matrix : (n, n) integer distances; a query's (n, r) rectangle with `columns`
    columns : sequence IDs, length r, optional
        A query's FILE IDs (issue 27), the header row.
    """

    def lines():
        yield ",".join(["", *(ids if columns is None else columns)]) + "\n"
        for name, row in zip(ids, format_rows(matrix), strict=True):
            yield name + "," + row.replace("\t", ",") + "\n"

    _write_lines(out_path, lines())


def write_king_cutoff_ids(in_path, out_path, ids: Sequence[str], keep: np.ndarray, fids=None) -> None:
    """The unrelated set's lists, kept (`in_path`) and removed (`out_path`), in the form of
    `plink2 --king-cutoff`'s `.king.cutoff.in.id` / `.out.id`: a `#IID` header (`#FID<TAB>IID`
    with family IDs), then one sample a line in input order.

    Parameters
    ----------
    ids : sample IDs, length n
    keep : (n,) bool, True for the samples of the unrelated set
    fids : family IDs, or None (no FID column, as PLINK 2 for a VCF)
    """
    check_plink_ids(in_path, ids, fids)
    header = "#IID\n" if fids is None else "#FID\tIID\n"
    names = list(ids) if fids is None else [f"{f}\t{i}" for f, i in zip(fids, ids, strict=True)]
    for path, wanted in ((in_path, True), (out_path, False)):
        _write_lines(path, [header, *(f"{n}\n" for n, k in zip(names, keep.tolist(), strict=True) if k == wanted)])
