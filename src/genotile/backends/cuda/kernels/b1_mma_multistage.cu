// genotile: signed sum of 1-bit plane products on the tensor cores.
//
//   C[i, j] = sum_t coef_t * popcount(A[i, K_t] AND B[j, K_t]) + row_add[i] + col_add[j]
//
// Instruction: mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc (sm_80+; native on
// sm_90). Block tile kBlockM x kBlockN x 1024 bits staged in shared memory by cp.async,
// kStages deep; each warp owns a kWarpM x kWarpN tile of int32 accumulators in registers and
// feeds the mma from ldmatrix.x4 loads. Every product term of a count is done in the one
// pass over K: the accumulators are rescaled between terms (Horner form), so
//   acc = 0; for each term t: acc = acc * term_mult[t] + P_t;   C = acc * final_mult
// with term_mult[t] = coef_{t-1} / coef_t (exact integers: the host orders the terms so that
// each coefficient divides the one before) and final_mult = coef_last.
//
// Data layout expected (built by cupy_b1.py):
//   A: (Mp, KW) uint64, row-major, Mp % kBlockM == 0; B: (Np, KW) uint64, Np % kBlockN == 0;
//   KW % 16 == 0 (a k-tile = 16 words = 1024 bits). Bit f of a row is bit f % 64 of word
//   f / 64 (little-endian, pack.py). Column k of A and of B is the same field of the same
//   term: the host concatenates the terms' word ranges, each zero-padded to whole k-tiles,
//   and pads rows with zero words. Term t covers k-tiles [term_kt[t], term_kt[t + 1]).
//   row_add: (M,) int32, col_add: (N,) int32 (the all-ones-plane terms, see metrics.Term).
//   C: (M, N) int32, row-major, ldc = N; only the M x N part is written.
// Shared memory per stage: (kBlockM + kBlockN) rows x 128 bytes, 16-byte chunk c of row r
// stored at chunk (c ^ (r & 7)) (XOR swizzle: conflict-free cp.async stores and ldmatrix).
// Result is exact modulo 2^32; the host guarantees |C| < 2^31 (else it splits K).

#ifndef GT_BLOCK_M
#define GT_BLOCK_M 128
#endif
#ifndef GT_BLOCK_N
#define GT_BLOCK_N 256
#endif
#ifndef GT_WARP_M
#define GT_WARP_M 64
#endif
#ifndef GT_WARP_N
#define GT_WARP_N 64
#endif
#ifndef GT_STAGES
#define GT_STAGES 4
#endif
#ifndef GT_GROUP_M
#define GT_GROUP_M 8
#endif
#ifndef GT_MIN_BLOCKS
#define GT_MIN_BLOCKS 1
#endif
// GT_DOUBLE_BUFFER: 1 = load the warp's fragments of k-step ks+1 before the mmas of ks.
#ifndef GT_DOUBLE_BUFFER
#define GT_DOUBLE_BUFFER 0
#endif
// GT_LOAD_LATE: 1 = issue the next k-tile's cp.async copies after the first k-step's mmas,
// so that the tensor pipe gets work right after the barrier.
#ifndef GT_LOAD_LATE
#define GT_LOAD_LATE 1
#endif
// GT_MMA_VOLATILE: 0 = the mma asm is not volatile (it is a pure function of its operands),
// so the compiler may interleave it with the (volatile) ldmatrix loads.
#ifndef GT_MMA_VOLATILE
#define GT_MMA_VOLATILE 1
#endif
#if GT_MMA_VOLATILE
#define GT_MMA_ASM asm volatile
#else
#define GT_MMA_ASM asm
#endif

// Block tile (threadblock shape), warp tile, instruction tile, in CUTLASS's terms.
constexpr int kBlockM = GT_BLOCK_M;
constexpr int kBlockN = GT_BLOCK_N;
constexpr int kBlockKBits = 1024;
constexpr int kWarpM = GT_WARP_M;
constexpr int kWarpN = GT_WARP_N;
constexpr int kInstrM = 16;
constexpr int kInstrN = 8;
constexpr int kInstrKBits = 256;
constexpr int kStages = GT_STAGES;
constexpr int kGroupM = GT_GROUP_M;

constexpr int kWarpsM = kBlockM / kWarpM;
constexpr int kWarpsN = kBlockN / kWarpN;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kMmaM = kWarpM / kInstrM;              // mma tiles per warp along M
constexpr int kMmaN = kWarpN / kInstrN;              // ... along N
constexpr int kKSteps = kBlockKBits / kInstrKBits;   // mma k-steps per k-tile (4)
constexpr int kRowBytes = kBlockKBits / 8;           // 128 bytes of one row per k-tile
constexpr int kChunksPerRow = kRowBytes / 16;        // 8 chunks of 16 bytes
constexpr int kWordsPerKTile = kBlockKBits / 64;     // 16 uint64 words
constexpr int kStageBytesA = kBlockM * kRowBytes;
constexpr int kStageBytes = (kBlockM + kBlockN) * kRowBytes;
constexpr int kLoadsA = kBlockM * kChunksPerRow / kThreads;  // 16-byte cp.async per thread
constexpr int kLoadsB = kBlockN * kChunksPerRow / kThreads;

static_assert(kBlockM % kWarpM == 0 && kBlockN % kWarpN == 0, "warp tiling");
static_assert(kWarpM % kInstrM == 0 && kWarpN % (2 * kInstrN) == 0, "instruction tiling");
static_assert((kBlockM * kChunksPerRow) % kThreads == 0, "A loads");
static_assert((kBlockN * kChunksPerRow) % kThreads == 0, "B loads");
static_assert(kStages >= 2, "stages");

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}

__device__ __forceinline__ unsigned swizzle(int row, int chunk) {
    return row * kRowBytes + ((chunk ^ (row & 7)) << 4);
}

__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned& r0, unsigned& r1,
                                            unsigned& r2, unsigned& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void mma_b1(unsigned (&d)[4], const unsigned (&a)[4],
                                       const unsigned (&b)[2]) {
    GT_MMA_ASM(
        "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Per-thread cp.async plan: copy i of a stage moves 16 bytes from row (row0 + i * kRowsPerPass) of
// the block's A (or B) rows, chunk `chunk`, so the global source advances by a fixed stride per
// copy and the (swizzled) shared destination by a compile-time constant: (row0 + i * kRowsPerPass)
// & 7 == row0 & 7 because kRowsPerPass is a multiple of 8.
constexpr int kRowsPerPass = kThreads / kChunksPerRow;
static_assert(kRowsPerPass % 8 == 0, "copy passes must keep the swizzle phase");

struct CopyPlan {
    const char* a_src;  // k-tile 0, copy 0
    const char* b_src;
    long long stride;   // bytes between copies i and i + 1 (kRowsPerPass rows)
    unsigned a_dst;     // offset in a stage of copy 0
    unsigned b_dst;
};

// Issue the cp.async copies of k-tile `kt` of the block's A and B rows into stage `stage`.
__device__ __forceinline__ void load_ktile(unsigned smem_base, int stage, int kt, const CopyPlan& cp) {
    const unsigned sbase = smem_base + stage * kStageBytes;
    const long long k_bytes = (long long)kt * kRowBytes;
    const char* a = cp.a_src + k_bytes;
    const char* b = cp.b_src + k_bytes;
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i)
        cp_async_16(sbase + cp.a_dst + i * kRowsPerPass * kRowBytes, a + i * cp.stride);
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i)
        cp_async_16(sbase + kStageBytesA + cp.b_dst + i * kRowsPerPass * kRowBytes, b + i * cp.stride);
}

extern "C" __global__ void __launch_bounds__(kThreads, GT_MIN_BLOCKS)
b1_mma_multistage(const unsigned long long* __restrict__ A, const unsigned long long* __restrict__ B,
                  int* __restrict__ C, int M, int N, long long KW,
                  const int* __restrict__ term_kt, const int* __restrict__ term_mult, int n_terms,
                  int final_mult, const int* __restrict__ row_add, const int* __restrict__ col_add) {
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned smem_base = smem_u32(smem);

    // Grouped rasterization: kGroupM block rows share their B tiles while resident in L2.
    const int tiles_m = (M + kBlockM - 1) / kBlockM;
    const int tiles_n = (N + kBlockN - 1) / kBlockN;
    const int pid = blockIdx.x;
    const int per_group = kGroupM * tiles_n;
    const int first_m = (pid / per_group) * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    const int tile_m = first_m + (pid % per_group) % group_rows;
    const int tile_n = (pid % per_group) / group_rows;
    const int m0 = tile_m * kBlockM, n0 = tile_n * kBlockN;

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
    const int KT = (int)(KW / kWordsPerKTile);

    CopyPlan plan;
    {
        const int row0 = tid / kChunksPerRow, chunk = tid % kChunksPerRow;
        plan.a_src = reinterpret_cast<const char*>(A + ((long long)m0 + row0) * KW + 2 * chunk);
        plan.b_src = reinterpret_cast<const char*>(B + ((long long)n0 + row0) * KW + 2 * chunk);
        plan.stride = (long long)kRowsPerPass * KW * 8;
        plan.a_dst = swizzle(row0, chunk);
        plan.b_dst = swizzle(row0, chunk);
    }

    // ldmatrix.x4 source rows: lane l gives row (l & 7) of 8x8 matrix q = l >> 3.
    // A fragment (16 rows x 256 bits): q = {rows 0-7, rows 8-15} x {bits 0-127, 128-255}
    //   -> a0 (row g, word t), a1 (row g+8, word t), a2 (row g, word t+4), a3 (row g+8, word t+4).
    // B fragments of two n8 tiles: q = {tile 0, tile 1} x {bits 0-127, 128-255}
    //   -> b[2p][0], b[2p][1], b[2p+1][0], b[2p+1][1].
    const int q = lane >> 3, r8 = lane & 7;
    const int a_row = warp_m * kWarpM + r8 + ((q & 1) << 3);
    const int a_chunk_hi = q >> 1;
    const int b_row = warp_n * kWarpN + r8 + ((q >> 1) << 3);
    const int b_chunk_hi = q & 1;
    // (r & 7) == r8 for every row this lane addresses, so the swizzle only needs r8.
    unsigned a_off[kKSteps], b_off[kKSteps];
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
        a_off[ks] = a_row * kRowBytes + (((2 * ks + a_chunk_hi) ^ r8) << 4);
        b_off[ks] = kStageBytesA + b_row * kRowBytes + (((2 * ks + b_chunk_hi) ^ r8) << 4);
    }

    unsigned acc[kMmaM][kMmaN][4];
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0u;

    // Prologue: k-tiles 0 .. kStages-2 in flight.
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < KT) load_ktile(smem_base, s, s, plan);
        cp_async_commit();
    }

    int term = 0;
    int next_term_kt = 0;  // k-tile where term `term` starts
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<kStages - 2>();
        __syncthreads();  // k-tile kt landed for all threads; stage (kt-1) % kStages is free
        const int nk = kt + kStages - 1;  // the k-tile whose copies this iteration issues
#if !GT_LOAD_LATE
        if (nk < KT) load_ktile(smem_base, nk % kStages, nk, plan);
        cp_async_commit();
#endif
        if (kt == next_term_kt) {  // uniform across the block
            const unsigned mult = (unsigned)term_mult[term];
            if (mult != 1u) {
#pragma unroll
                for (int i = 0; i < kMmaM; ++i)
#pragma unroll
                    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
                        for (int e = 0; e < 4; ++e) acc[i][j][e] *= mult;
            }
            ++term;
            next_term_kt = term < n_terms ? term_kt[term] : KT;
        }
        const unsigned stage = smem_base + (kt % kStages) * kStageBytes;
        // The warp's fragments of k-step ks: kMmaM A tiles (16 x 256 bits), kMmaN B tiles (8 x 256).
        auto load_frags = [&](int ks, unsigned (&a)[kMmaM][4], unsigned (&b)[kMmaN][2]) {
#pragma unroll
            for (int i = 0; i < kMmaM; ++i)
                ldmatrix_x4(stage + a_off[ks] + i * kInstrM * kRowBytes, a[i][0], a[i][1], a[i][2], a[i][3]);
#pragma unroll
            for (int p = 0; p < kMmaN / 2; ++p)
                ldmatrix_x4(stage + b_off[ks] + p * 2 * kInstrN * kRowBytes, b[2 * p][0], b[2 * p][1],
                            b[2 * p + 1][0], b[2 * p + 1][1]);
        };
#if GT_DOUBLE_BUFFER
        unsigned a[2][kMmaM][4], b[2][kMmaN][2];
        load_frags(0, a[0], b[0]);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
            if (ks + 1 < kKSteps) load_frags(ks + 1, a[(ks + 1) & 1], b[(ks + 1) & 1]);
#pragma unroll
            for (int i = 0; i < kMmaM; ++i)
#pragma unroll
                for (int j = 0; j < kMmaN; ++j) mma_b1(acc[i][j], a[ks & 1][i], b[ks & 1][j]);
#if GT_LOAD_LATE
            if (ks == 0) {
                if (nk < KT) load_ktile(smem_base, nk % kStages, nk, plan);
                cp_async_commit();
            }
#endif
        }
#else
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
            unsigned a[kMmaM][4], b[kMmaN][2];
            load_frags(ks, a, b);
#pragma unroll
            for (int i = 0; i < kMmaM; ++i)
#pragma unroll
                for (int j = 0; j < kMmaN; ++j) mma_b1(acc[i][j], a[i], b[j]);
#if GT_LOAD_LATE
            if (ks == 0) {
                if (nk < KT) load_ktile(smem_base, nk % kStages, nk, plan);
                cp_async_commit();
            }
#endif
        }
#endif
    }
    cp_async_wait<0>();

    // Epilogue: accumulator e of mma tile (i, j) is row g (+8 for e >= 2), column 2t + (e & 1).
    const unsigned fm = (unsigned)final_mult;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + warp_m * kWarpM + i * kInstrM + g + 8 * h;
            if (row >= M) continue;
            const unsigned radd = (unsigned)row_add[row];
            int* crow = C + (long long)row * N;
#pragma unroll
            for (int j = 0; j < kMmaN; ++j) {
                const int col = n0 + warp_n * kWarpN + j * kInstrN + 2 * t;
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    if (col + e < N)
                        crow[col + e] = (int)(acc[i][j][2 * h + e] * fm + radd + (unsigned)col_add[col + e]);
                }
            }
        }
    }
}
