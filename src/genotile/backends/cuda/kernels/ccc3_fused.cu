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
// Epilogue (epilogues/ccc3.cuh), per j, for the 8 places a lane holds: the triangle (i < j where
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

#include "b1_mma_core.cuh"
#include "epilogues/ccc3.cuh"

constexpr int kFBlockI = 64;
constexpr int kFBlockK = 64;
constexpr int kFWarpI = 16;
constexpr int kFWarpK = 16;
constexpr int kFWarpsK = kFBlockK / kFWarpK;  // 4
constexpr int kFThreads = 32 * (kFBlockI / kFWarpI) * kFWarpsK;  // 512
constexpr int kFJGroup = 16;  // j rows staged at a time

// Index of count (gi, gj, gk) in ccc3.COUNTS: t, s_i, s_j, s_k, s_ij, s_ik, s_jk, s_ijk.
__device__ __forceinline__ constexpr int count_index(int gi, int gj, int gk) {
    return (gi + gj + gk == 0)   ? 0
           : (gi + gj + gk == 3) ? 7
           : (gi + gj + gk == 1) ? (gi ? 1 : gj ? 2 : 3)
                                 : (!gk ? 4 : !gj ? 5 : 6);
}

// Shared-memory row stride for `row_bytes` of data: 16 bytes more than a multiple of 128, so the
// 8 rows an ldmatrix reads fall on distinct banks.
__host__ __device__ __forceinline__ int fused_stride(int row_bytes) {
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

extern "C" __global__ void __launch_bounds__(kFThreads, 1)
ccc3_fused(const unsigned long long* __restrict__ d_i, const unsigned long long* __restrict__ d_j,
           const unsigned long long* __restrict__ d_k, int wp, int j0, int j1, int i0, int i1,
           int k0, int k1, const long long* __restrict__ stat_i,
           const long long* __restrict__ stat_j, const long long* __restrict__ stat_k,
           const float* __restrict__ f_i, const float* __restrict__ f_j,
           const float* __restrict__ f_k, int same_ij, int same_jk, double mult, double param,
           double thr, int null_thr, unsigned long long* counter, long long cap,
           int* __restrict__ out_i, int* __restrict__ out_j, int* __restrict__ out_k,
           double* __restrict__ vals) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int row_bytes = 3 * wp * 8;
    const int stride = fused_stride(row_bytes);
    // this block's tile (rows i_lo.., columns k_lo..) and its places' ranges within [i0, i1) x [k0, k1)
    const int i_lo = (i0 / kFBlockI + blockIdx.y) * kFBlockI, k_lo = (k0 / kFBlockK + blockIdx.x) * kFBlockK;
    const int i_min = max(i_lo, i0), i_end = min(i_lo + kFBlockI, i1);
    const int k_min = max(k_lo, k0), k_end = min(k_lo + kFBlockK, k1);
    if (i_min >= i_end || k_min >= k_end) return;
    // this block's middle rows: its share of [j0, j1), then the triangle's
    int ja = j0 + (int)((long long)(j1 - j0) * blockIdx.z / gridDim.z);
    int jb = j0 + (int)((long long)(j1 - j0) * (blockIdx.z + 1) / gridDim.z);
    if (same_ij) ja = max(ja, i_min + 1);  // some i < j
    if (same_jk) jb = min(jb, k_end - 1);  // some k > j
    if (ja >= jb) return;

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

    const Ccc3Params prm = {mult, param, thr, null_thr};
    const float mult_f = (float)mult;
    // thr rounded down to a float (never above thr): the bound compares floats
    float thr_lo = (float)thr;
    if ((double)thr_lo > thr) thr_lo = nextafterf(thr_lo, __int_as_float(0xff800000));  // toward -inf
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
#pragma unroll
            for (int c = 0; c < 8; ++c)
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[c][nt][e] = 0u;
            for (int ks = 0; ks < ksteps; ++ks) {
                unsigned a[3][4], b[3][2][2], jw[3][2];
#pragma unroll
                for (int x = 0; x < 3; ++x) {
                    const unsigned off = x * plane_bytes + ks * 32;
                    ldmatrix_x4(a_addr + off, a[x][0], a[x][1], a[x][2], a[x][3]);
                    ldmatrix_x4(b_addr + off, b[x][0][0], b[x][0][1], b[x][1][0], b[x][1][1]);
                    // plane x of row j: 32-bit words t and t + 4 of this k-step
                    jw[x][0] = jrow[(x * plane_bytes + ks * 32) / 4 + t];
                    jw[x][1] = jrow[(x * plane_bytes + ks * 32) / 4 + t + 4];
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
                            for (int nt = 0; nt < 2; ++nt)
                                mma_b1(acc[count_index(x != 2, y != 2, z != 2)][nt], m, b[z][nt]);
                    }
            }
            // epilogue: this lane's 8 places of (i, j, k)
            const long long cj = stat_j[2 * j], sj = stat_j[2 * j + 1];
            const float fj0 = f_j[2 * j], fj1 = f_j[2 * j + 1];
#pragma unroll
            for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int i = i_base + ((e >> 1) << 3);
                    const int k = k_base + nt * 8 + (e & 1);
                    if (i < i_min || i >= i_end || k < k_min || k >= k_end || (same_ij && i >= j) ||
                        (same_jk && k <= j))
                        continue;
                    long long cnt[8];
#pragma unroll
                    for (int c = 0; c < 8; ++c) cnt[c] = (int)acc[c][nt][e];
                    const long long ci = stat_i[2 * i], si = stat_i[2 * i + 1];
                    const long long ck = stat_k[2 * k], sk = stat_k[2 * k + 1];
                    const bool ok = ci > 0 && cj > 0 && ck > 0 && cnt[0] > 0;
                    bool candidate;
                    if (null_thr) {
                        candidate = true;
                    } else if (!ok) {
                        candidate = 0.0 >= thr;
                    } else {
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
                        const float scale = mult_f / (8.0f * (float)cnt[0]);
                        const float fi[2] = {f_i[2 * i], f_i[2 * i + 1]}, fjv[2] = {fj0, fj1};
                        const float fk[2] = {f_k[2 * k], f_k[2 * k + 1]};
                        candidate = false;
#pragma unroll
                        for (int abc = 0; abc < 8; ++abc) {
                            const int a_ = abc >> 2, b_ = (abc >> 1) & 1, c_ = abc & 1;
                            const float v = scale * (float)r3[a_][b_][c_] * fi[a_] * fjv[b_] * fk[c_];
                            candidate = candidate || !(v + 1e-5f * fabsf(v) + 1e-30f < thr_lo);  // NaN: a candidate
                        }
                    }
                    if (!candidate) continue;
                    double v[8];
                    if (!ccc3_values(cnt, ci, si, cj, sj, ck, sk, prm, v)) continue;
                    const unsigned long long slot = atomicAdd(counter, 1ULL);
                    if ((long long)slot < cap) {
                        out_i[slot] = i;
                        out_j[slot] = j;
                        out_k[slot] = k;
#pragma unroll
                        for (int c = 0; c < 8; ++c) vals[slot * 8 + c] = v[c];
                    }
                }
        }
    }
}
