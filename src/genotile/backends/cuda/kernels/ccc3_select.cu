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

#include "ccc3_epilogue.cuh"

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
    const Ccc3Params prm = {mult, param, thr, null_thr};
    long long total = (long long)rows * n_k;
    if (e1 > total) e1 = total;
    for (long long e = e0 + blockIdx.x * (long long)blockDim.x + threadIdx.x; e < e1;
         e += (long long)gridDim.x * blockDim.x) {
        int row = (int)(e / n_k), k = (int)(e % n_k);
        int i = row % n_i, j = js[row / n_i];
        if ((same_ij && i >= j) || (same_jk && k <= j)) continue;
        long long cnt[8] = {t[e], s_i[e], s_j[e], s_k[e], s_ij[e], s_ik[e], s_jk[e], s_ijk[e]};
        double v[8];
        bool keep = ccc3_values(cnt, stat_i[2 * i], stat_i[2 * i + 1], stat_j[2 * j], stat_j[2 * j + 1],
                                stat_k[2 * k], stat_k[2 * k + 1], prm, v);
        if (!keep) continue;
        unsigned long long slot = atomicAdd(counter, 1ULL);
        if ((long long)slot < cap) {
            out_row[slot] = row;
            out_k[slot] = k;
            for (int q = 0; q < 8; ++q) vals[slot * 8 + q] = v[q];
        }
    }
}
