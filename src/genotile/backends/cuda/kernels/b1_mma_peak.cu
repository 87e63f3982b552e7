// genotile: the instruction ceiling of mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc.
//
// Register-only loop: no memory traffic inside the loop, kIndependent accumulator tiles per
// warp so the tensor pipe never waits on a dependency. Each mma is 16 x 8 x 256 bit-MACs.
// Data layout: none (operands are derived from the thread index and kept in registers);
// `sink` (one int per thread) receives the accumulators' sum so nothing is optimised away.

#ifndef GT_PEAK_INDEPENDENT
#define GT_PEAK_INDEPENDENT 8
#endif
constexpr int kIndependent = GT_PEAK_INDEPENDENT;

extern "C" __global__ void __launch_bounds__(256) b1_mma_peak(int iters, int* __restrict__ sink) {
    const unsigned seed = (blockIdx.x * blockDim.x + threadIdx.x) * 0x9E3779B9u + 0x7F4A7C15u;
    unsigned a[4] = {seed, seed ^ 0x55555555u, seed * 3u + 1u, ~seed};
    unsigned b[2] = {seed * 0x85EBCA6Bu, (seed >> 7) ^ 0xC2B2AE35u};
    unsigned d[kIndependent][4];
#pragma unroll
    for (int j = 0; j < kIndependent; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) d[j][e] = 0u;
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < kIndependent; ++j) {
            asm volatile(
                "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
                "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                : "+r"(d[j][0]), "+r"(d[j][1]), "+r"(d[j][2]), "+r"(d[j][3])
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    unsigned s = 0;
#pragma unroll
    for (int j = 0; j < kIndependent; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    sink[blockIdx.x * blockDim.x + threadIdx.x] = (int)s;
}
