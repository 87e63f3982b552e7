"""Records appended to a dataset's FASTA (issue 27): only the new pairs are computed, and the
outputs are those of a fresh run on the grown file; anything else is made in full and says so."""

import gzip
import json

import numpy as np
import pytest

from genotile.util.checksums import file_digest, file_pieces
from tests.snakerun import snakemake, write_fasta

RESULTS = ("pairs", "histogram.tsv", "matrix.tsv", "report/clusters.tsv")
SUMMARY_RESULTS = ("n_vectors", "n_fields", "n_fields_kept", "pairs_computed", "pairs_passing", "threshold")


def _alignment(rng, n, length=400, centres=6):
    """Clustered ACGT sequences (no N: earlier copies stay copies over the grown columns), some
    exact copies, so that identical vectors are collapsed."""
    base = rng.choice(list("ACGT"), length)
    hubs = [base.copy() for _ in range(centres)]
    for h in hubs:
        hit = rng.random(length) < 0.03
        h[hit] = rng.choice(list("ACGT"), hit.sum())
    seqs = []
    for _ in range(n):
        s = hubs[rng.integers(centres)].copy()
        hit = rng.random(length) < 0.01
        s[hit] = rng.choice(list("ACGTacgt"), hit.sum())
        seqs.append("".join(s) if rng.random() > 0.2 or not seqs else seqs[rng.integers(len(seqs))])
    return seqs


def _config(**extra):
    return {
        "datasets": {"d": {"input": "data.fa", "metrics": ["snp", "hamming"]}},
        "thresholds": {"snp": 8, "hamming": 10},
        "block_size": 16,
        "report": True,
        **extra,
    }


def _outputs(work, metric):
    out = {}
    folder = work / "results" / "d" / metric
    for name in RESULTS:
        path = folder / (name if name != "pairs" else "pairs.tsv.gz")
        if path.exists():
            out[name] = gzip.decompress(path.read_bytes()) if name == "pairs" else path.read_bytes()
    summary = json.loads((folder / "summary.json").read_text())
    out["summary"] = {k: summary[k] for k in SUMMARY_RESULTS}
    return out


def _sequences(seed: int, n: int) -> list[str]:
    return _alignment(np.random.default_rng(seed), n)


def _folders(tmp_path):
    """(grown, fresh): the folder of a run appended to, and of a fresh run on what it grew to."""
    out = tmp_path / "grown", tmp_path / "fresh"
    for work in out:
        work.mkdir()
    return out


def _tile_mtimes(work, metric):
    return {p.name: p.stat().st_mtime_ns for p in (work / "results" / "d" / metric / "pairs").glob("tile_*.npz")}


@pytest.mark.parametrize("collapse", ["auto", False])
def test_appended_records_compute_their_pairs_only_with_a_fresh_runs_outputs(tmp_path, collapse):
    rng = np.random.default_rng(7)
    seqs = _alignment(rng, 70)
    config = _config(collapse_duplicates=collapse)
    grown, fresh = tmp_path / "grown", tmp_path / "fresh"
    for work in (grown, fresh):
        work.mkdir()
    write_fasta(grown / "data.fa", seqs[:50], [f"s{i}" for i in range(50)])
    snakemake(grown, config)
    before = {m: _tile_mtimes(grown, m) for m in ("snp", "hamming")}
    for step in (58, 70):  # two appends, one after the other
        write_fasta(grown / "data.fa", seqs[:step], [f"s{i}" for i in range(step)])
        proc = snakemake(grown, config)
        assert "vectors appended to" in proc.stderr, proc.stderr[-3000:]
        for metric in ("snp", "hamming"):
            now = _tile_mtimes(grown, metric)
            kept = {k for k in before[metric] if now.get(k) == before[metric][k]}
            assert kept == set(before[metric])  # every earlier tile kept, not recomputed
            assert len(now) > len(before[metric])
            before[metric] = now
            # the merge spliced the new rows into the text kept beside the store (pairs/splice.py)
            assert "new rows spliced in" in (grown / "logs" / "d" / metric / "merge.log").read_text()
    write_fasta(fresh / "data.fa", seqs, [f"s{i}" for i in range(70)])
    snakemake(fresh, config)
    for metric in ("snp", "hamming"):
        assert _outputs(grown, metric) == _outputs(fresh, metric)
        pairs = [w / "results" / "d" / metric / "pairs.tsv.gz" for w in (grown, fresh)]
        assert pairs[0].read_bytes() == pairs[1].read_bytes()  # gzip's bytes too
    again = snakemake(grown, config)  # nothing changed: nothing runs
    assert "Nothing to be done" in again.stdout + again.stderr
    # the grown input was hashed by the store jobs, not as the workflow was parsed (its size
    # moved: store/sources.py, `defer`), and its fingerprint filled in with what they hashed
    record = json.loads((grown / ".snakemake" / "genotile" / "sources" / "d.json").read_text())
    assert record["sources"]["input"]["digest"] == file_digest(grown / "data.fa")
    assert record["pieces"] == [p.hex() for p in file_pieces(grown / "data.fa")]


def test_an_edit_before_the_end_recomputes_in_full_and_says_so(tmp_path):
    rng = np.random.default_rng(8)
    seqs = _alignment(rng, 40)
    config = _config()
    work, fresh = tmp_path / "w", tmp_path / "fresh"
    for w in (work, fresh):
        w.mkdir()
    write_fasta(work / "data.fa", seqs[:30], [f"s{i}" for i in range(30)])
    snakemake(work, config)
    edited = list(seqs)
    edited[3] = edited[3][:10] + ("A" if edited[3][10] != "A" else "C") + edited[3][11:]
    write_fasta(work / "data.fa", edited, [f"s{i}" for i in range(40)])  # an edit, and records added
    proc = snakemake(work, config)
    assert "recomputing in full: the input's earlier bytes changed" in proc.stderr
    reordered = edited[1:] + edited[:1]  # a record moved to the end
    write_fasta(work / "data.fa", reordered, [f"s{i}" for i in [*range(1, 40), 0]])
    proc = snakemake(work, config)
    assert "recomputing in full" in proc.stderr
    write_fasta(fresh / "data.fa", reordered, [f"s{i}" for i in [*range(1, 40), 0]])
    snakemake(fresh, config)
    for metric in ("snp", "hamming"):
        assert _outputs(work, metric) == _outputs(fresh, metric)


def test_a_further_file_of_a_list_computes_its_pairs_only_with_a_fresh_runs_outputs(tmp_path):
    """`input: data.fa`, then `[data.fa, more1.fa]`, then `[data.fa, more1.fa, more2.fa]`
    (store/listed.py): each further file's vectors appended, every earlier tile kept, the outputs
    those of a fresh run on the files joined into one."""
    # the appends of the test above: no column made variable
    seqs, ids, (grown, fresh) = _sequences(7, 70), [f"s{i}" for i in range(70)], _folders(tmp_path)
    write_fasta(grown / "data.fa", seqs[:50], ids[:50])
    write_fasta(grown / "more1.fa", seqs[50:58], ids[50:58])
    write_fasta(grown / "more2.fa", seqs[58:], ids[58:])
    config = _config(collapse_duplicates=False)
    snakemake(grown, config)
    before = _tile_mtimes(grown, "snp")
    for files in (["data.fa", "more1.fa"], ["data.fa", "more1.fa", "more2.fa"]):
        config["datasets"]["d"]["input"] = files
        proc = snakemake(grown, config)
        assert "vectors appended to" in proc.stderr, proc.stderr[-3000:]
        now = _tile_mtimes(grown, "snp")
        assert {k for k in before if now.get(k) == before[k]} == set(before) and len(now) > len(before)
        before = now
    write_fasta(fresh / "data.fa", seqs, ids)
    snakemake(fresh, _config(collapse_duplicates=False))
    for metric in ("snp", "hamming"):
        assert _outputs(grown, metric) == _outputs(fresh, metric)
    summary = json.loads((grown / "results" / "d" / "snp" / "summary.json").read_text())
    assert summary["input"] == "data.fa + more1.fa + more2.fa"
    again = snakemake(grown, config)  # nothing changed: nothing runs
    assert "Nothing to be done" in again.stdout + again.stderr
    # each file's fingerprint holds its digest (the store job's, where the parse left it to it):
    # the next run hashes only a new or changed file
    for name, path in (("d.json", "data.fa"), ("d+2.json", "more1.fa"), ("d+3.json", "more2.fa")):
        record = json.loads((grown / ".snakemake" / "genotile" / "sources" / name).read_text())
        assert record["sources"]["input"]["digest"] == file_digest(grown / path), name


def test_a_further_genotype_file_of_a_list_appends_its_samples(tmp_path):
    """A list of VCFs with the same variants, then a further one: its samples appended (the
    variants checked), king's and ibs's outputs those of a fresh run on the VCF of every sample."""
    from tests.genodata import random_genotypes, vcf_text, write_vcf

    g = random_genotypes(36, 40, seed=4)
    names, variants = [f"p{i}" for i in range(36)], [f"v{i}" for i in range(40)]
    grown, fresh = tmp_path / "grown", tmp_path / "fresh"
    for (name, lo, hi), work in [(("a", 0, 20), grown), (("b", 20, 30), grown), (("c", 30, 36), grown)] + [
        (("all", 0, 36), fresh)
    ]:
        work.mkdir(exist_ok=True)
        write_vcf(work / f"{name}.vcf", vcf_text(g[lo:hi], names[lo:hi], variants, seed=lo))
    config = {
        "datasets": {"d": {"input": ["a.vcf", "b.vcf"], "metrics": ["king", "ibs"]}},
        "thresholds": {"king": -1.0, "ibs": 1.0},
        "block_size": 8,
    }
    snakemake(grown, config)
    config["datasets"]["d"]["input"] = ["a.vcf", "b.vcf", "c.vcf"]
    proc = snakemake(grown, config)
    assert "6 vectors appended to 30" in proc.stderr, proc.stderr[-3000:]
    snakemake(fresh, {**config, "datasets": {"d": {"input": "all.vcf", "metrics": ["king", "ibs"]}}})
    for metric in ("king", "ibs"):
        assert _outputs(grown, metric) == _outputs(fresh, metric)


def _query(tmp_path, seed: int, n: int, n_query: int, n_file: int):
    """(sequences, IDs, (grown, fresh), config) of a query of the first `n_query` sequences
    against the next ones up to `n_file`, run once in `grown`; `fresh` holds the query file."""
    seqs, ids, folders = _sequences(seed, n), [f"s{i}" for i in range(n)], _folders(tmp_path)
    for work in folders:
        write_fasta(work / "query.fa", seqs[:n_query], ids[:n_query])
    write_fasta(folders[0] / "db.fa", seqs[n_query:n_file], ids[n_query:n_file])
    config = {
        "datasets": {"d": {"input": "query.fa", "against": "db.fa", "metrics": ["snp"]}},
        "thresholds": {"snp": 8},
        "block_size": 8,
    }
    snakemake(folders[0], config)
    return seqs, ids, folders, config


def _same_query_outputs(grown, fresh) -> None:
    """A grown query's outputs are the fresh one's, byte for byte."""
    for name in ("pairs.tsv.gz", "histogram.tsv", "matrix.tsv"):
        got = [(w / "results" / "d" / "snp" / name).read_bytes() for w in (grown, fresh)]
        assert got[0] == got[1], name


def _grown_keeping(grown, config, before: dict) -> None:
    """The query run again on its FILE grown by 15 records: its earlier tiles kept (their
    mtimes), new ones computed."""
    proc = snakemake(grown, config)
    assert "15 vectors appended to the FILE's 45" in proc.stderr, proc.stderr[-3000:]
    now = _tile_mtimes(grown, "snp")
    assert {k for k in before if now.get(k) == before[k]} == set(before) and len(now) > len(before)


def _edited(seqs: list[str], k: int) -> list[str]:
    """The sequences, sequence k's base 6 changed."""
    edited = list(seqs)
    edited[k] = edited[k][:5] + ("A" if edited[k][5] != "A" else "C") + edited[k][6:]
    return edited


def test_a_grown_query_file_computes_its_new_records_cross_pairs_only(tmp_path):
    """`against: FILE`, then records added at the end of FILE (store/query_append.py): the earlier
    cross tiles kept, the new FILE blocks' computed, the outputs a fresh query's; an edit before
    FILE's end with records added recomputes in full, saying why."""
    seqs, ids, (grown, fresh), config = _query(tmp_path, 9, 90, 15, 60)
    before = _tile_mtimes(grown, "snp")
    write_fasta(grown / "db.fa", seqs[15:75], ids[15:75])
    _grown_keeping(grown, config, before)
    write_fasta(fresh / "db.fa", seqs[15:75], ids[15:75])
    snakemake(fresh, config)
    _same_query_outputs(grown, fresh)
    edited = _edited(seqs, 20)
    write_fasta(grown / "db.fa", edited[15:90], ids[15:90])
    proc = snakemake(grown, config)
    assert "recomputing in full: the FILE's earlier bytes changed" in proc.stderr, proc.stderr[-3000:]


def test_a_tile_recomputed_between_two_growths_is_kept(tmp_path):
    """A query's tile deleted (or its job killed) and recomputed after one growth records that
    store's identity; a further growth accepts it (store/manifest.py tile_identities)."""
    seqs, ids, (grown, fresh), config = _query(tmp_path, 5, 80, 10, 50)
    (grown / "results" / "d" / "snp" / "pairs" / "tile_0_2.npz").unlink()
    for n in (65, 80):
        write_fasta(grown / "db.fa", seqs[10:n], ids[10:n])
        proc = snakemake(grown, config)
        assert "vectors appended to the FILE's" in proc.stderr, proc.stderr[-3000:]
    write_fasta(fresh / "db.fa", seqs[10:80], ids[10:80])
    snakemake(fresh, config)
    _same_query_outputs(grown, fresh)


def test_a_further_file_of_a_query_list_computes_its_cross_pairs_only(tmp_path):
    """`against:` a list of files, then a file added at its end (store/query_append.py
    `_grow_listed`): the earlier cross tiles kept, the new FILE blocks' computed, the outputs a
    fresh query's against the grown list and against the files joined; an earlier file edited
    recomputes in full, saying why."""
    seqs, ids, (grown, fresh), config = _query(tmp_path, 9, 90, 15, 60)
    (grown / "db.fa").rename(grown / "db1.fa")
    config["datasets"]["d"]["against"] = ["db1.fa"]  # a one-file list: that file, grown into a list below
    snakemake(grown, config)
    before = _tile_mtimes(grown, "snp")
    write_fasta(grown / "db2.fa", seqs[60:75], ids[60:75])
    config["datasets"]["d"]["against"] = ["db1.fa", "db2.fa"]
    _grown_keeping(grown, config, before)
    write_fasta(fresh / "db.fa", seqs[15:75], ids[15:75])
    fresh_config = {**config, "datasets": {"d": {**config["datasets"]["d"], "against": "db.fa"}}}
    snakemake(fresh, fresh_config)
    _same_query_outputs(grown, fresh)
    edited = _edited(seqs, 20)
    write_fasta(grown / "db1.fa", edited[15:60], ids[15:60])
    write_fasta(grown / "db3.fa", seqs[75:90], ids[75:90])
    config["datasets"]["d"]["against"] = ["db1.fa", "db2.fa", "db3.fa"]
    proc = snakemake(grown, config)
    assert "recomputing in full: db1.fa changed since the earlier store was made" in proc.stderr, proc.stderr[-3000:]
