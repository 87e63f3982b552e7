// genotile ccc3 epilogue: a triple's 8 values from its 8 counts, exactly as core/ccc3.epilogue
// computes them in IEEE doubles, in the same order (the including kernel is compiled with
// --fmad=false: nothing contracted to FMA). Shared by ccc3_select.cu (counts read from the count
// matrices) and ccc3_fused.cu (counts in the GEMM's registers).
//
//   counts (ccc3.COUNTS order) t, s_i, s_j, s_k, s_ij, s_ik, s_jk, s_ijk; which of (i, j, k) carry
//   G in each: Ccc3Counts' gi, gj, gk. Tallies r(a,b,c) = sum_q coef_q(a,b,c) cnt[q] with
//   rho(a) = alpha_a V + beta_a G (alpha = {2, 0}, beta = {-1, 1}); c_ijk = 8 t;
//   f = s1 / (2.0 * c) or (2c - s1) / (2.0 * c); (min, mid, max) by min/max only;
//   v = ((((M * (r / c_ijk)) * (1 - P fmin)) * (1 - P fmid)) * (1 - P fmax)), 0 unless ok
//   (every c > 0 and c_ijk > 0).
#ifndef GT_CCC3_EPILOGUE_CUH
#define GT_CCC3_EPILOGUE_CUH

struct Ccc3Params {
    double mult;   // M
    double param;  // P
    double thr;    // a triple is kept when any value >= thr ...
    int null_thr;  // ... or always, where the threshold is null
};

__device__ __forceinline__ double gt_freq(long long c, long long s1, int a) {
    double den = 2.0 * (double)c;
    return a ? (double)s1 / den : (double)(2 * c - s1) / den;
}

// The 8 values of a triple (ccc3.COLUMNS order, bits abc = (a, b, c)) into v; whether it is kept.
// stat_*: (c, s1) of vector i, j, k over all its samples (ccc3.vector_stats).
__device__ __forceinline__ bool ccc3_values(const long long (&cnt)[8], long long ci, long long si,
                                            long long cj, long long sj, long long ck, long long sk,
                                            const Ccc3Params& p, double (&v)[8]) {
    const int alpha[2] = {2, 0}, beta[2] = {-1, 1};
    // which of (i, j, k) carry G in each count, in ccc3.COUNT_G order
    const int gi[8] = {0, 1, 0, 0, 1, 1, 0, 1}, gj[8] = {0, 0, 1, 0, 1, 0, 1, 1},
              gk[8] = {0, 0, 0, 1, 0, 1, 1, 1};
    long long c_ijk = 8 * cnt[0];
    bool ok = ci > 0 && cj > 0 && ck > 0 && c_ijk > 0;
    bool keep = p.null_thr != 0;
    for (int abc = 0; abc < 8; ++abc) {
        int a = abc >> 2, b = (abc >> 1) & 1, c = abc & 1;
        double value = 0.0;
        if (ok) {
            long long r = 0;
            for (int q = 0; q < 8; ++q) {
                long long coef = (long long)(gi[q] ? beta[a] : alpha[a]) *
                                 (gj[q] ? beta[b] : alpha[b]) * (gk[q] ? beta[c] : alpha[c]);
                r += coef * cnt[q];
            }
            double fa = gt_freq(ci, si, a), fb = gt_freq(cj, sj, b), fc = gt_freq(ck, sk, c);
            double lo = fmin(fa, fb), hi = fmax(fa, fb);
            double fmn = fmin(lo, fc), fmd = fmax(lo, fmin(hi, fc)), fmx = fmax(hi, fc);
            value = p.mult * ((double)r / (double)c_ijk);
            value = value * (1.0 - p.param * fmn);
            value = value * (1.0 - p.param * fmd);
            value = value * (1.0 - p.param * fmx);
        }
        v[abc] = value;
        keep = keep || value >= p.thr;
    }
    return keep;
}

#endif
