// genotile: where each integer bincount's shared-memory window starts (tile_select.cu reads it as
// `hist_base`): the sub-tile's mean count, rounded half up, less half the window, at least 0.
//
// A hint for speed only: tile_select counts a value outside the window in global memory, so any
// start gives the same histogram. A kernel of its own because cupy's mean() imports cupyx, and
// with it SciPy, the first time a process calls it: about a second of every GPU tile job.
//
// window_start_i32 / window_start_i64: counts, row-major int32 / int64, `size` values (>= 0, as
// counts are); scratch: two unsigned long longs, zero on entry and left zero (a running sum and
// the blocks done); base: the tile's int64 window starts, of which base[k] is written. One launch:
// every block adds its sum, and the last block to finish writes the start.

template <typename T>
__device__ void window_start(const T* __restrict__ counts, long long size, long long half,
                             unsigned long long* scratch, long long* base, int k) {
    unsigned long long s = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < size; i += stride)
        s += (unsigned long long)counts[i];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    __shared__ unsigned long long warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp != 0) return;
    s = lane < (int)((blockDim.x + 31) >> 5) ? warp_sums[lane] : 0ull;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane != 0) return;
    atomicAdd(&scratch[0], s);
    __threadfence();  // this block's sum is seen before its count
    if (atomicAdd(&scratch[1], 1ull) != gridDim.x - 1) return;
    const unsigned long long total = atomicAdd(&scratch[0], 0ull);  // the last block: every sum is in
    const long long mean = size > 0 ? (long long)((total + (unsigned long long)size / 2) / (unsigned long long)size) : 0;
    base[k] = mean > half ? mean - half : 0;
    scratch[0] = 0ull;
    scratch[1] = 0ull;
}

extern "C" __global__ void window_start_i32(const int* __restrict__ counts, long long size, long long half,
                                            unsigned long long* scratch, long long* base, int k) {
    window_start<int>(counts, size, half, scratch, base, k);
}

extern "C" __global__ void window_start_i64(const long long* __restrict__ counts, long long size,
                                            long long half, unsigned long long* scratch, long long* base,
                                            int k) {
    window_start<long long>(counts, size, half, scratch, base, k);
}
