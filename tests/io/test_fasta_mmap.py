"""The one-pass FASTA ingest (io/fasta_mmap.py, io/readers/fasta.read_regular) against the streaming
reader, the reference: the same IDs, codes, manifest and errors on every spelling of a file, and
the fast path taken wherever the layout is regular; the store job's alignment held in memory
(io/readers/fasta.hold_regular, store/pack.py) against its codes, the same files."""

import gzip

import numpy as np
import pytest
from conftest import make_alignment

from genotile.core.columns import ColumnCounts, ColumnSpan, categorical_codes, code_bytes, encode_ascii, fold_ascii
from genotile.core.encode import ALPHABETS, CATEGORICAL, MISSING, NUCLEOTIDE, ColumnScan, symbol_counts
from genotile.errors import GenotileError
from genotile.io import fasta_mmap
from genotile.io.readers import fasta as fasta_reader
from genotile.store import ingest as ingest_module
from genotile.store import pack as pack_module
from genotile.store import stage as store_stage


def fasta_bytes(records, width=None, eol=b"\n", final=True, widths=None, blank=False) -> bytes:
    """records as FASTA: `width` wraps every record alike, `widths` gives each record its own."""
    out = []
    for k, (name, seq) in enumerate(records):
        out.append(b">" + name.encode() + (b" some description" if k % 2 else b"") + eol)
        w = (widths[k] if widths else width) or max(1, len(seq))
        out += [seq[i : i + w].encode() + eol for i in range(0, len(seq), w)]
        if blank and k == 1:
            out.append(eol)
    data = b"".join(out)
    return data if final else data.rstrip(b"\r\n")


def ingest_both(tmp_path, data: bytes, alphabet: str, monkeypatch, name="in.fa"):
    """(fast result, streaming result, whether the fast path read it): each result is
    (manifest without paths, codes) or the error message."""
    path = tmp_path / name
    path.write_bytes(data)
    taken = []
    real = fasta_reader.read_regular

    def spy(*args):
        got = real(*args)
        taken.append(got is not None)
        return got

    results = []
    for fast in (True, False):
        with monkeypatch.context() as m:
            m.setattr(fasta_reader, "read_regular", spy)
            if not fast:
                m.setattr(fasta_mmap, "open_regular", lambda p: None)
            codes, manifest = tmp_path / f"{fast}.codes.npy", tmp_path / f"{fast}.json"
            try:
                got = ingest_module.ingest(path, alphabet, codes, manifest).manifest
                results.append((got, np.load(codes)))
            except GenotileError as exc:
                results.append(str(exc))
    return results[0], results[1], bool(taken and taken[0])


def same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a[0] == b[0] and a[1].dtype == b[1].dtype and np.array_equal(a[1], b[1])


RECORDS = make_alignment(9, 131, seed=3, p_lower=0.3)
REGULAR = {
    "unwrapped": fasta_bytes(RECORDS),
    "wrapped_60": fasta_bytes(RECORDS, width=60),
    "wrapped_7": fasta_bytes(RECORDS, width=7),
    "width_divides": fasta_bytes(make_alignment(5, 120, seed=4), width=40),
    "crlf": fasta_bytes(RECORDS, width=50, eol=b"\r\n"),
    "crlf_unwrapped": fasta_bytes(RECORDS, eol=b"\r\n"),
    "no_final_newline": fasta_bytes(RECORDS, width=60, final=False),
    "one_sequence": fasta_bytes(RECORDS[:1], width=60),
    "one_column": fasta_bytes([(n, s[:1]) for n, s in RECORDS]),
    "lowercase_only": fasta_bytes([(n, s.lower()) for n, s in RECORDS], width=33),
}
ODD = {
    "varying_widths": fasta_bytes(RECORDS, widths=[60, 61, 60, 7, 60, 60, 60, 60, 60]),
    "blank_lines": fasta_bytes(RECORDS, width=60, blank=True),
    "bom": b"\xef\xbb\xbf" + fasta_bytes(RECORDS, width=60),
    "leading_blank": b"\n\n" + fasta_bytes(RECORDS, width=60),
    "mixed_line_ends": fasta_bytes(RECORDS, width=60).replace(b"\n", b"\r\n", 5),
    "stray_cr": fasta_bytes(RECORDS, width=60).replace(b"\n>", b"\r\n>", 1).replace(b"\r\n>", b"\r\r\n>", 1),
    "cr_in_sequence": fasta_bytes([(n, s[:5] + "\r" + s[5:]) for n, s in RECORDS[:3]] + RECORDS[3:], width=None),
    "tab_in_sequence": fasta_bytes([(n, s[:-1] + "\t") for n, s in RECORDS], width=60),
    "gzip": gzip.compress(fasta_bytes(RECORDS, width=60), mtime=0),
    "zero_length": fasta_bytes([(n, "") for n, _ in RECORDS]),
}
BAD = {
    "unequal": fasta_bytes(RECORDS[:3] + [("short", RECORDS[3][1][:-1])], width=60),
    "unequal_same_lines": fasta_bytes(RECORDS[:2] + [("short", RECORDS[2][1][:-1])], width=60),
    "duplicate_id": fasta_bytes(RECORDS[:3] + [(RECORDS[1][0], RECORDS[3][1])], width=60),
    "empty_id": fasta_bytes(RECORDS[:2] + [("", RECORDS[2][1])], width=60),
    "control_in_id": fasta_bytes(RECORDS[:2] + [("a\x01b", RECORDS[2][1])], width=60),
    "non_ascii": fasta_bytes(RECORDS[:2] + [("x", RECORDS[2][1][:-1] + "\u00e9")], width=60),
    "latin1_header": fasta_bytes(RECORDS[:2], width=60) + b">b\xe9\n" + RECORDS[2][1].encode() + b"\n",
    "header_only_at_end": fasta_bytes(RECORDS[:3], width=60) + b">last\n",
}


@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
@pytest.mark.parametrize("case", sorted(REGULAR))
def test_regular_files_take_the_fast_path_and_read_alike(tmp_path, monkeypatch, case, alphabet):
    fast, slow, taken = ingest_both(tmp_path, REGULAR[case], alphabet, monkeypatch)
    assert taken, "a regular file must be read in one pass"
    assert not isinstance(fast, str), fast
    assert same(fast, slow)
    assert fast[1].shape[0] == fast[0]["n_vectors"] and fast[0]["n_kept"] == fast[1].shape[1]


@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_files_fall_back_and_read_alike(tmp_path, monkeypatch, case, alphabet):
    fast, slow, taken = ingest_both(tmp_path, ODD[case], alphabet, monkeypatch)
    assert not taken, "an odd layout goes to the streaming reader"
    assert same(fast, slow)


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_give_the_streaming_readers_error(tmp_path, monkeypatch, case):
    fast, slow, _ = ingest_both(tmp_path, BAD[case], "nucleotide", monkeypatch)
    assert isinstance(slow, str), "the reference refuses it"
    assert fast == slow
    assert "\n" not in fast


@pytest.mark.parametrize("seed", range(12))
def test_random_layouts_read_alike(tmp_path, monkeypatch, seed):
    """Random alignments (DNA, protein, printable ASCII), widths, line ends and endings."""
    rng = np.random.default_rng(seed)
    kind = ["dna", "protein", "ascii"][seed % 3]
    n, length = int(rng.integers(1, 30)), int(rng.integers(1, 300))
    records = make_alignment(n, length, seed=seed, kind=kind)
    records = [(name, seq.replace(">", "<")) for name, seq in records]  # '>' would start a record
    width = None if rng.random() < 0.3 else int(rng.integers(1, length + 5))
    data = fasta_bytes(records, width=width, eol=[b"\n", b"\r\n"][seed % 2], final=bool(rng.random() < 0.8))
    if seed % 2 == 0:  # newlines found in many chunks, on threads
        monkeypatch.setattr(fasta_mmap, "NEWLINE_CHUNK", int(rng.integers(1, 64)))
    for alphabet in sorted(ALPHABETS):
        fast, slow, _ = ingest_both(tmp_path, data, alphabet, monkeypatch, name=f"r{alphabet}.fa")
        assert same(fast, slow)


def test_rows_gather_records_at_any_spacing(tmp_path):
    """Records equally spaced (one strided view) and not (one copy a record) give the same rows."""
    records = make_alignment(7, 95, seed=5)
    equal = fasta_bytes([(f"s{k}", s) for k, (_, s) in enumerate(records)], width=10)
    unequal = fasta_bytes([("s" * (k + 1), s) for k, (_, s) in enumerate(records)], width=10)
    expected = np.array([np.frombuffer(s.encode(), np.uint8) for _, s in records])
    for name, data in (("equal.fa", equal), ("unequal.fa", unequal)):
        (tmp_path / name).write_bytes(data)
        layout = fasta_mmap.open_regular(tmp_path / name)
        assert layout is not None and layout.length == 95 and layout.lines == 10
        assert np.array_equal(layout.rows(0, 7), expected)
        assert np.array_equal(layout.rows(2, 5), expected[2:5])


@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
def test_column_span_agrees_with_column_scan(alphabet):
    rng = np.random.default_rng(1)
    symbols = np.frombuffer(b"ACGTacgtNn-.RYxz*?~ ", dtype=np.uint8)
    raw = rng.choice(symbols, size=(40, 300))
    raw[:, :50] = raw[:1, :50]  # constant columns
    raw[5:, 50:60] = ord("N")  # columns with one base and missing entries
    raw[:20, 60:70] = ord("a")  # a / A: one symbol in two cases
    raw[20:, 60:70] = ord("A")
    alpha = ALPHABETS[alphabet]
    scan, span = ColumnScan(300), ColumnSpan(alpha, 300)
    for row in raw:
        scan.add(alpha.encode(row))
    span.add(raw[:17])
    span.add(raw[17:])
    assert np.array_equal(span.informative, scan.informative)
    assert np.array_equal(categorical_codes(raw), CATEGORICAL.encode(raw))
    every_byte = np.arange(fasta_mmap.LOWEST, fasta_mmap.HIGHEST + 1, dtype=np.uint8)[None, :]
    assert np.array_equal(encode_ascii(alpha, every_byte), alpha.encode(every_byte))


def store_files(path, out, alphabet: str, collapse: bool, codes_out=None) -> dict[str, bytes]:
    """The store job's files (store_stage.store): the alignment held in memory, or (`codes_out`) its
    codes written and packed from the file, as `genotile run` keeps them."""
    store_stage.store(
        path, alphabet, out / "ingest.json", out / "store", 4, 3, collapse_duplicates=collapse, codes_out=codes_out
    )
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def held_and_coded(tmp_path, data: bytes, alphabet: str, collapse: bool, monkeypatch) -> tuple[dict, dict, bool]:
    """(held store's files, codes path's files, whether the held path read it)."""
    path = tmp_path / "in.fa"
    path.write_bytes(data)
    taken = []
    real = pack_module._pack_held
    with monkeypatch.context() as patch:
        patch.setattr(pack_module, "_pack_held", lambda *a: taken.append(1) or real(*a))
        held = store_files(path, tmp_path / "held", alphabet, collapse)
        coded = store_files(path, tmp_path / "coded", alphabet, collapse, codes_out=tmp_path / "codes.npy")
    return held, coded, taken == [1]


def with_copies(records, seed: int) -> list[tuple[str, str]]:
    """records where some sequences repeat others, in other spellings of the same codes: case
    (every alphabet) and, for nucleotides, another missing symbol."""
    rng = np.random.default_rng(seed)
    out = list(records)
    for k in range(1, len(out), 3):
        seq = out[int(rng.integers(0, k))][1]
        seq = seq.swapcase() if k % 2 else seq.replace("N", "-").replace("?", "n")
        out[k] = (out[k][0], seq)
    return out


@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
@pytest.mark.parametrize("case", sorted(REGULAR))
def test_held_alignment_stores_the_same_bytes(tmp_path, monkeypatch, case, alphabet, collapse):
    """The store job's alignment held in memory (no codes written) gives every file the codes
    path writes, byte for byte."""
    held, coded, taken = held_and_coded(tmp_path, REGULAR[case], alphabet, collapse, monkeypatch)
    assert taken and held == coded


@pytest.mark.parametrize("seed", range(9))
def test_held_alignment_with_copies_stores_the_same_bytes(tmp_path, monkeypatch, seed):
    """Copies spelled otherwise (case, missing symbols) collapse as their codes do; random
    layouts, alphabets, and held blocks and counting bands of a few rows and columns."""
    rng = np.random.default_rng(seed)
    kind = ["dna", "protein", "ascii"][seed % 3]
    n, length = int(rng.integers(2, 40)), int(rng.integers(1, 200))
    records = with_copies(make_alignment(n, length, seed=seed, kind=kind), seed)
    records = [(name, seq.replace(">", "<")) for name, seq in records]
    width = None if seed % 4 == 0 else int(rng.integers(1, length + 5))
    monkeypatch.setattr(fasta_reader, "CHUNK_BYTES", int(rng.integers(1, 3 * length)))
    monkeypatch.setattr(fasta_reader, "COUNT_COLUMNS", int(rng.integers(1, 50)))
    monkeypatch.setattr(ColumnCounts, "ROWS", int(rng.integers(1, 9)))
    monkeypatch.setattr(ColumnCounts, "BLOCK_BYTES", int(rng.integers(1, 200)))
    data = fasta_bytes(records, width=width)
    for alphabet in sorted(ALPHABETS):
        out = tmp_path / alphabet
        out.mkdir()
        held, coded, taken = held_and_coded(out, data, alphabet, True, monkeypatch)
        assert taken and held == coded


@pytest.mark.parametrize("case", ["tab_in_sequence", "cr_in_sequence", "gzip", "varying_widths"])
def test_held_store_falls_back_to_the_codes(tmp_path, monkeypatch, case):
    """A byte the fast path does not take, or an odd layout: the codes are written and packed."""
    path = tmp_path / "in.fa"
    path.write_bytes(ODD[case])
    held = store_files(path, tmp_path / "held", "categorical", True)
    assert held == store_files(path, tmp_path / "coded", "categorical", True, codes_out=tmp_path / "codes.npy")


def test_held_store_past_hold_bytes_or_gpu_packing_writes_the_codes(tmp_path, monkeypatch):
    path = tmp_path / "in.fa"
    path.write_bytes(REGULAR["wrapped_7"])
    reference = store_files(path, tmp_path / "held", "nucleotide", True)
    called = []
    real = pack_module._pack_codes
    monkeypatch.setattr(pack_module, "_pack_codes", lambda *a, **k: called.append(1) or real(*a, **k))
    with monkeypatch.context() as patch:
        patch.setattr(fasta_reader, "HOLD_BYTES", 10)
        assert store_files(path, tmp_path / "big", "nucleotide", True) == reference
    with monkeypatch.context() as patch:
        patch.setenv("GENOTILE_GPU_PACK", "1")
        patch.setattr(pack_module, "use_gpu_packing", lambda gpu=None: False)  # packed on the CPU all the same
        assert store_files(path, tmp_path / "gpu", "nucleotide", True) == reference
    assert called == [1, 1]


@pytest.mark.parametrize("canonical", [False, True])
def test_column_counts_are_the_symbol_counts_of_the_codes(canonical):
    rng = np.random.default_rng(2)
    symbols = np.frombuffer(b"ACGTacgtNn-.RYxz*?~ ", dtype=np.uint8)
    raw = rng.choice(symbols, size=(600, 70))
    raw[:, :10] = raw[:1, :10]  # constant columns
    raw[:20, 10:15], raw[20:, 10:15] = ord("a"), ord("A")  # one base in two cases
    codes = NUCLEOTIDE.encode(raw)
    counts = ColumnCounts(70)
    counts.add(raw[:300], canonical)
    other = ColumnCounts(70)
    other.add(raw[300:], canonical)
    counts.update(other)
    keep = np.flatnonzero(counts.informative)
    scan = ColumnScan(70)
    for row in codes:
        scan.add(row)
    assert np.array_equal(counts.informative, scan.informative) and keep.size < 70
    assert np.array_equal(counts.code_counts(keep), symbol_counts(codes[:, keep]))
    folded = code_bytes(NUCLEOTIDE)[np.minimum(codes, 4)]  # 4: a byte no code folds to (MISSING)
    present = codes != MISSING
    assert np.array_equal(raw[present], folded[present])  # raw is folded in place
    assert not np.isin(raw[~present], np.frombuffer(b"ACGT", np.uint8)).any()
    if canonical:
        assert (raw[~present] == 0).all()


@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
def test_folded_bytes_are_the_codes_bytes(alphabet):
    alpha = ALPHABETS[alphabet]
    every_byte = np.arange(fasta_mmap.LOWEST, fasta_mmap.HIGHEST + 1, dtype=np.uint8)[None, :]
    folded = every_byte.copy()
    fold_ascii(alpha, folded)
    codes = alpha.encode(every_byte)
    table = code_bytes(alpha)
    present = codes != MISSING
    assert np.array_equal(table[codes[present]], folded[present])
    assert not np.isin(folded[~present], table[table != MISSING]).any()


HEADERS = {
    "plain": ["s1", "s2", "x.3|a=b", "~!#$%"],
    "descriptions": ["s1 one", "s2  two spaces", "s3", "s4 tail "],
    "tab": ["s1\tdescription", "s2", "s3", "s4"],
    "utf8": ["s1", "\u00e9t\u00e9", "s3", "s4"],
    "duplicate": ["s1", "s2", "s1", "s4"],
    "duplicate_after_description": ["s1 a", "s1 b", "s3", "s4"],
    "empty_id": ["s1", " s2", "s3", "s4"],
    "delete": ["s1", "s\x7f2", "s3", "s4"],
}


@pytest.mark.parametrize("case", sorted(HEADERS))
def test_headers_read_at_once_as_record_by_record(tmp_path, monkeypatch, case):
    """open_regular's IDs from all headers at once (_plain_ids) are fasta.record_id's, or its error."""
    data = b"".join(b">" + h.encode() + b"\nACGT\n" for h in HEADERS[case])
    (tmp_path / "in.fa").write_bytes(data)

    def read():
        try:
            return fasta_mmap.open_regular(tmp_path / "in.fa").ids
        except GenotileError as exc:
            return str(exc)

    fast = read()
    monkeypatch.setattr(fasta_mmap, "_plain_ids", lambda *a: None)
    assert fast == read()
