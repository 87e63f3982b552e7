// genotile: Hopper's warpgroup 1-bit MMA (wgmma.mma_async ... .b1.b1.and.popc, sm_90a) for the
// block tiles of b1_mma_core.cuh.
//
// Why: on an H100 the warpgroup instruction runs at 7.8e15 bit-MAC/s where mma.sync m16n8k256
// reaches 5.3e15 (register-only loops, bench/RESULTS.md session 17), and it reads both operands
// from shared memory itself: no ldmatrix, and a 64 x 128 warpgroup tile reads 6 KB of shared
// memory a k-step where 8 warps of 32 x 32 tiles read 16 KB (mma.sync's king main loop is bound
// by shared memory at ~48% of its own ceiling).
//
// Layout: b1_mma_core's stages are already wgmma's canonical K-major layout with the 128-byte
// swizzle (wgmma.cuh): row r of a k-tile at r * 128 bytes, its 16-byte chunk c at (c ^ (r & 7)) *
// 16, each operand's region starting on a 1024-byte boundary.
//
// Accumulators: a warpgroup's 64 x 128 int32 tile, a thread's 64 registers. Warp w of the group
// holds rows 16 w .. 16 w + 15 in mma.sync's m16n8 fragment layout, one fragment per 8 columns:
// b1_mma_core's Accumulators[1][16][4] (kWarpM 16, kWarpN 128), so the epilogue is the same code.
// (m64n64 blocks, two an SM, were slower: shared memory again, bench/RESULTS.md session 17.)
#ifndef GT_B1_WGMMA_CUH
#define GT_B1_WGMMA_CUH

#include "b1_mma_core.cuh"
#include "wgmma.cuh"

static_assert(kWarpM == 16 && kWarpN == 128 && kMmaM == 1 && kMmaN == 16, "wgmma tiles: warps of 16 x 128");
static_assert(kBlockN == kWarpN && kBlockM % 64 == 0, "wgmma tiles: a warpgroup's 64 rows, the block's 128 columns");
static_assert(kStages >= 3, "wgmma's pipeline: a stage being read, one waited for, one being loaded");
static_assert(kStageBytesA % 1024 == 0 && kStageBytes % 1024 == 0, "operand regions on 1024-byte boundaries");

#define GT_WG_ACC4(j) "+r"(acc[0][j][0]), "+r"(acc[0][j][1]), "+r"(acc[0][j][2]), "+r"(acc[0][j][3])

// acc += popc(A & B) over one k-step: A the warpgroup's 64 rows, B the block's 128 columns, 256 bits.
__device__ __forceinline__ void wgmma_b1(Accumulators& acc, unsigned a_addr, unsigned b_addr) {
    const unsigned long long da = wgmma_desc(a_addr), db = wgmma_desc(b_addr);
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k256.s32.b1.b1.and.popc "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p;\n}\n"
        : GT_WG_ACC4(0), GT_WG_ACC4(1), GT_WG_ACC4(2), GT_WG_ACC4(3), GT_WG_ACC4(4), GT_WG_ACC4(5), GT_WG_ACC4(6),
          GT_WG_ACC4(7), GT_WG_ACC4(8), GT_WG_ACC4(9), GT_WG_ACC4(10), GT_WG_ACC4(11), GT_WG_ACC4(12),
          GT_WG_ACC4(13), GT_WG_ACC4(14), GT_WG_ACC4(15)
        : "l"(da), "l"(db));
}
#undef GT_WG_ACC4

// One k-tile (four k-steps) of the warpgroup's rows into acc, committed as one group.
__device__ __forceinline__ void wgmma_ktile(Accumulators& acc, unsigned stage, unsigned a_rows) {
    fence_accumulators(acc);  // the accumulators' last writes (zeroing, Horner's rescaling) before the fence
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) wgmma_b1(acc, stage + a_rows + 32 * ks, stage + kStageBytesA + 32 * ks);
    wgmma_commit();
}

#endif  // GT_B1_WGMMA_CUH
