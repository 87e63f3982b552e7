// fused_id 3, ccc2: counts (r11, sum_i, sum_j, both, c_i, c_j, s_i, s_j) -> columns (ccc_00, ccc_01, ccc_10, ccc_11), keep any >= thr
// Parameters: multiplier, param. ccc_01 and ccc_10 trade places when the pair is read as (j, i).
#ifndef GT_EPILOGUES_CCC2_CUH
#define GT_EPILOGUES_CCC2_CUH
#include "epilogue.cuh"

template <>
struct Epilogue<3> {
    static constexpr int n_counts = 8;
    static constexpr int n_cols = 4;
    static constexpr int keep = KEEP_GE_ANY;
    static constexpr bool transposed = true;

    __device__ __forceinline__ static bool values(const i64 (&c)[n_counts], u64 (&out)[n_cols], int has_thr,
                                                  double thr, const MetricParams& params) {
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
        const double multiplier = params.multiplier, param = params.param;
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
    }

    // the values of (j, i): ccc_01 and ccc_10 swap
    __device__ __forceinline__ static void read_transposed(u64 (&v)[n_cols]) {
        const u64 v01 = v[1];
        v[1] = v[2];
        v[2] = v01;
    }
};

#endif  // GT_EPILOGUES_CCC2_CUH
