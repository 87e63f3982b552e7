// genotile: the instruction ceiling of wgmma.mma_async m64n128k256 .b1 .and.popc (Hopper, sm_90a).
//
// Two warpgroups a block, both operands in shared memory (b1_wgmma.cuh's descriptors: K-major,
// 128-byte swizzle), no memory traffic in the loop: each iteration issues one k-tile of four
// k-steps as one group and waits for the group before it, as b1_select's main loop does. Each
// wgmma is 64 x 128 x 256 bit-MACs. `sink` (one int per thread) receives the accumulators' sum.
#include "b1_wgmma.cuh"

extern "C" __global__ void __launch_bounds__(256, 1) b1_wgmma_peak(int iters, int* __restrict__ sink) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* const smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    for (int i = threadIdx.x; i < kStageBytes / 4; i += blockDim.x)
        reinterpret_cast<unsigned*>(smem)[i] = (unsigned)i * 2654435761u;
    fence_proxy_async();
    __syncthreads();
    Accumulators acc;
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[0][j][e] = 0u;
    const unsigned stage = smem_u32(smem), a_rows = (threadIdx.x >> 7) * 64 * kRowBytes;
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
        wgmma_ktile(acc, stage, a_rows);
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    fence_accumulators(acc);
    unsigned s = 0;
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s += acc[0][j][e];
    sink[blockIdx.x * blockDim.x + threadIdx.x] = (int)s;
}
