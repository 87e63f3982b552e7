"""A query's store made from its FILE's all-pairs store and the input alone (issue 27, point 3;
store/against.py): every file of the query store is the one today's path (both files read and
encoded together, store/query.py) makes, byte for byte, and FILE is not read; where FILE has no
store that gives the same store (none, FILE changed since, an input column FILE holds constant
made variable), today's path makes it, saying why in one line."""

import gzip
import logging
from pathlib import Path

import numpy as np
import pytest

from genotile.io import fasta_mmap
from genotile.pipeline import run_all
from genotile.store import against, append, query
from tests.pairs.test_query import brute_snp, expected_lines, pairs_lines
from tests.snakerun import snakemake, write_fasta

LENGTH = 120
VARIABLE = np.arange(0, LENGTH, 3)  # FILE's variable columns; the others constant in FILE
RNG = np.random.default_rng(2711)
HUB = RNG.choice(list("ACGT"), LENGTH)


def _other(column: int, k: int) -> str:
    return "ACGT"[("ACGT".index(HUB[column]) + k) % 4]


def _file_rows(n: int) -> list[str]:
    """FILE: the hub with, at each variable column, a second base (20%) and a third (5%), some
    N; rows 5 and 6 copies of row 4 (collapsed where asked)."""
    rows = np.tile(HUB, (n, 1))
    for c in VARIABLE:
        draw = RNG.random(n)
        rows[draw < 0.25, c] = _other(c, 1)
        rows[draw < 0.05, c] = _other(c, 2)
    rows[RNG.random((n, LENGTH)) < 0.02] = "N"
    rows[5] = rows[6] = rows[4]
    return ["".join(r) for r in rows]


FILE = _file_rows(200)


def _input(kind: str) -> list[str]:
    """The query's input: each column's bases drawn from FILE's rows (FILE's encoding kept);
    `rerank`: 300 rows with column 0's third base (its ranks change); `allele`: a fourth base in
    column 3; `variable`: a base at a column FILE holds constant."""
    n = 300 if kind == "rerank" else 40
    pick = RNG.integers(0, len(FILE), (n, LENGTH))
    rows = np.array([list(s) for s in FILE])[pick, np.arange(LENGTH)]
    if kind == "rerank":
        rows[:, 0] = _other(0, 2)
    elif kind == "allele":
        rows[:3, 3] = _other(3, 3)
    elif kind == "variable":
        rows[:2, 1] = _other(1, 1)
    return ["".join(r) for r in rows]


def _file_store(root: Path, collapse: bool = False, appended: bool = False) -> Path:
    """FILE's all-pairs store as the workflow's store job makes it, in results/db; `appended`:
    made by appending FILE's last 50 records to a store of its first 150."""
    db = root / "db.fa"
    work = root / "results" / "db"
    made = ("nucleotide", work / "ingest" / "nucleotide.json", work / "store" / "nucleotide", 16, 1)
    for n in (150, 200) if appended else (200,):
        write_fasta(db, FILE[:n], [f"db{i}" for i in range(n)])
        append.store(db, *made, collapse_duplicates=collapse)
    return work / "store" / "nucleotide"


def _both(root: Path, monkeypatch) -> tuple[dict, dict]:
    """(the query store made where FILE's store may be reused, today's), FILE's reads spied on."""
    out = root / "results" / "q"
    out.mkdir(parents=True, exist_ok=True)
    (out / "store").mkdir(exist_ok=True)
    read: list[str] = []
    real = fasta_mmap.open_regular
    monkeypatch.setattr(fasta_mmap, "open_regular", lambda path, *a: read.append(Path(path).name) or real(path, *a))
    with monkeypatch.context() as m:
        m.setattr(query, "read_part", lambda *a, **k: pytest.fail("read_part"))
        m.setattr(query, "held_alignments", lambda *a, **k: None)  # today's path: read_part, which fails
        reused = _query_in(root, out, "nucleotide")
    reused_reads = list(read)
    monkeypatch.setattr(query, "reuse_file_store", lambda *a, **k: None)
    today = _query_in(root, root / "today", "today")
    return reused | {"reads": reused_reads}, today


def _query_in(root: Path, out: Path, store_name: str) -> dict:
    """_query with the store in out/store/<store_name> (named as the workflow names it, or not)."""
    store = out / "store" / store_name
    query.query_store(root / "new.fa", root / "db.fa", "nucleotide", out / "ingest.json", store, 32, 5)
    files = {"ingest.json": (out / "ingest.json").read_bytes()}
    files |= {f"store/{name}": (store / name).read_bytes() for name in ("plan.json", "perm.npy", "planes.npy")}
    files["store/manifest.json"] = (store / "manifest.json").read_bytes()
    return files


@pytest.mark.parametrize(
    "kind, collapse, appended",
    [
        ("same", False, False),
        ("same", True, False),
        ("same", False, True),
        ("rerank", True, False),
        ("allele", False, False),
    ],
)
def test_a_query_against_a_file_with_a_store_reads_the_input_only_with_todays_files(
    tmp_path, monkeypatch, caplog, kind, collapse, appended
):
    _file_store(tmp_path, collapse, appended)
    write_fasta(tmp_path / "new.fa", _input(kind), [f"new{i}" for i in range(len(_input(kind)))])
    with caplog.at_level(logging.INFO, logger="genotile"):
        reused, today = _both(tmp_path, monkeypatch)
    assert "FILE's 200 vectors from its all-pairs store in" in caplog.text
    assert reused.pop("reads") == ["new.fa"]  # FILE not read: its rows are its store's
    assert reused == today
    recoded = "the earlier rows' planes are encoded again" in caplog.text
    assert recoded == (kind != "same")


@pytest.mark.parametrize("case", ["no store", "changed", "variable", "named otherwise"])
def test_a_query_without_a_usable_file_store_is_made_as_today(tmp_path, monkeypatch, caplog, case):
    if case == "no store":
        write_fasta(tmp_path / "db.fa", FILE, [f"db{i}" for i in range(len(FILE))])
    else:
        _file_store(tmp_path)
    if case == "changed":  # FILE's last record edited after its store was made: same size, other bytes
        text = (tmp_path / "db.fa").read_text()
        (tmp_path / "db.fa").write_text(text[:-3] + ("A" if text[-3] != "A" else "C") + text[-2:])
    write_fasta(tmp_path / "new.fa", _input("variable" if case == "variable" else "same"))
    out = tmp_path / "results" / "q"
    store = "other" if case == "named otherwise" else "nucleotide"
    with caplog.at_level(logging.INFO, logger="genotile"):
        made = _query_in(tmp_path, out, store)
    why = {
        "no store": "no store of",
        "changed": "changed since its store in",
        "variable": "the input: the new records make a constant column variable",
        "named otherwise": "no store of",
    }[case]
    said = [r.getMessage() for r in caplog.records if "FILE's all-pairs store not reused: " in r.getMessage()]
    assert len(said) == 1 and why in said[0]
    monkeypatch.setattr(query, "reuse_file_store", lambda *a, **k: None)
    assert made == _query_in(tmp_path, tmp_path / "today", "today")


def test_genotile_run_query_beside_files_run_equals_brute_force_and_todays_bytes(tmp_path, monkeypatch, caplog):
    """`genotile run FILE --outdir db`, then `genotile run new --against FILE --outdir q` beside it:
    the query's store is made from db's; its outputs are brute force's and today's, byte for byte."""
    x = _input("rerank")
    ids_y = write_fasta(tmp_path / "db.fa", FILE, [f"db{i}" for i in range(len(FILE))])
    ids_x = write_fasta(tmp_path / "new.fa", x, [f"new{i}" for i in range(len(x))])
    kw = {"block_size": 64, "backend": "numpy", "thresholds": {"snp": 7}}
    run_all(tmp_path / "db.fa", tmp_path / "db", ["snp"], **kw)
    with caplog.at_level(logging.INFO, logger="genotile"):
        run_all(tmp_path / "new.fa", tmp_path / "q", ["snp"], against=tmp_path / "db.fa", **kw)
    assert "FILE's 200 vectors from its all-pairs store in" in caplog.text
    lines = pairs_lines(tmp_path / "q" / "snp" / "pairs.tsv.gz")
    assert lines[1:] == expected_lines(ids_x, ids_y, brute_snp(x, FILE), 7)
    monkeypatch.setattr(query, "reuse_file_store", lambda *a, **k: None)
    run_all(tmp_path / "new.fa", tmp_path / "today" / "q", ["snp"], against=tmp_path / "db.fa", **kw)
    for name in ("pairs.tsv.gz", "histogram.tsv", "matrix.tsv"):
        assert (tmp_path / "q" / "snp" / name).read_bytes() == (tmp_path / "today" / "q" / "snp" / name).read_bytes()


def test_a_workflow_query_reuses_the_store_of_its_files_dataset(tmp_path):
    """A config of FILE's dataset, run, then with a query dataset against FILE: the query's store
    job takes FILE's store (results/db), and its pairs are brute force's."""
    x = _input("same")
    ids_y = write_fasta(tmp_path / "db.fa", FILE, [f"db{i}" for i in range(len(FILE))])
    ids_x = write_fasta(tmp_path / "new.fa", x, [f"new{i}" for i in range(len(x))])
    db = {"input": str(tmp_path / "db.fa"), "metrics": ["snp"]}
    config = {"datasets": {"db": db}, "thresholds": {"snp": 6}, "backend": "numpy", "report": False}
    snakemake(tmp_path, config)
    config["datasets"]["q"] = {
        "input": str(tmp_path / "new.fa"),
        "against": str(tmp_path / "db.fa"),
        "metrics": ["snp"],
    }
    snakemake(tmp_path, config)
    log = (tmp_path / "logs" / "q" / "store.nucleotide.log").read_text()
    assert "FILE's 200 vectors from its all-pairs store in" in log and "results/db/store/nucleotide" in log
    lines = gzip.decompress((tmp_path / "results/q/snp/pairs.tsv.gz").read_bytes()).decode().splitlines()
    assert lines[1:] == expected_lines(ids_x, ids_y, brute_snp(x, FILE), 6)


def test_the_store_rows_of_a_collapsed_store_are_each_vectors_firsts():
    manifest = {"plan": {"n_vectors": 3, "block_size": 2, "seed": 4}, "distinct_index": [0, 1, 1, 2]}
    perm = np.random.default_rng(4).permutation(3)
    rows = against._store_rows(manifest)
    assert perm[rows].tolist() == [0, 1, 1, 2]
