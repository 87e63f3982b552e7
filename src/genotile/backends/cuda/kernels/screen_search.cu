// Screening: first (leftmost) match of every signature in every sample, N a wildcard both ways.
//
// Data layout
//   seq        uint8  [total]              samples back to back; sample s = seq[offsets[s] .. offsets[s+1])
//   masks      uint64 [n_samples][planes][words]  plane b < 4 (A, C, G, T): bit i set when base i is
//                                           b or N (little-endian bits, 64 positions per word, zero
//                                           padding past the sample, at least 2 words of it); plane
//                                           4 + 8 (m - 1) + 4 (d - 1) + b (m >= 1, d = 1, 2): bit q set
//                                           when bases q, q + d, ..., q + (2^m - 1) d are all b or N
//   probes     uint32 [total_probes]        (offset << 8) | plane (screen/probes.py: base masks for
//                                           single bases, run / every-other-base masks for runs and
//                                           alternations); signature g = probes[probe_start[g] ..
//                                           probe_start[g+1])
//   out        int32  [n_samples][n_sigs]   0-based start of the first match, -1 for none
//
// screen_encode: one warp per 32 positions of one sample; each lane reads one byte, four
//   ballots make the 32-bit halves of the four planes' words (coalesced reads and writes).
// screen_run_masks: one thread per word of one (sample, stride d, base) plane of level m:
//   plane (b, d, m) = plane (b, d, m - 1) AND plane (b, d, m - 1) shifted down by 2^(m-1) d bits.
// screen_search_{smem,global}: one block per (sample, chunk of SIGS signatures). The block copies
//   its sample's 4 base planes to shared memory (smem variant; 4 x 25 KB for 200 kb; the run
//   planes stay in global memory), then each warp takes the next signature (shared counter). Lane k owns window w0 + k: candidates = 64
//   consecutive starts 64 w .. 64 w + 63 in one word. For each probe (j, b) the word of plane b at
//   bit 64 w + j is a funnel shift of words w + j/64 and w + j/64 + 1 by j % 64 (the same shift for
//   every lane), ANDed into the candidates until they are 0. A ballot over the 32 windows gives
//   the leftmost surviving lane, whose lowest set bit is the leftmost start; windows go left to
//   right 32 at a time and stop at the first survivor.

typedef unsigned char uint8_t;  // NVRTC has no <cstdint>

typedef unsigned long long u64;

constexpr int WARPS = 16;  // warps per block (512 threads)
constexpr unsigned FULL = 0xffffffffu;

extern "C" __global__ void screen_encode(const uint8_t* __restrict__ seq, const long long* __restrict__ offsets,
                                         int words, int planes, unsigned* __restrict__ masks32) {
    const int s = blockIdx.y;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // position in the sample
    if (i >= (long long)words * 64) return;  // whole warps: words * 64 is a multiple of 32
    const long long beg = offsets[s], len = offsets[s + 1] - beg;
    unsigned code = 5;
    if (i < len) {
        const unsigned ch = seq[beg + i] & 0xDF;  // upper case
        code = ch == 'A' ? 0 : ch == 'C' ? 1 : ch == 'G' ? 2 : ch == 'T' ? 3 : ch == 'N' ? 4 : 5;
    }
    unsigned bits[4];
#pragma unroll
    for (int b = 0; b < 4; ++b) bits[b] = __ballot_sync(FULL, code == (unsigned)b || code == 4);
    const int lane = threadIdx.x & 31;
    if (lane < 4) {
        const long long half = i >> 5;  // index of this 32-bit half-word within the plane
        masks32[((long long)s * planes + lane) * words * 2 + half] = bits[lane];
    }
}

constexpr int RUN_THREADS = 256;

extern "C" __global__ void __launch_bounds__(RUN_THREADS)
    screen_run_masks(u64* __restrict__ masks, int words, int planes, int level) {
    const int q = blockIdx.x * RUN_THREADS + threadIdx.x;  // word
    if (q >= words) return;
    const int d = blockIdx.y / 4 + 1, b = blockIdx.y % 4;
    const long long sample = (long long)blockIdx.z * planes * words;
    const int src = level == 1 ? b : 4 + 8 * (level - 2) + 4 * (d - 1) + b;
    const int dst = 4 + 8 * (level - 1) + 4 * (d - 1) + b;
    const u64* in = masks + sample + (long long)src * words;
    const long long shift = (long long)d << (level - 1);
    const long long k = q + (shift >> 6);
    const int r = (int)(shift & 63);
    u64 v = k < words ? in[k] >> r : 0;
    if (r && k + 1 < words) v |= in[k + 1] << (64 - r);
    masks[sample + (long long)dst * words + q] = in[q] & v;
}

template <bool SMEM>
__device__ void search(const u64* __restrict__ masks, int words, int planes, const long long* __restrict__ sample_len,
                       const unsigned* __restrict__ probes, const long long* __restrict__ probe_start,
                       const long long* __restrict__ sig_len, int n_sigs, int sigs_per_block, int* __restrict__ out) {
    extern __shared__ u64 smem[];
    __shared__ int next_sig;
    const int s = blockIdx.x;
    const int g0 = blockIdx.y * sigs_per_block;
    const int g1 = min(n_sigs, g0 + sigs_per_block);
    const long long len = sample_len[s];
    const u64* gplanes = masks + (long long)s * planes * words;
    const u64* plane = gplanes;
    int stride = words;
    if (SMEM) {
        const int own = (int)((len + 63) / 64) + 2;  // this sample's words (<= words)
        for (int k = threadIdx.x; k < 4 * own; k += blockDim.x) {
            const int b = k / own, q = k - b * own;
            smem[k] = plane[(long long)b * words + q];
        }
        plane = smem;
        stride = own;
    }
    if (threadIdx.x == 0) next_sig = g0;
    __syncthreads();
    const int lane = threadIdx.x & 31;
    while (true) {
        int g = 0;
        if (lane == 0) g = atomicAdd(&next_sig, 1);
        g = __shfl_sync(FULL, g, 0);
        if (g >= g1) break;
        const long long last = len - sig_len[g];  // last valid start
        int result = -1;
        if (last >= 0) {
            const int n_win = (int)(last / 64) + 1;
            const int tail = (int)(last - 64LL * (n_win - 1)) + 1;  // 1 .. 64 starts in the last window
            const long long p0 = probe_start[g], p1 = probe_start[g + 1];
            for (int w0 = 0; w0 < n_win; w0 += 32) {
                const int w = w0 + lane;
                u64 cand = 0;
                if (w < n_win) {
                    cand = (w == n_win - 1 && tail < 64) ? ((1ull << tail) - 1) : ~0ull;
                    for (long long p = p0; p < p1 && cand; ++p) {
                        const unsigned pr = __ldg(probes + p);
                        const int j = (int)(pr >> 8), r = j & 63, pl = (int)(pr & 255);
                        u64 v;
                        if (pl < 4) {  // base planes: shared memory in the smem variant
                            const u64* m = plane + pl * stride + w + (j >> 6);
                            v = m[0] >> r;
                            if (r) v |= m[1] << (64 - r);
                        } else {  // run and every-other-base planes: global memory
                            const u64* m = gplanes + (long long)pl * words + w + (j >> 6);
                            v = __ldg(m) >> r;
                            if (r) v |= __ldg(m + 1) << (64 - r);
                        }
                        cand &= v;
                    }
                }
                const unsigned found = __ballot_sync(FULL, cand != 0);
                if (found) {
                    const int src = __ffs(found) - 1;
                    const u64 c = __shfl_sync(FULL, cand, src);
                    result = 64 * (w0 + src) + __ffsll((long long)c) - 1;
                    break;
                }
            }
        }
        if (lane == 0) out[(long long)s * n_sigs + g] = result;
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    screen_search_smem(const u64* masks, int words, int planes, const long long* sample_len, const unsigned* probes,
                       const long long* probe_start, const long long* sig_len, int n_sigs, int sigs_per_block,
                       int* out) {
    search<true>(masks, words, planes, sample_len, probes, probe_start, sig_len, n_sigs, sigs_per_block, out);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    screen_search_global(const u64* masks, int words, int planes, const long long* sample_len, const unsigned* probes,
                         const long long* probe_start, const long long* sig_len, int n_sigs, int sigs_per_block,
                         int* out) {
    search<false>(masks, words, planes, sample_len, probes, probe_start, sig_len, n_sigs, sigs_per_block, out);
}
