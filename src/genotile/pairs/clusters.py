"""Single-linkage clusters of the pairs passing the threshold (`clusters.tsv`, the clusters rule):
the connected components of the passing pairs, read from pairs.tsv.gz with numpy, not row by row.

An append (issue 27) reruns the clusters rule over every passing pair; at 16,000 sequences and
635,000 pairs, reading them as CSV rows and a union-find in Python took 1.5 s of the rerun's 9;
this takes about 0.3 s and writes the same bytes (tests/pairs/test_clusters.py against the
union-find).
"""

import gzip
import re

import numpy as np

from genotile.util.atomic import write_text

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
    """Each of n vertices' component, labelled by its least vertex, for the edges (a[k], b[k]):
    minimum labels carried over the edges, with pointer jumping, until nothing changes."""
    labels = np.arange(n, dtype=np.int64)
    if a.size == 0:
        return labels
    while True:
        low = np.minimum(labels[a], labels[b])
        new = labels.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        while True:  # a label is a vertex of the component: follow it to its own label
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, labels):
            return labels
        labels = new


def clusters(pairs_tsv, ids: list[str], out) -> list[list[str]]:
    """Single-linkage clusters: connected components of the pairs passing the threshold, two or
    more members each, largest first (ties: the one whose first member comes first in `ids`),
    members in `ids` order; written to `out` as cluster, size, members."""
    a, b = pair_indices(pairs_tsv, ids)
    labels = components(len(ids), a, b)
    order = np.argsort(labels, kind="stable")  # by component, then in ids order
    sizes = np.bincount(labels, minlength=len(ids))
    starts = np.concatenate([[0], np.cumsum(sizes)])
    roots = np.nonzero(sizes > 1)[0]  # a component's label is its least member
    roots = roots[np.lexsort((roots, -sizes[roots]))]
    comps = [[ids[k] for k in order[starts[r] : starts[r + 1]]] for r in roots]
    lines = ["cluster\tsize\tmembers"] + [f"{k}\t{len(g)}\t{','.join(g)}" for k, g in enumerate(comps, start=1)]
    write_text(out, "\n".join(lines) + "\n")
    return comps
