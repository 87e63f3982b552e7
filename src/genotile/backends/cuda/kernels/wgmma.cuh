// genotile: Hopper's warpgroup MMA (wgmma.mma_async, sm_90a): what each kernel on it needs, whatever
// its tiles (b1_wgmma.cuh: the b1 GEMM's block tiles; ccc3_fused.cu: ccc3's streamed kernel on
// Hopper). Only sources built for sm_90a include it (GT_WGMMA): its PTX does not assemble for any
// other target.
//
// Operands in shared memory are in wgmma's canonical K-major layout with the 128-byte swizzle: row
// r of a k-tile at r * 128 bytes, its 16-byte chunk c at (c ^ (r & 7)) * 16, each operand's region
// starting on a 1024-byte boundary (8 rows of 128 bytes: the swizzle's atom). A descriptor names
// the region's start, the 1024-byte stride between 8-row groups and the swizzle; k-step ks of a
// k-tile starts 32 bytes (256 bits) further along the row, the hardware applying the swizzle to the
// whole address, as CUTLASS's and DeepGEMM's K-major SW128 tiles do.
#ifndef GT_WGMMA_CUH
#define GT_WGMMA_CUH

// Shared-memory matrix descriptor: start address >> 4 (bits 0-13), leading-dimension byte offset
// >> 4 (bits 16-29; unused by swizzled K-major layouts), stride byte offset >> 4 (bits 32-45:
// 1024 bytes between 8-row groups), base offset 0 (bits 49-51: the region is 1024-byte aligned),
// layout 1 = 128-byte swizzle (bits 62-63).
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
           (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of accumulators across a wgmma fence or wait: the
// registers are "rewritten" here, as CUTLASS's warpgroup_fence_operand (b1_wgmma.cuh's 1 x 16 x 4
// fragments, ccc3_fused.cu's 8 counts x 4 x 4).
template <int A, int B, int C>
__device__ __forceinline__ void fence_accumulators(unsigned (&acc)[A][B][C]) {
#pragma unroll
    for (int a = 0; a < A; ++a)
#pragma unroll
        for (int b = 0; b < B; ++b)
#pragma unroll
            for (int c = 0; c < C; ++c) asm volatile("" : "+r"(acc[a][b][c])::"memory");
}
// Shared memory written by cp.async (the generic proxy) is read next by wgmma (the async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

#endif  // GT_WGMMA_CUH
