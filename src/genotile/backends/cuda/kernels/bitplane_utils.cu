// genotile: small memory-bound helpers of the GPU backends.
//
// popcount_rows: out[r] += coef * popcount(W[r, w0:w0+width]) -- one warp per row.
//   W: (rows, ld) uint64 row-major (packed planes, pack.py). out: (rows,) int32.
// unpack_int8: D[r, d0 + 64*w + b] = coef * bit b of W[r, w0 + w], as int8 (0 or coef).
//   W: (rows, ldw) uint64 row-major; D: (rows, ldd) int8 row-major, ldd % 16 == 0, d0 % 64 == 0.
//   One thread per (row, word): 64 output bytes, written as four 16-byte stores.
// bits_planes: the five genotype planes of rows of a .bed's bits (below).

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

// bits_planes: the `genotype` planes L H V Het Hom0 of rows of a .bed's calls held as bits
// (store/bits.py: a row's lo words, then its hi words, 0 past the last variant), as
// store/bits.held_planes makes them on the host, the same 7 word operations.
//   B: (rows, 2 * w) uint64; valid: (w,) the variant bits of each word; P: rows of 5 * w words
//   (plane p of a row at words [p * w, (p + 1) * w)), row-major. One thread per (row, word).
extern "C" __global__ void bits_planes(const unsigned long long* __restrict__ B,
                                       const unsigned long long* __restrict__ valid, int rows, long long w,
                                       unsigned long long* __restrict__ P) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)rows * w) return;
    const long long r = idx / w, k = idx % w;
    const unsigned long long lo = B[r * 2 * w + k], hi = B[r * 2 * w + w + k], ok = valid[k];
    const unsigned long long hom0 = lo & hi;  // 11
    unsigned long long* p = P + r * 5 * w + k;
    p[0] = lo ^ ok;             // L: not lo (00, 10)
    p[w] = (lo | hi) ^ ok;      // H: 00
    p[2 * w] = (lo ^ hom0) ^ ok;  // V: not 01 (missing: lo without hi)
    p[3 * w] = hi ^ hom0;       // Het: 10
    p[4 * w] = hom0;            // Hom0: 11
}
