// genotile: bit planes from uint8 codes on the device (the `pack` step), warp-ballot packing.
//
// One warp builds one uint64 word of one plane segment of one row: lane l tests field
// 64 w + l and field 64 w + 32 + l; two __ballot_sync give the low and the high 32 bits.
// Bit layout as pack.py: field f of the segment is bit f % 64 of word f / 64 (little-endian),
// bits past the segment's n_fields are 0 (the padding of the last word).
//
//   codes: (rows, ld_codes) uint8, row-major (a chunk of vectors).
//   Field f of the segment reads kept column k = src0 + f: the code codes[row, order[k]]
//   (order null: column k itself), mapped through ranks[k * 256 + code] when ranks is not
//   null (categorical stores: the symbol's rank in its column, 255 for absent / missing).
//   kind, with x = the (ranked) code and MISSING = 255:
//     0: x != MISSING            (V; categorical present)
//     1: x != MISSING && x >= 1  (categorical N: present and not the major symbol)
//     2: x == t                  (categorical S_t; genotype Het with t = 1, Hom0 with t = 0, H with t = 2)
//     3: x == 1 || x == 2        (genotype L)
//   out: (rows, ld_out) uint64; the segment's words are out[row, dst0 : dst0 + n_words].

typedef unsigned long long u64;

extern "C" __global__ void __launch_bounds__(256)
pack_planes(const unsigned char* __restrict__ codes, long long ld_codes, int rows,
            const long long* __restrict__ order, const unsigned char* __restrict__ ranks,
            int kind, int t, long long src0, long long n_fields,
            u64* __restrict__ out, long long ld_out, long long dst0, long long n_words) {
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long n_warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long total = (long long)rows * n_words;
    for (long long task = warp; task < total; task += n_warps) {  // uniform across the warp
        const long long row = task / n_words;
        const long long w = task - row * n_words;
        const unsigned char* crow = codes + row * ld_codes;
        unsigned half_bits[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const long long f = 64 * w + 32 * h + lane;
            bool bit = false;
            if (f < n_fields) {
                const long long k = src0 + f;
                unsigned x = crow[order ? order[k] : k];
                if (ranks) x = ranks[k * 256 + x];
                switch (kind) {
                    case 0: bit = x != 255u; break;
                    case 1: bit = x != 255u && x >= 1u; break;
                    case 2: bit = x == (unsigned)t; break;
                    default: bit = x == 1u || x == 2u; break;
                }
            }
            half_bits[h] = __ballot_sync(0xffffffffu, bit);
        }
        if (lane == 0) out[row * ld_out + dst0 + w] = (u64)half_bits[0] | ((u64)half_bits[1] << 32);
    }
}
