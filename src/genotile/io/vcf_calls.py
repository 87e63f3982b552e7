"""A block's calls decoded into codes (ALT counts, MISSING) with numpy, in a worker thread.

A worker takes each call's first four characters (vcf_lines: at fixed offsets or after the
block's tabs) and decodes them at once with table lookups on the call's two 16-bit halves
((allele, separator), (allele, end)), in cache-sized batches; the stats of readers/vcf.py's `_codes`
are counted alongside. Records outside the common case (one ALT, diploid calls of 0, 1 and
'.') go through the reader's own `_codes`; anything it cannot take raises HandOver. The calls of
records left out by their CHROM (vcf_lines: `Lines.left_out`) are only checked: the calls the
fast path can read (one-character alleles, haploid or diploid), else HandOver, so that cyvcf2
reads the block and htslib refuses what it refuses (a record is parsed before its CHROM is asked).
"""

import numpy as np

from genotile.core.encode import MISSING
from genotile.io.vcf_lines import Lines
from genotile.io.vcf_spans import NL, TAB, HandOver

BATCH_CALLS = 1 << 16  # calls per table lookup
COLON, SLASH, PIPE, DOT = 58, 47, 124, 46


def _digits_lut() -> np.ndarray:
    """Allele character -> index: '0'-'9' -> 0..9, '.' -> -1 (missing), else -9."""
    lut = np.full(256, -9, dtype=np.int16)
    lut[ord("0") : ord("9") + 1] = np.arange(10)
    lut[DOT] = -1
    return lut


DIGITS = _digits_lut()
IS_SEP = np.zeros(256, dtype=bool)
IS_SEP[[SLASH, PIPE]] = True
IS_END = np.zeros(256, dtype=bool)  # what may follow a GT value
IS_END[[TAB, NL, COLON]] = True


BAD = 0x40  # a call's class at or above this is not the common case


def _class_luts():
    """Class of a call from its two 16-bit halves (allele, separator) and (allele, end).

    half 0: '0' 0, '1' 1, '.' 4 (with '/' or '|'), else 0x80; half 1: '0' 0, '1' 1, '.' 4
    (with a tab, newline or colon; `fixed`: tab or newline only), else 0x40. Their sum:
    0, 1, 2 = the ALT count; 4, 5 = half missing; 8 = missing; >= BAD: something else.
    """
    first = np.full(65536, 0x80, dtype=np.uint8)
    second = np.full(65536, 0x40, dtype=np.uint8)
    second_fixed = np.full(65536, 0x40, dtype=np.uint8)
    for char, value in ((b"0", 0), (b"1", 1), (b".", 4)):
        for sep in (SLASH, PIPE):
            first[char[0] | sep << 8] = value
        for end in (TAB, NL, COLON):
            second[char[0] | end << 8] = value
        for end in (TAB, NL):
            second_fixed[char[0] | end << 8] = value
    return first, second, second_fixed


FIRST, SECOND, SECOND_FIXED = _class_luts()


def _alleles(a, s, b, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first allele, second allele, readable) of calls from their first four characters a s b t:
    alleles as DIGITS (-1 missing; the second -2 for a haploid call, one allele and the end of
    the GT value); readable False for what the fast path does not read (two-digit alleles,
    polyploid calls, other characters)."""
    sep, end_s, end_t = IS_SEP[s], IS_END[s], IS_END[t]
    a0, a1 = DIGITS[a], DIGITS[b]
    a1[end_s] = -2
    return a0, a1, (a0 > -9) & ((sep & (a1 > -9) & end_t) | end_s)


def _batches(n_rows: int, n_cols: int):
    """Row ranges of about BATCH_CALLS calls: table lookups whose index temporaries stay in cache."""
    step = max(1, BATCH_CALLS // max(1, n_cols))
    return ((r0, min(n_rows, r0 + step)) for r0 in range(0, n_rows, step))


def _classify(pairs: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """(records, samples) uint8 classes of the calls (see _class_luts)."""
    n_rows, n_cols = pairs.shape[:2]
    raw = np.empty((n_rows, n_cols), dtype=np.uint8)
    for r0, r1 in _batches(n_rows, n_cols):
        p, out = pairs[r0:r1], raw[r0:r1]
        np.take(FIRST, p[..., 0], out=out)
        f = fixed[r0:r1]
        if f.all():
            out += np.take(SECOND_FIXED, p[..., 1])
        elif not f.any():
            out += np.take(SECOND, p[..., 1])
        else:
            second = np.take(SECOND, p[..., 1])
            second[f] = np.take(SECOND_FIXED, p[f][..., 1])
            out += second
    return raw


def _clean(raw: np.ndarray, st: dict) -> np.ndarray:
    """ALT counts of common-case calls from their classes (in place), and the stats of readers/vcf.py's _codes."""
    n_rows, n_cols = raw.shape
    n_missing = n_both = monomorphic = all_missing = 0
    for r0, r1 in _batches(n_rows, n_cols):
        rr = raw[r0:r1]
        lowest = rr.min(axis=1)
        has_ref = lowest <= 1  # a 0 or 1 call
        has_alt = (rr - np.uint8(1)).min(axis=1) <= 1  # a 1 or 2 call (0 wraps to 255)
        monomorphic += np.count_nonzero(~(has_ref & has_alt))
        all_missing += np.count_nonzero(lowest >= 4)
        missing = rr >= 4
        n_missing += np.count_nonzero(missing)
        n_both += np.count_nonzero(rr == 8)
        np.putmask(rr, missing, MISSING)  # the class is now the code
    st["variants"] += n_rows
    st["missing_calls"] += int(n_missing)
    st["half_missing_calls"] += int(n_missing - n_both)
    st["monomorphic"] += int(monomorphic)
    st["all_missing"] += int(all_missing)
    return raw


class CallDecoder:
    """Decodes the calls of a block's records (vcf_lines.Lines) for a reader: `nf` sample columns
    in the file, `cols` the file columns of the samples it reads (None: every one, in order)."""

    def __init__(self, reader, nf: int, cols: np.ndarray | None):
        self.r, self.nf, self.cols = reader, nf, cols

    def _calls(self, buf: bytes, lines: Lines) -> np.ndarray:
        """(records, file samples, 4) uint8: each call's first four characters.

        A GT-only line whose calls are all 3 characters is copied whole (`fixed`); other
        lines' calls start after the tabs of the block. A fixed line is checked in _codes:
        every 4th character must be a tab (the last the newline), else it is redone here.
        """
        nf, n_rec = self.nf, len(lines.ss)
        mv = memoryview(buf)
        if all(lines.fixed):
            joined = b"".join([mv[ss : le + 1] for ss, le in zip(lines.ss, lines.le, strict=True)])
            return np.frombuffer(joined, dtype=np.uint8).reshape(n_rec, nf, 4)
        calls = np.empty((n_rec, nf, 4), dtype=np.uint8)
        fixed = np.flatnonzero(lines.fixed)
        if fixed.size:
            joined = b"".join([mv[lines.ss[k] : lines.le[k] + 1] for k in fixed.tolist()])
            calls[fixed] = np.frombuffer(joined, dtype=np.uint8).reshape(fixed.size, nf, 4)
        self._gather(buf, lines, np.flatnonzero(~np.array(lines.fixed)), calls)
        return calls

    def _gather(self, buf: bytes, lines: Lines, rows: np.ndarray, calls: np.ndarray) -> None:
        """calls[rows] from the tab offsets of the block (any call width)."""
        if not rows.size:
            return
        nf = self.nf
        arr = np.frombuffer(buf, dtype=np.uint8)
        tabs = np.flatnonzero(arr == TAB)
        ss, le = np.asarray(lines.ss)[rows], np.asarray(lines.le)[rows]
        first, last = np.searchsorted(tabs, ss), np.searchsorted(tabs, le)
        if np.any(last - first != nf - 1):
            raise HandOver  # not one column per sample
        starts = np.empty((rows.size, nf), dtype=np.int64)
        starts[:, 0] = ss
        if nf > 1:
            starts[:, 1:] = tabs[first[:, None] + np.arange(nf - 1)] + 1
        padded = np.concatenate([arr, np.zeros(4, dtype=np.uint8)])
        for c in range(4):
            calls[rows, :, c] = padded[starts + c]

    def decode(self, buf: bytes, lines: Lines):
        """(codes, stats of the common-case rows, slow) of a block (in the worker thread).

        slow: None, or (output rows, arguments of `slow`) for the records outside the
        common case, which FastText._finish decodes in file order (they may raise, and _codes
        counts stats as it goes). HandOver if a line is not what it claimed to be.
        """
        n = len(self.r.samples)
        stats = dict.fromkeys(("variants", "missing_calls", "half_missing_calls", "monomorphic", "all_missing"), 0)
        if lines.left_out[0]:
            self._check_left_out(buf, lines)
        if not lines.ss:
            return np.zeros((0, n), dtype=np.uint8), stats, None
        calls = self._calls(buf, lines)
        fixed = np.array(lines.fixed)
        if self.cols is not None and fixed.any():
            # a fixed line's alignment is checked on every column, selected or not
            ends = np.full(self.nf, TAB, dtype=np.uint8)
            ends[-1] = NL
            bad = fixed.copy()
            bad[fixed] = (calls[fixed, :, 3] != ends).any(axis=1)
            if bad.any():
                calls = np.array(calls)
                fixed &= ~bad
                self._gather(buf, lines, np.flatnonzero(bad), calls)
        pairs = calls.view(np.uint16)  # (records, file samples, 2): (allele, sep), (allele, end)
        if self.cols is not None:
            pairs = pairs[:, self.cols]
        raw = _classify(pairs, fixed)
        redo = fixed & (raw.max(axis=1) >= BAD)
        if redo.any():  # a fixed-width guess that was wrong: find the calls by their tabs
            calls = np.array(calls)
            self._gather(buf, lines, np.flatnonzero(redo), calls)
            sub = calls[redo].view(np.uint16)
            raw[redo] = _classify(sub[:, self.cols] if self.cols is not None else sub, np.zeros(redo.sum(), bool))
        alts = np.array(lines.alts)
        clean = (raw.max(axis=1) < BAD) & (alts == 1)
        if clean.all():
            return _clean(raw, stats), stats, None
        rows = np.repeat(np.arange(alts.size), np.where(alts > 1, alts, 1))  # output row -> record
        out = np.empty((rows.size, n), dtype=np.uint8)
        keep = clean[rows]
        if keep.any():
            out[keep] = _clean(raw[clean], stats)
        slow = np.flatnonzero(~clean)
        sel = calls[slow] if self.cols is None else calls[slow][:, self.cols]
        return out, stats, (~keep, (*(sel[..., c] for c in range(4)), alts[slow]))

    def _check_left_out(self, buf: bytes, lines: Lines) -> None:
        """HandOver unless every selected call of the records left out by CHROM is one the fast
        path reads (found by the block's tabs: haploid calls are narrower)."""
        left = Lines()
        left.ss, left.le = lines.left_out
        calls = np.empty((len(left.ss), self.nf, 4), dtype=np.uint8)
        self._gather(buf, left, np.arange(len(left.ss)), calls)
        if self.cols is not None:  # htslib parses the selected samples' calls only
            calls = calls[:, self.cols]
        if not _alleles(*(calls[..., c] for c in range(4)))[2].all():
            raise HandOver

    def slow(self, a, s, b, t, alts) -> np.ndarray:
        """Records the common case does not cover, through the reader's own rules (readers/vcf.py _codes)."""
        a0, a1, valid = _alleles(a, s, b, t)
        if not valid.all():
            raise HandOver  # two-digit alleles, polyploid calls, other characters
        rows = np.repeat(np.arange(len(alts)), np.where(alts > 1, alts, 1))
        alt_index = np.concatenate([np.arange(1, k + 1) if k > 1 else [1] for k in alts]).astype(np.int16)
        alleles = np.stack([a0[rows], a1[rows]], axis=-1)
        try:
            return self.r._codes(alleles, alt_index, alts[rows].astype(np.int16), _NoWhere())
        except Exception:
            raise HandOver from None  # an error: let cyvcf2 report it, in its own words


class _NoWhere:
    """`where` for _codes: never read, since any error hands the block over to cyvcf2."""

    def __getitem__(self, k):
        return ""
