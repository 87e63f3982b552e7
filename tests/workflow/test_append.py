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
