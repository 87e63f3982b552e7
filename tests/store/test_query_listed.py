"""A query whose FILE (`against:`) is a list of files (issue 27, point 3 with point 1's lists):
read as the files joined into one, the outputs those of a query against the joined file, byte
for byte; a further FASTA file added at the end of the list computes only its records' cross
pairs (store/query_append.py `listed_grown_by`, `_grow_listed`), the store the one reading every
file gives; anything else is a query made in full, saying why. An input given as a list is read
the same way, any change to it making the query in full."""

import contextlib
import gzip
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from genodata import random_genotypes, vcf_text, write_vcf

import genotile
from genotile.cli import main
from genotile.errors import GenotileError
from genotile.io.planfile import read_plan
from genotile.pairs import stage as pairs_stage
from genotile.pipeline import run_all
from genotile.store import query, query_append, stage
from tests.snakerun import random_alignment, same_size_edit, write_fasta

FILES = ("plan.json", "perm.npy", "planes.npy")
SUMMARY_RESULTS = ("n_vectors", "n_fields", "n_fields_kept", "pairs_computed", "pairs_passing", "threshold")


@pytest.fixture
def alignment(tmp_path):
    """12 query sequences and 49 of a FILE, in three files (18, 22, 9) and joined (the first
    two's 40, and all 49); every column variable already (an added file keeps the encoding)."""
    seqs = random_alignment(np.random.default_rng(11), 61, 90, p_change=0.4)
    ids = [f"x{i}" for i in range(61)]
    write_fasta(tmp_path / "query.fa", seqs[:12], ids[:12])
    for name, (a, b) in {"db1": (12, 30), "db2": (30, 52), "db3": (52, 61), "db12": (12, 52), "all": (12, 61)}.items():
        write_fasta(tmp_path / f"{name}.fa", seqs[a:b], ids[a:b])
    # the query in two files, and a third; a file of shorter sequences
    write_fasta(tmp_path / "q1.fa", seqs[:5], ids[:5])
    write_fasta(tmp_path / "q2.fa", seqs[5:12], ids[5:12])
    write_fasta(tmp_path / "q3.fa", seqs[52:55], ["q3a", "q3b", "q3c"])
    write_fasta(tmp_path / "short.fa", [s[:-1] for s in seqs[:2]], ["s0", "s1"])
    return tmp_path


@pytest.fixture
def computed(monkeypatch):
    """The tiles computed, as (I, J), by every `genotile run` of the test."""
    done: list[tuple[int, int]] = []
    tile = pairs_stage.tile

    def spy(planes, manifest, perm, metric, bi, bj, **kwargs):
        done.append((int(bi), int(bj)))
        return tile(planes, manifest, perm, metric, bi, bj, **kwargs)

    monkeypatch.setattr(pairs_stage, "tile", spy)
    return done


def store(work: Path, against, input_path="query.fa", folder="store") -> list[str]:
    """query.query_store in `work` (paths named from it), its outputs removed first (as Snakemake
    removes them); the lines it said."""
    said: list[str] = []
    with contextlib.chdir(work):
        for name in (*FILES, "manifest.json"):
            Path(folder, name).unlink(missing_ok=True)
        query.query_store(input_path, against, "nucleotide", f"{folder}.json", folder, 4, 1, say=said.append)
    return said


def outputs(out: Path, metric: str = "snp") -> dict:
    """What a query computes: its pairs (decompressed), histogram, matrix and summary results."""
    folder = out / metric
    got = {name: (folder / name).read_bytes() for name in ("histogram.tsv", "matrix.tsv")}
    got["pairs"] = gzip.decompress((folder / "pairs.tsv.gz").read_bytes())
    summary = json.loads((folder / "summary.json").read_text())
    got["summary"] = {k: summary.get(k) for k in SUMMARY_RESULTS}
    got["query"] = {k: summary["query"][k] for k in ("n_input", "n_against", "pairs")}
    return got


def run(work: Path, out: str, against, input_path="query.fa", metric="snp", threshold=60) -> dict:
    kw = {"thresholds": {metric: threshold}, "block_size": 4, "backend": "numpy"}
    inputs = [work / p for p in input_path] if isinstance(input_path, list) else work / input_path
    files = [work / p for p in against] if isinstance(against, list) else work / against
    run_all(inputs, work / out, [metric], against=files, **kw)
    return outputs(work / out, metric)


def test_a_list_is_the_files_joined(alignment):
    """The store of a query against [db1, db2] is the one against the two joined (db12), and so
    are the outputs, byte for byte; the query record names the list and each file."""
    store(alignment, ["db1.fa", "db2.fa"], folder="listed")
    store(alignment, "db12.fa", folder="joined")
    for name in FILES:
        assert (alignment / "listed" / name).read_bytes() == (alignment / "joined" / name).read_bytes(), name
    manifest = json.loads((alignment / "listed" / "manifest.json").read_text())
    assert manifest["query"]["against"] == "db1.fa + db2.fa" and manifest["query"]["n_against"] == 40
    record = json.loads((alignment / "listed" / query_append.RECORD).read_text())
    assert [f["path"] for f in record["against"]["files"]] == ["db1.fa", "db2.fa"]
    assert all(f["size"] and f["digest"] and f["sha256"] for f in record["against"]["files"])
    assert run(alignment, "out_listed", ["db1.fa", "db2.fa"]) == run(alignment, "out_joined", "db12.fa")


def test_a_further_file_is_added_alone_and_gives_the_store_every_file_gives(alignment, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="genotile")
    store(alignment, ["db1.fa", "db2.fa"])
    store(alignment, ["db1.fa", "db2.fa"], folder="other")
    said = store(alignment, ["db1.fa", "db2.fa", "db3.fa"])
    assert said == [
        "9 vectors appended to the FILE's 40: 108 cross pairs to compute (of 588), 9 of 39 tiles; the earlier tiles "
        "are kept"
    ]
    assert "(the FILE's 9 new records)" in caplog.text  # read alone
    monkeypatch.setattr(query_append, "grow", lambda *args, **kwargs: None)
    assert store(alignment, ["db1.fa", "db2.fa", "db3.fa"], folder="other") == said  # every file read, the same plan
    for name in (*FILES, "manifest.json"):
        assert (alignment / "store" / name).read_bytes() == (alignment / "other" / name).read_bytes(), name
    assert (alignment / "store.json").read_bytes() == (alignment / "other.json").read_bytes()
    record = json.loads((alignment / "store" / query_append.RECORD).read_text())
    assert [f["path"] for f in record["against"]["files"]] == ["db1.fa", "db2.fa", "db3.fa"]


def test_a_one_file_against_grows_into_a_list(alignment):
    store(alignment, "db12.fa")
    said = store(alignment, ["db12.fa", "db3.fa"])
    assert said and said[0].startswith("9 vectors appended to the FILE's 40"), said
    assert store(alignment, ["db12.fa", "db3.fa"]) == []  # the same files again: the plan kept, nothing said


@pytest.mark.parametrize(
    "change, why",
    [
        ("edit", "db1.fa changed since the earlier store was made"),
        ("reorder", "file 1 of the list is db2.fa, db1.fa before (files are added at the end)"),
        ("remove", "the FILE's list holds 1 files, 2 before (files are added at its end)"),
        ("input", "the input changed (input content of query.fa"),
    ],
)
def test_anything_else_is_made_in_full_saying_why(alignment, change, why):
    store(alignment, ["db1.fa", "db2.fa"])
    against = ["db1.fa", "db2.fa", "db3.fa"]
    if change == "edit":
        same_size_edit(alignment / "db1.fa")
    elif change == "reorder":
        against = ["db2.fa", "db1.fa", "db3.fa"]
    elif change == "remove":
        against = ["db2.fa"]
    else:
        write_fasta(
            alignment / "query.fa", random_alignment(np.random.default_rng(5), 12, 90), [f"q{i}" for i in range(12)]
        )
    said = store(alignment, against)
    assert len(said) == 1 and said[0].startswith(f"recomputing in full: {why}"), said
    plan = read_plan(alignment / "store" / "plan.json")
    assert not plan.segments


def test_genotile_run_computes_only_the_further_files_tiles(alignment, computed, caplog):
    """`genotile run --against` a list, then a further file: only the new FILE blocks' tiles,
    the outputs a fresh query's against the grown list (and against the files joined); an
    earlier file edited then computes every tile, saying why."""
    caplog.set_level(logging.INFO, logger="genotile")
    run(alignment, "out", ["db1.fa", "db2.fa"])
    computed.clear()
    grown = run(alignment, "out", ["db1.fa", "db2.fa", "db3.fa"])
    assert "9 vectors appended to the FILE's 40" in caplog.text
    # one account of what was done: the change seen, then the append (no "recomputing" beside it)
    assert "recomputing" not in caplog.text, caplog.text
    plan = read_plan(alignment / "out" / "store" / "nucleotide" / "plan.json")
    assert sorted(computed) == sorted(plan.appended_tiles()) and 0 < len(computed) < len(plan.tiles())
    assert grown == run(alignment, "fresh", ["db1.fa", "db2.fa", "db3.fa"]) == run(alignment, "joined", "all.fa")
    computed.clear()
    caplog.clear()
    assert run(alignment, "out", ["db1.fa", "db2.fa", "db3.fa"]) == grown
    assert computed == []  # nothing changed: nothing computed
    same_size_edit(alignment / "db2.fa")
    computed.clear()
    run(alignment, "out", ["db1.fa", "db2.fa", "db3.fa"])
    assert "db2.fa changed since the earlier store was made" in caplog.text
    assert sorted(computed) == sorted(read_plan(alignment / "out" / "store" / "nucleotide" / "plan.json").tiles())


def test_an_input_list_is_the_files_joined_and_any_change_recomputes_in_full(alignment, computed, caplog):
    caplog.set_level(logging.INFO, logger="genotile")
    listed = run(alignment, "out", ["db1.fa", "db2.fa"], input_path=["q1.fa", "q2.fa"])
    assert listed == run(alignment, "joined", "db12.fa")
    computed.clear()
    run(alignment, "out", ["db1.fa", "db2.fa"], input_path=["q1.fa", "q2.fa", "q3.fa"])
    assert "changed since the last run: the list of files (q1.fa + q2.fa + q3.fa" in caplog.text.replace(
        str(alignment) + "/", ""
    )
    assert sorted(computed) == sorted(read_plan(alignment / "out" / "store" / "nucleotide" / "plan.json").tiles())
    caplog.clear()  # the list given as its first file alone: said as the list, not as a file's path
    run(alignment, "out", ["db1.fa", "db2.fa"], input_path="q1.fa")
    assert "changed since the last run: the list of files (q1.fa)" in caplog.text.replace(str(alignment) + "/", "")
    said = store(alignment, ["db1.fa", "db2.fa"], input_path=["q1.fa", "q2.fa"])
    assert said == []
    said = store(alignment, ["db1.fa", "db2.fa", "db3.fa"], input_path=["q1.fa", "q2.fa", "q3.fa"])
    assert len(said) == 1 and said[0].startswith("recomputing in full: the input changed"), said


@pytest.mark.parametrize("input_path", ["query.fa", ["q1.fa", "q2.fa"]], ids=["one file", "a list"])
def test_an_input_written_to_while_its_store_is_made_gets_no_record(alignment, monkeypatch, caplog, input_path):
    """The input given a same-size edit after the store read it (store/query.query_store): what
    the store records of it (its sources, taken after the read) is not what it read, so no record
    (store/query_append.write: the input's stat with the FILE's); the rerun makes the query in
    full, its outputs a fresh query's, and a FILE grown next keeps no stale tile."""
    caplog.set_level(logging.INFO, logger="genotile")
    ingest, edited = stage.ingest, alignment / (input_path if isinstance(input_path, str) else input_path[-1])

    def racing(*args, **kwargs):
        made = ingest(*args, **kwargs)
        monkeypatch.setattr(stage, "ingest", ingest)  # the first ingest only
        same_size_edit(edited)
        return made

    monkeypatch.setattr(stage, "ingest", racing)
    against = ["db1.fa", "db2.fa"]
    run(alignment, "out", against, input_path=input_path)
    assert not (alignment / "out" / "store" / "nucleotide" / query_append.RECORD).exists()
    caplog.clear()
    again = run(alignment, "out", against, input_path=input_path)
    assert "query store (nucleotide): changed since the last run: the store's record" in caplog.text
    assert again == run(alignment, "fresh", against, input_path=input_path)
    grown = [*against, "db3.fa"]
    assert run(alignment, "out", grown, input_path=input_path) == run(alignment, "grown", grown, input_path=input_path)


def test_a_genotype_list_is_the_files_joined_and_is_queried_in_full_when_it_grows(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="genotile")
    g = random_genotypes(50, 80, seed=4)
    samples, ids = [f"s{i}" for i in range(50)], [f"v{k}" for k in range(80)]
    for name, (a, b) in {"new": (0, 10), "db1": (10, 30), "db2": (30, 42), "db3": (42, 50), "db12": (10, 42)}.items():
        write_vcf(tmp_path / f"{name}.vcf", vcf_text(g[a:b], samples[a:b], ids, seed=a))
    kw = {"input_path": "new.vcf", "metric": "king", "threshold": None}
    assert run(tmp_path, "out", ["db1.vcf", "db2.vcf"], **kw) == run(tmp_path, "joined", "db12.vcf", **kw)
    run(tmp_path, "out", ["db1.vcf", "db2.vcf", "db3.vcf"], **kw)
    assert "the FILE is not an uncompressed FASTA" in caplog.text
    r = genotile.pairwise(tmp_path / "new.vcf", "king", against=[tmp_path / "db1.vcf", tmp_path / "db2.vcf"])
    joined = genotile.pairwise(tmp_path / "new.vcf", "king", against=tmp_path / "db12.vcf")
    assert r.pairs.equals(joined.pairs) and r.matrix().shape == (10, 32)


def test_the_cli_and_the_api_take_a_list(alignment, capsys):
    args = ["run", str(alignment / "query.fa"), "--metric", "snp", "--threshold", "snp=60", "-q", "--backend", "numpy"]
    listed = [str(alignment / "db1.fa"), str(alignment / "db2.fa")]
    assert main([*args, "--outdir", str(alignment / "cli"), "--against", listed[0], "--against", listed[1]]) == 0
    assert main([*args, "--outdir", str(alignment / "cli_joined"), "--against", str(alignment / "db12.fa")]) == 0
    assert outputs(alignment / "cli") == outputs(alignment / "cli_joined")
    r = genotile.pairwise(alignment / "query.fa", "snp", against=[Path(p) for p in listed], threshold=60)
    joined = genotile.pairwise(alignment / "query.fa", "snp", against=alignment / "db12.fa", threshold=60)
    assert r.pairs.equals(joined.pairs) and np.array_equal(r.matrix(), joined.matrix())
    short = alignment / "short.fa"
    never = str(alignment / "never")
    assert main([*args, "--outdir", never, "--against", str(alignment / "db1.fa"), "--against", str(short)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("genotile error: ") and err.count("\n") == 1, err
    assert f"{short} holds sequences of length 89, but" in err, err
    with pytest.raises(GenotileError, match="holds sequences of length 89"):
        genotile.pairwise(alignment / "query.fa", "snp", against=[alignment / "db1.fa", short])
