"""The merge of an append rerun (issue 27): pairs.tsv.gz is the earlier merge's text kept beside
the store with the new pairs' rows spliced in (pairs/splice.py), byte for byte the full merge's;
where the kept text is damaged, missing or of other settings, the full merge runs."""

import json
import logging

import numpy as np
import pytest

from genotile.io import tsvgz
from genotile.pairs import splice
from tests.pairs import test_run_append as run_append

METRICS = run_append.METRICS
SPLICED = "new rows spliced in"
NOT_USED = "the earlier pairs.tsv.gz kept beside the store is not used"


@pytest.fixture(params=["small", "default"])
def blocks(request, monkeypatch):
    """gzip blocks of a few rows (cuts inside id1 groups, in kept and new rows alike), or the
    shipped sizes (one block)."""
    if request.param == "small":
        monkeypatch.setattr(tsvgz, "CHUNK_BYTES", 96)
        monkeypatch.setattr(tsvgz, "BLOCK_BYTES", 3 * 96)
    return request.param


@pytest.fixture
def records(random_alignment):
    """60 records, exact copies among them: of an earlier record among the first 40, of an
    earlier one among the later ones, and of a later one."""
    recs = random_alignment(60, 120, seed=11, p_missing=0.0)
    for copy, of in ((7, 2), (44, 3), (47, 44), (55, 51), (58, 12)):
        recs[copy] = (recs[copy][0], recs[of][1])
    return recs


def run(fasta, out, *extra, threshold="snp=45"):
    """test_run_append's `genotile run`, at a threshold some pairs fail."""
    run_append.run(fasta, out, *extra, threshold=threshold)


def pairs_bytes(out) -> dict:
    return {m: (out / m / "pairs.tsv.gz").read_bytes() for m in METRICS}


def fresh(tmp_path, fasta_writer, recs, *extra, threshold="snp=45") -> dict:
    folder = tmp_path / f"fresh{len(list(tmp_path.glob('fresh*')))}"
    run(fasta_writer(folder / "data.fa", recs), folder / "out", *extra, threshold=threshold)
    return pairs_bytes(folder / "out")


def store(out, metric):
    return out / "store" / ("nucleotide" if metric == "snp" else "categorical")


def kept_files(out, metric, suffix):
    return sorted(store(out, metric).glob(f"merged-{metric}-*.{suffix}"))


@pytest.mark.parametrize("collapse", [(), ("--no-collapse-duplicates",)])
def test_appends_in_a_row_splice_the_full_merges_bytes(tmp_path, fasta_writer, records, caplog, blocks, collapse):
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    run(fasta_writer(fasta, records[:30]), out, *collapse)
    for grown in (38, 45, 45, 60):  # appends one after the other; nothing appended once
        caplog.clear()
        run(fasta_writer(fasta, records[:grown]), out, *collapse)
        assert caplog.text.count(SPLICED) == len(METRICS), caplog.text
        assert NOT_USED not in caplog.text
        assert pairs_bytes(out) == fresh(tmp_path, fasta_writer, records[:grown], *collapse)
        for metric in METRICS:  # one kept text, a copy of the file written (not a link to it), and its groups
            (text,) = kept_files(out, metric, "tsv.gz")
            written = out / metric / "pairs.tsv.gz"
            assert text.read_bytes() == written.read_bytes() and text.stat().st_ino != written.stat().st_ino
            assert written.stat().st_nlink == 1  # `gunzip pairs.tsv.gz` refuses a file with other links
            assert len(kept_files(out, metric, "groups.npy")) == 1


def test_groups_give_each_id1s_rows_and_bytes(tmp_path, fasta_writer, records):
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    run(fasta_writer(fasta, records[:40]), out)
    run(fasta_writer(fasta, records), out)
    import gzip

    for metric in METRICS:
        lines = gzip.decompress((out / metric / "pairs.tsv.gz").read_bytes()).split(b"\n")[1:-1]
        (groups,) = kept_files(out, metric, "groups.npy")
        rows_end, bytes_end = np.load(groups)
        names = [name for name, _ in records]
        first = [names.index(line.split(b"\t")[0].decode()) for line in lines]
        assert rows_end.tolist() == [0, *np.cumsum(np.bincount(first, minlength=len(names))).tolist()]
        lengths = np.concatenate([[0], np.cumsum([len(line) + 1 for line in lines])])
        assert bytes_end.tolist() == lengths[rows_end].tolist()


@pytest.mark.parametrize("damage", ["flip", "missing", "groups", "record", "no cells", "a list", "blocks", "layout"])
def test_a_damaged_or_missing_kept_text_falls_back_to_the_full_merge(
    tmp_path, fasta_writer, records, caplog, blocks, damage
):
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    run(fasta_writer(fasta, records[:40]), out)
    for metric in METRICS:
        (text,) = kept_files(out, metric, "tsv.gz")
        record_path = splice.record_path(store(out, metric), metric)
        record = json.loads(record_path.read_text())
        if damage == "flip":  # a byte changed in place
            data = bytearray(text.read_bytes())
            data[len(data) // 2] ^= 0x20
            text.write_bytes(bytes(data))
        elif damage == "missing":
            text.unlink()
        elif damage == "groups":
            (groups,) = kept_files(out, metric, "groups.npy")
            np.save(groups, np.zeros((2, 41), dtype=np.int64))
        elif damage == "record":
            record_path.write_text("{not json")
        elif damage == "no cells":  # JSON still, a part the splice reads gone
            del record["cells"]
            record_path.write_text(json.dumps(record))
        elif damage == "a list":
            record_path.write_text(json.dumps([1]))
        elif damage == "blocks":
            record["text"]["blocks"] = [["x", 1]]
            record_path.write_text(json.dumps(record))
        else:  # a record of another layout (a later genotile's)
            record["layout"] = splice.LAYOUT + 1
            record_path.write_text(json.dumps(record))
    caplog.clear()
    run(fasta_writer(fasta, records), out)
    assert SPLICED not in caplog.text
    if damage != "record":  # a damaged record is no record: merged in full silently
        assert caplog.text.count(NOT_USED) == len(METRICS), caplog.text
    assert pairs_bytes(out) == fresh(tmp_path, fasta_writer, records)
    caplog.clear()
    copies = [(f"copy{k}", seq) for k, (_, seq) in enumerate(records[:3])]
    run(fasta_writer(fasta, records + copies), out)  # kept again by the full merge
    assert caplog.text.count(SPLICED) == len(METRICS), caplog.text


def test_a_threshold_change_falls_back_to_the_full_merge(tmp_path, fasta_writer, records, caplog, blocks):
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    run(fasta_writer(fasta, records[:40]), out)
    caplog.clear()
    run(fasta_writer(fasta, records), out, threshold="snp=50")
    assert caplog.text.count(SPLICED) == 1  # hamming's, whose threshold is the same
    assert "kept beside the store is not used: other settings" in caplog.text
    assert pairs_bytes(out) == fresh(tmp_path, fasta_writer, records, threshold="snp=50")


def test_a_tile_merged_then_but_changed_since_falls_back(tmp_path, fasta_writer, records, caplog):
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    run(fasta_writer(fasta, records[:40]), out)
    record = json.loads(splice.record_path(store(out, "snp"), "snp").read_text())
    name = sorted(record["tiles"])[0]
    record["tiles"][name] = "0" * 64  # as if the tile file were another since
    splice.record_path(store(out, "snp"), "snp").write_text(json.dumps(record))
    caplog.clear()
    run(fasta_writer(fasta, records), out)
    assert f"{name} is not the file merged then" in caplog.text
    assert pairs_bytes(out) == fresh(tmp_path, fasta_writer, records)


def test_longer_ids_appended_cut_the_blocks_as_the_full_merge(tmp_path, fasta_writer, records, caplog, blocks):
    caplog.set_level(logging.INFO, logger="genotile")
    named = records[:40] + [(f"appended_sequence_{name}", seq) for name, seq in records[40:]]
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    run(fasta_writer(fasta, named[:40]), out)
    caplog.clear()
    run(fasta_writer(fasta, named), out)
    assert caplog.text.count(SPLICED) == len(METRICS), caplog.text
    assert pairs_bytes(out) == fresh(tmp_path, fasta_writer, named)


def test_a_merge_that_could_not_keep_its_text_leaves_the_earlier_record_true(
    tmp_path, fasta_writer, records, caplog, monkeypatch, blocks
):
    """The record is written last: where keeping fails (or the job is killed) after the link,
    the earlier record stays, naming its own files, and the next append splices from it (two
    appends' new rows at once); the files of the failed attempt are removed then."""
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    run(fasta_writer(fasta, records[:30]), out)
    write_record = splice.write_record

    def refuse(path, record):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(splice, "write_record", refuse)
    run(fasta_writer(fasta, records[:45]), out)
    assert caplog.text.count("pairs.tsv.gz not kept for the next append") == len(METRICS)
    assert all(len(kept_files(out, m, "tsv.gz")) == 1 for m in METRICS)  # the earlier one's
    monkeypatch.setattr(splice, "write_record", write_record)
    caplog.clear()
    run(fasta_writer(fasta, records), out)
    assert caplog.text.count("merge: 0 earlier rows kept") == 0
    assert caplog.text.count(SPLICED) == len(METRICS), caplog.text
    assert pairs_bytes(out) == fresh(tmp_path, fasta_writer, records)
    for metric in METRICS:
        record = json.loads(splice.record_path(store(out, metric), metric).read_text())
        names = {p.name for p in store(out, metric).glob(f"merged-{metric}-*")}
        assert names == {f"merged-{metric}-{record['token']}.{s}" for s in ("tsv.gz", "groups.npy")}
