"""genotile: all-pairs comparisons of genomic vectors as bit-plane GEMM tiles."""

__version__ = "0.1.0"
