"""Signature probes: which sample masks a signature ANDs, at which offsets, in which order.

One function for numpy and CuPy (`xp`), so both backends probe in the same order.

A probe is uint32 `(offset << 8) | plane`: candidate starts p keep bit p + offset of sample
mask `plane` (`encode.plane_index`). Plane (b, d, m) has bit q set when the sample's bases
q, q + d, ..., q + (2^m - 1) d are all b or N (m = 0: the base mask of b). A signature is cut
into
- runs: maximal runs of one base b of length L >= MIN_RUN: plane (b, 1, m), m = floor(log2 L),
  at the run's first and last 2^m offsets (one probe when L = 2^m: two overlapping halves cover
  the run, AND is idempotent);
- alternations: maximal stretches xyxy... (x != y) of length L >= MIN_ALT: for each residue r
  (base x, then y) with c = ceil((L - r) / 2) positions, plane (base, 2, floor(log2 c)) at its
  first and last 2^m positions;
- singles: the non-N positions no run or alternation covers, plane (b, 0, 0).
N positions are never covered, every other position at least once (overlaps are harmless), so
the AND over the probes is exactly "every non-N signature base matches the sample".
Order within a signature (any order gives the same answer; this one kills low-complexity
candidates early): the first FIRST_SINGLES singles, rarest base of the signature first (ties
A < C < G < T), then by offset; then the run and alternation probes, longest (highest m) first,
then by offset; then the remaining singles in the same order as the first.
"""

from genotile.errors import GenotileError

MIN_RUN = 8  # shorter runs (random sequence has a few of 4-7 a kb) stay single probes
MIN_ALT = 12
FIRST_SINGLES = 8
OFFSET_BITS = 24  # probes hold offsets < 2^24: signatures up to 16,777,216 bases
PLANE_BITS = 8
SIG_BITS = 23  # sort keys: signature << 40 | group << 38 | within (< 2^37)


def _floor_log2(xp, x):
    return xp.frexp(x.astype(xp.float64))[1].astype(xp.int64) - 1  # exact for x < 2^53


def _bincount(xp, x, n):
    """bincount of non-negative x with n bins (x may be empty)."""
    return xp.bincount(x, minlength=n)[:n] if x.size else xp.zeros(n, dtype=xp.int64)


def plan(xp, code, offsets, plane_index):
    """(probes uint32, starts int64 [n_sigs + 1], levels): every signature's probes back to back
    in probing order, and the highest mask level m any probe uses (0: base masks only).

    `code`: the signatures' bytes as codes 0..3 (ACGT) / 4 (N), back to back; `offsets`: int64
    record offsets; `plane_index(base, stride, level)`: mask index (vectorised)."""
    n_g = int(offsets.size) - 1
    lens = offsets[1:] - offsets[:-1]
    if n_g >= 1 << SIG_BITS:
        raise GenotileError(f"{n_g} signatures in one block: at most {(1 << SIG_BITS) - 1}")
    if n_g and int(lens.max()) > 1 << OFFSET_BITS:
        raise GenotileError(f"a signature of {int(lens.max())} bases: at most {1 << OFFSET_BITS} are supported")
    code = code.astype(xp.int64)
    n = int(code.size)
    at = xp.arange(n, dtype=xp.int64)
    sig = xp.searchsorted(offsets, at, side="right") - 1
    pos = at - offsets[sig]
    base = code < 4

    # runs of one base
    same = xp.zeros(n, dtype=bool)
    same[1:] = (sig[1:] == sig[:-1]) & (code[1:] == code[:-1]) & base[1:]
    first = base & ~same
    run_at = xp.flatnonzero(first)
    run_len = _bincount(xp, (xp.cumsum(first) - 1)[base], run_at.size)
    keep = run_len >= MIN_RUN
    run_at, run_len = run_at[keep], run_len[keep]

    # alternations xyxy...: alt[k] when base k equals base k - 2 and differs from base k - 1
    alt = xp.zeros(n, dtype=bool)
    alt[2:] = (sig[2:] == sig[:-2]) & (code[2:] == code[:-2]) & base[2:] & (code[2:] != code[1:-1])
    alt_first = alt.copy()
    alt_first[1:] &= ~alt[:-1]
    alt_at = xp.flatnonzero(alt_first)
    alt_len = _bincount(xp, (xp.cumsum(alt_first) - 1)[alt], alt_at.size) + 2
    keep = alt_len >= MIN_ALT  # >= 4 consecutive alt positions: the two before them are bases too
    alt_at, alt_len = alt_at[keep] - 2, alt_len[keep]

    # singles: bases that no run or alternation covers
    ends = xp.concatenate((run_at + run_len, alt_at + alt_len))
    delta = _bincount(xp, xp.concatenate((run_at, alt_at)), n + 1) - _bincount(xp, ends, n + 1)
    covered = xp.cumsum(delta)[:n] > 0
    single = base & ~covered

    counts = _bincount(xp, sig * 5 + code, n_g * 5).reshape(n_g, 5)[:, :4]
    order = xp.argsort(counts * 4 + xp.arange(4), axis=1)  # bases, rarest first (ties: A < C < G < T)
    rank = xp.argsort(order, axis=1)
    # nth: place of each single in its signature's (rarity, offset) order, without a sort: singles
    # of rarer bases, plus singles of its own base at smaller offsets
    totals = _bincount(xp, sig[single] * 4 + code[single], n_g * 4).reshape(n_g, 4)
    by_rank = xp.take_along_axis(totals, order, axis=1)
    rarer = xp.cumsum(by_rank, axis=1) - by_rank  # [sig, rank]: singles of rarer bases
    nth = xp.zeros(n, dtype=xp.int64)
    sig_first = offsets[:-1][sig]
    for b in range(4):
        own = xp.cumsum(single & (code == b))
        before = xp.where(sig_first > 0, own[xp.maximum(sig_first - 1, 0)], 0)
        nth = xp.where(code == b, own - 1 - before, nth)
    single = xp.flatnonzero(single)
    s_sig, s_pos, s_code = sig[single], pos[single], code[single]
    s_rank = rank[s_sig, s_code]
    s_group = (rarer[s_sig, s_rank] + nth[single] >= FIRST_SINGLES).astype(xp.int64) * 2
    single_keys = (s_sig << 40) | (s_group << 38) | (s_rank << 32) | (s_pos << PLANE_BITS) | plane_index(s_code, 1, 0)

    # run and alternation probes: (signature, first offset, positions c, stride d, base)
    seg_at = xp.concatenate((run_at, alt_at, alt_at + 1))
    seg_c = xp.concatenate((run_len, (alt_len + 1) // 2, alt_len // 2))
    seg_d = xp.concatenate((xp.ones(run_at.size, xp.int64), xp.full(2 * alt_at.size, 2, xp.int64)))
    level = _floor_log2(xp, seg_c) if seg_c.size else seg_c
    plane = plane_index(code[seg_at], seg_d, level)
    lo = pos[seg_at]
    hi = lo + seg_d * (seg_c - (1 << level))
    two = seg_c > (1 << level)
    p_sig = xp.concatenate((sig[seg_at], sig[seg_at][two]))
    p_pos = xp.concatenate((lo, hi[two]))
    p_level = xp.concatenate((level, level[two]))
    p_plane = xp.concatenate((plane, plane[two]))
    seg_keys = (p_sig << 40) | (1 << 38) | ((31 - p_level) << 32) | (p_pos << PLANE_BITS) | p_plane

    keys = xp.sort(xp.concatenate((single_keys, seg_keys)))
    probes = (keys & ((1 << 32) - 1)).astype(xp.uint32)  # (offset << 8) | plane
    starts = xp.zeros(n_g + 1, dtype=xp.int64)
    xp.cumsum(_bincount(xp, keys >> 40, n_g), out=starts[1:])
    levels = int(p_level.max()) if p_level.size else 0
    return probes, starts, levels
