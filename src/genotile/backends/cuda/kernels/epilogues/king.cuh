// fused_id 2, king: counts (nsnp, hethet, ibs0, het_i, het_j) -> columns (nsnp, hethet, ibs0, kinship), keep kinship >= thr
#ifndef GT_EPILOGUES_KING_CUH
#define GT_EPILOGUES_KING_CUH
#include "epilogue.cuh"

template <>
struct Epilogue<2> : Symmetric<4> {
    static constexpr int n_counts = 5;
    static constexpr int n_cols = 4;
    static constexpr int keep = KEEP_GE;

    __device__ __forceinline__ static bool values(const i64 (&c)[n_counts], u64 (&out)[n_cols], int has_thr,
                                                  double thr, const MetricParams&) {
        const i64 nsnp = c[0], hethet = c[1], ibs0 = c[2], het_i = c[3], het_j = c[4];
        const i64 num = 4 * ibs0 + (het_i - hethet) + (het_j - hethet);
        const i64 den = 4 * (het_i < het_j ? het_i : het_j);
        const double kinship = __dsub_rn(0.5, __ddiv_rn(i2d(num), i2d(den)));
        out[0] = (u64)nsnp;
        out[1] = (u64)hethet;
        out[2] = (u64)ibs0;
        out[3] = dbits(kinship);
        return !has_thr || kinship >= thr;
    }
};

#endif  // GT_EPILOGUES_KING_CUH
