"""An append whose grown store outgrows the earlier plan's auto blocks is planned afresh
(store/append.py `planned_afresh`): with `block_size: auto`, where the grown store's auto block
size is more than twice the earlier plan's, the store is planned and computed as a fresh run's,
one line saying so; the outputs are a fresh run's either way. A collection that started small (2
sequences, then 200 added) is not cut into blocks of 2; a large store's appends (200 to 15,800 on
the CPU, 2,000 to 200,000 on a GPU) barely move its auto block size and stay appends."""

import gzip
import json
import logging

import numpy as np
import pytest

from genotile.cli import main
from genotile.core.blocks import auto_block_size, words_per_vector
from genotile.io.planfile import read_plan
from genotile.store.append import planned_afresh

SUMMARY_RESULTS = ("n_vectors", "n_fields", "n_fields_kept", "pairs_computed", "pairs_passing", "threshold")
HUB = "".join(np.random.default_rng(7).choice(list("ACGT"), 90))
VARIABLE = range(0, 90, 3)  # the columns the earlier records already make variable


def other(column: int) -> str:
    return "ACGT"[("ACGT".index(HUB[column]) + 1) % 4]


def with_other(columns) -> str:
    """The hub with the other base at `columns`."""
    s = list(HUB)
    for c in columns:
        s[c] = other(c)
    return "".join(s)


def records(n: int, seed: int, first: int = 0) -> list[tuple[str, str]]:
    """n records: the hub, or the hub with the other base of some VARIABLE columns (a quarter of
    them each), so that records added after the first two keep their encoding (no column made
    variable, no base added) and are read alone (store/extend.py)."""
    rng = np.random.default_rng(seed)
    return [(f"r{first + k}", with_other(c for c in VARIABLE if rng.random() < 0.25)) for k in range(n)]


EARLIER = [("r0", HUB), ("r1", with_other(VARIABLE))]


def _run(fastas, out, *extra) -> None:
    args = ["run", *map(str, fastas), "--outdir", str(out), "--metric", "snp", "--threshold", "snp=6"]
    assert main([*args, *extra]) == 0


def outputs(out, keys=SUMMARY_RESULTS) -> dict:
    """A run's snp outputs: its pairs (decompressed), histogram, matrix and summary.json's `keys`."""
    folder = out / "snp"
    got = {"pairs": gzip.decompress((folder / "pairs.tsv.gz").read_bytes())}
    for name in ("histogram.tsv", "matrix.tsv"):
        got[name] = (folder / name).read_bytes()
    summary = json.loads((folder / "summary.json").read_text())
    got["summary"] = {k: summary[k] for k in keys}
    return got


def _plan(out):
    return read_plan(out / "store" / "nucleotide" / "plan.json")


def test_planned_afresh_where_the_grown_auto_block_size_is_more_than_twice_the_earlier():
    words = words_per_vector("nucleotide", 2_000)  # the 15,800 x 20 kb: 2,000 variable columns

    def cpu(n: int) -> int:
        return auto_block_size(n, words, ["snp"], gpu=False)

    def gpu(n: int, dense: bool = False) -> int:  # an H200's memory: 141 GiB
        return auto_block_size(n, words_per_vector("nucleotide", 300), ["snp"], gpu=True, dense=dense,
                               device_bytes=141 * 2**30)  # fmt: skip

    # a tiny start, then a big growth: afresh, in one line
    assert planned_afresh("auto", cpu(2), 202, lambda: cpu(202)) == (
        "block_size auto: the earlier plan's blocks of 2 vectors are too small for 202 (auto: 202): "
        "the store is planned afresh"
    )
    assert planned_afresh("auto", 2, 2_002, lambda: cpu(2_002)) is not None
    assert planned_afresh("auto", gpu(2), 2_002, lambda: gpu(2_002)) is not None
    assert planned_afresh("auto", 8, 17, lambda: 17) is not None  # just past twice
    assert planned_afresh("auto", 8, 16, lambda: 16) is None  # twice: appended
    # the 2-core case, 200 appended to 15,800 (bench/bench_append.py): its earlier plan's
    # blocks of 7,167, two for its 14,333 distinct sequences; appended, collapsed or not
    assert cpu(14_333) == 7_167
    assert planned_afresh("auto", 7_167, 14_533, lambda: cpu(14_533)) is None
    assert planned_afresh("auto", cpu(15_800), 16_000, lambda: cpu(16_000)) is None
    # a block size the user set: kept (the auto size not even asked)
    never = lambda: pytest.fail("the auto block size asked for a set block size")  # noqa: E731
    assert planned_afresh(2, 2, 2_002, never) is None
    assert planned_afresh(7_167, 7_167, 16_000, never) is None
    # the GPU case, 2,000 appended to 200,000: one tile (blocks up to 2^18), or a few where a dense
    # block is kept (collapsed copies); past the one-tile cap the auto blocks only shrink
    for dense in (False, True):
        assert planned_afresh("auto", gpu(200_000, dense), 202_000, lambda dense=dense: gpu(202_000, dense)) is None
    assert planned_afresh("auto", gpu(262_144), 264_144, lambda: gpu(264_144)) is None
    assert planned_afresh("auto", gpu(100_000), 202_000, lambda: gpu(202_000)) is not None  # more than doubled


@pytest.mark.parametrize("collapse", [(), ("--no-collapse-duplicates",)])
@pytest.mark.parametrize("alone", [True, False], ids=["new-records-alone", "whole-input-again"])
def test_two_sequences_then_200_appended_are_planned_afresh_with_a_fresh_runs_outputs(
    tmp_path, fasta_writer, caplog, collapse, alone
):
    caplog.set_level(logging.INFO, logger="genotile")
    added = records(200, 3, first=2)
    if not alone:  # column 1 made variable: the whole grown input read again (append.regrow)
        added[5] = (added[5][0], HUB[:1] + other(1) + HUB[2:])
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, EARLIER)
    _run([fasta], out, *collapse)
    assert _plan(out).block_size == 2
    caplog.clear()
    fasta_writer(fasta, EARLIER + added)
    _run([fasta], out, *collapse)
    said = [r.getMessage() for r in caplog.records if "store (nucleotide): " in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(
        "store (nucleotide): block_size auto: the earlier plan's blocks of 2 vectors are too small for "
    ), said
    assert said[0].endswith(": the store is planned afresh")
    assert "vectors appended to" not in caplog.text
    read_again = "the whole grown input is read again: "
    assert (read_again + "the store is planned afresh" in caplog.text) == alone
    assert (read_again + "the new records make a constant column variable" in caplog.text) == (not alone)
    fresh = tmp_path / "fresh"
    _run([fasta_writer(tmp_path / "fresh.fa", EARLIER + added)], fresh, *collapse)
    assert _plan(out).to_json() == _plan(fresh).to_json() and _plan(out).n_blocks == 1 and not _plan(out).segments
    assert outputs(out) == outputs(fresh)
    # 20 more: the auto blocks not doubled, appended to the store planned afresh
    more = records(20, 6, first=202)
    fasta_writer(fasta, EARLIER + added + more)
    _run([fasta], out, *collapse)
    assert "20 vectors appended to 202" in caplog.text
    assert _plan(out).block_size == _plan(fresh).block_size and len(_plan(out).segments) == 1
    _run([fasta_writer(tmp_path / "fresh.fa", EARLIER + added + more)], fresh, *collapse)
    assert outputs(out) == outputs(fresh)


def test_a_file_of_200_added_to_a_list_of_two_sequences_is_planned_afresh(tmp_path, fasta_writer, caplog):
    """A list input (store/listed.py) grown by a further file: the same rule."""
    caplog.set_level(logging.INFO, logger="genotile")
    first, further, out = tmp_path / "day1.fa", tmp_path / "day2.fa", tmp_path / "out"
    fasta_writer(first, EARLIER)
    fasta_writer(further, records(200, 4, first=2))
    _run([first], out)
    caplog.clear()
    _run([first, further], out)
    assert "block_size auto: the earlier plan's blocks of 2 vectors are too small for " in caplog.text
    assert "vectors appended to" not in caplog.text
    fresh = tmp_path / "fresh"
    _run([first, further], fresh)
    assert _plan(out).to_json() == _plan(fresh).to_json() and not _plan(out).segments
    assert outputs(out) == outputs(fresh)


def test_new_copies_of_earlier_records_count_alike_whichever_path_reads_them(tmp_path, fasta_writer, caplog):
    """Copies of the earlier records then one new record: the new records read alone count the
    copies as rows of their own (the appended store's numbering), and so does the whole input read
    again (store/append.regrow): one decision, one account (before, the first path went afresh and
    the second appended, both said)."""
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, EARLIER)
    _run([fasta], out)
    assert _plan(out).block_size == 2
    caplog.clear()
    added = [("c0", EARLIER[0][1]), ("c1", EARLIER[1][1]), *records(1, 9, first=2)]
    fasta_writer(fasta, EARLIER + added)
    _run([fasta], out)
    said = [r.getMessage() for r in caplog.records if "store (nucleotide): " in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].endswith(": the store is planned afresh") and "vectors appended to" not in caplog.text, said
    fresh = tmp_path / "fresh"
    _run([fasta_writer(tmp_path / "fresh.fa", EARLIER + added)], fresh)
    assert _plan(out).to_json() == _plan(fresh).to_json() and outputs(out) == outputs(fresh)
