// genotile: a metric's epilogue, threshold, diagonal mask and stream compaction on the device.
//
// One launch handles one sub-tile (ms x ns pairs, rows i0.., columns j0.. of a tile of
// m_total x n_total). For each pair it reads the metric's counts, computes the value columns
// exactly as metrics.py does (IEEE doubles: every + - * / is an explicitly rounded intrinsic,
// so nothing is contracted into an FMA), and
//   mode 0: appends the pair when it passes the threshold (and i < j on a diagonal tile):
//           slot = atomicAdd(counter) (warp-aggregated), idx[slot] = i * n_total + j,
//           cols[c * cap + slot] = bits of column c. The host sorts by idx afterwards, so the
//           order the pairs leave in is row-major over the tile, as numpy.nonzero gives it.
//   mode 1: every pair (i < j on a diagonal tile) in row-major order: the slot is computed,
//           nothing is appended, idx is not written.
// and, when `dense` is not null, writes the dense column of every pair of the sub-tile to
// dense[i * n_total + j] (all pairs: a dense block holds the lower triangle too).
//
// Counts: count k of pair (i, j) = mat_k[(i - i0) * ns + (j - j0)] + lvec_k[i] + rvec_k[j],
// each part skipped when its pointer is 0: mat_k is the sub-tile's count matrix (count_t,
// row-major, ld = ns), lvec_k / rvec_k are int64 row sums over the whole tile's rows / columns
// (the all-ones-plane terms of metrics.Term). Pointers arrive as 3 x 8 integer arguments.
//
// GT_METRIC selects the epilogue (metrics.py: Metric.fused_id; counts in the metric's order):
//   0 snp / hamming: counts (d)                         -> columns (d), keep d <= thr
//   1 ibs:  counts (ibs_count, n)                       -> (ibs_count, n, dist_1ibs), keep dist <= thr
//   2 king: counts (nsnp, hethet, ibs0, het_i, het_j)   -> (nsnp, hethet, ibs0, kinship), keep kinship >= thr
//   3 ccc2: counts (r11, sum_i, sum_j, both, c_i, c_j, s_i, s_j)
//                                                       -> (ccc_00, ccc_01, ccc_10, ccc_11), keep any >= thr
// Integer columns are written as int64, float columns as the bits of a double.
//
// Histograms (histogram.py), when `hist` is not null: every pair of the sub-tile that is a
// unique pair of the tile (i < j on a diagonal tile), passing or not, is counted in the
// histogram of each column h with bit h of hist_mask set. hspec[4 h ..]: kind (1: integer
// bincount, 2: float bins), low, scale = bins / (high - low), bins; hoff[2 h ..]: the column's
// first counter in `hist` and its number of counters (bincount: bound + 1; float: bins + 3,
// the last three below / above / nan). A float value v: nan -> nan; v < low -> below;
// v > high -> above; else bin min(floor((v - low) * scale), bins - 1), as numpy computes it.
// Float bins are counted in shared memory (dyn. shared: each histogram column's counters, in
// column order) and added to `hist` once a block; a bincount counts the values in
// [hist_base[h], hist_base[h] + win) in shared memory (win > 0) and the others in `hist`
// directly; one atomicAdd per distinct bin a warp (__match_any_sync). The grid is sized to
// the GPU (a few blocks an SM, looping over rows), so the per-block flush stays small. An integer value outside [0, size) increments
// hist[hist_total] (the host then refuses the result). ccc2: where perm_l[i] > perm_r[j] the
// pair reads (j, i) in input order, so ccc_01 and ccc_10 trade histograms (as tile.py does).

#ifndef GT_METRIC
#define GT_METRIC 0
#endif
#ifndef GT_COUNT64
#define GT_COUNT64 0
#endif

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
typedef long long i64;
typedef unsigned long long u64;

// each epilogue's counts, columns and keep rule (0: dense <= thr, 1: dense >= thr, 2: any >= thr)
#if GT_METRIC == 0
#define K_COUNTS 1
#define K_COLS 1
#define K_KEEP 0
#elif GT_METRIC == 1
#define K_COUNTS 2
#define K_COLS 3
#define K_KEEP 0
#elif GT_METRIC == 2
#define K_COUNTS 5
#define K_COLS 4
#define K_KEEP 1
#elif GT_METRIC == 3
#define K_COUNTS 8
#define K_COLS 4
#define K_KEEP 2
#else
#error "unknown GT_METRIC"
#endif

// The host passes what the metric (metrics.py: fused_id, counts, columns, keep) says this
// epilogue reads and writes; a metric that no longer matches its epilogue does not compile
// (its self-check fails and it takes the generic path).
#if defined(GT_N_COUNTS) && GT_N_COUNTS != K_COUNTS
#error "GT_N_COUNTS: the metric's number of counts is not this GT_METRIC epilogue's"
#endif
#if defined(GT_N_COLS) && GT_N_COLS != K_COLS
#error "GT_N_COLS: the metric's number of columns is not this GT_METRIC epilogue's"
#endif
#if defined(GT_KEEP) && GT_KEEP != K_KEEP
#error "GT_KEEP: the metric's keep rule is not this GT_METRIC epilogue's"
#endif

#ifndef GT_HOST_TEST
__device__ __forceinline__ u64 dbits(double x) { return (u64)__double_as_longlong(x); }
__device__ __forceinline__ double i2d(i64 x) { return __ll2double_rn(x); }
#endif

// Values of one pair; returns whether it passes `thr` (has_thr == 0: every pair passes).
// p0, p1: the metric's parameters (ccc2: multiplier, param).
__device__ __forceinline__ bool metric_values(const i64 (&c)[K_COUNTS], u64 (&out)[K_COLS], int has_thr,
                                              double thr, double p0, double p1) {
#if GT_METRIC == 0
    out[0] = (u64)c[0];
    return !has_thr || i2d(c[0]) <= thr;
#elif GT_METRIC == 1
    // dist = ibs_count / (2.0 * n): n = 0 gives 0/0 = nan (the host canonicalizes nan bits)
    const double dist = __ddiv_rn(i2d(c[0]), __dmul_rn(2.0, i2d(c[1])));
    out[0] = (u64)c[0];
    out[1] = (u64)c[1];
    out[2] = dbits(dist);
    return !has_thr || dist <= thr;
#elif GT_METRIC == 2
    const i64 nsnp = c[0], hethet = c[1], ibs0 = c[2], het_i = c[3], het_j = c[4];
    const i64 num = 4 * ibs0 + (het_i - hethet) + (het_j - hethet);
    const i64 den = 4 * (het_i < het_j ? het_i : het_j);
    const double kinship = __dsub_rn(0.5, __ddiv_rn(i2d(num), i2d(den)));
    out[0] = (u64)nsnp;
    out[1] = (u64)hethet;
    out[2] = (u64)ibs0;
    out[3] = dbits(kinship);
    return !has_thr || kinship >= thr;
#elif GT_METRIC == 3
    const i64 r11 = c[0], sum_i = c[1], sum_j = c[2], both = c[3];
    const i64 c_i = c[4], c_j = c[5], s_i = c[6], s_j = c[7];
    i64 r[2][2];
    r[1][1] = r11;
    r[1][0] = 2 * sum_i - r11;
    r[0][1] = 2 * sum_j - r11;
    r[0][0] = 4 * both - 2 * sum_i - 2 * sum_j + r11;
    const i64 c_ij = 4 * both;
    const bool ok = (c_i > 0) && (c_j > 0) && (c_ij > 0);
    const double ci2 = __dmul_rn(2.0, i2d(c_i)), cj2 = __dmul_rn(2.0, i2d(c_j));
    double f_i[2], f_j[2];
    f_i[1] = __ddiv_rn(i2d(s_i), ci2);
    f_i[0] = __ddiv_rn(i2d(2 * c_i - s_i), ci2);
    f_j[1] = __ddiv_rn(i2d(s_j), cj2);
    f_j[0] = __ddiv_rn(i2d(2 * c_j - s_j), cj2);
    const double multiplier = p0, param = p1;
    bool pass = !has_thr;
#pragma unroll
    for (int a = 0; a < 2; ++a) {
#pragma unroll
        for (int b = 0; b < 2; ++b) {
            // where ok, f_i and f_j are finite, so min / max need no nan rules
            const double f_min = f_i[a] < f_j[b] ? f_i[a] : f_j[b];
            const double f_max = f_i[a] < f_j[b] ? f_j[b] : f_i[a];
            // multiplier * (r / c_ij) * (1 - param * f_min) * (1 - param * f_max), left to right
            double v = __dmul_rn(multiplier, __ddiv_rn(i2d(r[a][b]), i2d(c_ij)));
            v = __dmul_rn(v, __dsub_rn(1.0, __dmul_rn(param, f_min)));
            v = __dmul_rn(v, __dsub_rn(1.0, __dmul_rn(param, f_max)));
            const double value = ok ? v : 0.0;
            out[2 * a + b] = dbits(value);
            pass = pass || (value >= thr);
        }
    }
    return pass;
#endif
}

// Bin of a float value, as histogram.column_histogram computes it: nan -> bins + 2,
// v < low -> bins (below), v > high -> bins + 1 (above), else min(floor((v - low) * scale), bins - 1).
__device__ __forceinline__ long long float_bin(double v, double low, double high, double scale, int bins) {
    if (isnan(v)) return bins + 2;
    if (v < low) return bins;
    if (v > high) return bins + 1;
    const long long b = (long long)floor(__dmul_rn(__dsub_rn(v, low), scale));
    return b < bins - 1 ? b : bins - 1;
}

#ifndef GT_HOST_TEST  // (a host-compiled test of metric_values defines it)
#define GT_PTR_PARAMS(k) u64 mat##k, u64 lvec##k, u64 rvec##k

extern "C" __global__ void __launch_bounds__(256)
tile_select(int ms, int ns, long long i0, long long j0, long long n_total, int diag, int mode, int has_thr,
            double thr, double p0, double p1, int dense_col,
            u64* __restrict__ counter, i64* __restrict__ idx, u64* __restrict__ cols, long long cap,
            u64* __restrict__ dense,
            u64* __restrict__ hist, int hist_mask, const double* __restrict__ hspec,
            const long long* __restrict__ hoff, long long hist_total, const long long* __restrict__ hist_base,
            int win, const i64* __restrict__ perm_l, const i64* __restrict__ perm_r,
            GT_PTR_PARAMS(0), GT_PTR_PARAMS(1), GT_PTR_PARAMS(2), GT_PTR_PARAMS(3),
            GT_PTR_PARAMS(4), GT_PTR_PARAMS(5), GT_PTR_PARAMS(6), GT_PTR_PARAMS(7)) {
    extern __shared__ unsigned sh_hist[];
    const u64 mats_in[8] = {mat0, mat1, mat2, mat3, mat4, mat5, mat6, mat7};
    const u64 lvecs_in[8] = {lvec0, lvec1, lvec2, lvec3, lvec4, lvec5, lvec6, lvec7};
    const u64 rvecs_in[8] = {rvec0, rvec1, rvec2, rvec3, rvec4, rvec5, rvec6, rvec7};
    const count_t* mats[K_COUNTS];
    const i64* lvecs[K_COUNTS];
    const i64* rvecs[K_COUNTS];
#pragma unroll
    for (int k = 0; k < K_COUNTS; ++k) {
        mats[k] = reinterpret_cast<const count_t*>(mats_in[k]);
        lvecs[k] = reinterpret_cast<const i64*>(lvecs_in[k]);
        rvecs[k] = reinterpret_cast<const i64*>(rvecs_in[k]);
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
        if (hist != nullptr && ((hist_mask >> h) & 1)) {
            h_kind[h] = (int)hspec[5 * h];
            h_low[h] = hspec[5 * h + 1];
            h_high[h] = hspec[5 * h + 2];
            h_scale[h] = hspec[5 * h + 3];
            h_bins[h] = (int)hspec[5 * h + 4];
            h_off[h] = hoff[2 * h];
            h_size[h] = hoff[2 * h + 1];
            if (h_kind[h] == 2) {
                h_sh[h] = n_sh;
                n_sh += h_bins[h] + 3;
            } else if (win > 0) {  // a bincount: a window of `win` values from hist_base[h] in shared memory
                h_sh[h] = n_sh;
                n_sh += win;
                h_base[h] = hist_base != nullptr ? hist_base[h] : 0;
            }
        }
    }
    for (int k = threadIdx.x; k < n_sh; k += blockDim.x) sh_hist[k] = 0u;
    __syncthreads();
    bool overflow = false;

    const int lane = threadIdx.x & 31;
    const int warp_col0 = blockIdx.x * blockDim.x + (threadIdx.x & ~31);
    const int col_stride = gridDim.x * blockDim.x;
    for (int r = blockIdx.y; r < ms; r += gridDim.y) {
        const i64 gi = i0 + r;
        // loop bounds are uniform across a warp (c0 is warp-aligned): the ballots see 32 lanes
        for (int c0 = warp_col0; c0 < ns; c0 += col_stride) {
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
                    i64 v = 0;
                    if (mats[k]) v += (i64)mats[k][(i64)r * ns + c];
                    if (lvecs[k]) v += lvecs[k][gi];
                    if (rvecs[k]) v += rvecs[k][gj];
                    cnt[k] = v;
                }
                const bool pass = metric_values(cnt, out, mode == 0 ? has_thr : 0, thr, p0, p1);
                keep = pass && unique;
                if (dense) {
                    u64 d = out[0];
#pragma unroll
                    for (int k = 1; k < K_COLS; ++k)
                        if (k == dense_col) d = out[k];
                    dense[gi * n_total + gj] = d;
                }
            }
            if (hist != nullptr) {
                u64 hv[K_COLS];
#pragma unroll
                for (int k = 0; k < K_COLS; ++k) hv[k] = out[k];
#if GT_METRIC == 3
                if (unique && perm_l != nullptr && perm_l[gi] > perm_r[gj]) {  // read as (j, i)
                    hv[1] = out[2];
                    hv[2] = out[1];
                }
#endif
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
                    // one atomic per distinct bin a warp (inactive lanes get distinct keys)
                    const long long key = bin >= 0 ? bin : -1 - lane;
                    const unsigned peers = __match_any_sync(0xffffffffu, (unsigned long long)key);
                    const unsigned add = (unsigned)__popc(peers);
                    const bool leader = bin >= 0 && lane == __ffs(peers) - 1;
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
                const unsigned mask = __ballot_sync(0xffffffffu, keep);
                if (mask) {
                    const int leader = __ffs(mask) - 1;
                    u64 base = 0;
                    if (lane == leader) base = atomicAdd(counter, (u64)__popc(mask));
                    base = __shfl_sync(0xffffffffu, base, leader);
                    if (keep) {
                        const u64 slot = base + (u64)__popc(mask & ((1u << lane) - 1u));
                        if (slot < (u64)cap) {
                            idx[slot] = gi * n_total + gj;
#pragma unroll
                            for (int k = 0; k < K_COLS; ++k) cols[(i64)k * cap + (i64)slot] = out[k];
                        }
                    }
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
        if (overflow) atomicAdd(&hist[hist_total], 1ull);
    }
}
#endif  // GT_HOST_TEST
