// fused_id 1, ibs: counts (ibs_count, n) -> columns (ibs_count, n, dist_1ibs), keep dist_1ibs <= thr
#ifndef GT_EPILOGUES_IBS_CUH
#define GT_EPILOGUES_IBS_CUH
#include "epilogue.cuh"

template <>
struct Epilogue<1> : Symmetric<3> {
    static constexpr int n_counts = 2;
    static constexpr int n_cols = 3;
    static constexpr int keep = KEEP_LE;

    __device__ __forceinline__ static bool values(const i64 (&c)[n_counts], u64 (&out)[n_cols], int has_thr,
                                                  double thr, const MetricParams&) {
        // dist = ibs_count / (2.0 * n): n = 0 gives 0/0 = nan (the host canonicalizes nan bits)
        const double dist = __ddiv_rn(i2d(c[0]), __dmul_rn(2.0, i2d(c[1])));
        out[0] = (u64)c[0];
        out[1] = (u64)c[1];
        out[2] = dbits(dist);
        return !has_thr || dist <= thr;
    }
};

// b1_select.cu: ibs from two int32 accumulators of the 1-bit GEMM, acc[0] = ibs_count, acc[1] = n
// (b1_select.py builds their terms; each < 2^31, as the select path's int32 counts).
template <>
struct GemmCounts<1> {
    static constexpr int n_acc = 2;
    __device__ __forceinline__ static void counts(const unsigned (&acc)[n_acc], i64 (&c)[Epilogue<1>::n_counts]) {
        c[0] = (i64)(int)acc[0];
        c[1] = (i64)(int)acc[1];
    }
};

#endif  // GT_EPILOGUES_IBS_CUH
