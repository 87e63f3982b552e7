// fused_id 0, snp / hamming: counts (d) -> columns (d), keep d <= thr
// The metric is its one count (differing positions), kept when at most the threshold.
#ifndef GT_EPILOGUES_COUNT_CUH
#define GT_EPILOGUES_COUNT_CUH
#include "epilogue.cuh"

template <>
struct Epilogue<0> : Symmetric<1> {
    static constexpr int n_counts = 1;
    static constexpr int n_cols = 1;
    static constexpr int keep = KEEP_LE;

    __device__ __forceinline__ static bool values(const i64 (&c)[n_counts], u64 (&out)[n_cols], int has_thr,
                                                  double thr, const MetricParams&) {
        out[0] = (u64)c[0];
        return !has_thr || i2d(c[0]) <= thr;
    }
};

#endif  // GT_EPILOGUES_COUNT_CUH
