// genotile: the 1-bit tensor-core GEMM's building blocks, shared by its kernels (b1_mma_multistage.cu:
// one signed count a launch, written out; b1_select.cu: a metric's counts kept in registers and its
// epilogue, threshold, histogram and compaction fused after the main loop). What is here: the tile
// shapes (GT_* defines, CUTLASS's threadblock / warp / instruction tiles), the XOR-swizzled shared
// memory layout, cp.async staging (CopyPlan, load_ktile), ldmatrix and the b1 mma.
#ifndef GT_B1_MMA_CORE_CUH
#define GT_B1_MMA_CORE_CUH

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

// The block's output tile: grouped rasterization, kGroupM block rows sharing their B tiles while
// resident in L2. Sets the first row m0 and column n0 of block blockIdx.x's tile of an M x N result.
__device__ __forceinline__ void block_origin(int M, int N, int& m0, int& n0) {
    const int tiles_m = (M + kBlockM - 1) / kBlockM;
    const int tiles_n = (N + kBlockN - 1) / kBlockN;
    const int pid = blockIdx.x;
    const int per_group = kGroupM * tiles_n;
    const int first_m = (pid / per_group) * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    m0 = (first_m + (pid % per_group) % group_rows) * kBlockM;
    n0 = ((pid % per_group) / group_rows) * kBlockN;
}

// Thread tid's cp.async plan for the block tile at (m0, n0) of operands A and B (KW words a row).
__device__ __forceinline__ CopyPlan copy_plan(const unsigned long long* A, const unsigned long long* B,
                                              long long KW, int m0, int n0, int tid) {
    CopyPlan plan;
    const int row0 = tid / kChunksPerRow, chunk = tid % kChunksPerRow;
    plan.a_src = reinterpret_cast<const char*>(A + ((long long)m0 + row0) * KW + 2 * chunk);
    plan.b_src = reinterpret_cast<const char*>(B + ((long long)n0 + row0) * KW + 2 * chunk);
    plan.stride = (long long)kRowsPerPass * KW * 8;
    plan.a_dst = swizzle(row0, chunk);
    plan.b_dst = swizzle(row0, chunk);
    return plan;
}

// Shared-memory offsets (within a stage) of this lane's ldmatrix.x4 rows for each k-step.
// ldmatrix.x4 source rows: lane l gives row (l & 7) of 8x8 matrix q = l >> 3.
// A fragment (16 rows x 256 bits): q = {rows 0-7, rows 8-15} x {bits 0-127, 128-255}
//   -> a0 (row g, word t), a1 (row g+8, word t), a2 (row g, word t+4), a3 (row g+8, word t+4).
// B fragments of two n8 tiles: q = {tile 0, tile 1} x {bits 0-127, 128-255}
//   -> b[2p][0], b[2p][1], b[2p+1][0], b[2p+1][1].
// (r & 7) == r8 for every row this lane addresses, so the swizzle only needs r8.
__device__ __forceinline__ void fragment_offsets(int warp_m, int warp_n, int lane, unsigned (&a_off)[kKSteps],
                                                 unsigned (&b_off)[kKSteps]) {
    const int q = lane >> 3, r8 = lane & 7;
    const int a_row = warp_m * kWarpM + r8 + ((q & 1) << 3);
    const int a_chunk_hi = q >> 1;
    const int b_row = warp_n * kWarpN + r8 + ((q >> 1) << 3);
    const int b_chunk_hi = q & 1;
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
        a_off[ks] = a_row * kRowBytes + (((2 * ks + a_chunk_hi) ^ r8) << 4);
        b_off[ks] = kStageBytesA + b_row * kRowBytes + (((2 * ks + b_chunk_hi) ^ r8) << 4);
    }
}

// The warp's fragments of k-step ks from a stage: kMmaM A tiles (16 x 256 bits), kMmaN B tiles (8 x 256).
__device__ __forceinline__ void load_fragments(unsigned stage, unsigned a_off, unsigned b_off,
                                               unsigned (&a)[kMmaM][4], unsigned (&b)[kMmaN][2]) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
        ldmatrix_x4(stage + a_off + i * kInstrM * kRowBytes, a[i][0], a[i][1], a[i][2], a[i][3]);
#pragma unroll
    for (int p = 0; p < kMmaN / 2; ++p)
        ldmatrix_x4(stage + b_off + p * 2 * kInstrN * kRowBytes, b[2 * p][0], b[2 * p][1], b[2 * p + 1][0],
                    b[2 * p + 1][1]);
}

typedef unsigned Accumulators[kMmaM][kMmaN][4];  // a warp tile's int32 accumulators (mod 2^32), a thread's part

// Horner's rescaling between the terms of one count: acc *= mult (modulo 2^32).
__device__ __forceinline__ void rescale(Accumulators& acc, unsigned mult) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] *= mult;
}

// What a thread of a block needs before its main loop: the block tile's origin, its warp tile,
// its cp.async plan and its ldmatrix offsets.
struct ThreadTile {
    int m0, n0;  // the block tile's first row and column
    int lane, warp_m, warp_n;
    int KT;  // k-tiles
    CopyPlan plan;
    unsigned a_off[kKSteps], b_off[kKSteps];
};

__device__ __forceinline__ void thread_tile(const unsigned long long* A, const unsigned long long* B, int M, int N,
                                            long long KW, ThreadTile& t) {
    block_origin(M, N, t.m0, t.n0);
    const int tid = threadIdx.x, warp = tid >> 5;
    t.lane = tid & 31;
    t.warp_m = warp / kWarpsN;
    t.warp_n = warp % kWarpsN;
    t.KT = (int)(KW / kWordsPerKTile);
    t.plan = copy_plan(A, B, KW, t.m0, t.n0, tid);
    fragment_offsets(t.warp_m, t.warp_n, t.lane, t.a_off, t.b_off);
}

#endif  // GT_B1_MMA_CORE_CUH
