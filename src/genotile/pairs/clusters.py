"""Single-linkage clusters of the pairs passing the threshold (`clusters.tsv`, the clusters rule):
the connected components of the passing pairs, as arrays of vector indices.

The clusters rule reads the pairs from the tiles (`clusters_of_tiles`), not from pairs.tsv.gz's
text: at 200,000 SARS-CoV-2-like sequences (half of them copies, snp threshold 2) reading the
text's rows took 12 s of a 31-s run on an H200 (bench/RESULTS.md, "Session 12"). It reads only
the tiles' pair indices (not their values), never sorts or expands the pairs, and joins them
a tile at a time (`components_of_parts`); a collapsed store's components are those of its
distinct rows, its copies joined to them afterwards (`input_labels`): 9.9M passing pairs of
202,000 sequences took 3.3 s as sorted, expanded pairs (store_pairs) and 0.3 s so (2-core VM).
`clusters` reads a pairs.tsv.gz (the same clusters from its rows; tests/pairs/test_clusters.py
holds both to a union-find over the rows).
"""

import gzip
import re

import numpy as np

from genotile.core.metrics import get_metric
from genotile.core.plan import Plan
from genotile.store.manifest import STORE_KEYS, tile_identities
from genotile.util.atomic import write_text
from genotile.util.readback import load_json

_IDS = re.compile(rb"^([^\t\n]*)\t([^\t\n]*)", re.MULTILINE)


def pair_indices(pairs_tsv, ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The rows of pairs.tsv.gz as indices into `ids` (its first two columns, the header left out)."""
    raw = gzip.decompress(open(pairs_tsv, "rb").read())
    body = raw[raw.find(b"\n") + 1 :]
    index = {name.encode(): k for k, name in enumerate(ids)}
    found = _IDS.findall(body)
    a = np.fromiter((index[x] for x, _ in found), dtype=np.int64, count=len(found))
    b = np.fromiter((index[y] for _, y in found), dtype=np.int64, count=len(found))
    return a, b


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each of n vertices' component, labelled by its least vertex, for the edges (a[k], b[k])."""
    return components_of_parts(n, [(a, b)])


def components_of_parts(n: int, parts) -> np.ndarray:
    """`components` of the edges of every (a, b) in `parts` (a tile's pairs each: never joined).

    Each round hooks every root that an edge joins to a lesser root onto the least such root (a
    vertex's label never exceeds it, so a component's root is its least vertex), then points
    every vertex at its root (pointer jumping), then keeps only the edges between two roots
    still apart, as one part: most go in the first round (9.9M pairs of 202,000 sequences: 2
    rounds). Every round takes away the greater root of each edge left, so it ends. Labels are
    int32 where they fit: gathered by 2 x 10M pair indices, 0.04 s against int64's 0.10 s."""
    labels = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    parts = [(np.asarray(a), np.asarray(b)) for a, b in parts]
    while parts:
        for a, b in parts:
            if a.size == 0:
                continue
            if not (a < b).all():  # tiles hold a < b; pairs of another source may not
                a, b = np.minimum(a, b), np.maximum(a, b)
            # b is a root: its label the least root joined to it (values of the labels' dtype:
            # ufunc.at's fast path, 0.02 s for 10M pairs where mixed types take 0.6 s)
            np.minimum.at(labels, b, a.astype(labels.dtype, copy=False))
        while True:
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped
        left = []
        for a, b in parts:
            u, v = labels[a], labels[b]
            apart = u != v
            if apart.any():
                u, v = u[apart], v[apart]
                left.append((np.minimum(u, v), np.maximum(u, v)))
        parts = [tuple(np.concatenate(side) for side in zip(*left, strict=True))] if left else []
    return labels


def input_labels(labels: np.ndarray, linked: np.ndarray, index: np.ndarray) -> np.ndarray:
    """A collapsed store's components (store/duplicates.py) carried to its input vectors: the
    copies of distinct row g are g's component where g is `linked` (g has a passing pair, or
    its copies' pair with each other passes: then each copy is paired with all of g's), and
    each a component of its own where not.

    >>> input_labels(np.array([0, 0, 2]), np.array([True, True, False]), np.array([0, 1, 0, 2, 2])).tolist()
    [0, 0, 0, 6, 7]
    """
    out = labels.astype(np.int64)[index]
    alone = np.flatnonzero(~linked[index])
    out[alone] = labels.size + alone  # labels of their own, past every row's
    return out


def clusters(pairs_tsv, ids: list[str], out) -> list[list[str]]:
    """`write_clusters` of the rows of a pairs.tsv.gz."""
    a, b = pair_indices(pairs_tsv, ids)
    return write_clusters(components(len(ids), a, b), ids, out)


def clusters_of_tiles(
    tile_paths, manifest_path, out, metric: str = "snp", config: dict | None = None
) -> list[list[str]]:
    """`write_clusters` of the pairs the tiles of a store (its manifest) passed: those of
    pairs.tsv.gz (a collapsed store's copies joined to their vector, as the merge writes them).

    The tiles are read as the merge reads them (merge.read_tiles), their value columns and dense
    blocks left in the files: each the plan's and of its store, the arrays read checked against
    their digests, and with `config` (the merge's: threshold, params) of those settings; their
    pairs' indices are the merge's to check."""
    from genotile.pairs import tilecheck
    from genotile.pairs.merge import read_tiles
    from genotile.store import duplicates

    manifest = load_json(manifest_path, "manifest", STORE_KEYS)
    plan, m = Plan.from_json(manifest["plan"]), get_metric(metric)
    index = manifest.get("distinct_index")
    expect = None if config is None else tilecheck.expected_settings(metric, config)
    parts, selves = [], []
    skip = ("dense", *m.columns)
    read = read_tiles(tile_paths, plan, m, tile_identities(manifest), expect=expect, skip=skip)
    for path, arrays, _meta, _digest in read:
        parts.append((arrays["a"], arrays["b"]))
        if index is not None:
            selves.append(duplicates.self_pairs(path, arrays, m, plan)["g"])
    labels = components_of_parts(plan.n_vectors, parts)
    if index is not None:
        linked = np.zeros(plan.n_vectors, dtype=bool)
        for a, b in parts:
            linked[a] = True
            linked[b] = True
        for g in selves:
            linked[g] = True
        labels = input_labels(labels, linked, np.asarray(index, dtype=np.intp))
    return write_clusters(labels, manifest["ids"], out)


def write_clusters(labels: np.ndarray, ids: list[str], out) -> list[list[str]]:
    """Single-linkage clusters: the vectors of equal `labels` (each vector's component), two or
    more members each, largest first (ties: the one whose first member comes first in `ids`),
    members in `ids` order; written to `out` as cluster, size, members."""
    order = np.argsort(labels, kind="stable")  # by component, then in ids order
    ordered = labels[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]])) if order.size else order
    sizes = np.diff(np.append(starts, order.size))
    many = np.flatnonzero(sizes > 1)
    many = many[np.lexsort((order[starts[many]], -sizes[many]))]  # largest, then least first member
    names = np.asarray(ids, dtype=object)
    comps = [names[order[starts[c] : starts[c] + sizes[c]]].tolist() for c in many.tolist()]
    lines = ["cluster\tsize\tmembers"] + [f"{k}\t{len(g)}\t{','.join(g)}" for k, g in enumerate(comps, start=1)]
    write_text(out, "\n".join(lines) + "\n")
    return comps
