"""Bit packing and the categorical plane encoding (encode.py, pack.py)."""

import numpy as np
import pytest

from genotile.core.bits import WORD_DTYPE, n_words, pack_bits, popcount_rows, unpack_bits
from genotile.core.encode import (
    CATEGORICAL,
    MISSING,
    NUCLEOTIDE,
    ColumnScan,
    PlaneLayout,
    categorical_encoding,
    categorical_planes,
    symbol_counts,
)

WIDTHS = [0, 1, 2, 63, 64, 65, 127, 128, 129, 300]


# ---------------------------------------------------------------- pack.py


@pytest.mark.parametrize(
    ("fields", "words"),
    [(0, 0), (1, 1), (63, 1), (64, 1), (65, 2), (127, 2), (128, 2), (129, 3), (64 * 1000, 1000), (64 * 1000 + 1, 1001)],
)
def test_n_words(fields, words):
    assert n_words(fields) == words
    assert n_words(np.int64(fields)) == words
    assert isinstance(n_words(np.uint32(fields)), int)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("rows", [0, 1, 5])
def test_pack_unpack_round_trip(rows, width):
    rng = np.random.default_rng(width * 7 + rows)
    bits = rng.random((rows, width)) < 0.5
    words = pack_bits(bits)
    assert words.dtype == WORD_DTYPE
    assert words.shape == (rows, n_words(width))
    back = unpack_bits(words, dtype=np.uint8)
    assert back.shape == (rows, 64 * n_words(width))
    assert np.array_equal(back[:, :width].astype(bool), bits)
    assert not back[:, width:].any(), "padding bits must be zero"
    assert np.array_equal(popcount_rows(words), bits.sum(axis=1))


@pytest.mark.parametrize("width", [1, 63, 64, 65, 130])
def test_pack_bit_order(width):
    """Field f lives in word f // 64, bit f % 64 (bit 0 = least significant)."""
    for f in sorted({0, min(1, width - 1), width // 2, width - 1}):
        bits = np.zeros((1, width), dtype=bool)
        bits[0, f] = True
        words = pack_bits(bits)
        expected = np.zeros(n_words(width), dtype=np.uint64)
        expected[f // 64] = np.uint64(1) << np.uint64(f % 64)
        assert np.array_equal(words[0], expected)


def test_pack_extra_words_are_zero():
    bits = np.ones((3, 70), dtype=bool)
    words = pack_bits(bits, words=5)
    assert words.shape == (3, 5)
    assert np.all(words[:, 0] == np.uint64(2**64 - 1))
    assert np.all(words[:, 1] == np.uint64(2**6 - 1))
    assert not words[:, 2:].any()
    assert np.array_equal(popcount_rows(words), [70, 70, 70])


def test_unpack_default_dtype_and_non_contiguous_input():
    rng = np.random.default_rng(1)
    bits = rng.random((4, 200)) < 0.3
    words = pack_bits(bits)
    sub = words[:, 1:3]  # a non-contiguous column slice
    out = unpack_bits(sub)
    assert out.dtype == np.float32
    assert np.array_equal(out.astype(bool), bits[:, 64:192])


def test_popcount_rows():
    words = np.array([[0, 1, 2**64 - 1], [3, 0, 2**63]], dtype=np.uint64)
    assert popcount_rows(words).tolist() == [65, 3]
    assert popcount_rows(np.zeros((2, 0), dtype=np.uint64)).tolist() == [0, 0]
    assert popcount_rows(words).dtype == np.int64


# ---------------------------------------------------------------- alphabets, column scan


def test_nucleotide_alphabet():
    raw = np.frombuffer(b"ACGTacgtN-.?RYnU*", dtype=np.uint8)
    codes = NUCLEOTIDE.encode(raw)
    assert codes[:8].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert np.all(codes[8:] == MISSING)


def test_categorical_alphabet_case_insensitive_every_char_a_symbol():
    raw = np.frombuffer(b"aAzZ-N.*09?", dtype=np.uint8)
    codes = CATEGORICAL.encode(raw)
    assert codes[0] == codes[1] == ord("A")
    assert codes[2] == codes[3] == ord("Z")
    assert len(set(codes[4:].tolist())) == 7 and MISSING not in codes.tolist()


def test_column_scan_counts_only_present_symbols():
    m = MISSING
    rows = np.array([[0, 0, m, m, 1, 2], [0, m, m, 1, 1, 3], [0, 0, m, m, 2, 2]], dtype=np.uint8)
    scan = ColumnScan(rows.shape[1])
    for row in rows:
        scan.add(row)
    assert scan.informative.tolist() == [False, False, False, False, True, True]


# ---------------------------------------------------------------- categorical_encoding


def codes_from_columns(columns, n_rows):
    """Columns given as lists of codes (MISSING allowed) -> (rows, columns) uint8."""
    out = np.array(columns, dtype=np.uint8).T
    assert out.shape[0] == n_rows
    return out


def test_ranks_major_first_ties_to_smaller_code():
    m = MISSING
    cols = [
        [5, 5, 5, 2, 2, m],  # 5 most frequent -> rank 0, 2 rank 1
        [7, 3, 7, 3, 1, m],  # tie 3/7 -> 3 first (smaller code), then 7, then 1
        [9, 9, 9, 9, 9, 9],  # constant: dropped
        [m, m, m, m, m, m],  # all missing: dropped
        [4, m, 4, m, 4, m],  # one symbol plus missing: dropped
        [0, 1, 2, 3, 0, 1],  # 4 symbols: counts 2, 2, 1, 1
    ]
    codes = codes_from_columns(cols, 6)
    enc = categorical_encoding(symbol_counts(codes), has_missing=True)
    assert enc.order.tolist() == [0, 5, 1]  # B: col 0; M by symbol count desc: col 5 (4), col 1 (3)
    assert enc.n_b == 1
    r = enc.ranks
    assert (r[0, 5], r[0, 2]) == (0, 1)
    assert (r[1, 0], r[1, 1], r[1, 2], r[1, 3]) == (0, 1, 2, 3)
    assert (r[2, 3], r[2, 7], r[2, 1]) == (0, 1, 2)
    # absent codes and MISSING itself have no rank
    for k, col in enumerate(enc.order):
        present = set(codes[:, col].tolist()) - {MISSING}
        for code in range(256):
            assert (r[k, code] != MISSING) == (code in present)


def test_symbol_counts_chunking():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 6, size=(40, 37)).astype(np.uint8)
    codes[rng.random(codes.shape) < 0.2] = MISSING
    full = symbol_counts(codes)
    for chunk in (1, 5, 36, 37, 1000):
        assert np.array_equal(symbol_counts(codes, chunk_columns=chunk), full)
    expected = np.stack([np.bincount(codes[:, c], minlength=256) for c in range(codes.shape[1])])
    assert np.array_equal(full, expected)


def test_sections_and_s_prefix_lengths():
    rng = np.random.default_rng(5)
    n = 300
    n_symbols = [1, 2, 5, 3, 2, 7, 4, 1, 3, 2, 6]  # symbols per column (all occur)
    cols = []
    for k in n_symbols:
        col = rng.integers(0, k, size=n)
        col[:k] = np.arange(k)
        cols.append((col * 11 + 3).tolist())  # scattered codes
    codes = codes_from_columns(cols, n)
    enc = categorical_encoding(symbol_counts(codes), has_missing=False)
    ks = np.array(n_symbols)
    b_cols = np.flatnonzero(ks == 2)
    m_cols = [c for c in np.argsort(-ks, kind="stable") if ks[c] >= 3]
    assert enc.order.tolist() == b_cols.tolist() + m_cols
    assert enc.n_b == b_cols.size
    m_k = ks[m_cols]
    assert list(enc.s_lengths) == [int((m_k - 1 >= t).sum()) for t in range(1, m_k.max())]
    assert list(enc.s_lengths) == [6, 6, 4, 3, 2, 1]
    lay = enc.layout
    assert lay.words_b == n_words(b_cols.size) and lay.words_m == n_words(len(m_cols))
    assert lay.s_words == tuple(n_words(s) for s in enc.s_lengths)
    assert not lay.has_valid
    assert lay.total_words == lay.words_base + sum(lay.s_words)


def test_no_informative_column():
    codes = np.array([[1, MISSING, 2], [1, MISSING, MISSING]], dtype=np.uint8)
    enc = categorical_encoding(symbol_counts(codes), has_missing=True)
    assert enc.order.size == 0 and enc.n_b == 0 and enc.s_lengths == ()
    assert enc.layout.total_words == 0
    planes = categorical_planes(codes, enc)
    assert planes.shape == (2, 0)


def test_planes_bits_by_hand():
    m = MISSING
    # col 0: B (7 major, 8 minor); col 1: M, 3 symbols (1: 3x, 2: 2x, 0: 1x); col 2 constant
    cols = [[7, 7, 8, m, 7, 8], [1, 2, 0, 1, 2, 1], [4, 4, 4, 4, 4, m]]
    codes = codes_from_columns(cols, 6)
    enc = categorical_encoding(symbol_counts(codes), has_missing=True)
    assert enc.order.tolist() == [0, 1]
    planes = categorical_planes(codes, enc)
    lay = enc.layout
    seg = lay.segments()
    assert list(seg) == ["V", "N", "S1", "S2"]
    assert lay.total_words == 6  # V (B word + M word), N (B + M), S1, S2

    def bits(plane, section=None):
        lo, hi = lay.section(plane, section) if section else seg[plane]
        return unpack_bits(planes[:, lo:hi], dtype=np.uint8)[:, 0].tolist()

    assert bits("V", "B") == [1, 1, 1, 0, 1, 1]
    assert bits("N", "B") == [0, 0, 1, 0, 0, 1]
    assert bits("V", "M") == [1, 1, 1, 1, 1, 1]
    assert bits("N", "M") == [0, 1, 1, 0, 1, 0]
    assert bits("S1") == [0, 1, 0, 0, 1, 0]  # rank 1 = code 2
    assert bits("S2") == [0, 0, 1, 0, 0, 0]  # rank 2 = code 0


def test_mismatch_formula_from_planes():
    """V.N' + N.V' - 2 N_B.N_B' - N_M.N_M' - sum_t S_t.S_t' equals the mismatch count over both-present."""
    rng = np.random.default_rng(11)
    n, width = 25, 140
    codes = rng.integers(0, 6, size=(n, width)).astype(np.uint8)
    for c in range(width):  # columns with 1..6 symbols
        codes[:, c] %= 1 + c % 6
    codes[rng.random(codes.shape) < 0.15] = MISSING
    enc = categorical_encoding(symbol_counts(codes), has_missing=True)
    planes = categorical_planes(codes, enc)
    lay = enc.layout

    def plane(name, section=None):
        lo, hi = lay.section(name, section) if section else lay.segments()[name]
        return unpack_bits(planes[:, lo:hi], dtype=np.int64)

    v, nn = plane("V"), plane("N")
    got = v @ nn.T + nn @ v.T - 2 * plane("N", "B") @ plane("N", "B").T - plane("N", "M") @ plane("N", "M").T
    for t in range(1, len(lay.s_words) + 1):
        s = plane(f"S{t}")
        got -= s @ s.T
    both = (codes[:, None, :] != MISSING) & (codes[None, :, :] != MISSING)
    expected = (both & (codes[:, None, :] != codes[None, :, :])).sum(axis=2)
    assert np.array_equal(got, expected)


def test_layout_json_round_trip():
    lay = PlaneLayout(words_b=3, words_m=2, has_valid=True, s_words=(2, 1, 1))
    assert PlaneLayout.from_json(lay.to_json()) == lay
    seg = lay.segments()
    assert seg == {"V": (0, 5), "N": (5, 10), "S1": (10, 12), "S2": (12, 13), "S3": (13, 14)}
    assert lay.section("N", "B") == (5, 8) and lay.section("N", "M") == (8, 10)
    assert lay.total_words == 14


def _planes_by_rank(codes: np.ndarray, enc) -> np.ndarray:
    """The planes by their definition: every code's rank looked up (enc.ranks), one plane at a
    time, then packed (the reference for categorical_planes' compares with enc.symbols)."""
    lay, n_b = enc.layout, enc.n_b
    rank = enc.ranks[np.arange(enc.order.size)[None, :], codes[:, enc.order]]
    present, nonmajor = rank != MISSING, (rank != MISSING) & (rank >= 1)

    def base(bits):
        return [pack_bits(bits[:, :n_b], lay.words_b), pack_bits(bits[:, n_b:], lay.words_m)]

    parts = (base(present) if lay.has_valid else []) + base(nonmajor)
    for t, (length, width) in enumerate(zip(enc.s_lengths, lay.s_words, strict=True), start=1):
        parts.append(pack_bits(rank[:, n_b : n_b + length] == t, width))
    return np.concatenate(parts, axis=1)


@pytest.mark.parametrize("seed", range(40))
def test_planes_by_compare_equal_planes_by_rank(seed):
    """categorical_planes compares codes with each column's symbols, a block of rows at a time;
    the bits equal the rank lookup's, for the counted rows and for rows holding codes the
    counts never saw (those are in no plane, as their rank MISSING is)."""
    rng = np.random.default_rng(seed)
    n, m, k = int(rng.integers(1, 80)), int(rng.integers(1, 400)), int(rng.integers(1, 14))
    codes = rng.integers(0, k, (n, m)).astype(np.uint8)
    codes[:, rng.random(m) < 0.2] = 3  # constant columns, dropped
    codes[rng.random(codes.shape) < rng.random() * 0.3] = MISSING
    enc = categorical_encoding(symbol_counts(codes), has_missing=bool(seed % 2))
    assert np.array_equal(categorical_planes(codes, enc), _planes_by_rank(codes, enc))
    unseen = rng.integers(0, 20, (7, m)).astype(np.uint8)
    assert np.array_equal(categorical_planes(unseen, enc), _planes_by_rank(unseen, enc))


def test_planes_by_compare_across_row_blocks(monkeypatch):
    """Rows packed in several blocks give the bits of one block."""
    import genotile.core.encode as encode

    rng = np.random.default_rng(5)
    codes = rng.integers(0, 4, (50, 130)).astype(np.uint8)
    enc = categorical_encoding(symbol_counts(codes), has_missing=True)
    whole = categorical_planes(codes, enc)
    monkeypatch.setattr(encode, "PACK_BLOCK_BYTES", 3 * 130)
    assert np.array_equal(categorical_planes(codes, enc), whole)
    assert np.array_equal(whole, _planes_by_rank(codes, enc))
