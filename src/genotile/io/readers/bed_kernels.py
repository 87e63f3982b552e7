"""Compiled transposition of a PLINK 1 .bed's records into sample-major bits (numba; imported
only by the store job's streamed reading of a plain .bed, io/readers/bed.py `stream_bits`).

`records_to_bits` takes a block of whole records (variants) and a strip of their bytes (a run
of samples) and writes each sample's lo and hi bits, 64 variants a word (variant v at bit v % 64,
bits past the last variant 0: bed_words.py's layout), into its row of a held array, counting
the calls as it goes (which variants have a 0, a 1, a 2; the missing calls).

How: 8 record bytes (32 samples, 2 bits each) of 64 consecutive records are a 64 x 64 bit
matrix (a uint64 a record); its transpose holds, in word c, bit c of each record: for c = 2i + h,
the lo (h = 0) or hi (h = 1) bits of sample i of the 32 over the 64 variants, which is a word of
that sample's row as it is stored. The transpose is the classic 6 rounds of swapping halves of
blocks (j = 32, 16, ..., 1), done on LANES such matrices side by side (2,048 samples): the
innermost loops run over the LANES, which LLVM turns into vector instructions (8 lanes of
AVX-512, or 4 of AVX2) with no gathers; a tile of 64 x LANES words is 32 KiB, in L1, and is
counted as it is made (vector instructions too). TILES words of variants are transposed before
each sample's words are written, one after another in its row (a cache line of lo bits, one of
hi bits), the rows being where the store's order puts them: 1.3 times the rate of writing each
word as it is made, on the 2-core VM (1.74 GB/s of .bed against 1.33, one thread, rows in the
store's random order). The block's records are read once, in order.

`nogil`: the reading threads run it side by side on their blocks.
"""

import numpy as np
from numba import njit

from genotile.io.readers.bed_words import COUNT_FIELD
from genotile.util.numba_start import import_numba

import_numba()  # before the first kernel: numba's start without its BLAS probe

LANES = 64  # 64 x 64 bit matrices transposed side by side (8 record bytes of 64 variants each)
TILES = 8  # words of variants transposed before the rows are written: a cache line of a row's lo, and of its hi, bits


@njit(inline="always")
def _swap(tile, j, mask):
    """One round of the transpose: in every 2j x 2j block of each matrix, the off-diagonal j x j
    blocks trade places (word k's bits at columns with bit j set <-> word k + j's with it clear)."""
    shift = np.uint64(j)
    for base in range(0, 64, 2 * j):
        for k in range(base, base + j):
            for lane in range(LANES):
                a = tile[k, lane]
                b = tile[k + j, lane]
                t = ((a >> shift) ^ b) & mask
                tile[k + j, lane] = b ^ t
                tile[k, lane] = a ^ (t << shift)


@njit(inline="always")
def _transpose(tile):
    """tile[c, lane] <- bit c of tile[0..63, lane] (bit v from word v), for every lane."""
    _swap(tile, 32, np.uint64(0x00000000FFFFFFFF))
    _swap(tile, 16, np.uint64(0x0000FFFF0000FFFF))
    _swap(tile, 8, np.uint64(0x00FF00FF00FF00FF))
    _swap(tile, 4, np.uint64(0x0F0F0F0F0F0F0F0F))
    _swap(tile, 2, np.uint64(0x3333333333333333))
    _swap(tile, 1, np.uint64(0x5555555555555555))


@njit(inline="always")
def _popcount(x):
    """Bits set in a uint64 (LLVM makes this one popcnt instruction where the CPU has it)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(nogil=True, cache=True)
def records_to_bits(words, n_records, g_first, g_stop, stop_sample, rows, out, first_word, flags):
    """Write the bits of a strip of samples of a block of records into their rows; count their calls.

    Parameters
    ----------
    words : numpy.ndarray
        uint64 (at least n_records, groups), C-contiguous: consecutive whole records (a whole
        number of words of variants from the block's first, but the file's last block), each
        row a record's bytes as little-endian words, from its first byte (bytes past the
        record's end are not read as calls).
    n_records : int
        Records of the block (rows past them are not read: their variants' bits are 0).
    g_first, g_stop : int
        The strip: words g_first:g_stop of each record, samples 32 g_first .. 32 g_stop.
    stop_sample : int
        The file's samples (the padding fields of the last record byte are neither stored nor
        counted).
    rows : numpy.ndarray
        int64: rows[s - 32 g_first] is sample s's row of `out`, or -1 (counted, not stored).
    out : numpy.ndarray
        uint64 (rows, 2, words): [r, 0] the lo bits of a row, [r, 1] its hi bits.
    first_word : int
        The word of out's rows the block's first record goes to (its variant // 64).
    flags : numpy.ndarray
        uint64 (3, words): bits OR-ed in for each variant with a call 0 (11), 1 (10), 2 (00), as
        bed_words.records_to_bits; the bits past the file's last variant are set too (the
        caller masks them).

    Returns
    -------
    int
        The missing calls (01) of the strip's samples.
    """
    n_words = (n_records + 63) // 64
    tiles = np.zeros((TILES, 64, LANES), dtype=np.uint64)  # a word of variants each: 256 KiB, in L2
    hom0 = np.zeros(LANES, dtype=np.uint64)
    het = np.zeros(LANES, dtype=np.uint64)
    hom2 = np.zeros(LANES, dtype=np.uint64)
    lost = np.zeros(LANES, dtype=np.int64)
    missing = np.int64(0)
    base = 32 * g_first
    for w0 in range(0, n_words, TILES):
        n_tiles = min(TILES, n_words - w0)
        for g0 in range(g_first, g_stop, LANES):
            lanes = min(LANES, g_stop - g0)
            s_first = 32 * g0
            s_stop = min(stop_sample, s_first + 32 * lanes)
            if s_first >= s_stop:
                break
            for t in range(n_tiles):  # each word of variants: transposed, counted
                tile = tiles[t]
                v0 = 64 * (w0 + t)
                valid = min(64, n_records - v0)
                if lanes == LANES:
                    for v in range(valid):
                        for lane in range(LANES):
                            tile[v, lane] = words[v0 + v, g0 + lane]
                else:  # the strip's last lanes (the others' bits are not read)
                    for v in range(valid):
                        for lane in range(lanes):
                            tile[v, lane] = words[v0 + v, g0 + lane]
                for v in range(valid, 64):
                    for lane in range(LANES):
                        tile[v, lane] = 0
                _transpose(tile)
                for lane in range(LANES):
                    hom0[lane] = 0
                    het[lane] = 0
                    hom2[lane] = 0
                if s_stop == s_first + 32 * LANES:  # every lane's 32 samples: lane by lane (vector instructions)
                    for i in range(32):
                        for lane in range(LANES):
                            lo = tile[2 * i, lane]
                            hi = tile[2 * i + 1, lane]
                            both = lo & hi
                            hom0[lane] |= both  # 11: 0
                            het[lane] |= hi ^ both  # 10: 1
                            hom2[lane] |= ~(lo | hi)  # 00: 2
                            lost[lane] += _popcount(lo ^ both)  # 01: missing
                else:
                    for s in range(s_first, s_stop):
                        i = s - s_first
                        lane = i >> 5
                        c = 2 * (i & 31)
                        lo = tile[c, lane]
                        hi = tile[c + 1, lane]
                        both = lo & hi
                        hom0[lane] |= both
                        het[lane] |= hi ^ both
                        hom2[lane] |= ~(lo | hi)
                        lost[lane] += _popcount(lo ^ both)
                a0 = np.uint64(0)
                a1 = np.uint64(0)
                a2 = np.uint64(0)
                for lane in range(LANES):
                    a0 |= hom0[lane]
                    a1 |= het[lane]
                    a2 |= hom2[lane]
                word = first_word + w0 + t
                flags[0, word] |= a0
                flags[1, word] |= a1
                flags[2, word] |= a2
            for s in range(s_first, s_stop):  # then each sample's words, one after another in its row
                r = rows[s - base]
                if r >= 0:
                    i = s - s_first
                    lane = i >> 5
                    c = 2 * (i & 31)
                    for t in range(n_tiles):
                        out[r, 0, first_word + w0 + t] = tiles[t, c, lane]
                    for t in range(n_tiles):
                        out[r, 1, first_word + w0 + t] = tiles[t, c + 1, lane]
    for lane in range(LANES):
        missing += lost[lane]
    return missing


_FIELD = COUNT_FIELD  # a global array: numba compiles it in as a constant


@njit(nogil=True, cache=True)
def counts_to_records(counts, n_records, out, span, columns):
    """pgenlib's int8 allele counts of whole records, as the .bed records they would be.

    Parameters
    ----------
    counts : numpy.ndarray
        uint8 (at least n_records, samples): a row a variant, pgenlib's counts of allele 1 (-9,
        read 247, missing): io/readers/plink.PgenRecords.read.
    n_records : int
        Rows of `counts` to write.
    out : numpy.ndarray
        uint8, flat: record k's bytes from out[k * span] (ceil(samples / 4) bytes: 4 samples a
        byte, sample j at bits 2 (j % 4), its field as bed_words.py's; the padding fields 0).
    span : int
        Bytes from one record's start to the next's in `out`.
    columns : numpy.ndarray
        int64: sample j of the records is column columns[j] of `counts` (a `samples:` list in
        another order than the file's); empty: column j.
    """
    n = counts.shape[1]
    full = n // 4
    gather = columns.size > 0
    for r in range(n_records):
        base = r * span
        if gather:
            for j in range(full):
                k = 4 * j
                out[base + j] = (
                    _FIELD[counts[r, columns[k]]]
                    | (_FIELD[counts[r, columns[k + 1]]] << 2)
                    | (_FIELD[counts[r, columns[k + 2]]] << 4)
                    | (_FIELD[counts[r, columns[k + 3]]] << 6)
                )
        else:
            for j in range(full):
                k = 4 * j
                out[base + j] = (
                    _FIELD[counts[r, k]]
                    | (_FIELD[counts[r, k + 1]] << 2)
                    | (_FIELD[counts[r, k + 2]] << 4)
                    | (_FIELD[counts[r, k + 3]] << 6)
                )
        if n > 4 * full:
            byte = 0
            for k in range(4 * full, n):
                c = counts[r, columns[k]] if gather else counts[r, k]
                byte |= np.int64(_FIELD[c]) << (2 * (k - 4 * full))
            out[base + full] = byte
