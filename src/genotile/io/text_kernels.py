"""Compiled loops of matrix_tsv (numba; imported only where numba is installed, and only for
matrices large enough to pay for numba's start: matrix_tsv.compiled_kernels).

`float_text` is number_text.float_text's method value by value (the same shortest round-trip
search and repr layout, 0.0, inf and nan written here; the ~0.2% it cannot settle are left
to repr); `float_table` writes the same texts after a tab, as matrix_tsv's tables hold them.
`lines` writes a block of matrix.tsv's lines: each row's name, then each cell's text after a
tab, from a zero-padded table of whole uint64 words: each word is shifted into a 64-bit
accumulator at the text's current byte offset, and whole words are stored (a few register
operations per cell where a byte loop cost ~3x more). `nogil`: the row threads run these side by side.
"""

import math

import numpy as np
from numba import njit

from genotile.io.number_text import BAND, E10_MAX, E10_MIN, FLOAT_WIDTH, POW, POW_HI, POW_LO, SPLIT
from genotile.util.numba_start import import_numba

import_numba()  # before the first kernel: numba's start without its BLAS probe

TAB, NL, PLUS, MINUS, POINT, ZERO, E = 9, 10, 43, 45, 46, 48, 101
NAN, INF, ZERO_TEXT = (np.frombuffer(t, dtype=np.uint8) for t in (b"nan", b"inf", b"0.0"))
PAIRS = np.frombuffer(b"".join(b"%02d" % i for i in range(100)), dtype=np.uint8)  # "00".."99"


@njit(nogil=True, cache=True, inline="always")
def _push(out, q, acc, fill, w, nbytes):
    """Append the low nbytes of w (zeros above) to the text: whole words go to out[q], the
    bytes not yet a word stay in acc (fill of them). Returns (q, acc, fill)."""
    acc |= w << np.uint64(8 * fill)
    out[q] = acc  # stored every time, kept once whole: no branch to mispredict on lengths
    full = fill + nbytes >= 8
    fill = fill + nbytes - 8 * full
    # the bytes past the word: w's top `fill` bytes (two shifts: never one of 64 bits)
    rest = (w >> np.uint64(max(8 * (nbytes - fill) - 1, 0))) >> np.uint64(1)
    acc = rest if full else acc
    return q + full, acc, fill


@njit(nogil=True, cache=True)
def _lines(table, lengths, index, blob, starts, r0, out):
    rows, cols = index.shape
    words = table.shape[1]
    q, acc, fill = 0, np.uint64(0), 0
    for r in range(rows):
        for b in range(starts[r0 + r], starts[r0 + r + 1]):
            q, acc, fill = _push(out, q, acc, fill, np.uint64(blob[b]), 1)
        for c in range(cols):
            e = index[r, c]
            n = lengths[e]
            for w in range(words):
                if n <= 0:
                    break
                q, acc, fill = _push(out, q, acc, fill, table[e, w], min(n, 8))
                n -= 8
        q, acc, fill = _push(out, q, acc, fill, np.uint64(NL), 1)
    out[q] = acc  # the last bytes (already there unless a word was just completed)
    return 8 * q + fill


def lines(table: np.ndarray, lengths: np.ndarray, index: np.ndarray, names, r0: int) -> np.ndarray:
    """Lines r0.. of the matrix: "<name>\\t<cell>...\\n" (uint8).

    Parameters
    ----------
    table : (entries, width) uint8
        Entry e, "\\t<text>", in its first lengths[e] bytes, zeros after; width a multiple of 8.
    lengths : (entries,) int64
    index : (rows, columns) integer
        The entry of each cell.
    names : (blob, starts)
        Row i's name is blob[starts[i]:starts[i + 1]] (uint8, int64).
    """
    blob, starts = names
    rows = index.shape[0]
    size = int(starts[r0 + rows] - starts[r0]) + index.size * table.shape[1] + rows  # at most
    out = np.empty(size // 8 + 1, dtype=np.uint64)
    table = table.view(np.uint64)
    return out.view(np.uint8)[: _lines(table, lengths, index, blob, starts, r0, out)]


@njit(nogil=True, cache=True)
def _read_back(a, k, nearest, gap, power_of_two):
    """number_text._read_back for one value: (found, d, sure); gap: a's ulp."""
    if abs(k) > 22:
        return False, 0, False
    big, b_hi, b_lo = POW[abs(k)], POW_HI[abs(k)], POW_LO[abs(k)]
    hi = a * big if k >= 0 else a / big
    factor = a if k >= 0 else hi
    c = SPLIT * factor
    f_hi = c - (c - factor)
    f_lo = factor - f_hi
    prod = factor * big
    err = ((f_hi * b_hi - prod) + f_hi * b_lo + f_lo * b_hi) + f_lo * b_lo
    lo = err if k >= 0 else ((a - prod) - err) / big
    base = np.rint(hi)
    r = (hi - base) + lo
    step = np.rint(r)
    r -= step
    nearest_int = np.int64(base) + np.int64(step)
    scale = big if k >= 0 else 1 / big
    h_high = 0.5 * gap * scale
    h_low = (0.25 if power_of_two else 0.5) * gap * scale
    tie = 0.5 - abs(r) <= BAND
    sure = True
    count = 0
    pick = 0
    for j in range(0 if nearest else -1, 1 if nearest else 2):
        dist = j - r
        if dist < h_high and dist > -h_low:
            count += 1
            pick = j
        sure = sure and abs(dist - h_high) > BAND and abs(dist + h_low) > BAND
    if nearest:
        return count > 0, nearest_int, sure and not tie
    if count > 1:  # several read back: the closest, rint(v)
        pick = 0
        sure = sure and not tie
    return count > 0, nearest_int + pick, sure


@njit(nogil=True, cache=True)
def _shortest(a, e10):
    """number_text._shortest for one value: (d, k, ok)."""
    low, high, d = 0, 17, 0
    mantissa, exponent = math.frexp(a)
    gap = math.ldexp(1.0, exponent - 53)  # a is normal here (at least 1e-7)
    power_of_two = mantissa == 0.5  # its lower neighbour is half as far
    while high - low > 1:
        p = high - 1 if low == 0 and high >= 16 else (low + high) // 2
        found, dp, sure = _read_back(a, p - 1 - e10, False, gap, power_of_two)
        if not sure:
            return 0, 0, False
        if found:
            high, d = p, dp
        else:
            low = p
    if high == 17:
        found, d, sure = _read_back(a, 16 - e10, True, gap, power_of_two)
        if not (found and sure):
            return 0, 0, False
    return d, high - 1 - e10, True


@njit(nogil=True, cache=True)
def _put(out, pos, text, start, end):
    for b in range(start, end):
        out[pos + b - start] = text[b]
    return pos + end - start


@njit(nogil=True, cache=True)
def _layout(out, pos, d, k, negative, digits):
    """repr's text of -/+ d * 10^-k (d > 0) into out from pos; its length (number_text's
    _repr_layout). digits: scratch of 20 bytes."""
    start = pos
    # all 20 digits right-aligned in scratch, leading zeros, as three independent 32-bit
    # parts of 8, 8 and 4 digits two digits a step (a 64-bit division chain is ~3x slower)
    d = np.uint64(d)
    e8 = np.uint64(100_000_000)
    parts = (np.uint32(d % e8), np.uint32(d // e8 % e8), np.uint32(d // e8 // e8))
    for part in range(3):
        v = parts[part]
        for pair in range(4 if part < 2 else 2):
            two = v % 100
            v //= 100
            at = 18 - 8 * part - 2 * pair
            digits[at] = PAIRS[2 * two]
            digits[at + 1] = PAIRS[2 * two + 1]
    first = 0
    while first < 19 and digits[first] == ZERO:
        first += 1
    last = 20
    while digits[last - 1] == ZERO:  # trailing zeros dropped
        last -= 1
        k -= 1
    ndig = last - first
    e = ndig - 1 - k
    if negative:
        out[pos] = MINUS
        pos += 1
    if -4 <= e < 16:
        if e >= 0:  # e + 1 integer digits (zeros past the digits), '.', the rest or '0'
            for i in range(e + 1):
                out[pos + i] = digits[first + i] if i < ndig else ZERO
            pos += e + 1
            out[pos] = POINT
            pos += 1
            if ndig > e + 1:
                return _put(out, pos, digits, first + e + 1, last) - start
            out[pos] = ZERO
            return pos + 1 - start
        out[pos], out[pos + 1] = ZERO, POINT
        pos += 2
        for _ in range(-e - 1):
            out[pos] = ZERO
            pos += 1
        return _put(out, pos, digits, first, last) - start
    out[pos] = digits[first]
    pos += 1
    if ndig > 1:
        out[pos] = POINT
        pos = _put(out, pos + 1, digits, first + 1, last)
    out[pos], out[pos + 1] = E, MINUS if e < 0 else PLUS
    pos += 2
    mag = abs(e)
    if mag >= 100:
        out[pos] = ZERO + mag // 100
        pos += 1
    out[pos], out[pos + 1] = ZERO + mag // 10 % 10, ZERO + mag % 10
    return pos + 2 - start


@njit(nogil=True, cache=True)
def _special(out, pos, x):
    """repr of 0.0, -0.0, inf, -inf or nan (every nan 'nan') into out from pos; its length."""
    n = 0
    if x != x:
        text = NAN
    else:
        text = INF if x != 0 else ZERO_TEXT
        if math.copysign(1.0, x) < 0:
            out[pos] = MINUS
            n = 1
    for b in range(3):
        out[pos + n + b] = text[b]
    return n + 3


@njit(nogil=True, cache=True)
def _float_text(values, flat, width, offset, lengths, left):
    """Value i's repr into flat[i * width + offset:], its length into lengths[i]; left[i] where
    the search cannot settle it (repr then)."""
    digits = np.empty(20, np.uint8)
    for i in range(values.size):
        x = values[i]
        a = abs(x)
        if a == 0 or not math.isfinite(a):
            lengths[i] = _special(flat, i * width + offset, x)
            continue
        e10 = int(math.floor(math.log10(a)))
        d, k, ok = (0, 0, False) if e10 < E10_MIN or e10 > E10_MAX else _shortest(a, e10)
        if ok:
            lengths[i] = _layout(flat, i * width + offset, d, k, x < 0, digits)
        else:
            left[i] = True


def _formatted(values: np.ndarray, width: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    chars = np.zeros((values.size, width), dtype=np.uint8)
    lengths = np.zeros(values.size, dtype=np.int64)
    left = np.zeros(values.size, dtype=bool)
    _float_text(values, chars.reshape(-1), width, offset, lengths, left)
    for i in np.flatnonzero(left).tolist():  # what the search could not settle: ~0.2%
        text = repr(float(values[i])).encode()
        chars[i, offset : offset + len(text)] = np.frombuffer(text, dtype=np.uint8)
        lengths[i] = len(text)
    return chars, lengths


def float_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """number_text.float_text, compiled: (chars (n, FLOAT_WIDTH) uint8, lengths (n,) int64)."""
    return _formatted(values, FLOAT_WIDTH, 0)


def float_table(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values' texts as matrix_tsv.tabbed gives them, "\\t<repr>" in whole uint64 words:
    (table (n, 32) uint8, lengths (n,) int64, the tab counted)."""
    table, lengths = _formatted(values, 8 * -(-(FLOAT_WIDTH + 1) // 8), 1)
    table[:, 0] = TAB
    return table, lengths + 1
