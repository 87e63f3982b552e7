// genotile: small memory-bound helpers of the GPU backends.
//
// popcount_rows: out[r] += coef * popcount(W[r, w0:w0+width]) -- one warp per row.
//   W: (rows, ld) uint64 row-major (packed planes, pack.py). out: (rows,) int32.
// unpack_int8: D[r, d0 + 64*w + b] = coef * bit b of W[r, w0 + w], as int8 (0 or coef).
//   W: (rows, ldw) uint64 row-major; D: (rows, ldd) int8 row-major, ldd % 16 == 0, d0 % 64 == 0.
//   One thread per (row, word): 64 output bytes, written as four 16-byte stores.

extern "C" __global__ void popcount_rows(const unsigned long long* __restrict__ W, long long ld,
                                         int rows, long long w0, long long width, int coef,
                                         int* __restrict__ out) {
    const int warps_per_block = blockDim.x >> 5;
    const int row = blockIdx.x * warps_per_block + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const unsigned long long* p = W + (long long)row * ld + w0;
    int s = 0;
    for (long long w = lane; w < width; w += 32) s += __popcll(p[w]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) out[row] += coef * s;
}

extern "C" __global__ void unpack_int8(const unsigned long long* __restrict__ W, long long ldw,
                                       int rows, long long w0, long long width, int coef,
                                       signed char* __restrict__ D, long long ldd, long long d0) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)rows * width) return;
    const long long r = idx / width, w = idx % width;
    const unsigned long long x = W[r * ldw + w0 + w];
    const unsigned long long c = (unsigned long long)(coef & 0xFF);
    unsigned long long bytes[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        const unsigned long long v = (x >> (8 * k)) & 0xFFull;
        // spread the 8 bits of v into the low bit of 8 bytes, then scale each byte by coef
        unsigned long long s = 0;
#pragma unroll
        for (int b = 0; b < 8; ++b) s |= ((v >> b) & 1ull) << (8 * b);
        bytes[k] = s * c;
    }
    ulonglong2* dst = reinterpret_cast<ulonglong2*>(D + r * ldd + d0 + 64 * w);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        ulonglong2 v;
        v.x = bytes[2 * k];
        v.y = bytes[2 * k + 1];
        dst[k] = v;
    }
}
