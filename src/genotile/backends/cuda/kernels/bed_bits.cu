// genotile: a .bed's records transposed into the store's rows of bits on the device.
//
// records_to_bits is io/readers/bed_kernels.records_to_bits (the host's compiled transposer) on
// the GPU, with the same results: the same rows of bits (store/bits.py: a row's lo words, then
// its hi words, variant v at bit v % 64 of word v // 64, 0 past the last variant), the same
// flags and missing calls.
//
// How: word g of 64 consecutive records (32 samples of each, 2 bits a call) is a 64 x 64 bit
// matrix, a uint64 a record; its transpose holds in word c bit c of each record: for c = 2i + h
// the lo (h = 0) or hi (h = 1) bits of sample 32 g + i over the 64 variants, a word of that
// sample's row as it is stored. A thread transposes one such matrix in registers (the classic
// 6 rounds of swapping halves, as the host's), counts its 32 samples' calls and writes their
// words into their rows. The lanes of a warp take consecutive words g of the same records (their
// loads coalesced), so the flags of a word of variants are OR-ed across the warp before one
// atomic a warp.
//
//   R: (records, ld) uint64, record v's bytes as little-endian words from its first byte (bytes
//      past the record's end are not read as calls: samples from n_samples are skipped).
//   rows: (n_samples,) int32, the store row of each sample, or -1 (counted, not stored).
//   out: (store rows, 2 * n_words) uint64. first_word: the word of the block's first record.
//   flags: (3, n_words) uint64, bits OR-ed in for variants with a call 0 (11), 1 (10), 2 (00)
//      (the bits past the file's last variant are set too: the caller masks them).
//   missing: (1,) uint64, the missing calls (01) added in.
// Grid: x over words g (blockDim.x lanes), y over the block's words of variants.

template <int J>
__device__ __forceinline__ void swap_round(unsigned long long (&t)[64], unsigned long long mask) {
#pragma unroll
    for (int base = 0; base < 64; base += 2 * J) {
#pragma unroll
        for (int k = base; k < base + J; ++k) {
            const unsigned long long a = t[k], b = t[k + J];
            const unsigned long long s = ((a >> J) ^ b) & mask;
            t[k + J] = b ^ s;
            t[k] = a ^ (s << J);
        }
    }
}

__device__ __forceinline__ unsigned long long warp_or(unsigned long long x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x |= __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

extern "C" __global__ void __launch_bounds__(128) records_to_bits(
    const unsigned long long* __restrict__ R, long long ld, int n_records, long long n_samples,
    const int* __restrict__ rows, unsigned long long* __restrict__ out, long long n_words,
    long long first_word, unsigned long long* __restrict__ flags, unsigned long long* __restrict__ missing) {
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int w = blockIdx.y;
    const int v0 = 64 * w;
    const int valid = min(64, n_records - v0);
    const long long s0 = 32 * g;
    const bool active = s0 < n_samples;  // every lane stays for the warp's reductions
    unsigned long long t[64];
#pragma unroll
    for (int v = 0; v < 64; ++v) t[v] = (active && v < valid) ? R[(long long)(v0 + v) * ld + g] : 0ull;
    swap_round<32>(t, 0x00000000FFFFFFFFull);
    swap_round<16>(t, 0x0000FFFF0000FFFFull);
    swap_round<8>(t, 0x00FF00FF00FF00FFull);
    swap_round<4>(t, 0x0F0F0F0F0F0F0F0Full);
    swap_round<2>(t, 0x3333333333333333ull);
    swap_round<1>(t, 0x5555555555555555ull);
    unsigned long long hom0 = 0, het = 0, hom2 = 0, lost = 0;
    const long long word = first_word + w;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        if (active && s0 + i < n_samples) {
            const unsigned long long lo = t[2 * i], hi = t[2 * i + 1], both = lo & hi;
            hom0 |= both;         // 11: 0
            het |= hi ^ both;     // 10: 1
            hom2 |= ~(lo | hi);   // 00: 2
            lost += __popcll(lo ^ both);  // 01: missing
            const int r = rows[s0 + i];
            if (r >= 0) {
                unsigned long long* row = out + (long long)r * 2 * n_words + word;
                row[0] = lo;
                row[n_words] = hi;
            }
        }
    }
    hom0 = warp_or(hom0);
    het = warp_or(het);
    hom2 = warp_or(hom2);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) lost += __shfl_xor_sync(0xffffffffu, lost, off);
    if ((threadIdx.x & 31) == 0) {
        if (hom0) atomicOr(flags + word, hom0);
        if (het) atomicOr(flags + n_words + word, het);
        if (hom2) atomicOr(flags + 2 * n_words + word, hom2);
        if (lost) atomicAdd(missing, lost);
    }
}
