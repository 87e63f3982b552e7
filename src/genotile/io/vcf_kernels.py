"""Compiled decoding of the VCF fast path's commonest blocks (numba; vcf_fast imports it only
when numba is installed, and falls back to its numpy path for any block this does not take).

`decode_block` reads a span of whole lines of VCF text (`buf` uint8, [start, end)) and writes
one row of ALT counts per record into `codes` (rows, samples; MISSING for a missing call),
the same rows and counts as vcf_lines.scan and vcf_calls' table lookups and `_clean` give.
It takes the block only if every line is a record whose calls are all 3 characters ("0/1",
"1|1", "./.", "./1") in one GT-only column per sample of the file, with nine columns before
them (CHROM not empty nor '#...', POS digits, ID, REF and ALT present, one ALT that is not
'.', FORMAT = GT); else it returns -1 and vcf_fast scans the block line by line (vcf_lines).
FILTER follows the reader's rule (`filter_pass`: skip records whose FILTER is not PASS or '.').
CHROM follows the reader's first rule where `filtering` (`chromosomes: autosomes` on a file
declaring other contigs): a record whose CHROM is not one of the names kept (`names`, ends
`name_ends`) is counted (LEFT_OUT) and its calls only checked as htslib would read them (one-
character alleles, haploid or diploid, FORMAT = GT); the CHROM of each run of such records is
written to `runs` (start, end), and a block of more runs than it holds is not taken. The names
are looked up where the CHROM changes only (a sorted file: once a contig a block).
`nogil`: the decoder threads run it side by side.
"""

import numpy as np
from numba import njit

from genotile.util.numba_start import import_numba

import_numba()  # before the first kernel: numba's start without its BLAS probe

TAB, NL, HASH, DOT, COMMA, SLASH, PIPE = 9, 10, 35, 46, 44, 47, 124
BAD = 0x40  # a class at or above this is not the common case (vcf_calls._class_luts)
# counts[k] += ...: the reader's stats of a block this takes (RUNS: rows of `runs` written)
FILTER_FAILED, FILTER_SKIPPED, MISSING_CALLS, BOTH_MISSING, MONOMORPHIC, ALL_MISSING, LEFT_OUT, RUNS = range(8)
N_COUNTS = 8


@njit(nogil=True, cache=True)
def _same(buf, s0, e0, s1, e1):
    """buf[s0:e0] == buf[s1:e1]."""
    if e0 - s0 != e1 - s1:
        return False
    for k in range(e0 - s0):
        if buf[s0 + k] != buf[s1 + k]:
            return False
    return True


@njit(nogil=True, cache=True)
def _listed(buf, s, e, names, name_ends):
    """buf[s:e] is one of the names (names[name_ends[j]:name_ends[j + 1]])."""
    for j in range(name_ends.size - 1):
        n0 = name_ends[j]
        if name_ends[j + 1] - n0 != e - s:
            continue
        k = 0
        while k < e - s and names[n0 + k] == buf[s + k]:
            k += 1
        if k == e - s:
            return True
    return False


@njit(nogil=True, cache=True)
def _is_allele(c):
    return (c >= 48 and c <= 57) or c == DOT


@njit(nogil=True, cache=True)
def _left_out_line(buf, pos, t0, end, nf):
    """The newline ending a record left out by its CHROM ([pos, t0) then a tab), or -1 where it
    is not one this takes: nine columns as for any record (CHROM not '#...', POS digits, ID,
    REF and ALT present, FORMAT = GT), then nf calls of one-character alleles, haploid ("1")
    or diploid ("0/1", "1|1", "./."), each ending with a tab, the last with the newline."""
    if buf[pos] == HASH:
        return -1
    k = t0 + 1
    for col in range(1, 9):  # POS, ID, REF, ALT, QUAL, FILTER, INFO, FORMAT
        s = k
        while k < end and buf[k] != TAB and buf[k] != NL:
            if col == 1 and (buf[k] < 48 or buf[k] > 57):
                return -1
            k += 1
        if k >= end or buf[k] != TAB or (k == s and col <= 4):
            return -1
        if col == 8 and not (k - s == 2 and buf[s] == 71 and buf[s + 1] == 84):
            return -1
        k += 1
    for smp in range(nf):
        if k >= end or not _is_allele(buf[k]):
            return -1
        k += 1
        if k < end and (buf[k] == SLASH or buf[k] == PIPE):
            k += 1
            if k >= end or not _is_allele(buf[k]):
                return -1
            k += 1
        if k >= end or buf[k] != (NL if smp == nf - 1 else TAB):
            return -1
        k += 1
    return k - 1


@njit(nogil=True, cache=True)
def decode_block(
    buf,
    halves,
    first,
    second,
    start,
    end,
    nf,
    filter_pass,
    missing_code,
    codes,
    counts,
    filtering,
    names,
    name_ends,
    runs,
):
    """(records, rows) of the block, or (-1, 0) when it is not the common case (see above).

    halves: buf[start:] and buf[start + 1:] viewed as uint16; first, second: vcf_calls'
    FIRST and SECOND_FIXED tables (a call's class from its two 16-bit halves); filtering,
    names, name_ends: the contigs kept (see above); runs: (rows, 2) int64, the CHROMs left out."""
    tabs = np.empty(8, np.int64)
    pos = start
    records = rows = 0
    last_s = last_e = -1  # the CHROM of the line before, and whether it was kept
    kept = True
    while pos < end:
        if filtering:
            t0 = pos
            while t0 < end and buf[t0] != TAB and buf[t0] != NL:
                t0 += 1
            if t0 >= end or buf[t0] != TAB or t0 == pos:
                return -1, 0
            changed = not _same(buf, pos, t0, last_s, last_e)
            if changed:
                kept = _listed(buf, pos, t0, names, name_ends)
            last_s, last_e = pos, t0
            if not kept:
                le = _left_out_line(buf, pos, t0, end, nf)
                if le < 0:
                    return -1, 0
                if changed:
                    if counts[RUNS] == runs.shape[0]:
                        return -1, 0
                    runs[counts[RUNS], 0], runs[counts[RUNS], 1] = pos, t0
                    counts[RUNS] += 1
                counts[LEFT_OUT] += 1
                records += 1
                pos = le + 1
                continue
        # a line of nf 4-character calls is at least 4 nf long: its newline is the first one
        # from there, once no newline is found before it (checked below: the first nine
        # columns have none, and every call but the last ends with a tab)
        le = pos + 4 * nf
        while le < end and buf[le] != NL:
            le += 1
        if le >= end:
            return -1, 0
        records += 1
        ss = le - 4 * nf + 1  # where the calls start, 4 characters each with their tab
        if ss - 1 <= pos or buf[ss - 1] != TAB:
            return -1, 0
        n_tabs = 0
        for k in range(pos, ss - 1):
            if buf[k] == NL:
                return -1, 0
            if buf[k] == TAB:
                if n_tabs == 8:
                    return -1, 0
                tabs[n_tabs] = k
                n_tabs += 1
        if n_tabs != 8:
            return -1, 0
        # columns: CHROM [pos, t0), POS, ID, REF, ALT, QUAL, FILTER, INFO, FORMAT [t7 + 1, ss - 1)
        if tabs[0] == pos or buf[pos] == HASH or tabs[1] == tabs[0] + 1:
            return -1, 0
        for k in range(tabs[0] + 1, tabs[1]):
            if buf[k] < 48 or buf[k] > 57:
                return -1, 0
        if tabs[2] == tabs[1] + 1 or tabs[3] == tabs[2] + 1 or tabs[4] == tabs[3] + 1:
            return -1, 0  # an empty ID, REF or ALT
        if ss - 1 - tabs[7] - 1 != 2 or buf[tabs[7] + 1] != 71 or buf[tabs[7] + 2] != 84:
            return -1, 0  # FORMAT is not GT
        if tabs[4] - tabs[3] - 1 == 1 and buf[tabs[3] + 1] == DOT:
            return -1, 0  # no ALT
        for k in range(tabs[3] + 1, tabs[4]):
            if buf[k] == COMMA:
                return -1, 0  # several ALTs
        f0, f_len = tabs[5] + 1, tabs[6] - tabs[5] - 1
        passed = (f_len == 1 and buf[f0] == DOT) or (
            f_len == 4 and buf[f0] == 80 and buf[f0 + 1] == 65 and buf[f0 + 2] == 83 and buf[f0 + 3] == 83
        )
        if not passed:
            counts[FILTER_FAILED] += 1
            if filter_pass:
                counts[FILTER_SKIPPED] += 1
                pos = le + 1
                continue
        has_ref = has_alt = False
        lowest = 255
        half = halves[(ss - start) & 1]  # the 16-bit view in which this line's calls are aligned
        h = (ss - ((ss - start) & 1) - start) // 2  # index of the first call's (allele, separator)
        for s in range(nf):
            end_half = half[h + 2 * s + 1]  # (allele, the character after the call)
            v = first[half[h + 2 * s]] + second[end_half]
            if v >= BAD or (s < nf - 1 and end_half >> 8 != TAB):
                return -1, 0
            if v <= 1:
                has_ref = True
            if v == 1 or v == 2:
                has_alt = True
            lowest = min(lowest, v)
            if v >= 4:
                counts[MISSING_CALLS] += 1
                if v == 8:
                    counts[BOTH_MISSING] += 1
                codes[rows, s] = missing_code
            else:
                codes[rows, s] = v
        if not (has_ref and has_alt):
            counts[MONOMORPHIC] += 1
        if lowest >= 4:
            counts[ALL_MISSING] += 1
        rows += 1
        pos = le + 1
    return records, rows


TILE = 64  # rows x columns of one transposed tile (4 KiB of uint8: stays in L1)


@njit(nogil=True, cache=True)
def transpose_into(block, out, c0, c1, v0):
    """out[c - c0, v0 + r] = block[r, c] for every row r of block and c0 <= c < c1 (ingest_genotypes'
    variant rows into sample rows), TILE x TILE at a time."""
    n_rows = block.shape[0]
    for t0 in range(c0, c1, TILE):
        t1 = min(c1, t0 + TILE)
        for r0 in range(0, n_rows, TILE):
            r1 = min(n_rows, r0 + TILE)
            for c in range(t0, t1):
                for r in range(r0, r1):
                    out[c - c0, v0 + r] = block[r, c]
