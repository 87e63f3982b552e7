"""CPU backends: AND + popcount (numba, numpy) and exact float32 BLAS."""
