"""A query whose FILE grew so that its store outgrows the earlier plan's auto blocks is planned
afresh (store/query_append.py `outgrown`, store/append.planned_afresh's rule): with `block_size:
auto`, a FILE of 2 records grown to 200 is not cut into the earlier plan's blocks of 4 vectors;
the query store is planned as a fresh query's, one line saying so, its outputs a fresh query's."""

import logging

import pytest

from genotile.cli import main
from genotile.io.planfile import read_plan
from tests.store.test_append_afresh import HUB, VARIABLE, other, outputs, records, with_other

# the input, and the FILE's first two records: between them, every VARIABLE column holds both of
# its bases, so that the FILE's records added keep the encoding and are read alone (store/extend.py)
QUERY = [("q0", with_other(VARIABLE)), ("q1", HUB)]
FILE = [("d0", HUB), ("d1", HUB)]


def _run(query, db, out) -> None:
    args = ["run", str(query), "--against", str(db), "--outdir", str(out), "--metric", "snp", "--threshold", "snp=6"]
    assert main(args) == 0


def _plan(out):
    return read_plan(out / "store" / "nucleotide" / "plan.json")


@pytest.mark.parametrize("alone", [True, False], ids=["new-records-alone", "both-files-read"])
def test_a_file_grown_from_2_to_200_is_planned_afresh_with_a_fresh_querys_outputs(
    tmp_path, fasta_writer, caplog, alone
):
    caplog.set_level(logging.INFO, logger="genotile")
    query, db, out = tmp_path / "query.fa", tmp_path / "db.fa", tmp_path / "out"
    added = records(198, 2, first=2)
    if not alone:  # column 1 made variable: both files read (store/query.py)
        added[5] = (added[5][0], HUB[:1] + other(1) + HUB[2:])
    fasta_writer(query, QUERY)
    fasta_writer(db, FILE)
    _run(query, db, out)
    assert _plan(out).block_size == 4
    caplog.clear()
    fasta_writer(db, FILE + added)
    _run(query, db, out)
    said = [r.getMessage() for r in caplog.records if "block_size auto: the" in r.getMessage()]
    assert said == [
        "query store (nucleotide): block_size auto: the earlier plan's blocks of 4 vectors are too small for 202 "
        "(auto: 202): the store is planned afresh"
    ]
    assert "vectors appended to" not in caplog.text
    assert ("the FILE's records are not added alone: the store is planned afresh" in caplog.text) == alone
    fresh = tmp_path / "fresh"
    _run(query, fasta_writer(tmp_path / "fresh.fa", FILE + added), fresh)
    assert _plan(out).to_json() == _plan(fresh).to_json() and len(_plan(out).tiles()) == 1 and not _plan(out).segments
    keys = ("n_vectors", "pairs_computed", "pairs_passing")
    assert outputs(out, keys) == outputs(fresh, keys)
