// genotile: what every fused epilogue of tile_select.cu shares (one header a fused metric beside
// this one, as CUTLASS keeps its epilogue functors).
//
// An epilogue is a specialization Epilogue<fused_id> (metrics.py: Metric.fused_id) holding
//   n_counts, n_cols  the counts it reads and the value columns it writes, in the metric's order;
//   keep              its keep rule (KEEP_*, tile_select.py's KEEP_IDS);
//   values(c, out, has_thr, thr, params)
//                     the value columns of one pair from its counts, exactly as metrics.py computes
//                     them (IEEE doubles: every + - * / an explicitly rounded intrinsic, so nothing is
//                     contracted into an FMA), integer columns as int64, float columns as the bits of
//                     a double; returns whether the pair passes `thr` (has_thr == 0: every pair does);
//   transposed, read_transposed(v)
//                     whether the pair (j, i) has other values than (i, j), and how they move (the
//                     histograms read every pair in input order, as tile.py does).
#ifndef GT_EPILOGUES_EPILOGUE_CUH
#define GT_EPILOGUES_EPILOGUE_CUH

typedef long long i64;
typedef unsigned long long u64;

// keep rules: the dense column <= thr, the dense column >= thr, any column >= thr
enum Keep { KEEP_LE = 0, KEEP_GE = 1, KEEP_GE_ANY = 2 };

// The metric's parameters (metrics.py: Metric.params; 0 where the metric has none).
struct MetricParams {
    double multiplier;
    double param;
};

__device__ __forceinline__ u64 dbits(double x) { return (u64)__double_as_longlong(x); }
__device__ __forceinline__ double i2d(i64 x) { return __ll2double_rn(x); }

// Bin of a float value, as histogram.column_histogram computes it: nan -> bins + 2,
// v < low -> bins (below), v > high -> bins + 1 (above), else min(floor((v - low) * scale), bins - 1).
// Selects, not branches: every case is computed (a nan or infinite v converts to some integer, then
// discarded), so that a fused epilogue's pairs stay one basic block the compiler can interleave.
// __double2ll_rd is floor and conversion in one instruction, defined for nan and infinities (where
// a C cast of floor's result is not), the same integer for every v in [low, high].
__device__ __forceinline__ int float_bin(double v, double low, double high, double scale, int bins) {
    const long long b = __double2ll_rd(__dmul_rn(__dsub_rn(v, low), scale));
    int bin = b < bins - 1 ? (int)b : bins - 1;
    bin = v > high ? bins + 1 : bin;
    bin = v < low ? bins : bin;
    return isnan(v) ? bins + 2 : bin;
}

// What the selecting kernels (tile_select.cu, b1_select.cu) do with a warp's pairs, one lane a
// pair; every lane of the warp calls these together.
//
// warp_slot: a slot of the pairs buffer for each lane that keeps its pair, the warp's keeping lanes
// taking consecutive slots from one atomicAdd on `counter` (by the lowest of them); false where
// the lane keeps nothing (its `slot` untouched).
__device__ __forceinline__ bool warp_slot(bool keep, int lane, u64* counter, u64& slot) {
    const unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (!mask) return false;  // uniform
    const int leader = __ffs(mask) - 1;
    u64 base = 0;
    if (lane == leader) base = atomicAdd(counter, (u64)__popc(mask));
    base = __shfl_sync(0xffffffffu, base, leader);
    slot = base + (u64)__popc(mask & ((1u << lane) - 1u));
    return keep;
}

// warp_bin_peers: the lanes of the warp whose pair falls in the same histogram bin (bin >= 0; -1:
// none), counted, so that one atomic a distinct bin adds them; `leader`: this lane adds them.
// Bins of 64 bits (tile_select.cu's bincounts) or of 32 (b1_select.cu's float bins).
template <typename Bin>
__device__ __forceinline__ unsigned warp_bin_peers(Bin bin, int lane, bool& leader) {
    const Bin key = bin >= 0 ? bin : -1 - lane;  // lanes without a bin get distinct keys
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    leader = bin >= 0 && lane == __ffs(peers) - 1;
    return (unsigned)__popc(peers);
}

template <int FusedId>
struct Epilogue;  // one specialization a header of epilogues/

// How b1_select.cu's int32 GEMM accumulators give an epilogue's counts (a specialization beside
// the metric's Epilogue, for the metrics whose counts fit that kernel's registers).
template <int FusedId>
struct GemmCounts;

// An epilogue whose values are the same for (i, j) and (j, i).
template <int NCols>
struct Symmetric {
    static constexpr bool transposed = false;
    __device__ __forceinline__ static void read_transposed(u64 (&)[NCols]) {}
};

#endif  // GT_EPILOGUES_EPILOGUE_CUH
