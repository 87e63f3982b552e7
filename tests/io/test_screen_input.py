"""Bad screening inputs: one clear line naming the file, the line or record, and the problem."""

import gzip
import json

import numpy as np
import pytest

from genotile.errors import GenotileError
from genotile.io.fastq import read_fastq
from genotile.io.tilefile import read_tile, write_tile
from genotile.screen import stage
from genotile.screen.signatures import read_signatures


def fastq(tmp_path, text, gz=False):
    path = tmp_path / ("s.fq.gz" if gz else "s.fq")
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def test_reads_plain_and_gzip(tmp_path):
    text = "@r1 desc\nACGTN\n+\nIIII#\n\n@r2\nnnA\n+r2\n!!~\n"
    for gz in (False, True):
        recs = list(read_fastq(fastq(tmp_path, text, gz)))
        assert [r[0] for r in recs] == ["r1", "r2"]
        assert bytes(recs[0][1]) == b"ACGTN" and bytes(recs[1][2]) == b"!!~"
        assert all(r[1].dtype == np.uint8 and r[1].size == r[2].size for r in recs)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file, no FASTQ records"),
        ("@r1\nACGT\n+\nIII\n", "line 4: record 1 ('r1') has 3 quality characters for 4 bases"),
        ("@r1\nACGT\n+\nIIII\n@r1\nAC\n+\nII\n", "line 5: duplicate sample ID 'r1' (records 1 and 2)"),
        (">r1\nACGT\n", "line 1: record 1 should start with '@', found '>r1' (it looks like FASTA)"),
        ("@r1\nACGT\n+\nIIII\nACGT\n", "line 5: record 2 should start with '@'"),
        ("@\nACGT\n+\nIIII\n", "line 1: record 1 has an empty ID"),
        ("@r1\nACGT\n+\n", "record 1 ('r1') is cut short"),
        ("@r1\nACGT\nIIII\n+\n", "line 3: record 1 ('r1') should have a '+' line here"),
        ("@r1\nACGT\n+\nII I\n", "quality character ' ' at position 3, outside Phred+33"),
        ("@r1\n\n+\n\n", "record 1 ('r1') has an empty sequence"),
    ],
)
def test_fastq_errors(tmp_path, text, message):
    path = fastq(tmp_path, text)
    with pytest.raises(GenotileError) as err:
        list(read_fastq(path))
    assert str(path) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_fastq_missing_file(tmp_path):
    with pytest.raises(GenotileError, match="no such file"):
        list(read_fastq(tmp_path / "nope.fq"))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        (">a\nACGT\n>a\nAC\n", "duplicate signature ID 'a' (records 1 and 2)"),
        (">a\nACGR\n", "signature 'a' (record 1) has 'R' at position 4: signatures may hold A, C, G, T and N only"),
        (">a\nAC\n>b\n>c\nA\n", "signature 'b' (record 2) is empty"),
        ("@r\nACGT\n", "not a FASTA file"),
    ],
)
def test_signature_errors(tmp_path, text, message):
    path = tmp_path / "sig.fa"
    path.write_text(text)
    with pytest.raises(GenotileError) as err:
        list(read_signatures(path))
    assert str(path) in str(err.value) and message in str(err.value)


def test_signatures_wrapped_any_case(tmp_path):
    path = tmp_path / "sig.fa"
    path.write_text(">a virus one\nACGT\nnnac\n>b\nT\n")
    assert [(n, bytes(s)) for n, s in read_signatures(path)] == [("a", b"ACGTnnac"), ("b", b"T")]


# IDs: the rules of genotile.io.ids.check_id, as for FASTA and VCF inputs


@pytest.mark.parametrize(
    "reader, data, message",
    [
        (
            read_fastq,
            b"@r1\nACGT\n+\nIIII\n@s\xe4 x\nAC\n+\nII\n",
            "line 5: record 2: ID b's\\xe4' is not UTF-8 text (byte 0xe4 at position 2)",
        ),
        (
            read_fastq,
            b"@r\x01b\nACGT\n+\nIIII\n",
            "line 1: record 1: ID 'r\\x01b' holds a control character ('\\x01' at position 2)",
        ),
        (
            read_fastq,
            b"@r1\nACGT\n+\nIIII\n@\x7f\nAC\n+\nII\n",
            "line 5: record 2: ID '\\x7f' holds a control character",
        ),
        (
            read_signatures,
            b">a\nACGT\n>sig\xe4\nAC\n",
            "line 3: record 2: ID b'sig\\xe4' is not UTF-8 text (byte 0xe4 at position 4)",
        ),
        (
            read_signatures,
            b">a\x1bb\nACGT\n",
            "line 1: record 1: ID 'a\\x1bb' holds a control character ('\\x1b' at position 2)",
        ),
        (read_signatures, b">\nACGT\n", "line 1: record 1 has an empty ID"),
    ],
)
def test_id_rules(tmp_path, reader, data, message):
    path = tmp_path / "input"
    path.write_bytes(data)
    with pytest.raises(GenotileError) as err:
        list(reader(path))
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_non_ascii_ids_are_distinct_and_written_verbatim(tmp_path):
    """'sä' and 'sö' (and 'sigä', 'sigö') are different IDs, read as text and written as UTF-8."""
    reads = tmp_path / "reads.fq"
    reads.write_bytes("@sä one\nACGTACGTTT\n+\nIIIIIIIIII\n@sö\nGGGGACGTAA\n+\n5555555555\n".encode())
    sigs = tmp_path / "sigs.fa"
    sigs.write_bytes(">sigä\nACGT\n>sigö x\nGGGG\n".encode())
    assert [r[0] for r in read_fastq(reads)] == ["sä", "sö"]
    assert [r[0] for r in read_signatures(sigs)] == ["sigä", "sigö"]
    out = run_screen(tmp_path, reads, sigs)
    with gzip.open(out / "matches.tsv.gz", "rb") as fh:
        rows = fh.read().decode("utf-8").splitlines()
    # ACGT is at 1 in sä (score 40) and at 5 in sö (score 20); GGGG at 1 in sö only
    assert rows == [
        "sample\tsignature\tposition\tscore",
        "sä\tsigä\t1\t40.00",
        "sö\tsigä\t5\t20.00",
        "sö\tsigö\t1\t20.00",
    ]


# the screening steps: a damaged store, tiles not of the plan or given twice


def run_screen(tmp_path, reads, sigs, merge=True):
    """ingest (one sample x one signature per block), every tile, merge; the output folder."""
    out = tmp_path / "out"
    manifest = stage.ingest(reads, sigs, out / "store", sample_block=1, signature_block=1)
    paths = []
    for i, j in stage.tiles_of(manifest):
        paths.append(out / f"tile_{i}_{j}.npz")
        stage.tile(out / "store", i, j, backend="numpy", tile_out=paths[-1])
    if merge:
        stage.merge(
            paths,
            out / "store",
            min_score=None,
            matches_out=out / "matches.tsv.gz",
            summary_out=out / "summary.json",
            config={},
        )
    return out if merge else paths


def small_screen(tmp_path, merge=True):
    reads = tmp_path / "reads.fq"
    reads.write_text("@r1\nACGTACGTTT\n+\nIIIIIIIIII\n@r2\nGGGGACGTAA\n+\n5555555555\n")
    sigs = tmp_path / "sigs.fa"
    sigs.write_text(">a\nACGT\n>b\nGGGG\n")
    return run_screen(tmp_path, reads, sigs, merge)


def _manifest(store):
    return json.loads((store / "manifest.json").read_text())


DAMAGES = {
    "manifest truncated": ("manifest.json", lambda p: p.write_bytes(p.read_bytes()[:40]), "not valid JSON"),
    "manifest garbage": ("manifest.json", lambda p: p.write_bytes(b"\x00\xff garbage"), "not valid JSON"),
    "manifest a list": ("manifest.json", lambda p: p.write_text("[1, 2]"), "not a genotile screening store manifest"),
    "manifest without IDs": (
        "manifest.json",
        lambda p: p.write_text(json.dumps({k: v for k, v in _manifest(p.parent).items() if k != "sample_ids"})),
        "no 'sample_ids'",
    ),
    "manifest counts edited": (
        "manifest.json",
        lambda p: p.write_text(json.dumps({**_manifest(p.parent), "n_samples": 3})),
        "sample IDs, count, block size and blocks do not agree",
    ),
    "array truncated": ("seq.npy", lambda p: p.write_bytes(p.read_bytes()[:-3]), "unreadable .npy"),
    "array garbage": ("sig_seq.npy", lambda p: p.write_bytes(b"garbage, not numpy"), "unreadable .npy"),
    "array empty": ("qual.npy", lambda p: p.write_bytes(b""), "unreadable .npy"),
    "array missing": ("offsets.npy", lambda p: p.unlink(), "missing"),
    "offsets of another dtype": (
        "offsets.npy",
        lambda p: np.save(p, np.array([0.0, 10.0, 20.0])),
        "holds float64 of shape (3,)",
    ),
    "array of 2 dimensions": (
        "seq.npy",
        lambda p: np.save(p, np.zeros((4, 5), np.uint8)),
        "holds uint8 of shape (4, 5)",
    ),
    "offsets decreasing": (
        "offsets.npy",
        lambda p: np.save(p, np.array([0, 25, 20], np.int64)),
        "not 3 increasing offsets from 0 to 20",
    ),
    "offsets with an empty record": (
        "offsets.npy",
        lambda p: np.save(p, np.array([0, 0, 20], np.int64)),
        "not 3 increasing offsets from 0 to 20",
    ),
    "offsets short of the end": (
        "sig_offsets.npy",
        lambda p: np.save(p, np.array([0, 4, 7], np.int64)),
        "not 3 increasing offsets from 0 to 8",
    ),
    "offsets too few": (
        "sig_offsets.npy",
        lambda p: np.save(p, np.array([0, 8], np.int64)),
        "not 3 increasing offsets from 0 to 8",
    ),
    "qualities short": ("qual.npy", lambda p: np.save(p, np.zeros(19, np.uint8)), "19 qualities for 20 bases"),
}


@pytest.mark.parametrize("case", sorted(DAMAGES))
def test_damaged_store_is_refused_naming_the_file(tmp_path, case):
    paths = small_screen(tmp_path, merge=False)
    store = tmp_path / "out/store"
    stage.load_store(store)  # sound before the damage
    name, damage, message = DAMAGES[case]
    damage(store / name)
    for step in (
        lambda: stage.load_store(store),
        lambda: stage.tile(store, 0, 0, backend="numpy", tile_out=tmp_path / "t.npz"),
        lambda: stage.merge(
            paths, store, min_score=None, matches_out=tmp_path / "m.tsv.gz", summary_out=tmp_path / "s.json", config={}
        ),
    ):
        with pytest.raises(GenotileError) as err:
            step()
        assert str(store / name) in str(err.value) and message in str(err.value)
        assert "\n" not in str(err.value)
    assert not (tmp_path / "m.tsv.gz").exists()


def test_merge_refuses_a_tile_not_in_the_plan_or_given_twice(tmp_path):
    paths = small_screen(tmp_path, merge=False)
    store = tmp_path / "out/store"
    assert len(paths) == 4

    def merge(tiles):
        stage.merge(
            tiles, store, min_score=None, matches_out=tmp_path / "m.tsv.gz", summary_out=tmp_path / "s.json", config={}
        )

    arrays, meta, _ = read_tile(paths[1])
    for k, bad in enumerate(([2, 0], [0, -1], None, [0, 1, 0])):
        foreign = tmp_path / f"foreign{k}.npz"
        write_tile(foreign, arrays, {**meta, "tile": bad})
        with pytest.raises(GenotileError) as err:
            merge([paths[0], foreign, *paths[2:]])
        assert str(err.value) == f"tile {foreign}: holds tile {bad}, not one of the plan of {store}"
    with pytest.raises(GenotileError) as err:
        merge([*paths, paths[1]])
    assert str(err.value) == f"tile {paths[1]}: tile (0, 1) given twice"
    with pytest.raises(GenotileError, match=r"screen tiles missing from the merge: \[\(1, 0\)\]"):
        merge([*paths[:2], paths[3]])
    assert not (tmp_path / "m.tsv.gz").exists()
    merge(paths[::-1])  # every tile once, in any order
    with gzip.open(tmp_path / "m.tsv.gz", "rt", encoding="utf-8") as fh:
        assert fh.read().splitlines()[1:] == ["r1\ta\t1\t40.00", "r2\ta\t5\t20.00", "r2\tb\t1\t20.00"]
