"""pairs/clusters.py: the components of the passing pairs, byte for byte those of a union-find
over the rows (`union_find_clusters`, the clusters rule's earlier code), on random graphs with
long chains and with no pairs."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from genotile.core.plan import Plan
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


def least_labels(n: int, edges) -> list[int]:
    """The reference labels: each vertex's least vertex of its component, by a union-find."""
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for i, j in edges:
        x, y = find(i), find(j)
        parent[max(x, y)] = min(x, y)
    return [find(k) for k in range(n)]


@pytest.mark.parametrize("seed", range(12))
def test_components_of_parts_equal_a_union_find(seed):
    """Edges in several parts (a tile's pairs each), either way round, repeated, on a vertex
    itself, long chains in random order; a part may be empty; many rounds of hooking."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 400))
    edges = [tuple(int(x) for x in rng.integers(0, n, 2)) for _ in range(int(rng.integers(0, 2 * n)))]
    chain = rng.permutation(n)
    edges += [(int(chain[k]), int(chain[k + 1])) for k in range(int(rng.integers(0, n)) - 1)]
    order = rng.permutation(len(edges))
    edges = [edges[k] for k in order]
    cuts = sorted(int(c) for c in rng.integers(0, len(edges) + 1, int(rng.integers(0, 4))))
    pieces = np.split(np.array(edges, dtype=np.int64).reshape(-1, 2), cuts)
    parts = [(p[:, 0].copy(), p[:, 1].copy()) for p in pieces]
    got = clusters.components_of_parts(n, parts)
    assert got.tolist() == least_labels(n, edges)
    assert clusters.components(n, *(np.concatenate(side) for side in zip(*parts, strict=True))).tolist() == got.tolist()


def test_write_clusters_orders_by_size_then_first_member_whatever_the_labels(tmp_path):
    """Labels only group: clusters largest first, ties by their first member's place in `ids`,
    members in `ids` order, singletons left out, whatever the label values."""
    ids = ["z", "y", "x", "w", "v", "u", "t"]
    labels = np.array([9, 3, 9, 3, 7, 0, 3])
    got = clusters.write_clusters(labels, ids, tmp_path / "c.tsv")
    assert got == [["y", "w", "t"], ["z", "x"]]
    assert (tmp_path / "c.tsv").read_text() == "cluster\tsize\tmembers\n1\t3\ty,w,t\n2\t2\tz,x\n"
    labels = np.array([5, 5, 1, 1, 0, 2, 2])  # three of size 2: by first member
    assert clusters.write_clusters(labels, ids, tmp_path / "d.tsv") == [["z", "y"], ["x", "w"], ["u", "t"]]
    assert clusters.write_clusters(np.arange(7), ids, tmp_path / "e.tsv") == []
    assert (tmp_path / "e.tsv").read_text() == "cluster\tsize\tmembers\n"


def _fake_store(folder, ids, plan: Plan, edges, selves=(), index=None):
    """A store's manifest and tiles holding `edges` (pairs of plan rows) and, where `index`
    collapses copies, the self pairs of the rows `selves`: each pair in the tile of its blocks,
    as the tile jobs write them (a < b; a snp value; a histogram)."""
    from genotile.io.tilefile import write_tile

    manifest = {"n_vectors": plan.n_vectors, "n_kept": 1, "ids": ids, "plan": plan.to_json(), "layout": {}}
    manifest |= {"input": "in.fa", "input_sha256": "0" * 64}
    if index is not None:
        manifest |= {"n_distinct": plan.n_vectors, "distinct_index": [int(k) for k in index]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    block = np.empty(plan.n_vectors, dtype=np.int64)
    perm = plan.permutation()
    for k in range(plan.n_blocks):
        block[perm[plan.block(k)]] = k
    e = np.array(sorted({(min(i, j), max(i, j)) for i, j in edges if i != j}), dtype=np.int64).reshape(-1, 2)
    g = np.array(sorted(set(selves)), dtype=np.int64)
    tiles = []
    for ti, tj in plan.tiles():
        mine = (np.minimum(block[e[:, 0]], block[e[:, 1]]) == ti) & (np.maximum(block[e[:, 0]], block[e[:, 1]]) == tj)
        arrays = {"a": e[mine, 0], "b": e[mine, 1], "snp": e[mine, 0] % 3, "hist_snp": np.zeros(3, np.int64)}
        if index is not None and ti == tj:
            here = g[block[g] == ti]
            arrays |= {"self_index": here, "self_snp": np.zeros(here.size, np.int64)}
        meta = {"tile": [ti, tj], "metric": "snp", "threshold": 2, "pairs_computed": 0}
        meta |= {"pairs_passing": int(mine.sum()), "store": {"input_sha256": "0" * 64, "plan": plan.to_json()}}
        path = folder / f"tile_{ti}_{tj}.npz"
        write_tile(path, arrays, meta)
        tiles.append(path)
    return tiles, folder / "manifest.json"


@pytest.mark.parametrize("seed", range(10))
def test_clusters_of_tiles_equal_the_union_find_of_the_input_pairs(tmp_path, seed):
    """clusters_of_tiles on a store of several tiles, its copies collapsed (odd seeds) or not: the
    union-find's clusters of the input pairs, found by brute force from the rows' pairs (a copy is
    paired with every vector its row is paired with, and with the other copies of its row where
    that row's self pair passes): copies whose row has no pair and no self pair stay apart."""
    rng = np.random.default_rng(200 + seed)
    n_input = int(rng.integers(2, 70))
    ids = [f"v{k}_{int(rng.integers(100))}" for k in rng.permutation(n_input)]
    collapsed = seed % 2 == 1
    if collapsed:
        rows = int(rng.integers(1, n_input + 1))
        index = rng.integers(0, rows, n_input)
        index[rng.permutation(n_input)[:rows]] = np.arange(rows)  # every row has a vector
        _, index = np.unique(index, return_inverse=True)  # as a store numbers them: by first copy
        first = {int(r): k for k, r in reversed(list(enumerate(index)))}
        index = np.array([sorted(first.values()).index(first[int(r)]) for r in index])
    else:
        rows, index = n_input, np.arange(n_input)
    edges = [tuple(int(x) for x in rng.integers(0, rows, 2)) for _ in range(int(rng.integers(0, rows)))]
    selves = [int(g) for g in rng.integers(0, rows, int(rng.integers(0, rows + 1)))] if collapsed else []
    plan = Plan(rows, int(rng.integers(1, rows + 1)), int(seed), n_input=n_input if collapsed else 0)
    tiles, manifest = _fake_store(tmp_path, ids, plan, edges, selves, index if collapsed else None)
    linked = {frozenset(e) for e in edges if e[0] != e[1]}
    pairs = [
        (x, y)
        for x in range(n_input)
        for y in range(x + 1, n_input)
        if frozenset((int(index[x]), int(index[y]))) in linked or (index[x] == index[y] and int(index[x]) in selves)
    ]
    _pairs_file(tmp_path / "pairs.tsv.gz", ids, pairs)
    want = union_find_clusters(tmp_path / "pairs.tsv.gz", ids, tmp_path / "want.tsv")
    got = clusters.clusters_of_tiles(tiles, manifest, tmp_path / "got.tsv")
    assert got == want
    assert (tmp_path / "got.tsv").read_bytes() == (tmp_path / "want.tsv").read_bytes()


def test_input_labels_keep_copies_of_an_unpaired_row_apart():
    labels = np.array([0, 0, 2, 3])
    linked = np.array([True, True, False, True])  # row 3: its copies' self pair passes
    index = np.array([2, 0, 2, 1, 3, 3, 2])
    assert clusters.input_labels(labels, linked, index).tolist() == [4, 0, 6, 0, 3, 3, 10]
