"""GPU backend `cupy-int8`: plane products as int8 GEMMs through cuBLAS (IMMA tensor cores).

Each product's bit ranges are unpacked on the GPU (kernels/bitplane_utils.cu) into int8
operands laid side by side along K, the coefficient folded into the right operand (values
-127..127), as numpy_blas.py does with floats; one cuBLAS `gemmEx` (CUDA_R_8I inputs,
CUDA_R_32I output, CUBLAS_COMPUTE_32I) then sums every product of the chunk. Exact: int32
accumulation is kept below 2**31 by construction (chunks are flushed into int64 before
their bound could reach it). Never `cupy.matmul` on integers: it does not use the tensor cores.

cuBLAS is column-major: row-major C (M x N) = L (M x K) . R (N x K)^T is computed as the
column-major C^T (N x M) = op_T(R as K x N) . op_N(L as K x M), with ldc = N padded to a
multiple of 4 (and K, lda, ldb multiples of 64), as the int8 tensor-core path needs.
"""

from __future__ import annotations

import numpy as np

from genotile.backends.cuda import cupy_common as cc

MIN_COMPUTE_CAPABILITY = 75  # int8 tensor cores (IMMA)
CHUNK_BYTES = 1 << 30  # unpacked int8 bytes per operand and GEMM call (bounds the temporaries)
INT8_MAX = 127

# cudaDataType / cublasComputeType_t / cublasGemmAlgo_t / cublasOperation_t values
CUDA_R_8I = 3
CUDA_R_32I = 10
CUBLAS_COMPUTE_32I = 72
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_POINTER_MODE_HOST = 0

_ONE = np.ones(1, dtype=np.int32)
_ZERO = np.zeros(1, dtype=np.int32)


def is_available() -> bool:
    return cc.has_gpu(MIN_COMPUTE_CAPABILITY)


def _round4(x: int) -> int:
    return -(-x // 4) * 4


def gemm_s8(lhs, rhs, out, k: int, accumulate: bool) -> None:
    """out (M, N) int32 [+]= lhs[:, :k] . rhs[:, :k]^T; lhs (M, ldl), rhs (N, ldr) int8 row-major.

    N = out.shape[1] and the leading dimensions must be multiples of 4; k a multiple of 4.
    """
    cp = cc.cupy_module()
    from cupy_backends.cuda.libs import cublas

    m, n = out.shape
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, CUBLAS_POINTER_MODE_HOST)
    try:
        cublas.gemmEx(
            handle,
            CUBLAS_OP_T,
            CUBLAS_OP_N,
            n,
            m,
            k,
            _ONE.ctypes.data,
            rhs.data.ptr,
            CUDA_R_8I,
            rhs.shape[1],
            lhs.data.ptr,
            CUDA_R_8I,
            lhs.shape[1],
            (_ONE if accumulate else _ZERO).ctypes.data,
            out.data.ptr,
            CUDA_R_32I,
            n,
            CUBLAS_COMPUTE_32I,
            CUBLAS_GEMM_DEFAULT,
        )
    finally:
        cublas.setPointerMode(handle, mode)


def unpack_into(words, w0: int, width: int, coef: int, dest, d0_words: int) -> None:
    """dest[:rows, 64*d0_words : 64*(d0_words+width)] = coef * bits of words[:, w0:w0+width]."""
    rows = words.shape[0]
    if rows == 0 or width == 0:
        return
    kernel = cc.load_kernel("bitplane_utils.cu", "unpack_int8")
    total = rows * width
    threads = 256
    kernel(
        ((total + threads - 1) // threads,),
        (threads,),
        (
            words,
            np.int64(words.shape[1]),
            np.int32(rows),
            np.int64(w0),
            np.int64(width),
            np.int32(coef),
            dest,
            np.int64(dest.shape[1]),
            np.int64(64 * d0_words),
        ),
    )


def _groups(products: list[cc.Product]) -> list[tuple[int, list[cc.Product]]]:
    """(scale, products with coef / scale) -- folded int8 coefficients must fit in int8."""
    small = [p for p in products if abs(p.coef) <= INT8_MAX]
    groups = [(1, small)] if small else []
    groups += [(p.coef, [cc.Product(1, p.left, p.right, p.width)]) for p in products if abs(p.coef) > INT8_MAX]
    return groups


def count_device(dl, dr, terms):
    """int64 device array (rows_left, rows_right) of one count (see metrics.Term)."""
    cp = cc.cupy_module()
    m, n = dl.shape[0], dr.shape[0]
    if m == 0 or n == 0:
        return cp.zeros((m, n), dtype=cp.int64)
    products, left_sums, right_sums = cc.split_terms(terms)
    acc = cc.row_sums(dl, left_sums)[:, None] + cc.row_sums(dr, right_sums)[None, :]
    if not products:
        return acc
    mp, np4 = _round4(m), _round4(n)
    chunk_words = max(1, CHUNK_BYTES // (cc.WORD_BITS * max(mp, np4)))
    for scale, group in _groups(products):
        pieces = [
            q for p in group for piece in cc.split_product(p, cc.INT32_MAX) for q in _split_width(piece, chunk_words)
        ]
        width_max = min(chunk_words, sum(p.width for p in pieces))
        lhs = cp.zeros((mp, cc.WORD_BITS * width_max), dtype=cp.int8)  # padded rows stay 0
        rhs = cp.zeros((np4, cc.WORD_BITS * width_max), dtype=cp.int8)
        c32 = cc.new_output((mp, np4), cp.int32)
        c_bound, fresh = 0, True  # bound of what c32 holds; c32 not yet written
        for batch in _batches(pieces, width_max):
            words = 0
            for p in batch:
                unpack_into(dl, p.left, p.width, 1, lhs, words)
                unpack_into(dr, p.right, p.width, p.coef, rhs, words)
                words += p.width
            bound = sum(p.bound for p in batch)
            if c_bound + bound > cc.INT32_MAX:  # int32 C would overflow: move it to int64 first
                acc[...] += c32[:m, :n].astype(cp.int64) * scale
                c_bound, fresh = 0, True
            gemm_s8(lhs, rhs, c32, cc.WORD_BITS * words, accumulate=not fresh)
            c_bound, fresh = c_bound + bound, False
        acc[...] += c32[:m, :n].astype(cp.int64) * scale
    return acc


def _batches(pieces: list[cc.Product], max_words: int) -> list[list[cc.Product]]:
    """Consecutive pieces per GEMM: at most max_words words and a bound below 2**31."""
    batches: list[list[cc.Product]] = []
    current: list[cc.Product] = []
    words = bound = 0
    for p in pieces:
        if current and (words + p.width > max_words or bound + p.bound > cc.INT32_MAX):
            batches.append(current)
            current, words, bound = [], 0, 0
        current.append(p)
        words += p.width
        bound += p.bound
    if current:
        batches.append(current)
    return batches


def _split_width(p: cc.Product, max_words: int) -> list[cc.Product]:
    return [
        cc.Product(p.coef, p.left + o, p.right + o, min(max_words, p.width - o)) for o in range(0, p.width, max_words)
    ]


def count_matrices(left, right, counts: dict) -> dict[str, np.ndarray]:
    m, n = left.shape[0], right.shape[0]
    if m == 0 or n == 0:
        return cc.empty_result(counts, m, n)
    dl = cc.to_device(left)
    dr = dl if right is left else cc.to_device(right)
    return {name: count_device(dl, dr, terms).get() for name, terms in counts.items()}


def tile_pairs(left, right, metric, layout, threshold=None, diagonal=False, dense=False, **options):
    """A whole tile on the device: counts, epilogue, threshold, compaction (see cupy_tile)."""
    from genotile.backends.cuda import cupy_tile

    return cupy_tile.tile_pairs(ENGINE, left, right, metric, layout, threshold, diagonal, dense, **options)


def _count_device(dl, dr, terms, int32: bool = False, cache=None, keys=None):
    return count_device(dl, dr, terms)  # always int64; unpacking is cheap next to the GEMM


def triples_device(*args, **kwargs):
    """A ccc3 job's triples on the device, chunk by chunk (a generator; see cupy_ccc3)."""
    from genotile.backends.cuda import cupy_ccc3

    return cupy_ccc3.triples_device(ENGINE, *args, **kwargs)


def _engine():
    from genotile.backends.cuda.cupy_tile import Engine

    return Engine("cupy-int8", _count_device, lambda terms: False)


ENGINE = _engine()
