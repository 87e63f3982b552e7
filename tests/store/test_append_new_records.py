"""Records appended to a FASTA read alone (issue 27, point 1; store/extend.py): where the grown
input keeps the earlier encoding, the store job reads only the new records and copies the earlier
planes, and every store file is the one the ingest of the whole grown input makes, byte for byte;
where it does not (a column made variable, an allele added, a rank changed), the whole input is
read, with the same files. A job killed on the way leaves the earlier store's kept files whole."""

import contextlib
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from genotile.core.encode import MISSING, categorical_codes, categorical_encoding, categorical_planes, symbol_counts
from genotile.errors import GenotileError
from genotile.io.readers import fasta
from genotile.store import append, extend, stage
from tests.snakerun import write_fasta

FILES = ("plan.json", "perm.npy", "planes.npy", "manifest.json")
HUB = "".join(np.random.default_rng(3).choice(list("ACGT"), 150))


def _variant(k: int, at: dict[int, str]) -> str:
    """The hub with bases `at` its columns, and an N in column k % 150 (a missing base, whose
    column keeps its one base)."""
    s = list(HUB)
    for column, base in at.items():
        s[column] = base
    s[(7 * k) % 150] = "N"
    return "".join(s)


def _other(column: int) -> str:
    """A base other than the hub's at `column`."""
    return "ACGT"[("ACGT".index(HUB[column]) + 1) % 4]


def _third(column: int) -> str:
    return "ACGT"[("ACGT".index(HUB[column]) + 2) % 4]


# the earlier records: column 10 two bases (30 : 6), column 20 three (28 : 5 : 3), column 30
# two (34 : 2); records 3 and 4 identical (collapsed where asked)
EARLIER = [
    _variant(k, {10: _other(10)} if k < 6 else {20: _other(20)} if k < 11 else {20: _third(20)} if k < 14 else {})
    for k in range(36)
]
EARLIER[34] = _variant(34, {30: _other(30)})
EARLIER[35] = _variant(35, {30: _other(30)})
EARLIER[4] = EARLIER[3]
# appended with the earlier encoding: bases already in their columns, no rank changed; a copy of
# an earlier record, and two copies of a new one
SAME = [_variant(40, {10: _other(10)}), EARLIER[12], _variant(41, {20: _third(20)}), _variant(42, {})]
SAME.append(SAME[0])


def _ids(n: int, first: int = 0) -> list[str]:
    return [f"r{i}" for i in range(first, first + n)]


def _store(work, collapse):
    """append.store of work/data.fa, named from `work` (so that two folders' files compare), after
    Snakemake removed the job's outputs (it does so before the job runs again): what is beside
    them is all an append has."""
    with contextlib.chdir(work):
        for f in [Path("ingest.json"), *(Path("store", name) for name in FILES)]:
            f.unlink(missing_ok=True)
        said: list[str] = []
        append.store(
            "data.fa", "nucleotide", "ingest.json", "store", 8, 1, collapse_duplicates=collapse, say=said.append
        )
    return said


def _files(work) -> dict:
    """Every file the store job makes, the append record but its `kept` entry (a new token a store)."""
    out = {name: (work / "store" / name).read_bytes() for name in FILES}
    out["ingest"] = (work / "ingest.json").read_bytes()
    record = json.loads((work / "store" / append.RECORD).read_text())
    assert record.pop("kept")["rows"] == record["n_input"]
    out["record"] = record
    return out


def spy_ingest(monkeypatch) -> list[str]:
    """The inputs the whole-input ingest reads from now on (store/stage.ingest), a list filled."""
    read: list[str] = []
    ingest = stage.ingest

    def spy(input_path, *args, **kwargs):
        read.append(str(input_path))
        return ingest(input_path, *args, **kwargs)

    monkeypatch.setattr(stage, "ingest", spy)
    return read


@pytest.fixture
def ingests(monkeypatch):
    """The inputs the whole-input ingest read during the test (store/stage.ingest)."""
    return spy_ingest(monkeypatch)


def _grow(tmp_path, name, steps, collapse, whole=False):
    """A store of each step's records in turn (`steps`: lists of records added); `whole`: the
    new records never read alone (the whole input read, as before store/extend.py)."""
    work = tmp_path / name
    work.mkdir()
    seqs: list[str] = []
    said = []
    with pytest.MonkeyPatch.context() as patch:
        if whole:
            patch.setattr(extend, "earlier", lambda store_dir, record: (None, "off"))
        for step in steps:
            seqs += step
            write_fasta(work / "data.fa", seqs, _ids(len(seqs)))
            said += _store(work, collapse)
    return work, said


@pytest.mark.parametrize("collapse", [False, True])
def test_an_append_keeping_the_encoding_reads_the_new_records_only_with_the_same_files(tmp_path, collapse, ingests):
    reference, _ = _grow(tmp_path, "reference", [EARLIER, SAME], collapse, whole=True)
    assert ingests == ["data.fa"] * 2
    ingests.clear()
    work, said = _grow(tmp_path, "work", [EARLIER, SAME], collapse)
    assert ingests == ["data.fa"]  # the first store only: the append read the new records alone
    assert said == [
        "5 vectors appended to 36: 190 pairs to compute (of 820), "
        + ("2 of 3 tiles" if collapse else "6 of 21 tiles")
        + "; the earlier tiles are kept"
    ]
    assert _files(work) == _files(reference)
    manifest = json.loads((work / "store" / "manifest.json").read_text())
    # collapsed: over the kept columns SAME[2] is SAME[1], SAME[4] SAME[0] (the earlier copy of
    # SAME[1] is a row of its own)
    assert manifest["plan"]["segments"] == ([3] if collapse else [5])
    assert ("distinct_index" in manifest) is collapse
    # only the last store's kept files are left: its planes and manifest linked, not copied
    token = json.loads((work / "store" / append.RECORD).read_text())["kept"]["token"]
    kept = sorted(p.name for p in (work / "store").glob(f"{extend.PREFIX}*"))
    assert kept == sorted(extend.kept_path(work / "store", token, n).name for n in (*extend.LINKED, extend.COUNTS))
    assert (work / "store" / "planes.npy").stat().st_ino == extend.kept_path(
        work / "store", token, "planes.npy"
    ).stat().st_ino


@pytest.mark.parametrize(
    "added",
    [
        [_variant(50, {10: _third(10)})],  # a third base in column 10
        # four more of column 20's third base: 28 : 5 : 7, its ranks 1 and 2 swapped
        [_variant(50 + k, {20: _third(20)}) for k in range(4)],
    ],
)
@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("past_the_bound", [False, True])
def test_an_append_changing_a_columns_bases_encodes_the_earlier_rows_again_with_the_same_files(
    tmp_path, added, collapse, past_the_bound, ingests, caplog, monkeypatch
):
    if past_the_bound:  # an input too large to be held: its kept columns' codes counted (fasta.read_regular)
        monkeypatch.setattr(fasta, "HOLD_BYTES", 0)
    reference, _ = _grow(tmp_path, "reference", [EARLIER, added, SAME], collapse, whole=True)
    ingests.clear()
    with caplog.at_level(logging.INFO, logger="genotile"):
        work, said = _grow(tmp_path, "work", [EARLIER, added, SAME], collapse)
    assert "the earlier rows' planes are encoded again" in caplog.text
    assert ingests == ["data.fa"]  # the first store only
    assert len(said) == 2 and all("vectors appended to" in line for line in said)
    assert _files(work) == _files(reference)


def test_an_append_making_a_constant_column_variable_reads_the_whole_input_with_the_same_files(
    tmp_path, ingests, caplog
):
    added = [_variant(50, {61: _other(61)})]
    reference, _ = _grow(tmp_path, "reference", [EARLIER, added, SAME], True, whole=True)
    ingests.clear()
    with caplog.at_level(logging.INFO, logger="genotile"):
        work, said = _grow(tmp_path, "work", [EARLIER, added, SAME], True)
    assert "the whole grown input is read again: the new records make a constant column variable" in caplog.text
    # the first store, the append that made column 61 variable; the next append (SAME) read
    # alone, from the counts the whole input's ingest kept
    assert ingests == ["data.fa"] * 2
    assert len(said) == 2 and all("vectors appended to" in line for line in said)
    assert _files(work) == _files(reference)


def test_a_stores_codes_are_read_back_from_its_planes():
    rng = np.random.default_rng(5)
    codes = (rng.integers(0, 4, (300, 500)) % (np.arange(500) % 4 + 1)).astype(np.uint8)  # 1 to 4 bases a column
    codes[rng.random(codes.shape) < 0.05] = MISSING
    enc = categorical_encoding(symbol_counts(codes), True)
    assert enc.n_b and enc.s_lengths == (250, 250, 125)  # both sections, symbol planes
    assert np.array_equal(categorical_codes(categorical_planes(codes, enc), enc), codes[:, enc.order])


@pytest.mark.parametrize("seed", range(6))
def test_earlier_rows_reranked_bit_by_bit_are_the_rows_encoded_again(seed):
    # store/extend._rerank (the bits of columns whose bases' ranks changed, rewritten) against
    # the rows' codes packed again with the grown encoding
    rng = np.random.default_rng(seed)
    codes = (rng.integers(0, 4, (400, 300)) % (np.arange(300) % 4 + 1)).astype(np.uint8)
    codes[rng.random(codes.shape) < 0.05] = MISSING
    old = categorical_encoding(symbol_counts(codes), True)
    # new rows of each column's rarest base: ranks swap where they outnumber the others
    bases = symbol_counts(codes)[:, :4]  # (columns, codes 0-3)
    rarest = np.argmin(np.where(bases > 0, bases, 1 << 30), axis=1).astype(np.uint8)
    enc = categorical_encoding(symbol_counts(np.concatenate([codes, np.repeat(rarest[None], 90, 0)])), True)
    assert old.n_b == enc.n_b and old.s_lengths == enc.s_lengths and np.array_equal(old.order, enc.order)
    changed = np.flatnonzero((old.symbols != enc.symbols).any(axis=0))
    assert 50 < changed.size <= extend.RERANK_COLUMNS
    planes = categorical_planes(codes, old)
    assert np.array_equal(extend._rerank(planes.copy(), old, enc, changed), categorical_planes(codes, enc))


@pytest.mark.parametrize(
    ("record", "error"),
    [
        (f">r3\n{SAME[0]}\n", r"duplicate sequence ID 'r3' \(records 4 and 37\)"),
        (f">r99\n{SAME[0]}A\n", r"sequence 'r99' \(record 37\) has length 151, but the first sequence has length 150"),
    ],
)
def test_new_records_with_an_earlier_id_or_another_length_are_refused_as_by_the_whole_input(
    tmp_path, ingests, record, error
):
    work = tmp_path / "work"
    work.mkdir()
    write_fasta(work / "data.fa", EARLIER, _ids(36))
    _store(work, False)
    with open(work / "data.fa", "a") as fh:
        fh.write(record)
    with pytest.raises(GenotileError, match=error):  # the whole input's reader says it
        _store(work, False)
    assert len(ingests) == 2


def test_a_job_killed_during_an_append_leaves_the_earlier_store_to_append_to(tmp_path, ingests):
    reference, _ = _grow(tmp_path, "reference", [EARLIER, SAME], False, whole=True)
    work = tmp_path / "work"
    work.mkdir()
    write_fasta(work / "data.fa", EARLIER, _ids(36))
    _store(work, False)
    record = (work / "store" / append.RECORD).read_bytes()
    write_fasta(work / "data.fa", EARLIER + SAME, _ids(41))

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the job killed once the new store is written, before its record

    with pytest.MonkeyPatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(append, "_record", killed)
        _store(work, False)
    assert (work / "store" / append.RECORD).read_bytes() == record  # the earlier record, its kept files whole
    token = json.loads(record)["kept"]["token"]
    assert all(extend.kept_path(work / "store", token, n).exists() for n in (*extend.LINKED, extend.COUNTS))
    ingests.clear()
    _store(work, False)  # the rerun: appended to the earlier store again, from the new records alone
    assert ingests == []
    assert _files(work) == _files(reference)


def test_a_removed_kept_planes_file_reads_the_whole_input_again(tmp_path, ingests):
    """The kept planes of the earlier store removed (disk space freed by hand): the append reads
    the whole grown input again, the earlier tiles still kept, the same files as ever (before:
    a `genotile error` on every later append, until the store was removed by hand)."""
    reference, _ = _grow(tmp_path, "reference", [EARLIER, SAME], False, whole=True)
    work = tmp_path / "work"
    work.mkdir()
    write_fasta(work / "data.fa", EARLIER, _ids(36))
    _store(work, False)
    token = json.loads((work / "store" / append.RECORD).read_text())["kept"]["token"]
    extend.kept_path(work / "store", token, "planes.npy").unlink()
    write_fasta(work / "data.fa", EARLIER + SAME, _ids(41))
    ingests.clear()
    said = _store(work, False)
    assert ingests == ["data.fa"] and said and "vectors appended to 36" in said[0], (ingests, said)
    assert _files(work) == _files(reference)
