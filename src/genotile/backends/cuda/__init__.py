"""CUDA backends through CuPy: 1-bit tensor cores, int8 cuBLAS, packing, fused selection.

`kernels/` holds the CUDA C++ they compile at first use (NVRTC).
"""
