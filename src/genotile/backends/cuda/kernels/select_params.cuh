// genotile: tile_select's launch arguments, one struct passed by value as the kernel's one argument.
// backends/cuda/select_params.py's SelectParams mirrors it field by field (a numpy structured dtype
// with C alignment); tests/backends/test_select_params.py checks that both layouts agree. A field
// added here is added there, in the same place.
#ifndef GT_SELECT_PARAMS_CUH
#define GT_SELECT_PARAMS_CUH
#include "epilogues/epilogue.cuh"

#define GT_MAX_COUNTS 8  // counts a select kernel reads at most (select_params.py: MAX_COUNTS)

// Where count k of pair (i, j) comes from: mat[(i - i0) * ns + (j - j0)] + lvec[i] + rvec[j],
// each part skipped when its pointer is null.
struct CountSource {
    const void* mat;  // the sub-tile's count matrix: count_t (int32; int64 with GT_COUNT64), row-major, ld = ns
    const i64* lvec;  // int64 row sums over the tile's rows (the all-ones-plane terms of metrics.Term)
    const i64* rvec;  // ... over the tile's columns
};

struct SelectParams {
    // the sub-tile: rows i0 .. i0 + ms, columns j0 .. j0 + ns of a tile n_total columns wide
    i64 i0;
    i64 j0;
    i64 n_total;
    int ms;
    int ns;
    int diag;       // a diagonal tile: only the pairs i < j are the tile's
    int mode;       // 0: append the passing pairs; 1: write every pair at its row-major rank
    int has_thr;    // 0: every pair passes
    int dense_col;  // the value column written to `dense`
    double thr;
    MetricParams metric;
    // outputs
    u64* counter;  // pairs appended (mode 0)
    i64* idx;      // i * n_total + j of each appended pair (mode 0)
    u64* cols;     // column c of slot s at cols[c * cap + s]: int64, or a double's bits
    i64 cap;       // slots of idx and cols
    u64* dense;    // the dense column of every pair at dense[i * n_total + j] (null: none)
    // histograms (hist null: none)
    u64* hist;               // every histogram's counters, then the out-of-range counter
    const double* hspec;     // 5 a column: kind (1: bincount, 2: float bins), low, high, scale, bins
    const i64* hoff;         // 2 a column: its first counter in hist, its number of counters
    const i64* hist_base;    // each bincount's shared window starts here
    const i64* perm_l;       // input index of each row of the tile: a pair reads (j, i) where
    const i64* perm_r;       // perm_l[i] > perm_r[j] (an epilogue's `transposed` columns)
    i64 hist_total;          // the out-of-range counter: hist[hist_total]
    int hist_mask;           // bit h: column h has a histogram
    int win;                 // values a bincount window holds in shared memory (0: none)
    CountSource counts[GT_MAX_COUNTS];  // the metric's counts, in its order
};

#endif  // GT_SELECT_PARAMS_CUH
