"""pairs/clusters.py: the components of the passing pairs, byte for byte those of a union-find
over the rows (`union_find_clusters`, the clusters rule's earlier code), on random graphs with
long chains and with no pairs."""

import gzip
from pathlib import Path

import numpy as np
import pytest

from genotile.pairs import clusters
from genotile.report import read_pairs


def union_find_clusters(pairs_tsv, ids: list[str], out) -> list[list[str]]:
    """The reference: single-linkage clusters by a union-find over pairs.tsv.gz's rows, written as
    clusters.tsv (cluster, size, members; largest first, then by first member's input order)."""
    parent = list(range(len(ids)))
    index = {name: k for k, name in enumerate(ids)}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    _, rows = read_pairs(pairs_tsv)
    for row in rows:
        a, b = find(index[row[0]]), find(index[row[1]])
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[str]] = {}
    for k, name in enumerate(ids):
        groups.setdefault(find(k), []).append(name)
    comps = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), ids.index(g[0])))
    lines = ["cluster\tsize\tmembers"] + [f"{k}\t{len(g)}\t{','.join(g)}" for k, g in enumerate(comps, start=1)]
    Path(out).write_text("\n".join(lines) + "\n")
    return comps


def _pairs_file(path, ids, edges):
    lines = ["id1\tid2\tsnp"] + [f"{ids[i]}\t{ids[j]}\t{k % 7}" for k, (i, j) in enumerate(edges)]
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


@pytest.mark.parametrize("seed", range(8))
def test_clusters_equal_the_union_finds(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    ids = [f"s{k}_{rng.integers(1000)}" for k in range(n)]
    edges = []
    if n > 1 and seed:
        chain = rng.permutation(n)[: int(rng.integers(2, n + 1))]  # a long path, in random order
        edges += [tuple(sorted((int(chain[k]), int(chain[k + 1])))) for k in range(len(chain) - 1)]
        edges += [tuple(sorted(map(int, rng.choice(n, 2, replace=False)))) for _ in range(int(rng.integers(0, n)))]
        rng.shuffle(edges)
    _pairs_file(tmp_path / "pairs.tsv.gz", ids, edges)
    want = union_find_clusters(tmp_path / "pairs.tsv.gz", ids, tmp_path / "want.tsv")
    got = clusters.clusters(tmp_path / "pairs.tsv.gz", ids, tmp_path / "got.tsv")
    assert got == want
    assert (tmp_path / "got.tsv").read_bytes() == (tmp_path / "want.tsv").read_bytes()


def test_components_label_each_vertex_by_its_least():
    a, b = np.array([4, 3, 1]), np.array([3, 2, 0])
    assert clusters.components(6, a, b).tolist() == [0, 0, 2, 2, 2, 5]


def test_the_clusters_rule_reads_the_tiles(tmp_path):
    """The workflow's clusters.tsv (from the tiles: clusters_of_tiles) is the one of pairs.tsv.gz's
    rows, on a run of several tiles whose CPU store collapses copies (joined back to their vector)."""
    from snakerun import random_alignment, snakemake, write_fasta

    rows = random_alignment(np.random.default_rng(5), 40, 300)
    rows[7], rows[21], rows[33] = rows[3], rows[3], rows[12]  # copies: collapsed, then expanded
    for near, of in ((15, 4), (38, 15), (26, 33)):  # a change away: pairs across blocks and tiles
        rows[near] = rows[of][:10] + ("A" if rows[of][10] != "A" else "C") + rows[of][11:]
    write_fasta(tmp_path / "a.fa", rows)
    config = {
        "datasets": {"a": {"input": str(tmp_path / "a.fa"), "metrics": ["snp"]}},
        "thresholds": {"snp": 2},
        "block_size": 9,
        "report": True,
        "backend": "numpy",
    }
    snakemake(tmp_path, config)
    out = tmp_path / "results" / "a" / "snp"
    ids = [line[1:].split()[0] for line in (tmp_path / "a.fa").read_text().splitlines() if line.startswith(">")]
    want = clusters.clusters(out / "pairs.tsv.gz", ids, tmp_path / "want.tsv")
    assert sorted(map(len, want)) == [3, 3, 3]  # {3, 7, 21}, {4, 15, 38}, {12, 33, 26}
    assert (out / "report" / "clusters.tsv").read_bytes() == (tmp_path / "want.tsv").read_bytes()
