// genotile ccc3: a block triple's counts, epilogue, threshold and compaction in one kernel, the 27
// plane products of CoMet's 3-way method on the 1-bit tensor cores with the 8 counts kept in
// registers (counts never written; cupy_ccc3's select path writes 8 int32 matrices and reads
// them back, 64 bytes a place).
//
// Tiling. A block (CTA) owns a kFBlockI x kFBlockK tile of (row i of block I, column k of block K)
// and a range of middle rows j of block J; its rows' planes are loaded into shared memory once
// (the whole of K: a row is 3 planes of wp words, wp a multiple of 4 (256 bits), so that a plane
// fits the launch's shared memory only up to a few thousand samples: the host's `fused_fits`), and
// the block loops over its j rows (kFJGroup of them staged in shared memory at a time). Each of
// its 16 warps owns a 16 x 16 warp tile: one m16 mma tile by two n8 tiles.
//
// Main loop, per j and per k-step of 256 bits: the warp's A fragments of planes x = L, H, V of
// its 16 rows i (ldmatrix), masked in registers by plane y of row j (the A fragment's bits this
// lane holds: 32-bit words t and t + 4 of the k-step, t = lane % 4): X_i & Y_j, the masked block
// of the select path, never stored; B fragments of planes z of its 16 columns k. mma(X_i & Y_j,
// Z_k) is added to count (x != V, y != V, z != V) of ccc3.COUNT_G: 27 mmas a (warp tile, n8 tile).
//
// Epilogue (ccc3_epilogue.cuh), per j, for the places a lane holds (8; 16 in ccc3_fused_wgmma): the triangle (i < j where
// I = J, k > j where J = K) and, with a threshold, a bound in floats first: v ~ (M / c_ijk) r
// Fi(a) Fj(b) Fk(c) with F(a) = 1 - P f(a) (the sort of the three f does not change the product,
// only its rounding), a candidate where any v + 1e-5 |v| + 1e-30 >= thr (floats err by far less
// than 1e-5 relative: no triple the exact values keep is left out; !ok triples hold 0s); each
// candidate's values are then computed in doubles exactly as ccc3_select does (same bits) and
// kept by the same rule. Kept triples: slot = atomicAdd(counter), out_i/j/k[slot] (rows of blocks
// I, J, K), vals[slot * 8 + v]; slots past cap are counted, not written (the host runs the range
// again with a larger buffer or a shorter range: the launch's places are (i, j, k) in
// [i0, i1) x [j0, j1) x [k0, k1), rows of blocks I, J, K).
//
// Operands: blocks I, J, K repacked as uint32 rows of 3 planes x wp uint64 words, rows padded to
// whole kFBlockI / kFBlockK tiles with zero rows (padding bits and rows count nothing).
//
// Kernels (ccc3_fused.py `launch`): ccc3_fused (the planes held whole) and ccc3_fused_streamed (any
// width, mma.sync) in the plain build (CuPy's RawModule, every GPU); ccc3_fused_wgmma (the streamed
// kernel on Hopper's warpgroup MMA) alone in the GT_WGMMA build (sm_90a: its PTX assembles for no
// other target). All three share the block tile, grid, middle rows and epilogue below.

#ifndef GT_WGMMA
#define GT_WGMMA 0  // 1: the streamed kernel on Hopper's warpgroup MMA alone (ccc3_fused_wgmma; sm_90a)
#endif
#include "b1_mma_core.cuh"
#include "ccc3_epilogue.cuh"
#if GT_WGMMA
#include "wgmma.cuh"
#endif

constexpr int kFBlockI = 64;
constexpr int kFBlockK = 64;
constexpr int kFWarpI = 16;
constexpr int kFWarpK = 16;
constexpr int kFWarpsK = kFBlockK / kFWarpK;  // 4
constexpr int kFThreads = 32 * (kFBlockI / kFWarpI) * kFWarpsK;  // 512
constexpr int kSChunk = 16;  // words of a plane a stage holds (ccc3_fused_streamed, ccc3_fused_wgmma): 4 k-steps

// Index of count (gi, gj, gk) in ccc3.COUNTS: t, s_i, s_j, s_k, s_ij, s_ik, s_jk, s_ijk.
__device__ __forceinline__ constexpr int count_index(int gi, int gj, int gk) {
    return (gi + gj + gk == 0)   ? 0
           : (gi + gj + gk == 3) ? 7
           : (gi + gj + gk == 1) ? (gi ? 1 : gj ? 2 : 3)
                                 : (!gk ? 4 : !gj ? 5 : 6);
}

// Shared-memory row stride for `row_bytes` of data: 16 bytes more than a multiple of 128, so the
// 8 rows an ldmatrix reads fall on distinct banks.
__host__ __device__ __forceinline__ constexpr int fused_stride(int row_bytes) {
    return ((row_bytes + 111) / 128) * 128 + 16;
}

// Copy `rows` rows of `row_bytes` (a multiple of 16) from global `src` (consecutive rows) into
// shared `dst` rows of `stride` bytes, with cp.async by every thread of the block.
__device__ __forceinline__ void stage_rows(unsigned dst, int stride, const char* src, int rows,
                                           int row_bytes) {
    const int chunks = row_bytes / 16;
    for (int c = threadIdx.x; c < rows * chunks; c += kFThreads) {
        const int r = c / chunks, q = c % chunks;
        cp_async_16(dst + r * stride + q * 16, src + (long long)r * row_bytes + q * 16);
    }
}

// One k-step of 256 bits for this warp: its A fragments of planes x of 16 rows i at a_addr + x *
// plane_bytes (+ off), masked by plane y of row j (jw: 32-bit words, plane y's at y * j_plane,
// this k-step's first at 0: words t and t + 4), B fragments of planes z of its 16 columns k;
// mma(X_i & Y_j, Z_k) added to count (x != V, y != V, z != V).
__device__ __forceinline__ void mma_kstep(unsigned a_addr, unsigned b_addr, unsigned off, int plane_bytes,
                                          const unsigned* jw_step, int j_plane, int t,
                                          unsigned (&acc)[8][2][4]) {
    unsigned a[3][4], b[3][2][2], jw[3][2];
#pragma unroll
    for (int x = 0; x < 3; ++x) {
        ldmatrix_x4(a_addr + x * plane_bytes + off, a[x][0], a[x][1], a[x][2], a[x][3]);
        ldmatrix_x4(b_addr + x * plane_bytes + off, b[x][0][0], b[x][0][1], b[x][1][0], b[x][1][1]);
        // plane x of row j: 32-bit words t and t + 4 of this k-step
        jw[x][0] = jw_step[x * j_plane + t];
        jw[x][1] = jw_step[x * j_plane + t + 4];
    }
#pragma unroll
    for (int x = 0; x < 3; ++x)
#pragma unroll
        for (int y = 0; y < 3; ++y) {
            const unsigned m[4] = {a[x][0] & jw[y][0], a[x][1] & jw[y][0], a[x][2] & jw[y][1],
                                   a[x][3] & jw[y][1]};
#pragma unroll
            for (int z = 0; z < 3; ++z)
#pragma unroll
                for (int nt = 0; nt < 2; ++nt) mma_b1(acc[count_index(x != 2, y != 2, z != 2)][nt], m, b[z][nt]);
        }
}

template <int N>  // n8 tiles a lane holds: 2 (mma.sync's 16 x 16 warp tiles), 4 (wgmma's 16 x 32)
__device__ __forceinline__ void zero_counts(unsigned (&acc)[8][N][4]) {
#pragma unroll
    for (int c = 0; c < 8; ++c)
#pragma unroll
        for (int nt = 0; nt < N; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[c][nt][e] = 0u;
}

// What the epilogue reads and writes besides the counts (the kernels' arguments).
struct FusedOut {
    const long long* stat_i;  // (c, s1) a row of blocks I, J, K (ccc3.vector_stats)
    const long long* stat_j;
    const long long* stat_k;
    const float* f_i;  // 1 - P f(a), a = 0, 1, a row (ccc3_fused.factors)
    const float* f_j;
    const float* f_k;
    int same_ij, same_jk;
    Ccc3Params prm;
    float mult_f;  // M as a float
    float thr_lo;  // thr rounded down to a float
    unsigned long long* counter;
    long long cap;
    int* out_i;
    int* out_j;
    int* out_k;
    double* vals;
};

// Whether place (i, j, k) may pass, from its 8 counts: the float bound of its 8 values (never
// below an exact value that passes), or every place where the threshold is null.
// ci, cj, ck: its vectors' called samples; fi, fjv, fk: their factors 1 - P f(a), a = 0, 1.
__device__ __forceinline__ bool place_candidate(const long long (&cnt)[8], long long ci, long long cj, long long ck,
                                                const float (&fi)[2], const float (&fjv)[2], const float (&fk)[2],
                                                const FusedOut& o) {
    if (o.prm.null_thr) return true;
    const bool ok = ci > 0 && cj > 0 && ck > 0 && cnt[0] > 0;
    if (!ok) return 0.0 >= o.prm.thr;
    // tallies r(a, b, c): rho(0) = 2V - G, rho(1) = G along each axis, in ints
    // (exact); count index bits: gi, gj, gk as count_index
    int u[2][2][2];
#pragma unroll
    for (int gi = 0; gi < 2; ++gi)
#pragma unroll
        for (int gj = 0; gj < 2; ++gj)
#pragma unroll
            for (int gk = 0; gk < 2; ++gk) u[gi][gj][gk] = (int)cnt[count_index(gi, gj, gk)];
    int r1[2][2][2], r2[2][2][2], r3[2][2][2];
#pragma unroll
    for (int p1 = 0; p1 < 2; ++p1)
#pragma unroll
        for (int p2 = 0; p2 < 2; ++p2) {
            r1[0][p1][p2] = 2 * u[0][p1][p2] - u[1][p1][p2];
            r1[1][p1][p2] = u[1][p1][p2];
        }
#pragma unroll
    for (int p0 = 0; p0 < 2; ++p0)
#pragma unroll
        for (int p2 = 0; p2 < 2; ++p2) {
            r2[p0][0][p2] = 2 * r1[p0][0][p2] - r1[p0][1][p2];
            r2[p0][1][p2] = r1[p0][1][p2];
        }
#pragma unroll
    for (int p0 = 0; p0 < 2; ++p0)
#pragma unroll
        for (int p1 = 0; p1 < 2; ++p1) {
            r3[p0][p1][0] = 2 * r2[p0][p1][0] - r2[p0][p1][1];
            r3[p0][p1][1] = r2[p0][p1][1];
        }
    const float scale = o.mult_f / (8.0f * (float)cnt[0]);
    bool candidate = false;
#pragma unroll
    for (int abc = 0; abc < 8; ++abc) {
        const int a_ = abc >> 2, b_ = (abc >> 1) & 1, c_ = abc & 1;
        const float v = scale * (float)r3[a_][b_][c_] * fi[a_] * fjv[b_] * fk[c_];
        candidate = candidate || !(v + 1e-5f * fabsf(v) + 1e-30f < o.thr_lo);  // NaN: a candidate
    }
    return candidate;
}

// A candidate place's exact values (ccc3_values, doubles) and, where it passes, its slot of the output.
__device__ __forceinline__ void place_exact(const long long (&cnt)[8], int i, int j, int k, long long ci, long long si,
                                            long long cj, long long sj, long long ck, long long sk,
                                            const FusedOut& o) {
    double v[8];
    if (!ccc3_values(cnt, ci, si, cj, sj, ck, sk, o.prm, v)) return;
    const unsigned long long slot = atomicAdd(o.counter, 1ULL);
    if ((long long)slot < o.cap) {
        o.out_i[slot] = i;
        o.out_j[slot] = j;
        o.out_k[slot] = k;
#pragma unroll
        for (int c = 0; c < 8; ++c) o.vals[slot * 8 + c] = v[c];
    }
}

// The epilogue of one place (i, j, k) from its 8 counts: float bound, exact values, compaction.
__device__ __forceinline__ void epilogue_place(const long long (&cnt)[8], int i, int j, int k, long long cj,
                                               long long sj, float fj0, float fj1, const FusedOut& o) {
    const long long ci = o.stat_i[2 * i], si = o.stat_i[2 * i + 1];
    const long long ck = o.stat_k[2 * k], sk = o.stat_k[2 * k + 1];
    const float fi[2] = {o.f_i[2 * i], o.f_i[2 * i + 1]}, fjv[2] = {fj0, fj1};
    const float fk[2] = {o.f_k[2 * k], o.f_k[2 * k + 1]};
    if (place_candidate(cnt, ci, cj, ck, fi, fjv, fk, o)) place_exact(cnt, i, j, k, ci, si, cj, sj, ck, sk, o);
}

// Whether place (i, j, k) is one of the launch's: within [i_min, i_end) x [k_min, k_end) and the
// triangle (i < j where I = J, k > j where J = K).
__device__ __forceinline__ bool in_place(int i, int j, int k, int i_min, int i_end, int k_min, int k_end,
                                         const FusedOut& o) {
    return !(i < i_min || i >= i_end || k < k_min || k >= k_end || (o.same_ij && i >= j) || (o.same_jk && k <= j));
}

// The epilogue of middle row j for this lane's 4N places (i = i_base (+ 8), k = k_base + nt * 8
// (+ 1); 8, and 16 in ccc3_fused_wgmma) within [i_min, i_end) x [k_min, k_end): the triangle, then
// place_candidate and place_exact (epilogue_place where unrolled). kRolled: the places' counts
// copied out of the accumulators (read with compile-time indices, so that the accumulators stay in
// registers; the copy, read with the loop's run-time place, is in local memory), then one rolled
// loop over the places, kEpilogueBatch at a time, so that the place's body is in the kernel
// kEpilogueBatch times, not 8 or 16 (its float bound and doubles made most of the streamed kernel's ~235 KB of SASS, more than the
// instruction caches hold beside the main loop: 20,000 samples 48% -> 52% of the b1 ceiling, one
// H100, RESULTS.md Session 16). The resident kernel keeps the 8 copies: at 2,000 samples its
// epilogue comes every 8 k-steps, and the rolled loop's local array cost more (47% -> 42%). Batches
// of places (kEpilogueBatch) at 20,000 samples, one H100, RESULTS.md Session 19: ccc3_fused_wgmma
// 60.2% (1), 62.7% (2), 62.3% (4); ccc3_fused_streamed 51.7, 52.6, 48.7%.
#ifndef GT_CCC3_EPILOGUE_BATCH
#define GT_CCC3_EPILOGUE_BATCH 2
#endif
// Places the rolled loop bounds at once (GT_CCC3_EPILOGUE_BATCH): their loads and float bounds are
// independent, so that the few warps of a block (8 in ccc3_fused_wgmma) do not wait out each one's
// latency in turn; the rare candidates' doubles after.
constexpr int kEpilogueBatch = GT_CCC3_EPILOGUE_BATCH;

template <bool kRolled, int N>  // N: n8 tiles a lane holds (2: a 16 x 16 warp tile; 4: wgmma's 16 x 32)
__device__ __forceinline__ void epilogue_j(const unsigned (&acc)[8][N][4], int j, int i_base, int k_base,
                                           int i_min, int i_end, int k_min, int k_end, const FusedOut& o) {
    const long long cj = o.stat_j[2 * j], sj = o.stat_j[2 * j + 1];
    const float fj0 = o.f_j[2 * j], fj1 = o.f_j[2 * j + 1];
    if constexpr (kRolled) {
        constexpr int kPlaces = 4 * N;
        static_assert(kPlaces % kEpilogueBatch == 0, "whole batches of places");
        unsigned held[kPlaces][8];  // [place nt * 4 + e][count]
#pragma unroll
        for (int nt = 0; nt < N; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
                for (int c = 0; c < 8; ++c) held[nt * 4 + e][c] = acc[c][nt][e];
        const float fjv[2] = {fj0, fj1};
#pragma unroll 1
        for (int p0 = 0; p0 < kPlaces; p0 += kEpilogueBatch) {
            long long cnt[kEpilogueBatch][8], ci[kEpilogueBatch], ck[kEpilogueBatch];
            int ii[kEpilogueBatch], kk[kEpilogueBatch];
            bool cand[kEpilogueBatch];
#pragma unroll
            for (int b = 0; b < kEpilogueBatch; ++b) {
                const int pl = p0 + b, nt = pl >> 2, e = pl & 3;
                ii[b] = i_base + ((e >> 1) << 3);
                kk[b] = k_base + nt * 8 + (e & 1);
                // a place past i_end (k_end) reads row i_end - 1 (k_end - 1), one before i_min (k_min) its
                // own row: in range either way, and dropped by in_place
                const int ic = min(ii[b], i_end - 1), kc = min(kk[b], k_end - 1);
                ci[b] = o.stat_i[2 * ic];
                ck[b] = o.stat_k[2 * kc];
                const float fi[2] = {o.f_i[2 * ic], o.f_i[2 * ic + 1]}, fk[2] = {o.f_k[2 * kc], o.f_k[2 * kc + 1]};
#pragma unroll
                for (int c = 0; c < 8; ++c) cnt[b][c] = (int)held[pl][c];
                cand[b] = in_place(ii[b], j, kk[b], i_min, i_end, k_min, k_end, o) &&
                          place_candidate(cnt[b], ci[b], cj, ck[b], fi, fjv, fk, o);
            }
#pragma unroll
            for (int b = 0; b < kEpilogueBatch; ++b)
                if (cand[b])
                    place_exact(cnt[b], ii[b], j, kk[b], ci[b], o.stat_i[2 * ii[b] + 1], cj, sj, ck[b],
                                o.stat_k[2 * kk[b] + 1], o);
        }
    } else {
#pragma unroll
        for (int nt = 0; nt < N; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int i = i_base + ((e >> 1) << 3);
                const int k = k_base + nt * 8 + (e & 1);
                if (!in_place(i, j, k, i_min, i_end, k_min, k_end, o)) continue;
                long long cnt[8];
#pragma unroll
                for (int c = 0; c < 8; ++c) cnt[c] = (int)acc[c][nt][e];
                epilogue_place(cnt, i, j, k, cj, sj, fj0, fj1, o);
            }
    }
}

__device__ __forceinline__ FusedOut fused_out(const long long* stat_i, const long long* stat_j,
                                              const long long* stat_k, const float* f_i, const float* f_j,
                                              const float* f_k, int same_ij, int same_jk, double mult,
                                              double param, double thr, int null_thr,
                                              unsigned long long* counter, long long cap, int* out_i,
                                              int* out_j, int* out_k, double* vals) {
    // thr rounded down to a float (never above thr): the bound compares floats
    float thr_lo = (float)thr;
    if ((double)thr_lo > thr) thr_lo = nextafterf(thr_lo, __int_as_float(0xff800000));  // toward -inf
    return FusedOut{stat_i, stat_j, stat_k, f_i, f_j, f_k, same_ij, same_jk, Ccc3Params{mult, param, thr, null_thr},
                    (float)mult, thr_lo, counter, cap, out_i, out_j, out_k, vals};
}

// The block's tile and middle rows: false where no place of it is in the launch's ranges or the
// triangle leaves it no middle row.
__device__ __forceinline__ bool block_range(int j0, int j1, int i0, int i1, int k0, int k1, int same_ij,
                                            int same_jk, int& i_lo, int& k_lo, int& i_min, int& i_end,
                                            int& k_min, int& k_end, int& ja, int& jb) {
    // this block's tile (rows i_lo.., columns k_lo..) and its places' ranges within [i0, i1) x [k0, k1)
    i_lo = (i0 / kFBlockI + blockIdx.y) * kFBlockI;
    k_lo = (k0 / kFBlockK + blockIdx.x) * kFBlockK;
    i_min = max(i_lo, i0), i_end = min(i_lo + kFBlockI, i1);
    k_min = max(k_lo, k0), k_end = min(k_lo + kFBlockK, k1);
    if (i_min >= i_end || k_min >= k_end) return false;
    // this block's middle rows: its share of [j0, j1), then the triangle's
    ja = j0 + (int)((long long)(j1 - j0) * blockIdx.z / gridDim.z);
    jb = j0 + (int)((long long)(j1 - j0) * (blockIdx.z + 1) / gridDim.z);
    if (same_ij) ja = max(ja, i_min + 1);  // some i < j
    if (same_jk) jb = min(jb, k_end - 1);  // some k > j
    return ja < jb;
}

#define GT_CCC3_FUSED_ARGS                                                                               \
    const unsigned long long *__restrict__ d_i, const unsigned long long *__restrict__ d_j,              \
        const unsigned long long *__restrict__ d_k, int wp, int j0, int j1, int i0, int i1, int k0, int k1, \
        const long long *__restrict__ stat_i, const long long *__restrict__ stat_j,                      \
        const long long *__restrict__ stat_k, const float *__restrict__ f_i, const float *__restrict__ f_j, \
        const float *__restrict__ f_k, int same_ij, int same_jk, double mult, double param, double thr,  \
        int null_thr, unsigned long long *counter, long long cap, int *__restrict__ out_i,               \
        int *__restrict__ out_j, int *__restrict__ out_k, double *__restrict__ vals

#if !GT_WGMMA  // mma.sync's kernels (RawModule, every GPU); the sm_90a module holds ccc3_fused_wgmma alone

constexpr int kFJGroup = 16;  // j rows staged at a time (ccc3_fused)
constexpr int kSStages = 4;   // ccc3_fused_streamed's cp.async stages

// Planes of up to a few thousand samples: the tile's rows whole in shared memory, loaded once.
extern "C" __global__ void __launch_bounds__(kFThreads, 1) ccc3_fused(GT_CCC3_FUSED_ARGS) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int row_bytes = 3 * wp * 8;
    const int stride = fused_stride(row_bytes);
    int i_lo, k_lo, i_min, i_end, k_min, k_end, ja, jb;
    if (!block_range(j0, j1, i0, i1, k0, k1, same_ij, same_jk, i_lo, k_lo, i_min, i_end, k_min, k_end, ja, jb))
        return;

    const unsigned s_a = smem_u32(smem);
    const unsigned s_b = s_a + kFBlockI * stride;
    unsigned char* s_jrows = smem + (kFBlockI + kFBlockK) * stride;
    stage_rows(s_a, stride, reinterpret_cast<const char*>(d_i) + (long long)i_lo * row_bytes, kFBlockI,
               row_bytes);
    stage_rows(s_b, stride, reinterpret_cast<const char*>(d_k) + (long long)k_lo * row_bytes, kFBlockK,
               row_bytes);
    cp_async_commit();

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warp_i = warp / kFWarpsK, warp_k = warp % kFWarpsK;
    const int g = lane >> 2, t = lane & 3;
    // ldmatrix.x4 addresses (see b1_mma_core.cuh fragment_offsets): A: q = {rows 0-7, 8-15} x
    // {bits 0-127, 128-255}; B: q = {n8 tile 0, 1} x {bits 0-127, 128-255}
    const int q = lane >> 3, r8 = lane & 7;
    const unsigned a_addr = s_a + (warp_i * kFWarpI + r8 + ((q & 1) << 3)) * stride + ((q >> 1) << 4);
    const unsigned b_addr = s_b + (warp_k * kFWarpK + r8 + ((q >> 1) << 3)) * stride + ((q & 1) << 4);
    const int plane_bytes = wp * 8;
    const int ksteps = wp / 4;
    const FusedOut o = fused_out(stat_i, stat_j, stat_k, f_i, f_j, f_k, same_ij, same_jk, mult, param, thr,
                                 null_thr, counter, cap, out_i, out_j, out_k, vals);
    // this lane's places: i = i_lo + warp_i * 16 + g (+ 8), k = k_lo + warp_k * 16 + nt * 8 + 2t (+ 1)
    const int i_base = i_lo + warp_i * kFWarpI + g;
    const int k_base = k_lo + warp_k * kFWarpK + 2 * t;

    for (int jg = ja; jg < jb; jg += kFJGroup) {
        const int njg = min(kFJGroup, jb - jg);
        __syncthreads();  // the previous group's rows read by every warp
        for (int c = threadIdx.x; c < njg * (row_bytes / 16); c += kFThreads)
            cp_async_16(smem_u32(s_jrows) + c * 16,
                        reinterpret_cast<const char*>(d_j) + (long long)jg * row_bytes + c * 16);
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();
        for (int jj = 0; jj < njg; ++jj) {
            const int j = jg + jj;
            const unsigned* jrow = reinterpret_cast<const unsigned*>(s_jrows + jj * row_bytes);
            unsigned acc[8][2][4];  // s32 counts (every count < 2^31)
            zero_counts(acc);
            for (int ks = 0; ks < ksteps; ++ks)
                mma_kstep(a_addr, b_addr, ks * 32, plane_bytes, jrow + ks * 8, plane_bytes / 4, t, acc);
            epilogue_j<false>(acc, j, i_base, k_base, i_min, i_end, k_min, k_end, o);
        }
    }
}

// Planes of any width (ccc3_fused_streamed): for each middle row j, the tile's rows and row j
// streamed through kSStages cp.async stages, kSChunk words of each plane a stage (wp a multiple of
// kSChunk), the counts of j added up over the chunks, then its epilogue. The tile's rows are read
// again for every j (from L2: 128 rows x 3 planes x K bits a j, against 64 x 64 x 27 x K bit-MACs).
extern "C" __global__ void __launch_bounds__(kFThreads, 1) ccc3_fused_streamed(GT_CCC3_FUSED_ARGS) {
    extern __shared__ __align__(128) unsigned char smem[];
    constexpr int kChunkBytes = 3 * kSChunk * 8;          // a row's chunk: 3 planes of kSChunk words
    constexpr int kStride = fused_stride(kChunkBytes);
    constexpr int kStageBytes = (kFBlockI + kFBlockK) * kStride + kChunkBytes;
    int i_lo, k_lo, i_min, i_end, k_min, k_end, ja, jb;
    if (!block_range(j0, j1, i0, i1, k0, k1, same_ij, same_jk, i_lo, k_lo, i_min, i_end, k_min, k_end, ja, jb))
        return;
    const int chunks = wp / kSChunk;
    const int steps = (jb - ja) * chunks;  // step s: middle row ja + s / chunks, chunk s % chunks
    const long long row_bytes = 3LL * wp * 8;
    const unsigned s_base = smem_u32(smem);
    const char* gi = reinterpret_cast<const char*>(d_i) + (long long)i_lo * row_bytes;
    const char* gk = reinterpret_cast<const char*>(d_k) + (long long)k_lo * row_bytes;
    const char* gj = reinterpret_cast<const char*>(d_j);

    // step s's copies into stage s % kSStages: 16-byte pieces of (row, plane, chunk words)
    auto load = [&](int s) {
        if (s < steps) {
            const int j = ja + s / chunks, c = s % chunks;
            const unsigned st = s_base + (s % kSStages) * kStageBytes;
            constexpr int kPieces = kSChunk * 8 / 16;  // of a plane's chunk
            for (int p = threadIdx.x; p < (kFBlockI + kFBlockK) * 3 * kPieces; p += kFThreads) {
                const int r = p / (3 * kPieces), x = (p / kPieces) % 3, w = p % kPieces;
                const char* src = (r < kFBlockI ? gi + (long long)r * row_bytes
                                                : gk + (long long)(r - kFBlockI) * row_bytes) +
                                  ((long long)x * wp + (long long)c * kSChunk) * 8 + w * 16;
                cp_async_16(st + r * kStride + x * kSChunk * 8 + w * 16, src);
            }
            if (threadIdx.x < 3 * kPieces) {
                const int x = threadIdx.x / kPieces, w = threadIdx.x % kPieces;
                cp_async_16(st + (kFBlockI + kFBlockK) * kStride + x * kSChunk * 8 + w * 16,
                            gj + (long long)j * row_bytes + ((long long)x * wp + (long long)c * kSChunk) * 8 + w * 16);
            }
        }
        cp_async_commit();  // an empty group past the last step keeps the count of groups
    };

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warp_i = warp / kFWarpsK, warp_k = warp % kFWarpsK;
    const int g = lane >> 2, t = lane & 3;
    const int q = lane >> 3, r8 = lane & 7;
    const unsigned a_row = (warp_i * kFWarpI + r8 + ((q & 1) << 3)) * kStride + ((q >> 1) << 4);
    const unsigned b_row = (kFBlockI + warp_k * kFWarpK + r8 + ((q >> 1) << 3)) * kStride + ((q & 1) << 4);
    const FusedOut o = fused_out(stat_i, stat_j, stat_k, f_i, f_j, f_k, same_ij, same_jk, mult, param, thr,
                                 null_thr, counter, cap, out_i, out_j, out_k, vals);
    const int i_base = i_lo + warp_i * kFWarpI + g;
    const int k_base = k_lo + warp_k * kFWarpK + 2 * t;

#pragma unroll
    for (int s = 0; s < kSStages - 1; ++s) load(s);
    unsigned acc[8][2][4];
    zero_counts(acc);
    for (int s = 0; s < steps; ++s) {
        cp_async_wait<kSStages - 2>();  // step s's copies are in
        __syncthreads();                // ... for every thread; stage (s - 1) % kSStages read by all
        load(s + kSStages - 1);
        const unsigned st = s_base + (s % kSStages) * kStageBytes;
        const unsigned* jw = reinterpret_cast<const unsigned*>(smem + (s % kSStages) * kStageBytes +
                                                               (kFBlockI + kFBlockK) * kStride);
#pragma unroll
        for (int ks = 0; ks < kSChunk / 4; ++ks)
            mma_kstep(st + a_row, st + b_row, ks * 32, kSChunk * 8, jw + ks * 8, kSChunk * 2, t, acc);
        if (s % chunks == chunks - 1) {  // row j's counts complete
            epilogue_j<true>(acc, ja + s / chunks, i_base, k_base, i_min, i_end, k_min, k_end, o);
            zero_counts(acc);
        }
    }
}

#else  // GT_WGMMA

// Planes of any width on Hopper (ccc3_fused_wgmma, sm_90a): the streamed kernel's block tile, grid,
// middle rows and epilogue, its 27 products a k-step on the warpgroup MMA. Why: wgmma reads B from
// shared memory itself (no ldmatrix of k's planes, a warp's 16 x 16 B fragments read by 4 warps
// each under mma.sync) and runs at 7.8e15 bit-MAC/s on an H100 against mma.sync's 5.3e15 (b1_wgmma.cuh):
// a 4,096^3 block triple x 20,000 samples x 64 middle rows 0.213 s -> 0.183-0.188 s, 52% -> 59-60%
// of the b1 ceiling (one H100, session 18; the same triples and value bits as ccc3_fused_streamed);
// 62.7% with the epilogue reading the counts straight from the accumulators, two places bounded at
// once, and the products z-major (session 19; without the epilogue at all 68%).
//
// Tiling (CUTLASS's terms): the block tile kFBlockI x kFBlockK of (i, k), as ccc3_fused_streamed's
// (same grid, same block_range); two warpgroups, warpgroup w its columns k kWgTileK w ..
// kWgTileK (w + 1) - 1 (m64n32 warpgroup tiles: a thread's 8 counts x 16 registers), warp v of a
// warpgroup rows i 16 v .. 16 v + 15. A comes from registers: a warp's A fragment of plane x of its
// 16 rows (ldmatrix, mma.sync's m16 layout, which is wgmma's register-A layout a warp) masked by
// plane y of row j (X_i & Y_j, as mma_kstep), then 27 wgmma.m64n32k256 with B planes z of the
// warpgroup's columns (shared memory, the 128-byte swizzle of wgmma.cuh) into count (x != V,
// y != V, z != V). A stage: one k-tile (kSChunk words, 128 bytes) of each plane of the block's rows,
// i's and k's planes each a 64-row swizzled region (kWgPlaneBytes), then row j's 3 x 128 bytes.
// kWgStages stages, kWgStages - 2 k-tiles in flight: the stage before the current one may still be
// read by the k-step wgmma has not finished (one commit group left in flight, as b1_select.cu's kAhead).
constexpr int kWgThreads = 256;                              // two warpgroups
constexpr int kWgTileK = kFBlockK / (kWgThreads / 128);      // columns k a warpgroup: 32
constexpr int kWgStages = 4;
constexpr int kWgPlaneBytes = kFBlockI * 128;                // one plane of 64 rows, one k-tile
constexpr int kWgStageBytes = 6 * kWgPlaneBytes + 1024;      // i's 3 planes, k's 3, row j (1 KB keeps 1024 alignment)
static_assert(kFBlockI == 64 && kFBlockK == 64 && kFWarpI == 16, "a warpgroup's 64 rows i, 4 warps of 16");
static_assert(kWgTileK == 32, "wgmma_b1_m64n32: a warpgroup's 32 columns");
static_assert(kSChunk * 8 == 128, "a stage's chunk of a plane: one 128-byte swizzled row");

#define GT_WG_ACC4(c, n) "+r"(acc[c][n][0]), "+r"(acc[c][n][1]), "+r"(acc[c][n][2]), "+r"(acc[c][n][3])
// acc[C] += popc(A & B) over one k-step: A the warpgroup's 64 rows (this warp's 16 in registers a),
// B its 32 columns at b_addr.
template <int C>
__device__ __forceinline__ void wgmma_b1_m64n32(unsigned (&acc)[8][4][4], const unsigned (&a)[4], unsigned b_addr) {
    const unsigned long long db = wgmma_desc(b_addr);
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k256.s32.b1.b1.and.popc "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p;\n}\n"
        : GT_WG_ACC4(C, 0), GT_WG_ACC4(C, 1), GT_WG_ACC4(C, 2), GT_WG_ACC4(C, 3)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
#undef GT_WG_ACC4

// Products P .. 26 of a k-step, P = 9 z + 3 y + x in order: each one's count a template argument (the
// accumulators' registers named at compile time), acc[count (x != V, y != V, z != V)] += (X_i & Y_j) Z_k.
// z-major: nine products in a row read one B plane (x-major 59.2%, z-major 60.1% of the b1 ceiling on
// the bench's block triple, one H100, RESULTS.md Session 19; round-robin over the counts 58.9%).
template <int P = 0>
__device__ __forceinline__ void wgmma_products(unsigned (&acc)[8][4][4], const unsigned (&m)[3][3][4],
                                               unsigned b_addr) {
    constexpr int z = P / 9, y = P / 3 % 3, x = P % 3;
    wgmma_b1_m64n32<count_index(x != 2, y != 2, z != 2)>(acc, m[x][y], b_addr + z * kWgPlaneBytes);
    if constexpr (P + 1 < 27) wgmma_products<P + 1>(acc, m, b_addr);
}

// One k-step of 256 bits: this warp's A fragments of planes x (a_addr + x * kWgPlaneBytes) masked by
// plane y of row j (jw_step: 32-bit words t and t + 4 of the k-step, plane y's at y * 32), the 27
// products with B planes z of the warpgroup's columns (b_addr + z * kWgPlaneBytes), one commit group;
// then the wait for the k-step before this one.
__device__ __forceinline__ void wgmma_kstep(unsigned (&acc)[8][4][4], unsigned a_addr, unsigned b_addr,
                                            const unsigned* jw_step, int t) {
    unsigned a[3][4], jw[3][2], m[3][3][4];
#pragma unroll
    for (int x = 0; x < 3; ++x) {
        ldmatrix_x4(a_addr + x * kWgPlaneBytes, a[x][0], a[x][1], a[x][2], a[x][3]);
        jw[x][0] = jw_step[x * 32 + t];
        jw[x][1] = jw_step[x * 32 + t + 4];
    }
#pragma unroll
    for (int x = 0; x < 3; ++x)
#pragma unroll
        for (int y = 0; y < 3; ++y) {
            m[x][y][0] = a[x][0] & jw[y][0];
            m[x][y][1] = a[x][1] & jw[y][0];
            m[x][y][2] = a[x][2] & jw[y][1];
            m[x][y][3] = a[x][3] & jw[y][1];
        }
    fence_accumulators(acc);
    wgmma_fence();
    wgmma_products(acc, m, b_addr);
    wgmma_commit();
    wgmma_wait<1>();  // the k-step before this one done
}

// Shared memory: kWgStages stages and up to 1 KB to put them on a 1024-byte boundary (the host's
// ccc3_fused.wgmma_smem_bytes).
extern "C" __global__ void __launch_bounds__(kWgThreads, 1) ccc3_fused_wgmma(GT_CCC3_FUSED_ARGS) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* const smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    int i_lo, k_lo, i_min, i_end, k_min, k_end, ja, jb;
    if (!block_range(j0, j1, i0, i1, k0, k1, same_ij, same_jk, i_lo, k_lo, i_min, i_end, k_min, k_end, ja, jb))
        return;
    const int chunks = wp / kSChunk;       // k-tiles of 1024 bits a plane
    const int steps = (jb - ja) * chunks;  // step s: middle row ja + s / chunks, k-tile s % chunks
    const long long row_bytes = 3LL * wp * 8;
    const unsigned s_base = smem_u32(smem);
    const char* gi = reinterpret_cast<const char*>(d_i) + (long long)i_lo * row_bytes;
    const char* gk = reinterpret_cast<const char*>(d_k) + (long long)k_lo * row_bytes;
    const char* gj = reinterpret_cast<const char*>(d_j);

    // step s's copies into stage s % kWgStages: 16-byte chunk q of (row r, plane x), swizzled
    auto load = [&](int s) {
        if (s < steps) {
            const int j = ja + s / chunks, c = s % chunks;
            const unsigned st = s_base + (s % kWgStages) * kWgStageBytes;
            for (int p = threadIdx.x; p < (kFBlockI + kFBlockK) * 3 * 8; p += kWgThreads) {
                const int q = p & 7, x = (p >> 3) % 3, r = p / 24;  // r: rows i, then rows k
                const char* src = (r < kFBlockI ? gi + (long long)r * row_bytes
                                                : gk + (long long)(r - kFBlockI) * row_bytes) +
                                  ((long long)x * wp + (long long)c * kSChunk) * 8 + q * 16;
                const int side = r < kFBlockI ? 0 : 3, rr = r & (kFBlockI - 1);
                cp_async_16(st + (side + x) * kWgPlaneBytes + rr * 128 + ((q ^ (rr & 7)) << 4), src);
            }
            if (threadIdx.x < 24) {
                const int x = threadIdx.x >> 3, q = threadIdx.x & 7;
                cp_async_16(st + 6 * kWgPlaneBytes + x * 128 + q * 16,
                            gj + (long long)j * row_bytes + ((long long)x * wp + (long long)c * kSChunk) * 8 + q * 16);
            }
        }
        cp_async_commit();  // an empty group past the last step keeps the count of groups
    };

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wg = warp >> 2, wi = warp & 3;  // warpgroup: columns kWgTileK wg ..; warp: rows 16 wi ..
    const int g = lane >> 2, t = lane & 3;
    const int q = lane >> 3, r8 = lane & 7;
    // ldmatrix.x4 rows of this lane (b1_mma_core's fragment_offsets): A rows 16 wi + r8 (+ 8), chunk hi
    const int a_row = wi * kFWarpI + r8 + ((q & 1) << 3), a_hi = q >> 1;
    const FusedOut o = fused_out(stat_i, stat_j, stat_k, f_i, f_j, f_k, same_ij, same_jk, mult, param, thr,
                                 null_thr, counter, cap, out_i, out_j, out_k, vals);
    // this lane's places: i = i_base (+ 8), k = k_base + n * 8 (+ 1), n8 tiles n = 0-3
    const int i_base = i_lo + wi * kFWarpI + g;
    const int k_base = k_lo + wg * kWgTileK + 2 * t;

#pragma unroll
    for (int s = 0; s < kWgStages - 2; ++s) load(s);
    unsigned acc[8][4][4];
    zero_counts(acc);
    for (int s = 0; s < steps; ++s) {
        cp_async_wait<kWgStages - 3>();  // step s's copies are in
        fence_proxy_async();
        __syncthreads();  // ... for every thread; the stage of step s - 2 read by every warpgroup (waited)
        load(s + kWgStages - 2);
        const unsigned st = s_base + (s % kWgStages) * kWgStageBytes;
        const unsigned* jw =
            reinterpret_cast<const unsigned*>(smem + (s % kWgStages) * kWgStageBytes + 6 * kWgPlaneBytes);
#pragma unroll
        for (int ks = 0; ks < kSChunk / 4; ++ks)
            wgmma_kstep(acc, st + a_row * 128 + (((2 * ks + a_hi) ^ r8) << 4),
                        st + 3 * kWgPlaneBytes + wg * kWgTileK * 128 + 32 * ks, jw + ks * 8, t);
        if (s % chunks == chunks - 1) {  // row j's counts complete
            wgmma_wait<0>();
            fence_accumulators(acc);
            const int j = ja + s / chunks;
            epilogue_j<true>(acc, j, i_base, k_base, i_min, i_end, k_min, k_end, o);  // 16 places a lane
            zero_counts(acc);
        }
    }
    wgmma_wait<0>();
}

#endif  // GT_WGMMA
