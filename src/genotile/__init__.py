"""genotile: all-pairs comparisons of genomic vectors as bit-plane GEMM tiles.

The Python API (genotile/api.py): ``genotile.pairwise(x, metric=...)`` and
``genotile.triplewise(x)`` (ccc3; ``genotile.triples`` is the 3-way stage package). It is
loaded on first use, so that the pipeline's modules, which import this package for its
version, do not load it.
"""

from genotile.version import __version__

__all__ = ["PairwiseResult", "TriplewiseResult", "pairwise", "triplewise", "__version__"]
_API = ("PairwiseResult", "TriplewiseResult", "pairwise", "triplewise")


def __getattr__(name: str):
    if name in _API:
        from genotile import api

        return getattr(api, name)
    raise AttributeError(f"module 'genotile' has no attribute {name!r}")
