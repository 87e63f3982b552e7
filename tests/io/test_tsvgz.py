"""Tables as gzipped TSV (io/tsvgz.py, io/pgzip.py) against the text of format_column joined row by row."""

import gzip
import io
import zlib

import numpy as np
import pytest

from genotile.io import pgzip, tsvgz
from genotile.io.tsvgz import Cells, format_column, text_column, write_tsv_gz


def reference(header, columns) -> bytes:
    rows = ["\t".join(header)] + ["\t".join(row) for row in zip(*columns, strict=True)]
    return ("\n".join(rows) + "\n").encode("utf-8")


def as_strings(column) -> list[str]:
    if isinstance(column, Cells):
        return [column.texts[k] for k in column.codes.tolist()]
    return list(column)


def values(rng, kind: str, n: int) -> np.ndarray:
    if kind == "small":
        return rng.integers(0, 30, n).astype(np.int32)
    if kind == "signed":
        return rng.integers(-5, 5, n)
    if kind == "wide":  # a range past TABLE_MAX: formatted per distinct value
        return np.concatenate([rng.integers(-(2**62), 2**62, n - 2), [np.iinfo(np.int64).min, np.iinfo(np.int64).max]])
    if kind == "uint64":
        return rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1
    special = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-300, 0.1, 1 / 3, 5e-324]
    out = np.concatenate([rng.standard_normal(n - len(special)), special])
    out[rng.random(out.size) < 0.2] = 0.25
    return out.astype(np.float32) if kind == "float32" else out


@pytest.mark.parametrize("kind", ["small", "signed", "wide", "uint64", "float64", "float32"])
def test_text_column_is_format_column(kind):
    v = values(np.random.default_rng(len(kind)), kind, 500)
    assert as_strings(text_column(v)) == format_column(v)
    assert as_strings(text_column(v[:0])) == []


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("n", [0, 1, 7, 2000])
def test_table_text_equals_reference(tmp_path, monkeypatch, n, threads):
    # small chunks and blocks: many gzip blocks and chunks per block, and a partial last one
    monkeypatch.setattr(tsvgz, "CHUNK_BYTES", 256)
    monkeypatch.setattr(tsvgz, "BLOCK_BYTES", 1024)
    rng = np.random.default_rng(n)
    ids = [f"s{k}" for k in range(50)] + ["Ω-ünïcode-µ", "x" * 100, "", "a b", "名前"]
    a, b = rng.integers(0, len(ids), n), rng.integers(0, len(ids), n)
    header = ("id1", "id2", "small", "king", "wide", "label")
    columns = [
        Cells(ids, a),
        Cells(ids, b),
        text_column(values(rng, "small", n) if n else np.zeros(0, np.int32)),
        text_column(values(rng, "float64", n) if n >= 10 else np.full(n, np.nan)),
        text_column(values(rng, "wide", n) if n >= 2 else np.zeros(n, np.int64)),
        [str(k % 3) * (k % 5) + "é" for k in range(n)],  # plain strings, some of them one byte
    ]
    path = tmp_path / "t.tsv.gz"
    assert write_tsv_gz(path, header, columns, threads=threads) == n
    assert gzip.decompress(path.read_bytes()) == reference(header, [as_strings(c) for c in columns])
    one = tmp_path / "one.tsv.gz"
    write_tsv_gz(one, header, columns, threads=1)
    assert one.read_bytes() == path.read_bytes()  # the bytes do not depend on the thread count


def test_unequal_columns_refused(tmp_path):
    with pytest.raises(ValueError, match="unequal length"):
        write_tsv_gz(tmp_path / "x.tsv.gz", ("a", "b"), [["1", "2"], ["1"]])


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_parallel_gzip_round_trip(tmp_path, threads):
    rng = np.random.default_rng(threads)
    blocks = [rng.integers(0, 4, int(size), dtype=np.uint8).tobytes() for size in rng.integers(0, 50_000, 23)]
    blocks[3] = b""
    path = tmp_path / "x.gz"
    with open(path, "wb") as fh:
        size = pgzip.write_gzip(fh, [(lambda b=b: b) for b in blocks], level=1, threads=threads)
    data = path.read_bytes()
    assert size == sum(map(len, blocks))
    assert gzip.decompress(data) == b"".join(blocks)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # one gzip member, CRC and size checked, nothing after it
    assert d.decompress(data) == b"".join(blocks) and d.eof and d.unused_data == b""
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=1):
        pass
    assert data[:10] == raw.getvalue()[:10]  # gzip.GzipFile's header


def test_parallel_gzip_empty(tmp_path):
    path = tmp_path / "x.gz"
    with open(path, "wb") as fh:
        assert pgzip.write_gzip(fh, [], level=1, threads=2) == 0
    assert gzip.decompress(path.read_bytes()) == b""


@pytest.mark.parametrize("widest_used", [True, False])
def test_a_long_id_list_is_padded_for_the_rows_ids_alone_with_the_same_bytes(tmp_path, monkeypatch, widest_used):
    """Cells over a texts list far longer than the rows (a merge's IDs for a few passing pairs)
    pad only the texts the rows use, as wide as the list's widest text, so the rows per gzip block
    and the file are those of padding every text: here blocks of a few rows, non-ASCII IDs, and
    the widest ID used by a row or by none."""
    monkeypatch.setattr(tsvgz, "CHUNK_BYTES", 64)
    monkeypatch.setattr(tsvgz, "BLOCK_BYTES", 256)
    rng = np.random.default_rng(5)
    ids = [f"s{k}" + "é" * int(rng.integers(0, 3)) for k in range(5000)]
    ids[4321] = "w" * 40  # the widest: 41 bytes with its tab, 6 words
    rows = 120
    a = np.sort(rng.choice(np.delete(np.arange(5000), 4321), rows))
    b = rng.integers(0, 5000, rows)
    if widest_used:
        b[7] = 4321
    columns = [Cells(ids, a), Cells(ids, b), format_column(rng.integers(0, 99, rows))]
    table = tsvgz.Table(columns)
    assert len(table.padded[0].lengths) < len(ids) / 8  # padded for the rows' IDs alone
    assert table.words[:2] == [6, 6]
    write_tsv_gz(tmp_path / "sparse.gz", ["id1", "id2", "n"], columns)
    monkeypatch.setattr(tsvgz, "SPARSE_TEXTS", 10**9)  # every text padded
    assert len(tsvgz.Table(columns).padded[0].lengths) == len(ids)
    write_tsv_gz(tmp_path / "dense.gz", ["id1", "id2", "n"], columns)
    assert (tmp_path / "sparse.gz").read_bytes() == (tmp_path / "dense.gz").read_bytes()
    text = gzip.decompress((tmp_path / "sparse.gz").read_bytes()).decode()
    assert text.splitlines()[1:] == [f"{ids[x]}\t{ids[y]}\t{n}" for x, y, n in zip(a, b, columns[2], strict=True)]


def test_one_texts_list_in_two_columns_is_padded_once_with_each_columns_end():
    """A pair's id1 and id2 (one IDs list, a tab after id1, a newline after id2): the list is
    padded once, for the first column, and copied with the second's end (`_Padded.with_end`);
    the text is every row's, non-ASCII IDs and IDs of every width among them."""
    rng = np.random.default_rng(7)
    ids = [f"s{k}" + "é" * int(rng.integers(0, 3)) + "x" * int(rng.integers(0, 20)) for k in range(300)]
    a, b = rng.integers(0, 300, 500), rng.integers(0, 300, 500)
    table = tsvgz.Table([Cells(ids, a), Cells(ids, b)])
    first, second = table.padded
    assert second.masks is first.masks and second.table is not first.table  # one padding, two ends
    want = "".join(f"{ids[x]}\t{ids[y]}\n" for x, y in zip(a, b, strict=True)).encode()
    assert table.text(0, table.n) == want
