"""Appends to an input too large to be held in memory (issue 27; store/extend.py): its one-pass
read counts the kept columns' bases and notes each constant column's one base, so the first
append after a fresh run reads the new records alone, and every store file is the one the ingest
of the whole grown input makes, byte for byte (a column's ranks changed: test_append_new_records);
a new record that makes a constant column variable (one held a single base, or none) still has
the whole input read."""

import json
import logging

import numpy as np
import pytest

from genotile.core.columns import ColumnCounts, ColumnSpan, code_bases
from genotile.core.encode import NUCLEOTIDE
from genotile.io.readers import fasta
from genotile.store import append, extend
from tests.store.test_append_new_records import EARLIER, SAME, _files, _grow, _other, _variant, spy_ingest

ALL_MISSING = 100  # a column every earlier record misses (N)


@pytest.fixture
def ingests(monkeypatch):
    """The inputs the whole-input ingest read during the test (store/stage.ingest)."""
    return spy_ingest(monkeypatch)


@pytest.fixture
def past_the_bound(monkeypatch):
    """Every input read as one too large to be held: the codes written, nothing held."""
    monkeypatch.setattr(fasta, "HOLD_BYTES", 0)


def _kept_counts(work) -> np.ndarray:
    token = json.loads((work / "store" / append.RECORD).read_text())["kept"]["token"]
    return np.load(extend.kept_path(work / "store", token, extend.COUNTS))


def _missing_at(records: list[str], column: int) -> list[str]:
    return [s[:column] + "N" + s[column + 1 :] for s in records]


@pytest.mark.parametrize("collapse", [False, True])
def test_a_fresh_store_past_the_bound_is_the_held_ones_and_keeps_what_an_append_needs(tmp_path, collapse):
    earlier = _missing_at(EARLIER, ALL_MISSING)
    held, _ = _grow(tmp_path, "held", [earlier], collapse)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fasta, "HOLD_BYTES", 0)
        large, _ = _grow(tmp_path, "large", [earlier], collapse)
    assert _files(large) == _files(held)
    exact, kept = _kept_counts(held), _kept_counts(large)
    informative = (exact > 0).sum(axis=0) >= 2
    assert np.flatnonzero(informative).tolist() == [10, 20, 30]
    assert np.array_equal(kept[:, informative], exact[:, informative])  # the kept columns' counts exact
    # a constant column: its one base, once (none where all missing)
    assert np.array_equal(kept[:, ~informative], (exact[:, ~informative] > 0).astype(np.int64))
    assert not kept[:, ALL_MISSING].any()


@pytest.mark.parametrize("collapse", [False, True])
def test_appends_past_the_bound_read_the_new_records_only_with_the_same_files(
    tmp_path, collapse, ingests, past_the_bound
):
    more = [_variant(60, {20: _other(20)}), _variant(61, {})]
    reference, _ = _grow(tmp_path, "reference", [EARLIER, SAME, more], collapse, whole=True)
    ingests.clear()
    work, said = _grow(tmp_path, "work", [EARLIER, SAME, more], collapse)
    assert ingests == ["data.fa"]  # the fresh store only: both appends read their new records alone
    assert len(said) == 2 and all("vectors appended to" in line for line in said)
    assert _files(work) == _files(reference)


@pytest.mark.parametrize(
    ("steps", "reads"),
    [
        # a base other than a constant column's one: the whole input read, the next append alone
        ([EARLIER, [_variant(50, {61: _other(61)})], SAME], 2),
        # a column all missing takes a base and stays constant (alone), then another (the whole)
        (
            [
                _missing_at(EARLIER, ALL_MISSING),
                _missing_at(SAME, ALL_MISSING) + [_variant(50, {ALL_MISSING: "A"})],
                [_variant(51, {ALL_MISSING: "C"})],
            ],
            2,
        ),
    ],
)
def test_an_append_past_the_bound_making_a_constant_column_variable_reads_the_whole_input(
    tmp_path, steps, reads, ingests, past_the_bound, caplog
):
    reference, _ = _grow(tmp_path, "reference", steps, True, whole=True)
    ingests.clear()
    with caplog.at_level(logging.INFO, logger="genotile"):
        work, said = _grow(tmp_path, "work", steps, True)
    assert "the whole grown input is read again: the new records make a constant column variable" in caplog.text
    assert len(ingests) == reads
    # the second: appended, or (the column made variable splits earlier copies) made in full
    assert len(said) == 2 and "vectors appended to" in said[0]
    assert _files(work) == _files(reference)


def test_the_kept_columns_counts_are_the_bases_counted_in_every_column():
    rng = np.random.default_rng(8)
    raw = rng.choice(np.frombuffer(b"ACGTacgtN-", dtype=np.uint8), (600, 90))
    raw[:, 5] = ord("g")  # constant
    raw[:, 7] = ord("N")  # all missing
    raw[::3, 9] = ord("t")  # constant, with missing bytes
    raw[1::3, 9] = ord("-")
    raw[2::3, 9] = ord("T")
    span = ColumnSpan(NUCLEOTIDE, raw.shape[1])
    span.add(raw)
    keep = np.flatnonzero(span.informative)
    codes = NUCLEOTIDE.encode(raw[:, keep])
    columns = ColumnCounts.of_span(span, keep, code_bases(codes), raw.shape[0])
    exact = ColumnCounts(raw.shape[1])
    exact.add(raw.copy())
    assert columns.rows == exact.rows == 600
    assert np.array_equal(columns.informative, exact.informative)
    assert np.array_equal(columns.code_counts(keep), exact.code_counts(keep))
    constant = ~exact.informative
    assert np.array_equal(columns.bases[:, constant], (exact.bases[:, constant] > 0).astype(np.int64))
    assert columns.bases[:, 5].tolist() == [0, 0, 1, 0] and not columns.bases[:, 7].any()
    assert columns.bases[:, 9].tolist() == [0, 0, 0, 1]
