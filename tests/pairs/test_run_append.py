"""`genotile run` on a growing alignment (issue 27, point 5): records appended at the end of the
FASTA compute only the tiles with a new block, the earlier tiles kept; nothing changed computes
no tile; anything else computes every tile and says why. The outputs are always those of a
fresh run on the same input in another folder."""

import gzip
import json
import logging

import pytest

from genotile.cli import main
from genotile.errors import GenotileError
from genotile.io import peer_formats
from genotile.io.planfile import read_plan
from genotile.pairs import merge as pairs_merge
from genotile.pairs import stage as pairs_stage
from genotile.util.atomic import written

METRICS = ("snp", "hamming")
SUMMARY_RESULTS = ("n_vectors", "n_fields", "n_fields_kept", "pairs_computed", "pairs_passing", "threshold")


@pytest.fixture
def computed(monkeypatch):
    """The tiles computed, as (metric, I, J), by every `genotile run` of the test."""
    done: list[tuple[str, int, int]] = []
    tile = pairs_stage.tile

    def spy(planes, manifest, perm, metric, bi, bj, **kwargs):
        done.append((metric, int(bi), int(bj)))
        return tile(planes, manifest, perm, metric, bi, bj, **kwargs)

    monkeypatch.setattr(pairs_stage, "tile", spy)
    return done


@pytest.fixture
def records(random_alignment):
    """50 records, exact copies among them: of an earlier record among the first 40 (collapsed
    there), and of an earlier one among the 10 appended after them."""
    recs = random_alignment(50, 120, seed=5, p_missing=0.0)
    for copy, of in ((7, 2), (44, 3), (47, 44)):
        recs[copy] = (recs[copy][0], recs[of][1])
    return recs


def run(fasta, out, *extra, threshold="snp=60"):
    args = ["run", str(fasta), "--outdir", str(out), "--block-size", "8", "--threshold", threshold]
    assert main([*args, *(f"--metric={m}" for m in METRICS), *extra]) == 0


def outputs(out) -> dict:
    """What a run computes: its pairs (decompressed), histogram, matrix and summary results."""
    got = {}
    for metric in METRICS:
        folder = out / metric
        got[metric, "pairs"] = gzip.decompress((folder / "pairs.tsv.gz").read_bytes())
        for name in ("histogram.tsv", "matrix.tsv"):
            got[metric, name] = (folder / name).read_bytes()
        summary = json.loads((folder / "summary.json").read_text())
        got[metric, "summary"] = {k: summary[k] for k in SUMMARY_RESULTS}
    return got


def fresh(tmp_path, fasta_writer, recs, *extra, threshold="snp=60") -> dict:
    folder = tmp_path / f"fresh{len(list(tmp_path.glob('fresh*')))}"
    run(fasta_writer(folder / "data.fa", recs), folder / "out", *extra, threshold=threshold)
    return outputs(folder / "out")


def every_tile(out) -> set:
    return {(m, i, j) for m in METRICS for i, j in read_plan(out / "store" / "nucleotide" / "plan.json").tiles()}


@pytest.mark.parametrize("collapse", [(), ("--no-collapse-duplicates",)])
def test_appended_records_compute_only_their_tiles_with_a_fresh_runs_outputs(
    tmp_path, fasta_writer, records, computed, caplog, collapse
):
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    run(fasta, out, *collapse)
    assert set(computed) == every_tile(out)
    for grown in (45, 50):  # two appends, one after the other
        computed.clear()
        caplog.clear()
        fasta_writer(fasta, records[:grown])
        run(fasta, out, *collapse)
        plan = read_plan(out / "store" / "nucleotide" / "plan.json")
        assert "vectors appended to" in caplog.text
        assert sorted(computed) == sorted((m, i, j) for m in METRICS for i, j in plan.appended_tiles())
        assert 0 < len(computed) < len(every_tile(out))
        assert not (out / "ingest" / "nucleotide.codes.npy").exists()  # never packed from stale codes
    assert outputs(out) == fresh(tmp_path, fasta_writer, records, *collapse)
    computed.clear()
    run(fasta, out, *collapse)  # nothing changed: no tile computed, the same outputs
    assert computed == []
    assert outputs(out) == fresh(tmp_path, fasta_writer, records, *collapse)


def results(out) -> dict:
    """Every file of the metrics' folders (not their tiles), as bytes."""
    return {f.relative_to(out): f.read_bytes() for m in METRICS for f in (out / m).iterdir() if f.is_file()}


@pytest.mark.parametrize(("module", "writer"), [(pairs_merge, "write_summary"), (peer_formats, "write_snp_dists_csv")])
def test_an_append_run_stopped_before_its_results_are_whole_leaves_the_earlier_ones(
    tmp_path, fasta_writer, records, monkeypatch, module, writer
):
    """Issue 27, point 4: a run that stops while it writes a metric's results (here the summary
    or the peer-format file fails, matrix.tsv and pairs.tsv.gz written before it) leaves that
    metric's earlier results byte for byte, no temporary file; the next run is a fresh run's."""
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    run(fasta, out, "--format=snp-dists-csv")
    before = results(out)
    assert {f.name for f in before} == {"matrix.tsv", "pairs.tsv.gz", "histogram.tsv", "summary.json", "snp-dists.csv"}
    held: list[bool] = []

    def stopped(*args, **kwargs):
        # the new matrix.tsv and pairs.tsv.gz written, under their temporary names
        held.extend(written(out / "snp" / name) != out / "snp" / name for name in ("matrix.tsv", "pairs.tsv.gz"))
        raise GenotileError("stopped")

    monkeypatch.setattr(module, writer, stopped)
    fasta_writer(fasta, records)
    args = ["run", str(fasta), "--outdir", str(out), "--block-size", "8", "--threshold", "snp=60"]
    assert main([*args, *(f"--metric={m}" for m in METRICS), "--format=snp-dists-csv"]) == 1
    assert held == [True, True]
    assert results(out) == before
    assert list(out.rglob("*.tmp")) == []
    monkeypatch.undo()
    run(fasta, out, "--format=snp-dists-csv")
    assert outputs(out) == fresh(tmp_path, fasta_writer, records, "--format=snp-dists-csv")
    for m in METRICS:
        csv = (out / m / "snp-dists.csv").read_bytes()
        assert csv == (tmp_path / "fresh0" / "out" / m / "snp-dists.csv").read_bytes()
    assert list(out.rglob("*.tmp")) == []


def test_an_edit_before_the_end_recomputes_every_tile_and_says_why(tmp_path, fasta_writer, records, computed, caplog):
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    run(fasta, out)
    edited = list(records)
    name, seq = edited[5]
    edited[5] = (name, seq[:10] + ("A" if seq[10] != "A" else "C") + seq[11:])
    fasta_writer(fasta, edited)  # an edit, and records added
    computed.clear()
    run(fasta, out)
    assert "store (nucleotide): recomputing in full: the input's earlier bytes changed" in caplog.text
    assert sorted(computed) == sorted(every_tile(out))
    assert outputs(out) == fresh(tmp_path, fasta_writer, edited)


def test_other_tile_or_plan_settings_recompute_every_tile(tmp_path, fasta_writer, records, computed, caplog):
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    run(fasta, out)
    computed.clear()
    run(fasta, out, threshold="snp=40")  # the store kept, every snp tile computed again, hamming's kept
    assert sorted(computed) == sorted(t for t in every_tile(out) if t[0] == "snp")
    assert outputs(out) == fresh(tmp_path, fasta_writer, records[:40], threshold="snp=40")
    fasta_writer(fasta, records)
    computed.clear()
    caplog.clear()
    run(fasta, out, "--seed", "3", threshold="snp=40")  # records appended, but another plan
    assert "store (nucleotide): recomputing in full: seed changed (1 -> 3)" in caplog.text
    assert sorted(computed) == sorted(every_tile(out))
    assert not (out / "ingest" / "nucleotide.codes.npy").exists()
    assert outputs(out) == fresh(tmp_path, fasta_writer, records, threshold="snp=40")


def test_a_query_run_in_between_leaves_no_tile_to_keep(tmp_path, fasta_writer, records, computed):
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    other = fasta_writer(tmp_path / "other.fa", records[40:])
    run(fasta, out)
    run(fasta, out, "--against", str(other))  # its tiles overwrite the earlier ones
    computed.clear()
    run(fasta, out)
    assert sorted(computed) == sorted(every_tile(out))
    assert outputs(out) == fresh(tmp_path, fasta_writer, records[:40])


def query_outputs(out) -> dict:
    got = {}
    for name in ("pairs.tsv.gz", "histogram.tsv", "matrix.tsv"):
        data = (out / "snp" / name).read_bytes()
        got[name] = gzip.decompress(data) if name.endswith(".gz") else data
    return got


def test_a_grown_query_file_computes_only_its_new_records_tiles(tmp_path, fasta_writer, records, computed, caplog):
    """`genotile run --against FILE` after records were added at the end of FILE: only the tiles
    of the FILE's new blocks computed (store/query_append.py), the outputs a fresh query's; an
    edit before FILE's end computes every tile again, saying why."""
    caplog.set_level(logging.INFO, logger="genotile")
    query, db, out = tmp_path / "query.fa", tmp_path / "db.fa", tmp_path / "out"
    fasta_writer(query, records[:12])
    fasta_writer(db, records[12:40])

    def run_query(out, db):
        args = ["run", str(query), "--against", str(db), "--outdir", str(out), "--block-size", "4"]
        assert main([*args, "--metric", "snp", "--threshold", "snp=60"]) == 0

    run_query(out, db)
    computed.clear()
    fasta_writer(db, records[12:])
    run_query(out, db)
    assert "10 vectors appended to the FILE's 28" in caplog.text
    plan = read_plan(out / "store" / "nucleotide" / "plan.json")
    assert sorted(computed) == sorted(("snp", i, j) for i, j in plan.appended_tiles())
    assert 0 < len(computed) < len(plan.tiles())
    fresh_out = tmp_path / "fresh"
    run_query(fresh_out, fasta_writer(tmp_path / "fresh.fa", records[12:]))
    assert query_outputs(out) == query_outputs(fresh_out)
    edited = list(records)
    name, seq = edited[15]
    edited[15] = (name, seq[:10] + ("A" if seq[10] != "A" else "C") + seq[11:])
    fasta_writer(db, edited[12:])
    computed.clear()
    run_query(out, db)
    assert "recomputing in full: the FILE's earlier bytes changed" in caplog.text
    assert sorted(computed) == sorted(
        ("snp", i, j) for i, j in read_plan(out / "store" / "nucleotide" / "plan.json").tiles()
    )


def recording_joins(thread, joined: list) -> None:
    """`thread`, each join of which appends it to `joined` first (a warm-up thread: joined by the run)."""
    real = thread.join
    thread.join = lambda *a, **k: (joined.append(thread), real(*a, **k))


def test_an_append_run_starts_numba_on_a_thread_while_it_reads_and_ends_it(
    tmp_path, fasta_writer, records, monkeypatch
):
    """`genotile run` as the store job (scripts/store.py): where the store may be appended to,
    numba's start on a thread while the input is read (its new tiles then count with numba, its
    start paid: backends.resolve), joined before the run returns; not for a fresh store, nor for
    a rerun with nothing changed, nor for a backend that never takes numba."""
    pytest.importorskip("numba", reason="numba is not installed: nothing to start")
    from genotile.pairs import early

    started: list = []
    joined: list = []
    warm = early.warm_numba_for_append

    def spy(store_dir):
        thread = warm(store_dir)
        if thread is not None:
            recording_joins(thread, joined)
        started.append(thread)
        return thread

    monkeypatch.setattr(early, "warm_numba_for_append", spy)
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    run(fasta, out)
    assert started and all(t is None for t in started)  # a fresh store: nothing to append to
    started.clear()
    fasta_writer(fasta, records[:45])
    run(fasta, out)
    assert started and all(t is not None for t in started) and joined == started  # started, then joined
    started.clear()
    run(fasta, out)  # nothing changed: no store made, no tile counted, nothing started
    assert started == []
    fasta_writer(fasta, records[:50])
    run(fasta, out, "--backend", "numpy")
    assert started == []


def test_an_append_run_checks_the_earlier_bytes_against_the_pieces_it_hashed_once(
    tmp_path, fasta_writer, records, monkeypatch, caplog
):
    """`genotile run` hashes its input's pieces to find its store current (store/append.py
    `_kept`), then checks an append's earlier bytes against those pieces (util/checksums.
    hashed_pieces), hashing only the partial piece where the earlier file ended: each file read
    once. Pieces of 1 KB here, so that the 60-record input is several (the pieces a process keeps
    are of files of a piece or more); the outputs are a fresh run's."""
    from genotile.util import checksums

    monkeypatch.setattr(checksums, "PIECE", 1024)
    caplog.set_level(logging.INFO, logger="genotile")
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    run(fasta, out)
    fasta_writer(fasta, records[:50])
    caplog.clear()
    run(fasta, out)
    assert "against this run's pieces" in caplog.text and "vectors appended to" in caplog.text
    assert outputs(out) == fresh(tmp_path, fasta_writer, records)


def test_a_run_whose_tiles_take_a_gpu_starts_cupy_on_a_thread_while_it_reads(
    tmp_path, fasta_writer, records, monkeypatch
):
    """Where tiles take a GPU (core/blocks.gpu_tiles), `genotile run` imports CuPy and makes the
    context on a thread while the input is read, as the store job does (pairs/early.warm_gpu),
    once a store, and joins it before it returns; numba is not started then. Here with a
    stand-in thread that waits to be let go (no GPU needed) and the CPU's tiles."""
    import threading

    from genotile import pipeline
    from genotile.pairs import early

    threads: list = []
    joined: list = []

    def warm_gpu():
        thread = threading.Thread(target=threading.Event().wait, args=(0.2,))
        thread.start()
        recording_joins(thread, joined)
        threads.append(thread)
        return thread

    monkeypatch.setattr(pipeline, "gpu_tiles", lambda backend: True)
    monkeypatch.setattr(early, "warm_gpu", warm_gpu)
    monkeypatch.setattr(early, "warm_numba_for_append", lambda store_dir: pytest.fail("numba started"))
    fasta, out = tmp_path / "data.fa", tmp_path / "out"
    fasta_writer(fasta, records[:40])
    run(fasta, out)
    assert len(threads) == len(METRICS) and joined == threads  # a store each: snp's, hamming's
    assert not any(t.is_alive() for t in threads)
