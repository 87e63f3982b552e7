// genotile: a metric's epilogue, threshold, diagonal mask and stream compaction on the device.
//
// One launch handles one sub-tile (ms x ns pairs, rows i0.., columns j0.. of a tile of
// m_total x n_total); its arguments arrive as one SelectParams (select_params.cuh) by value.
// For each pair it reads the metric's counts, computes the value columns with the metric's
// epilogue (Epilogue<GT_METRIC>, one header a fused metric under epilogues/: exactly as metrics.py
// computes them), and
//   mode 0: appends the pair when it passes the threshold (and i < j on a diagonal tile):
//           slot = atomicAdd(counter) (warp-aggregated), idx[slot] = i * n_total + j,
//           cols[c * cap + slot] = bits of column c. The host sorts by idx afterwards, so the
//           order the pairs leave in is row-major over the tile, as numpy.nonzero gives it.
//   mode 1: every pair (i < j on a diagonal tile) in row-major order: the slot is computed,
//           nothing is appended, idx is not written.
// and, when `dense` is not null, writes the dense column of every pair of the sub-tile to
// dense[i * n_total + j] (all pairs: a dense block holds the lower triangle too).
//
// Counts: count k of pair (i, j) = mat_k[(i - i0) * ns + (j - j0)] + lvec_k[i] + rvec_k[j]
// (SelectParams.counts[k]), each part skipped when its pointer is null.
//
// Histograms (histogram.py), when `hist` is not null: every pair of the sub-tile that is a
// unique pair of the tile (i < j on a diagonal tile), passing or not, is counted in the
// histogram of each column h with bit h of hist_mask set. hspec[5 h ..]: kind (1: integer
// bincount, 2: float bins), low, high, scale = bins / (high - low), bins; hoff[2 h ..]: the column's
// first counter in `hist` and its number of counters (bincount: bound + 1; float: bins + 3,
// the last three below / above / nan). A float value v: nan -> nan; v < low -> below;
// v > high -> above; else bin min(floor((v - low) * scale), bins - 1), as numpy computes it.
// Float bins are counted in shared memory (dyn. shared: each histogram column's counters, in
// column order) and added to `hist` once a block; a bincount counts the values in
// [hist_base[h], hist_base[h] + win) in shared memory (win > 0) and the others in `hist`
// directly; one atomicAdd per distinct bin a warp (__match_any_sync). The grid is sized to
// the GPU (a few blocks an SM, looping over rows), so the per-block flush stays small. An integer value outside [0, size) increments
// hist[hist_total] (the host then refuses the result). An epilogue with `transposed` columns
// (ccc2): where perm_l[i] > perm_r[j] the pair reads (j, i) in input order, so its columns move
// (ccc_01 and ccc_10 trade histograms, as tile.py does).

#include "select_params.cuh"
#include "epilogues/count.cuh"
#include "epilogues/ibs.cuh"
#include "epilogues/king.cuh"
#include "epilogues/ccc2.cuh"

#ifndef GT_METRIC
#define GT_METRIC 0
#endif
#ifndef GT_COUNT64
#define GT_COUNT64 0
#endif

// GT_SELECT_UNROLL: columns a thread takes per pass (32 apart, so that each of its loads is one
// coalesced warp load), their counts loaded before any is used: the loads of a pass are in flight
// together. One column a pass left the kernel waiting on memory: with no pair passing it took as
// long as the six plane products of a 20,000-variant king sub-tile (bench/RESULTS.md, session 10).
#ifndef GT_SELECT_UNROLL
#define GT_SELECT_UNROLL 4
#endif
constexpr int U_COLS = GT_SELECT_UNROLL;

#ifndef GT_HIST_AGG
#define GT_HIST_AGG 1  // histogram atomics aggregated over the lanes of a warp (__match_any_sync)
#endif
#ifndef GT_HIST_SHARED
#define GT_HIST_SHARED 1  // float bins counted in shared memory first
#endif

#if GT_COUNT64
typedef long long count_t;  // the sub-tile's count matrices (int64)
#else
typedef int count_t;  // ... or int32 (cupy-b1's kernel output, when exact)
#endif

typedef Epilogue<GT_METRIC> MetricEpilogue;  // metrics.py: Metric.fused_id; no such epilogue: no build
constexpr int K_COUNTS = MetricEpilogue::n_counts;
constexpr int K_COLS = MetricEpilogue::n_cols;
static_assert(K_COUNTS <= GT_MAX_COUNTS, "an epilogue reads at most GT_MAX_COUNTS counts");

// The host passes what the metric (metrics.py: fused_id, counts, columns, keep) says this
// epilogue reads and writes; a metric that no longer matches its epilogue does not compile
// (its self-check fails and it takes the generic path).
#ifdef GT_N_COUNTS
static_assert(GT_N_COUNTS == K_COUNTS, "GT_N_COUNTS: the metric's number of counts is not its epilogue's");
#endif
#ifdef GT_N_COLS
static_assert(GT_N_COLS == K_COLS, "GT_N_COLS: the metric's number of columns is not its epilogue's");
#endif
#ifdef GT_KEEP
static_assert(GT_KEEP == MetricEpilogue::keep, "GT_KEEP: the metric's keep rule is not its epilogue's");
#endif

extern "C" __global__ void __launch_bounds__(256) tile_select(const SelectParams p) {
    extern __shared__ unsigned sh_hist[];
    const int ms = p.ms, ns = p.ns, diag = p.diag, mode = p.mode, win = p.win;
    const i64 i0 = p.i0, j0 = p.j0, n_total = p.n_total, cap = p.cap;
    u64* __restrict__ const counter = p.counter;
    i64* __restrict__ const idx = p.idx;
    u64* __restrict__ const cols = p.cols;
    u64* __restrict__ const dense = p.dense;
    u64* __restrict__ const hist = p.hist;
    const i64* __restrict__ const perm_l = p.perm_l;
    const i64* __restrict__ const perm_r = p.perm_r;
    const count_t* mats[K_COUNTS];
    const i64* lvecs[K_COUNTS];
    const i64* rvecs[K_COUNTS];
#pragma unroll
    for (int k = 0; k < K_COUNTS; ++k) {
        mats[k] = reinterpret_cast<const count_t*>(p.counts[k].mat);
        lvecs[k] = p.counts[k].lvec;
        rvecs[k] = p.counts[k].rvec;
    }
    // histogram columns (uniform across the grid)
    int h_kind[K_COLS], h_bins[K_COLS], h_sh[K_COLS];
    double h_low[K_COLS], h_high[K_COLS], h_scale[K_COLS];
    long long h_off[K_COLS], h_size[K_COLS], h_base[K_COLS];
    int n_sh = 0;
#pragma unroll
    for (int h = 0; h < K_COLS; ++h) {
        h_kind[h] = 0, h_bins[h] = 0, h_sh[h] = 0, h_low[h] = 0.0, h_high[h] = 0.0, h_scale[h] = 0.0;
        h_off[h] = 0, h_size[h] = 0, h_base[h] = 0;
        if (hist != nullptr && ((p.hist_mask >> h) & 1)) {
            h_kind[h] = (int)p.hspec[5 * h];
            h_low[h] = p.hspec[5 * h + 1];
            h_high[h] = p.hspec[5 * h + 2];
            h_scale[h] = p.hspec[5 * h + 3];
            h_bins[h] = (int)p.hspec[5 * h + 4];
            h_off[h] = p.hoff[2 * h];
            h_size[h] = p.hoff[2 * h + 1];
            if (h_kind[h] == 2) {
                h_sh[h] = n_sh;
                n_sh += h_bins[h] + 3;
            } else if (win > 0) {  // a bincount: a window of `win` values from hist_base[h] in shared memory
                h_sh[h] = n_sh;
                n_sh += win;
                h_base[h] = p.hist_base != nullptr ? p.hist_base[h] : 0;
            }
        }
    }
    for (int k = threadIdx.x; k < n_sh; k += blockDim.x) sh_hist[k] = 0u;
    __syncthreads();
    bool overflow = false;

    const int lane = threadIdx.x & 31;
    const int warp_col0 = (blockIdx.x * blockDim.x + (threadIdx.x & ~31)) * U_COLS;
    const int col_stride = gridDim.x * blockDim.x * U_COLS;
    for (int r = blockIdx.y; r < ms; r += gridDim.y) {
        const i64 gi = i0 + r;
        // loop bounds are uniform across a warp (c0 is warp-aligned): the ballots see 32 lanes
        for (int c00 = warp_col0; c00 < ns; c00 += col_stride) {
            // the pass's counts first (U_COLS columns, 32 apart), then each column's epilogue
            count_t raw[U_COLS][K_COUNTS];
#pragma unroll
            for (int q = 0; q < U_COLS; ++q) {
                const int c = c00 + 32 * q + lane;
#pragma unroll
                for (int k = 0; k < K_COUNTS; ++k) raw[q][k] = (mats[k] && c < ns) ? mats[k][(i64)r * ns + c] : 0;
            }
#pragma unroll
            for (int q = 0; q < U_COLS; ++q) {
                const int c0 = c00 + 32 * q;
                if (c0 >= ns) break;  // uniform across the warp
                const int c = c0 + lane;
                const bool in_range = c < ns;
                const i64 gj = j0 + c;
                const bool unique = in_range && (!diag || gi < gj);
                bool keep = false;
                u64 out[K_COLS];
#pragma unroll
                for (int k = 0; k < K_COLS; ++k) out[k] = 0;
                if (in_range) {
                    i64 cnt[K_COUNTS];
#pragma unroll
                    for (int k = 0; k < K_COUNTS; ++k) {
                        i64 v = (i64)raw[q][k];
                        if (lvecs[k]) v += lvecs[k][gi];
                        if (rvecs[k]) v += rvecs[k][gj];
                        cnt[k] = v;
                    }
                    const bool pass = MetricEpilogue::values(cnt, out, mode == 0 ? p.has_thr : 0, p.thr, p.metric);
                    keep = pass && unique;
                    if (dense) {
                        u64 d = out[0];
#pragma unroll
                        for (int k = 1; k < K_COLS; ++k)
                            if (k == p.dense_col) d = out[k];
                        dense[gi * n_total + gj] = d;
                    }
                }
                if (hist != nullptr) {
                    u64 hv[K_COLS];
#pragma unroll
                    for (int k = 0; k < K_COLS; ++k) hv[k] = out[k];
                    if (MetricEpilogue::transposed && unique && perm_l != nullptr && perm_l[gi] > perm_r[gj])
                        MetricEpilogue::read_transposed(hv);  // read as (j, i)
#pragma unroll
                    for (int h = 0; h < K_COLS; ++h) {
                        if (h_kind[h] == 0) continue;  // uniform
                        long long bin = -1;
                        if (unique) {
                            if (h_kind[h] == 1) {
                                const i64 v = (i64)hv[h];
                                if (v >= 0 && v < h_size[h]) bin = v;
                                else overflow = true;
                            } else {
                                bin = float_bin(__longlong_as_double((long long)hv[h]), h_low[h], h_high[h], h_scale[h],
                                                h_bins[h]);
                            }
                        }
#if GT_HIST_AGG
                        bool leader;  // one atomic a distinct bin a warp
                        const unsigned add = warp_bin_peers(bin, lane, leader);
#else
                        const unsigned add = 1u;
                        const bool leader = bin >= 0;
#endif
                        if (leader) {
                            if (h_kind[h] == 2 && GT_HIST_SHARED) {
                                atomicAdd(&sh_hist[h_sh[h] + bin], add);
                            } else if (h_kind[h] == 1 && bin >= h_base[h] && bin - h_base[h] < win) {
                                atomicAdd(&sh_hist[h_sh[h] + (bin - h_base[h])], add);
                            } else {
                                atomicAdd(&hist[h_off[h] + bin], (u64)add);
                            }
                        }
                    }
                }
                if (mode == 0) {
                    u64 slot;
                    if (warp_slot(keep, lane, counter, slot) && slot < (u64)cap) {
                        idx[slot] = gi * n_total + gj;
#pragma unroll
                        for (int k = 0; k < K_COLS; ++k) cols[(i64)k * cap + (i64)slot] = out[k];
                    }
                } else if (keep) {
                    // row-major rank of (gi, gj) among the tile's pairs (i < j on a diagonal tile)
                    const i64 slot = diag ? gi * n_total - gi * (gi + 1) / 2 + (gj - gi - 1) : gi * n_total + gj;
                    if (slot < cap) {
#pragma unroll
                        for (int k = 0; k < K_COLS; ++k) cols[(i64)k * cap + slot] = out[k];
                    }
                }
            }
        }
    }
    if (hist != nullptr) {
        __syncthreads();
#pragma unroll
        for (int h = 0; h < K_COLS; ++h) {
            if (h_kind[h] == 2 && GT_HIST_SHARED) {
                for (int k = threadIdx.x; k < h_bins[h] + 3; k += blockDim.x) {
                    const unsigned v = sh_hist[h_sh[h] + k];
                    if (v) atomicAdd(&hist[h_off[h] + k], (u64)v);
                }
            } else if (h_kind[h] == 1 && win > 0) {
                for (int k = threadIdx.x; k < win; k += blockDim.x) {
                    const unsigned v = sh_hist[h_sh[h] + k];
                    if (v) atomicAdd(&hist[h_off[h] + h_base[h] + k], (u64)v);
                }
            }
        }
        if (overflow) atomicAdd(&hist[p.hist_total], 1ull);
    }
}
