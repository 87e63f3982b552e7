// genotile: signed sum of 1-bit plane products on the tensor cores.
//
//   C[i, j] = sum_t coef_t * popcount(A[i, K_t] AND B[j, K_t]) + row_add[i] + col_add[j]
//
// Instruction: mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc (sm_80+; native on
// sm_90). Block tile kBlockM x kBlockN x 1024 bits staged in shared memory by cp.async,
// kStages deep; each warp owns a kWarpM x kWarpN tile of int32 accumulators in registers and
// feeds the mma from ldmatrix.x4 loads. Every product term of a count is done in the one
// pass over K: the accumulators are rescaled between terms (Horner form), so
//   acc = 0; for each term t: acc = acc * term_mult[t] + P_t;   C = acc * final_mult
// with term_mult[t] = coef_{t-1} / coef_t (exact integers: the host orders the terms so that
// each coefficient divides the one before) and final_mult = coef_last.
//
// Data layout expected (built by cupy_b1.py):
//   A: (Mp, KW) uint64, row-major, Mp % kBlockM == 0; B: (Np, KW) uint64, Np % kBlockN == 0;
//   KW % 16 == 0 (a k-tile = 16 words = 1024 bits). Bit f of a row is bit f % 64 of word
//   f / 64 (little-endian, pack.py). Column k of A and of B is the same field of the same
//   term: the host concatenates the terms' word ranges, each zero-padded to whole k-tiles,
//   and pads rows with zero words. Term t covers k-tiles [term_kt[t], term_kt[t + 1]).
//   row_add: (M,) int32, col_add: (N,) int32 (the all-ones-plane terms, see metrics.Term).
//   C: (M, N) int32, row-major, ldc = N; only the M x N part is written.
// Shared memory per stage: (kBlockM + kBlockN) rows x 128 bytes, 16-byte chunk c of row r
// stored at chunk (c ^ (r & 7)) (XOR swizzle: conflict-free cp.async stores and ldmatrix).
// Result is exact modulo 2^32; the host guarantees |C| < 2^31 (else it splits K).

#include "b1_mma_core.cuh"

extern "C" __global__ void __launch_bounds__(kThreads, GT_MIN_BLOCKS)
b1_mma_multistage(const unsigned long long* __restrict__ A, const unsigned long long* __restrict__ B,
                  int* __restrict__ C, int M, int N, long long KW,
                  const int* __restrict__ term_kt, const int* __restrict__ term_mult, int n_terms,
                  int final_mult, const int* __restrict__ row_add, const int* __restrict__ col_add) {
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned smem_base = smem_u32(smem);

    ThreadTile tt;
    thread_tile(A, B, M, N, KW, tt);
    const int m0 = tt.m0, n0 = tt.n0, lane = tt.lane, warp_m = tt.warp_m, warp_n = tt.warp_n, KT = tt.KT;
    const CopyPlan& plan = tt.plan;
    const unsigned(&a_off)[kKSteps] = tt.a_off;
    const unsigned(&b_off)[kKSteps] = tt.b_off;

    unsigned acc[kMmaM][kMmaN][4];
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0u;

    // Prologue: k-tiles 0 .. kStages-2 in flight.
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < KT) load_ktile(smem_base, s, s, plan);
        cp_async_commit();
    }

    int term = 0;
    int next_term_kt = 0;  // k-tile where term `term` starts
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<kStages - 2>();
        __syncthreads();  // k-tile kt landed for all threads; stage (kt-1) % kStages is free
        const int nk = kt + kStages - 1;  // the k-tile whose copies this iteration issues
#if !GT_LOAD_LATE
        if (nk < KT) load_ktile(smem_base, nk % kStages, nk, plan);
        cp_async_commit();
#endif
        if (kt == next_term_kt) {  // uniform across the block
            const unsigned mult = (unsigned)term_mult[term];
            if (mult != 1u) rescale(acc, mult);
            ++term;
            next_term_kt = term < n_terms ? term_kt[term] : KT;
        }
        const unsigned stage = smem_base + (kt % kStages) * kStageBytes;
        auto load_frags = [&](int ks, unsigned (&a)[kMmaM][4], unsigned (&b)[kMmaN][2]) {
            load_fragments(stage, a_off[ks], b_off[ks], a, b);
        };
#if GT_DOUBLE_BUFFER
        unsigned a[2][kMmaM][4], b[2][kMmaN][2];
        load_frags(0, a[0], b[0]);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
            if (ks + 1 < kKSteps) load_frags(ks + 1, a[(ks + 1) & 1], b[(ks + 1) & 1]);
#pragma unroll
            for (int i = 0; i < kMmaM; ++i)
#pragma unroll
                for (int j = 0; j < kMmaN; ++j) mma_b1(acc[i][j], a[ks & 1][i], b[ks & 1][j]);
#if GT_LOAD_LATE
            if (ks == 0) {
                if (nk < KT) load_ktile(smem_base, nk % kStages, nk, plan);
                cp_async_commit();
            }
#endif
        }
#else
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
            unsigned a[kMmaM][4], b[kMmaN][2];
            load_frags(ks, a, b);
#pragma unroll
            for (int i = 0; i < kMmaM; ++i)
#pragma unroll
                for (int j = 0; j < kMmaN; ++j) mma_b1(acc[i][j], a[i], b[j]);
#if GT_LOAD_LATE
            if (ks == 0) {
                if (nk < KT) load_ktile(smem_base, nk % kStages, nk, plan);
                cp_async_commit();
            }
#endif
        }
#endif
    }
    cp_async_wait<0>();

    // Epilogue: accumulator e of mma tile (i, j) is row g (+8 for e >= 2), column 2t + (e & 1).
    const unsigned fm = (unsigned)final_mult;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + warp_m * kWarpM + i * kInstrM + g + 8 * h;
            if (row >= M) continue;
            const unsigned radd = (unsigned)row_add[row];
            int* crow = C + (long long)row * N;
#pragma unroll
            for (int j = 0; j < kMmaN; ++j) {
                const int col = n0 + warp_n * kWarpN + j * kInstrN + 2 * t;
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    if (col + e < N)
                        crow[col + e] = (int)(acc[i][j][2 * h + e] * fm + radd + (unsigned)col_add[col + e]);
                }
            }
        }
    }
}
