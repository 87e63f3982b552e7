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

// b1_select.cu: king from two int32 accumulators of the 1-bit GEMM (b1_select.py builds their terms)
//   acc[0] = 2 ibs0 - hethet                (Hom0.H and H.Hom0 at 2, Het.Het at -1)
//   acc[1] = het_i * 2^16 + het_j           (Het.V at 2^16, V.Het at 1; both < 2^16: planes of at most
//                                            1,023 words, 65,472 sites)
// values() reads nsnp, hethet and ibs0 only as its integer columns and through
// num = 4 ibs0 + (het_i - hethet) + (het_j - hethet): with ibs0 = 0 and hethet = -acc[0] num is the
// same integer, so the kinship and its verdict are values()'s own. The integer columns of the pairs
// that pass are counted again afterwards (b1_select.cu's pair_counts).
template <>
struct GemmCounts<2> {
    static constexpr int n_acc = 2;
    __device__ __forceinline__ static void counts(const unsigned (&acc)[n_acc], i64 (&c)[Epilogue<2>::n_counts]) {
        c[0] = 0;
        c[1] = -(i64)(int)acc[0];
        c[2] = 0;
        c[3] = (i64)(acc[1] >> 16);
        c[4] = (i64)(acc[1] & 0xFFFFu);
    }
};

#endif  // GT_EPILOGUES_KING_CUH
