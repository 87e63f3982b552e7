"""Numbers as text, vectorised: integers in decimal, floats exactly as Python's repr.

Each function returns `(chars, lengths)`: row i of the (n, width) uint8 array `chars` holds
the ASCII text of value i in its first `lengths[i]` bytes, zeros after.

Floats. repr writes the shortest decimal that reads back (float() parses it) as the same
double; of several that short, the closest. For a double a > 0 and |k| <= 22, v = a * 10^k
is exactly hi + lo in float64 (10^k is exact; Dekker's product, Veltkamp's split making the
partial products exact; for k < 0 the quotient and its remainder, rounded once). An integer
d reads back as a from d * 10^-k iff it lies strictly inside (v - h_low, v + h_high), the
half gaps from a to its neighbouring doubles scaled by 10^k (a decimal on a boundary reads
back only when a's last bit is 0: such exact ties are left to repr). At p digits, k = p - 1 -
floor(log10 a), and for p <= 16, v < 10^16 and h < 1.12: only rint(v) and its neighbours can
read back, so a few array operations decide per value whether some p-digit decimal reads back
and which one repr takes (the only one, or the closest, rint(v)). Reading back is monotone
in p (a p-digit decimal is also one of p + 1 digits): the shortest p is found by bisection,
trying 16 and 15 first (most doubles that are not short decimals need 16 or 17 digits); 17
digits always read back, and there repr takes rint(v). Values too near a tie for these sums
to tell (~0.2% of kinship-like ratios), and those below 1e-6 or from 1e23 up (some |k| would
pass 22), are formatted by repr itself. The digits are then laid out as repr does, by one
gather from a row of each value's digits and fixed characters, the map chosen by sign, layout
and digit count: scientific below 1e-4 and from 1e16 up ('1e-05', '1.5e+16'), else positional
with at least one digit after the point ('123.0'). tests/io/test_number_text.py checks it
against repr; text_kernels.float_text is the same method compiled, value by value.
"""

import functools

import numpy as np

FLOAT_WIDTH = 24  # longest repr of a double: '-1.2345678901234567e-308'
INT_WIDTH = 21  # '-9223372036854775808', '18446744073709551615'
CHUNK = 1 << 13  # values formatted at once (their temporaries stay in cache)
E10_MIN, E10_MAX = -6, 22  # |k| <= 22 for p = 1..17 digits (k = p - 1 - e10)
POW = 10.0 ** np.arange(23)  # 10^k exact in float64 for k <= 22
SPLIT = 134217729.0  # 2^27 + 1, Veltkamp's splitter
BAND = 2.0**-40  # decisions closer than this to a boundary (exact ties) are left to repr
U10 = np.array([10**k for k in range(20)], dtype=np.uint64)


def int_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integers in decimal, as str() writes them.

    Parameters
    ----------
    values : (n,) integer array

    Returns
    -------
    chars : (n, INT_WIDTH) uint8
    lengths : (n,) int64

    Examples
    --------
    >>> chars, lengths = int_text(np.array([0, -7, 1234]))
    >>> [bytes(c[:n]) for c, n in zip(chars, lengths)]
    [b'0', b'-7', b'1234']
    """
    values = np.asarray(values).reshape(-1)
    if values.size > CHUNK:  # temporaries of a chunk at a time
        parts = [int_text(values[s : s + CHUNK]) for s in range(0, values.size, CHUNK)]
        return np.concatenate([c for c, _ in parts]), np.concatenate([n for _, n in parts])
    negative = values < 0
    # magnitudes in uint64: two's complement negation keeps int64's minimum exact
    mag = values.astype(np.uint64)
    mag = np.where(negative, ~mag + np.uint64(1), mag)
    ndig = np.maximum(np.searchsorted(U10, mag, side="right"), 1)
    maps, lengths = _maps()
    code = (negative * LAYOUTS + INT_LAYOUT) * 20 + ndig - 1
    src = _source(mag, np.zeros(mag.size, np.int64)).reshape(-1)
    return src[(np.arange(mag.size) * SRC_WIDTH)[:, None] + maps[code, :INT_WIDTH]], lengths[code]


def float_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Floats as repr(float(v)) writes them (float32 values widened to float64 first).

    Parameters
    ----------
    values : (n,) floating array

    Returns
    -------
    chars : (n, FLOAT_WIDTH) uint8
    lengths : (n,) int64

    Examples
    --------
    >>> chars, lengths = float_text(np.array([0.1, -0.0, 1e-05, 1.5e16, 123.0, np.nan, -np.inf]))
    >>> [bytes(c[:n]).decode() for c, n in zip(chars, lengths)]
    ['0.1', '-0.0', '1e-05', '1.5e+16', '123.0', 'nan', '-inf']
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    chars = np.zeros((values.size, FLOAT_WIDTH), dtype=np.uint8)
    lengths = np.zeros(values.size, dtype=np.int64)
    for s in range(0, values.size, CHUNK):
        chars[s : s + CHUNK], lengths[s : s + CHUNK] = _float_chunk(values[s : s + CHUNK])
    return chars, lengths


def _float_chunk(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    chars = np.zeros((x.size, FLOAT_WIDTH), dtype=np.uint8)
    lengths = np.zeros(x.size, dtype=np.int64)
    a = np.abs(x)
    finite = np.isfinite(x) & (a != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        e10 = np.floor(np.log10(np.where(finite, a, 1.0))).astype(np.int64)
    fast = finite & (e10 >= E10_MIN) & (e10 <= E10_MAX)
    idx = np.flatnonzero(fast)
    d, k, ok = _shortest(a[idx], e10[idx])
    idx, d, k = idx[ok], d[ok], k[ok]
    chars[idx], lengths[idx] = _repr_layout(d, k, np.signbit(x[idx]))
    _specials(x, finite, chars, lengths)
    left = finite.copy()
    left[idx] = False
    for i in np.flatnonzero(left).tolist():  # what the vectorised search could not settle
        text = repr(float(x[i])).encode()
        chars[i, : len(text)] = np.frombuffer(text, dtype=np.uint8)
        lengths[i] = len(text)
    return chars, lengths


def _specials(x: np.ndarray, finite: np.ndarray, chars: np.ndarray, lengths: np.ndarray) -> None:
    """0.0, -0.0, inf, -inf and nan (repr writes every nan 'nan', whatever its sign)."""
    for value, text in ((0.0, b"0.0"), (np.inf, b"inf"), (np.nan, b"nan")):
        hit = np.isnan(x) if value != value else (np.abs(x) == value)
        hit &= ~finite
        negative = hit & np.signbit(x) & ~np.isnan(x)
        for rows, t in ((hit & ~negative, text), (negative, b"-" + text)):
            chars[rows, : len(t)] = np.frombuffer(t, dtype=np.uint8)
            lengths[rows] = len(t)


def _shortest(a: np.ndarray, e10: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(d, k, ok): repr's digits of each a > 0 as the integer d (uint64) over 10^k; ok False
    where this cannot tell (repr formats those).

    Bisection on the digit count p in [1, 17]: `low` digits never read back (p = 0 stands for
    none), `high` digits do; 17 always does. It tries 16 then 15 first: most doubles that are
    not short decimals need 16 or 17 digits, and those take two checks instead of five.
    """
    n = a.size
    low, high = np.zeros(n, np.int64), np.full(n, 17, np.int64)
    d, ok = np.zeros(n, np.int64), np.ones(n, bool)
    while True:
        todo = np.flatnonzero((high - low > 1) & ok)
        if todo.size == 0:
            break
        lo, hi = low[todo], high[todo]
        p = np.where((lo == 0) & (hi >= 16), hi - 1, (lo + hi) // 2)
        found, dp, sure = _read_back(a[todo], p - 1 - e10[todo])
        ok[todo] &= sure
        low[todo] = np.where(found, lo, p)
        high[todo] = np.where(found, p, hi)
        d[todo] = np.where(found, dp, d[todo])
    # 17 digits always read back (the bisection never checks them): the closest, rint(v)
    last = np.flatnonzero((high == 17) & ok)
    found, d[last], sure = _read_back(a[last], 16 - e10[last], nearest=True)
    ok[last] &= found & sure
    return d.astype(np.uint64), high - 1 - e10, ok


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = hi + lo with 26-bit halves (Veltkamp): products of halves are exact."""
    c = SPLIT * x
    hi = c - (c - x)
    return hi, x - hi


POW_HI, POW_LO = _split(POW)


def _scaled(a: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo): a * 10^k = hi + lo, for |k| <= 22: exactly for k >= 0 (Dekker's exact
    product), for k < 0 hi the quotient and lo its exact remainder over 10^-k, rounded once."""
    big, up = POW[np.abs(k)], k >= 0
    hi = np.where(up, a * big, a / big)
    factor = np.where(up, a, hi)  # factor * big = prod + err exactly
    f_hi, f_lo = _split(factor)
    b_hi, b_lo = POW_HI[np.abs(k)], POW_LO[np.abs(k)]
    prod = factor * big
    err = ((f_hi * b_hi - prod) + f_hi * b_lo + f_lo * b_hi) + f_lo * b_lo
    # k < 0: a - hi * big = (a - prod) - err, a - prod exact (prod is within a few ulps of a)
    return hi, np.where(up, err, ((a - prod) - err) / big)


def _read_back(a: np.ndarray, k: np.ndarray, nearest: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(found, d, sure): whether some integer d reads back as a from d * 10^-k, the one repr
    would take (the closest one), and whether that is certain; `nearest`: rint(a * 10^k).

    With v = a * 10^k and h the half gaps to a's neighbours scaled alike, d reads back iff
    v - h_low < d < v + h_high (a tie, a decimal on a boundary, is left to repr: it reads back
    only when a's last bit is 0). For p <= 16 digits, v < 10^16 and h <= 10^16 * 2^-53 < 1.12,
    so only rint(v) and its neighbours can; where several do, repr takes rint(v).
    """
    inside = np.abs(k) <= 22
    k = np.where(inside, k, 0)
    hi, lo = _scaled(a, k)
    base = np.rint(hi)
    r = (hi - base) + lo  # v - base, to ~2^-52 (both terms are below 1 or exact)
    step = np.rint(r)
    r -= step  # v - nearest, in [-1/2, 1/2]
    nearest_int = base.astype(np.int64) + step.astype(np.int64)
    gap = np.spacing(a)
    power_of_two = np.frexp(a)[0] == 0.5  # its lower neighbour is half as far
    scale = np.where(k >= 0, POW[np.abs(k)], 1 / POW[np.abs(k)])
    h_high, h_low = 0.5 * gap * scale, np.where(power_of_two, 0.25, 0.5) * gap * scale
    tie = 0.5 - np.abs(r) <= BAND
    sure = inside.copy()
    hits = []
    for j in (0,) if nearest else (-1, 0, 1):
        dist = j - r
        hits.append((dist < h_high) & (dist > -h_low))
        sure &= (np.abs(dist - h_high) > BAND) & (np.abs(dist + h_low) > BAND)
    if nearest:
        return hits[0], nearest_int, sure & ~tie
    count = hits[0].astype(np.int64) + hits[1] + hits[2]
    # one reads back: it; several: the closest, rint(v), unless v is too near a tie to say
    step_j = np.where(hits[0] & (count == 1), -1, np.where(hits[2] & (count == 1), 1, 0))
    sure &= (count < 2) | (hits[1] & ~tie)
    return count > 0, nearest_int + step_j, sure


# The text as a gather: byte j of a value's text is byte MAPS[code, j] of its source row, a
# row of 32 bytes: NUL, '.', '-', 'e', the exponent's sign and three digits, its 20 digits
# right-aligned (leading zeros), '0'; code: the sign, the layout and the number of digits.
SRC_NUL, SRC_POINT, SRC_MINUS, SRC_E, SRC_EXP, SRC_DIGITS, SRC_ZERO, SRC_WIDTH = 0, 1, 2, 3, 4, 8, 28, 32
# layouts 0..19: positional with decimal exponent layout - 4; 20, 21: scientific with 2 or 3
# exponent digits; 22: an integer
LAYOUTS, SCIENTIFIC, INT_LAYOUT = 23, 20, 22
GROUPS = np.frombuffer(b"".join(b"%04d" % g for g in range(10_000)), dtype=np.uint32)  # 4 digits a word
EXPONENTS = np.frombuffer(b"".join(b"%+04d" % e for e in range(-400, 401)), dtype=np.uint32)
FIXED = np.frombuffer(b"\0.-e", dtype=np.uint32)[0]
ZERO_WORD = np.frombuffer(b"0\0\0\0", dtype=np.uint32)[0]


def _layout_map(neg: int, layout: int, ndig: int) -> list[int]:
    """Source bytes of a text: '-'?, then positional (the point after e + 1 digits, or '0.'
    and -e - 1 zeros first; at least one digit after the point), scientific or an integer."""
    digit = [SRC_DIGITS + 20 - ndig + i for i in range(ndig)]  # most significant first
    if layout == INT_LAYOUT:
        body = digit
    elif layout >= SCIENTIFIC:
        mantissa = digit[:1] + ([SRC_POINT, *digit[1:]] if ndig > 1 else [])
        exponent = [SRC_E, SRC_EXP, *range(SRC_EXP + (2 if layout == SCIENTIFIC else 1), SRC_EXP + 4)]
        body = mantissa + exponent
    elif layout >= 4:  # e >= 0
        e = layout - 4
        body = [*(digit + [SRC_ZERO] * 20)[: e + 1], SRC_POINT, *(digit[e + 1 :] or [SRC_ZERO])]
    else:
        body = [SRC_ZERO, SRC_POINT] + [SRC_ZERO] * (3 - layout) + digit
    return ([SRC_MINUS] * neg + body + [SRC_NUL] * FLOAT_WIDTH)[:FLOAT_WIDTH]


@functools.cache
def _maps() -> tuple[np.ndarray, np.ndarray]:
    """(maps, lengths): each code's source bytes, (codes, FLOAT_WIDTH), and its text's length."""
    rows = [_layout_map(n, lay, d) for n in (0, 1) for lay in range(LAYOUTS) for d in range(1, 21)]
    maps = np.array(rows, dtype=np.intp)
    return maps, (maps != SRC_NUL).sum(axis=1)


def _source(mag: np.ndarray, e: np.ndarray) -> np.ndarray:
    """(n, SRC_WIDTH) uint8 source rows of uint64 magnitudes with decimal exponents e."""
    src = np.empty((mag.size, SRC_WIDTH // 4), dtype=np.uint32)
    src[:, 0] = FIXED
    src[:, 1] = EXPONENTS[np.clip(e, -400, 400) + 400]
    rest = mag.copy()
    tenk = np.uint64(10_000)
    for word in range(6, 1, -1):  # five groups of four digits, the last first
        src[:, word] = GROUPS[(rest % tenk).astype(np.intp)]
        rest //= tenk
    src[:, 7] = ZERO_WORD
    return src.view(np.uint8)


def _repr_layout(d: np.ndarray, k: np.ndarray, negative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """repr's text of -/+ d * 10^-k: d's trailing zeros dropped, then positional for a decimal
    exponent e in [-4, 16), else d.ddde+XX (at least two exponent digits)."""
    d, k = d.copy(), k.copy()
    ten = np.uint64(10)
    while True:  # a p-digit decimal found at p + 1 digits (floor(log10) off by one) ends in 0
        z = np.flatnonzero(d % ten == 0)
        if z.size == 0:
            break
        d[z] //= ten
        k[z] -= 1
    ndig = np.searchsorted(U10, d, side="right")
    e = ndig - 1 - k
    layout = np.where((e >= -4) & (e < 16), e + 4, SCIENTIFIC + (np.abs(e) >= 100))
    code = (negative * LAYOUTS + layout) * 20 + ndig - 1
    maps, lengths = _maps()
    src = _source(d, e).reshape(-1)
    return src[(np.arange(d.size) * SRC_WIDTH)[:, None] + maps[code]], lengths[code]
