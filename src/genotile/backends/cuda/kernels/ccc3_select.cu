// genotile ccc3: the masked block of the 3-way method, and the 3-way epilogue, threshold,
// triangle masks and stream compaction on the device (ccc3.py defines what is computed).
//
// Data layout. A packed genotype_t row holds planes L, H, V of `words` uint64 words each
// (row stride 3 * words). The masked block stacks, for each middle row t of a batch (js[t],
// a row of block J), every row i of block I: masked row t * n_i + i has 9 segments of `words`
// words, segment 3 * x + y = plane x of row i AND plane y of row js[t] (x, y in L, H, V),
// row stride 9 * words.
//
// ccc3_select: one thread per (masked row, column k of block K) of the places e = row * n_k + k
// in [e0, e1) (the host cuts a batch into such ranges so that what passes fits its buffer): the 8 counts (int32 matrices,
// row-major, ld = n_k) t, s_i, s_j, s_k, s_ij, s_ik, s_jk, s_ijk give the tallies r(a,b,c)
// (ccc3.tallies: rho(a) = alpha_a V + beta_a G), then every value as ccc3.epilogue computes it
// in IEEE doubles, in the same order (compiled with --fmad=false: nothing contracted to FMA):
//   f = s1 / (2.0 * c) or (2c - s1) / (2.0 * c); (min, mid, max) by min/max only;
//   v = ((((M * (r / c_ijk)) * (1 - P fmin)) * (1 - P fmid)) * (1 - P fmax)), 0 unless ok.
// A triple is kept when any value >= thr (every triple when null_thr), and i < j when
// same_ij, k > j when same_jk. Kept triples: slot = atomicAdd(counter), out_row[slot] = masked
// row, out_k[slot] = k, vals[slot * 8 + v]; slots past cap are counted but not written (the
// host grows the buffer and runs the batch again).

#define GT_SEG(x, y) (3 * (x) + (y))

extern "C" __global__ void ccc3_mask(const unsigned long long* __restrict__ left,
                                     const unsigned long long* __restrict__ middle,
                                     const int* __restrict__ js, int n_i, int n_t, long long words,
                                     unsigned long long* __restrict__ out) {
    long long total = (long long)n_t * n_i * 9 * words;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        long long w = e % words;
        long long rest = e / words;
        int seg = (int)(rest % 9);
        long long row = rest / 9;
        int i = (int)(row % n_i), t = (int)(row / n_i);
        int x = seg / 3, y = seg % 3;
        out[e] = left[(long long)i * 3 * words + x * words + w] &
                 middle[(long long)js[t] * 3 * words + y * words + w];
    }
}

__device__ __forceinline__ double gt_freq(long long c, long long s1, int a) {
    double den = 2.0 * (double)c;
    return a ? (double)s1 / den : (double)(2 * c - s1) / den;
}

extern "C" __global__ void ccc3_select(
    const int* __restrict__ t, const int* __restrict__ s_i, const int* __restrict__ s_j,
    const int* __restrict__ s_k, const int* __restrict__ s_ij, const int* __restrict__ s_ik,
    const int* __restrict__ s_jk, const int* __restrict__ s_ijk, int rows, int n_i, int n_k,
    const int* __restrict__ js, const long long* __restrict__ stat_i,
    const long long* __restrict__ stat_j, const long long* __restrict__ stat_k, int same_ij,
    int same_jk, double mult, double param, double thr, int null_thr, long long e0, long long e1,
    unsigned long long* counter, long long cap, int* __restrict__ out_row, int* __restrict__ out_k,
    double* __restrict__ vals) {
    // stat_x: (c, s1) pairs per row of the block (int64), as ccc3.vector_stats
    const int alpha[2] = {2, 0}, beta[2] = {-1, 1};
    long long total = (long long)rows * n_k;
    if (e1 > total) e1 = total;
    for (long long e = e0 + blockIdx.x * (long long)blockDim.x + threadIdx.x; e < e1;
         e += (long long)gridDim.x * blockDim.x) {
        int row = (int)(e / n_k), k = (int)(e % n_k);
        int i = row % n_i, j = js[row / n_i];
        if ((same_ij && i >= j) || (same_jk && k <= j)) continue;
        long long cnt[8] = {t[e], s_i[e], s_j[e], s_k[e], s_ij[e], s_ik[e], s_jk[e], s_ijk[e]};
        // which of (i, j, k) carry G in each count, in ccc3.COUNT_G order
        const int gi[8] = {0, 1, 0, 0, 1, 1, 0, 1}, gj[8] = {0, 0, 1, 0, 1, 0, 1, 1},
                  gk[8] = {0, 0, 0, 1, 0, 1, 1, 1};
        long long ci = stat_i[2 * i], si = stat_i[2 * i + 1];
        long long cj = stat_j[2 * j], sj = stat_j[2 * j + 1];
        long long ck = stat_k[2 * k], sk = stat_k[2 * k + 1];
        long long c_ijk = 8 * cnt[0];
        bool ok = ci > 0 && cj > 0 && ck > 0 && c_ijk > 0;
        double v[8];
        bool keep = null_thr != 0;
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
                value = mult * ((double)r / (double)c_ijk);
                value = value * (1.0 - param * fmn);
                value = value * (1.0 - param * fmd);
                value = value * (1.0 - param * fmx);
            }
            v[abc] = value;
            keep = keep || value >= thr;
        }
        if (!keep) continue;
        unsigned long long slot = atomicAdd(counter, 1ULL);
        if ((long long)slot < cap) {
            out_row[slot] = row;
            out_k[slot] = k;
            for (int q = 0; q < 8; ++q) vals[slot * 8 + q] = v[q];
        }
    }
}
