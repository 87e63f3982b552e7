// genotile: a metric's whole sub-tile in one 1-bit GEMM: counts kept in registers, the epilogue,
// threshold, histogram and compaction fused after the main loop (CUTLASS's "epilogue fusion").
//
// b1_mma_multistage.cu writes one int32 count matrix a launch, and tile_select.cu reads them back
// (20 bytes a pair for king's five). Here the metric's counts live in GemmCounts<GT_METRIC>::n_acc
// int32 accumulator sets of the one pass over K (epilogues/: GemmCounts beside the Epilogue), and
// each pair's value column, verdict and histogram bin are computed where the accumulators are:
// nothing the size of the sub-tile is written. Accumulator g is a signed sum of plane products in
// Horner form over its run of terms (as b1_mma_multistage's one count):
//   acc_g = 0; for each term t of g: acc_g = acc_g * term_mult[t] + P_t;   acc_g *= final_mult[g]
// Terms [0, group_kt) in k-tiles belong to accumulator 0, the rest to accumulator 1; then
//   a_g = acc_g + row_add_g[row] + col_add_g[col]   (modulo 2^32; those GT_ADDS names, the rest null)
//
// Outputs, for the pairs of the sub-tile (rows i0.., columns j0.. of a tile n_total columns wide;
// a diagonal tile keeps i < j):
//   passing pairs appended: slot = atomicAdd(counter) (warp-aggregated), idx[slot] = i * n_total + j,
//   value[slot] = the bits of the epilogue's column GT_VALUE_COL (the host sorts by idx and counts
//   the other columns of these pairs again with pair_counts below);
//   the float histogram of column GT_VALUE_COL over every unique pair: bins counted in shared memory,
//   added to hist[0 .. bins + 3) once a block (null: none).
// Operands as b1_mma_multistage.cu's (A: (Mp, KW), B: (Np, KW), rows padded to whole block tiles).

#ifndef GT_EPILOGUE_SMEM
#define GT_EPILOGUE_SMEM 0  // 1: the accumulators through shared memory, the pairs in a rolled loop
#endif
#ifndef GT_WGMMA
#define GT_WGMMA 0  // 1: Hopper's warpgroup MMA main loop (b1_wgmma.cuh; sm_90a), 0: mma.sync's
#endif
#include "b1_mma_core.cuh"
#if GT_WGMMA
#include "b1_wgmma.cuh"
#endif
#include "epilogues/epilogue.cuh"
#include "epilogues/ibs.cuh"
#include "epilogues/king.cuh"

#ifndef GT_METRIC
#define GT_METRIC 2
#endif
#ifndef GT_VALUE_COL
#define GT_VALUE_COL 3  // the epilogue's column appended and binned (b1_select.py: GemmPlan.value_col)
#endif
#ifndef GT_ADDS
#define GT_ADDS 0  // which row sums are added: 1 row_add0, 2 col_add0, 4 row_add1, 8 col_add1
#endif
#ifndef GT_EPILOGUE_BATCH
#define GT_EPILOGUE_BATCH 2  // pairs a thread evaluates together in the shared-memory epilogue (1, 4, 8: slower)
#endif

typedef Epilogue<GT_METRIC> MetricEpilogue;
typedef GemmCounts<GT_METRIC> MetricCounts;
constexpr int kAcc = MetricCounts::n_acc;
static_assert(kAcc == 2, "b1_select keeps two accumulator sets");
constexpr int kCounts = MetricEpilogue::n_counts;
constexpr int kCols = MetricEpilogue::n_cols;
static_assert(GT_VALUE_COL >= 0 && GT_VALUE_COL < kCols, "the value column is one of the epilogue's");
constexpr int kAdds = GT_ADDS;
constexpr int kBatch = GT_EPILOGUE_BATCH;

extern "C" __global__ void __launch_bounds__(kThreads, GT_MIN_BLOCKS)
b1_select(const unsigned long long* __restrict__ A, const unsigned long long* __restrict__ B, int M, int N,
          long long KW, const int* __restrict__ term_kt, const int* __restrict__ term_mult, int n_terms, int group_kt,
          int final_mult0, int final_mult1, const unsigned* __restrict__ row_add0,
          const unsigned* __restrict__ col_add0, const unsigned* __restrict__ row_add1,
          const unsigned* __restrict__ col_add1, long long i0, long long j0, long long n_total, int diag, double thr,
          unsigned long long* __restrict__ counter, long long* __restrict__ idx,
          unsigned long long* __restrict__ value, long long cap, unsigned long long* __restrict__ hist, double h_low,
          double h_high, double h_scale, int h_bins) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
#if GT_WGMMA  // wgmma's swizzled operands start on 1024-byte boundaries (the host adds 1 KB of room)
    unsigned char* const smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
#else
    unsigned char* const smem = smem_raw;
#endif
    const unsigned smem_base = smem_u32(smem);
    unsigned* const sh_hist = reinterpret_cast<unsigned*>(smem + kStages * kStageBytes);
    const int h_size = h_bins + 3;
    if (hist != nullptr)
        for (int k = threadIdx.x; k < h_size; k += kThreads) sh_hist[k] = 0u;  // seen after the main loop's barriers

    ThreadTile tt;  // the block tile, this thread's warp tile, copies and fragment offsets
    thread_tile(A, B, M, N, KW, tt);
    const int m0 = tt.m0, n0 = tt.n0, lane = tt.lane, KT = tt.KT;
    // A block tile of a diagonal tile wholly on or below the diagonal (every pair i >= j) holds no
    // pair of the tile: the whole block leaves before its main loop.
    if (diag && i0 + m0 >= j0 + n0 + kBlockN - 1) return;

    Accumulators acc0, acc1;
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc0[i][j][e] = 0u, acc1[i][j][e] = 0u;

    // k-tiles in flight beside the one being multiplied. mma.sync: kStages - 1 (the stage a k-tile's
    // copies overwrite was last read by ldmatrix before this k-tile's barrier). wgmma: kStages - 2
    // (that stage was read by the wgmmas of two k-tiles back, which every warpgroup has waited for,
    // wgmma_wait<1>, before the barrier).
    constexpr int kAhead = GT_WGMMA ? kStages - 2 : kStages - 1;
#if GT_WGMMA
    const unsigned a_rows = (threadIdx.x >> 7) * 64 * kRowBytes;  // this warpgroup's 64 rows
#else
    // One k-tile's four k-steps into accumulator set `acc` (the next k-tile's copies issued after
    // the first k-step's mmas, as b1_mma_multistage's GT_LOAD_LATE).
    auto ktile = [&](unsigned stage, int nk, Accumulators& acc) {
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
            unsigned a[kMmaM][4], b[kMmaN][2];
            load_fragments(stage, tt.a_off[ks], tt.b_off[ks], a, b);
#pragma unroll
            for (int i = 0; i < kMmaM; ++i)
#pragma unroll
                for (int j = 0; j < kMmaN; ++j) mma_b1(acc[i][j], a[i], b[j]);
            if (ks == 0) {
                if (nk < KT) load_ktile(smem_base, nk % kStages, nk, tt.plan);
                cp_async_commit();
            }
        }
    };
#endif
#pragma unroll
    for (int s = 0; s < kAhead; ++s) {
        if (s < KT) load_ktile(smem_base, s, s, tt.plan);
        cp_async_commit();
    }

    int term = 0;
    int next_term_kt = 0;
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<kAhead - 1>();
#if GT_WGMMA
        fence_proxy_async();
#endif
        __syncthreads();
        const int nk = kt + kAhead;
#if GT_WGMMA
        if (nk < KT) load_ktile(smem_base, nk % kStages, nk, tt.plan);
        cp_async_commit();
#endif
        const bool first = kt < group_kt;  // uniform across the block
        if (kt == next_term_kt) {
            const unsigned mult = (unsigned)term_mult[term];
            if (mult != 1u) {
#if GT_WGMMA  // Horner's rescaling needs the accumulators settled
                wgmma_wait<0>();
                if (first) fence_accumulators(acc0), rescale(acc0, mult);
                else fence_accumulators(acc1), rescale(acc1, mult);
#else
                if (first) rescale(acc0, mult);
                else rescale(acc1, mult);
#endif
            }
            ++term;
            next_term_kt = term < n_terms ? term_kt[term] : KT;
        }
        const unsigned stage = smem_base + (kt % kStages) * kStageBytes;
#if GT_WGMMA
        if (first) wgmma_ktile(acc0, stage, a_rows);
        else wgmma_ktile(acc1, stage, a_rows);
        wgmma_wait<1>();
#else
        if (first) ktile(stage, nk, acc0);
        else ktile(stage, nk, acc1);
#endif
    }
#if GT_WGMMA
    wgmma_wait<0>();
    fence_accumulators(acc0);
    fence_accumulators(acc1);
#endif
    cp_async_wait<0>();
#ifdef GT_GEMM_ONLY  // benchmark: the main loop alone (one atomic a thread keeps the products live)
    unsigned sink = 0;
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) sink ^= acc0[i][j][e] + acc1[i][j][e];
    if (sink == 0x9E3779B9u) atomicAdd(counter, 1ull);
    return;
#endif

    // Epilogue, in two steps a pair. evaluate: its value column, verdict and uniqueness from its two
    // accumulators (straight-line code: the row sums read where compiled in, the bin by selects).
    // record: its histogram bin and slot, every lane of the warp together (the slots and bins are
    // taken a warp at a time).
    const unsigned fm0 = (unsigned)final_mult0, fm1 = (unsigned)final_mult1;
    const MetricParams no_params = {0.0, 0.0};
    struct Evaluated {
        u64 v;
        bool keep, unique;
    };
    auto evaluate = [&](unsigned acc_0, unsigned acc_1, int row, int col) {
        const bool unique = row < M && col < N && (!diag || i0 + row < j0 + col);
        // Rows and columns past M or N (the block tile's padding) read row M - 1's or column N - 1's
        // sums: such a pair is not unique, and its values are never used.
        const int r = row < M ? row : M - 1, c = col < N ? col : N - 1;
        unsigned a[kAcc] = {acc_0 * fm0, acc_1 * fm1};
        if (kAdds & 1) a[0] += row_add0[r];  // as b1_mma_multistage's row_add / col_add
        if (kAdds & 2) a[0] += col_add0[c];
        if (kAdds & 4) a[1] += row_add1[r];
        if (kAdds & 8) a[1] += col_add1[c];
        i64 counts[kCounts];
        MetricCounts::counts(a, counts);
        u64 out[kCols];
        const bool keep = MetricEpilogue::values(counts, out, 1, thr, no_params) && unique;
        return Evaluated{out[GT_VALUE_COL], keep, unique};
    };
    auto record = [&](const Evaluated& e, int row, int col) {
        if (hist != nullptr) {  // uniform
            const int bin =
                e.unique ? float_bin(__longlong_as_double((long long)e.v), h_low, h_high, h_scale, h_bins) : -1;
            bool leader;  // one shared atomic a distinct bin a warp
            const unsigned add = warp_bin_peers(bin, lane, leader);
            if (leader) atomicAdd(&sh_hist[bin], add);
        }
        u64 slot;
        if (warp_slot(e.keep, lane, counter, slot) && slot < (u64)cap) {
            idx[slot] = (i0 + row) * n_total + (j0 + col);
            value[slot] = e.v;
        }
    };
    // Accumulator e of mma tile (i, j) is row g (+8 for e >= 2), column 2t + (e & 1).
    const int g = lane >> 2, t = lane & 3;
#if GT_EPILOGUE_SMEM
    // Through shared memory, in a rolled loop: unrolled over a 16 x 128 warp tile's 64 pairs a
    // thread, the epilogue's code outgrows the instruction caches (bench/RESULTS.md, session 16).
    // The stages are free once every warp is past its main loop; both accumulator tiles go there,
    // rows padded by 8 words (a half-warp's 8-byte fragment stores then fall on distinct banks).
    constexpr int kLd = kBlockN + 8;
    static_assert(2 * kBlockM * kLd * 4 <= kStages * kStageBytes, "the accumulators fit in the stages");
    unsigned* const sh_acc = reinterpret_cast<unsigned*>(smem);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = tt.warp_m * kWarpM + i * kInstrM + g + 8 * h;
#pragma unroll
            for (int j = 0; j < kMmaN; ++j) {
                const int c = tt.warp_n * kWarpN + j * kInstrN + 2 * t;
                *reinterpret_cast<uint2*>(&sh_acc[r * kLd + c]) = make_uint2(acc0[i][j][2 * h], acc0[i][j][2 * h + 1]);
                *reinterpret_cast<uint2*>(&sh_acc[(kBlockM + r) * kLd + c]) =
                    make_uint2(acc1[i][j][2 * h], acc1[i][j][2 * h + 1]);
            }
        }
    __syncthreads();
    // kBatch pairs a thread evaluated together (their divisions and conversions independent, in one
    // basic block), then recorded.
    static_assert(kBlockM * kBlockN % (kThreads * kBatch) == 0, "every lane of a warp at every pair");
#pragma unroll 1
    for (int p0 = threadIdx.x; p0 < kBlockM * kBlockN; p0 += kThreads * kBatch) {
        Evaluated e[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            const int p = p0 + u * kThreads, r = p / kBlockN, c = p % kBlockN;
            e[u] = evaluate(sh_acc[r * kLd + c], sh_acc[(kBlockM + r) * kLd + c], m0 + r, n0 + c);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            const int p = p0 + u * kThreads;
            record(e[u], m0 + p / kBlockN, n0 + p % kBlockN);
        }
    }
#else
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + tt.warp_m * kWarpM + i * kInstrM + g + 8 * h;
#pragma unroll
            for (int j = 0; j < kMmaN; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = n0 + tt.warp_n * kWarpN + j * kInstrN + 2 * t + e;
                    record(evaluate(acc0[i][j][2 * h + e], acc1[i][j][2 * h + e], row, col), row, col);
                }
        }
#endif
    if (hist != nullptr) {
        __syncthreads();
        for (int k = threadIdx.x; k < h_size; k += kThreads) {
            const unsigned v = sh_hist[k];
            if (v) atomicAdd(&hist[k], (unsigned long long)v);
        }
    }
}

// The integer columns of the appended pairs, counted again from the planes: one warp a pair, each
// term coef * popcount(L[i, lw .. lw + width) AND R[j, rw .. rw + width)) summed in int64 (lw or
// rw < 0: that side all ones, a row sum of the other), the terms of one column consecutive
// (t_col[t]). Column c of pair p goes to cols[c * cap + p].
extern "C" __global__ void __launch_bounds__(256)
pair_counts(const unsigned long long* __restrict__ L, const unsigned long long* __restrict__ R, long long W,
            const long long* __restrict__ idx, long long n_total, long long n_pairs, int n_terms,
            const int* __restrict__ t_col, const long long* __restrict__ t_lw, const long long* __restrict__ t_rw,
            const long long* __restrict__ t_width, const long long* __restrict__ t_coef,
            unsigned long long* __restrict__ cols, long long cap) {
    const int lane = threadIdx.x & 31;
    const long long p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (p >= n_pairs) return;  // the whole warp
    const long long i = idx[p] / n_total, j = idx[p] % n_total;
    const unsigned long long* li = L + i * W;
    const unsigned long long* rj = R + j * W;
    long long acc = 0;
    for (int k = 0; k < n_terms; ++k) {
        const long long lw = t_lw[k], rw = t_rw[k], width = t_width[k];
        long long s = 0;
        for (long long w = lane; w < width; w += 32)
            s += __popcll((lw >= 0 ? li[lw + w] : ~0ull) & (rw >= 0 ? rj[rw + w] : ~0ull));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        acc += t_coef[k] * s;
        if (k + 1 == n_terms || t_col[k + 1] != t_col[k]) {
            if (lane == 0) cols[(long long)t_col[k] * cap + p] = (unsigned long long)acc;
            acc = 0;
        }
    }
}
