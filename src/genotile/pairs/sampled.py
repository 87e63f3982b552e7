"""Every pair's spread, from a sample: a metric's values over all the pairs of a few vectors
drawn at random, for the report's density of pairs that did not pass the threshold (the tiles
keep only those that pass, and a histogram of one column).

`vectors` rows of the store are drawn at random (seeded: the same rows each run), uniformly over
all of them (an appended store's parts each permuted within itself: its first rows are the
earliest part's), so every pair of them is a uniform sample of the pairs (each pair drawn with
the same probability). Their values are computed on the CPU, whatever backend the tiles took
(the sample is small: SAMPLE_VECTORS vectors, ~1.1 million pairs, about a second on 2 cores for
king at 20,000 variants), with the tiles' own counts and epilogue. A store of identical vectors
collapsed samples its distinct vectors; a query store's pairs are cross pairs, not sampled here.
"""

from dataclasses import dataclass

import numpy as np

from genotile import backends
from genotile.core.metrics import get_metric
from genotile.store.pack import open_store

SAMPLE_VECTORS = 1500  # vectors drawn: 1,124,250 pairs
SEED = 20261126  # of the draw


@dataclass(frozen=True)
class SampledPairs:
    """The values of every pair among `vectors` of the store's `of` vectors (columns: the
    metric's output columns, each float64 (pairs,), the pairs of the upper triangle in row-major
    order; rows: the store rows drawn, ascending; distinct: the store holds distinct vectors, its
    identical ones collapsed)."""

    columns: dict[str, np.ndarray]
    vectors: int
    of: int
    rows: np.ndarray
    distinct: bool = False

    @property
    def pairs(self) -> int:
        return self.vectors * (self.vectors - 1) // 2

    @property
    def every_pair(self) -> bool:
        """Whether the sample is every vector (its pairs are all of them)."""
        return self.vectors == self.of


def sample_pairs(planes_path, manifest_path, metric_name: str, vectors: int = SAMPLE_VECTORS) -> SampledPairs | None:
    """The metric over every pair of `vectors` store rows drawn at random (above); None for a
    query store or fewer than two rows.

    >>> import numpy as np, tempfile, os, genotile
    >>> g = np.random.default_rng(0).integers(0, 3, size=(6, 200))
    >>> d = tempfile.mkdtemp()
    >>> _ = genotile.pairwise(g, metric="king", backend="numpy", workdir=d)
    >>> s = sample_pairs(os.path.join(d, "planes.npy"), os.path.join(d, "store.json"), "king", 4)
    >>> s.vectors, s.of, s.pairs, sorted(s.columns)[:3]
    (4, 6, 6, ['hethet', 'ibs0', 'kinship'])
    """
    planes, manifest, layout = open_store(planes_path, manifest_path)
    if manifest.get("query") or len(planes) < 2:
        return None
    metric = get_metric(metric_name)
    n = len(planes)
    k = min(int(vectors), n)
    drawn = np.sort(np.random.default_rng(SEED).choice(n, size=k, replace=False)) if k < n else np.arange(n)
    rows = np.asarray(planes[drawn])
    cpu = "numba" if "numba" in backends.available() else "numpy"
    counts = backends.BACKENDS[cpu].count_matrices(rows, rows, metric.counts(layout))
    values = metric.epilogue(counts)
    upper = np.triu_indices(k, 1)
    columns = {col: np.asarray(values[col][upper], dtype=np.float64) for col in metric.columns}
    return SampledPairs(columns, k, n, drawn, "distinct_index" in manifest)
