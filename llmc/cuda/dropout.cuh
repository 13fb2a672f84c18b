// Train-mode (inverted) dropout on the GPU with the CPU's stateless mask
// (llmc/kernels/dropout.c): element i of mask stream s is kept iff
// u(seed, s, i) >= p, a kept value is scaled by 1/(1-p). u is the same
// splitmix64 hash as dropout_uniform, so the GPU draws the CPU's masks bit for
// bit (test/test_gpt2.cu --dropout checks it), whatever the launch shape; the
// backward recomputes the forward's mask from (seed, stream) alone.
#ifndef FOLDNORM_DROPOUT_CUH
#define FOLDNORM_DROPOUT_CUH

#include <stdint.h>

#include "cuda_common.cuh"

extern "C" {
#include "kernels/dropout.h"
}

#define DROPOUT_GOLDEN_GAMMA 0x9E3779B97F4A7C15ull

// splitmix64's finaliser, as mix64 in llmc/kernels/dropout.c (integer
// arithmetic only: the same bits on the host and the device)
__host__ __device__ inline uint64_t dropout_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// out[i] = in[i] * keep_i * scale, key = mix64(seed + gamma (stream + 1)).
// u: the top 24 bits of the element's hash times 2^-24, exact in fp32 and
// equal to dropout.c's division by 2^24 (a multiplication by a power of two
// is exact, also under --use_fast_math, where '/' may be approximate).
// in * scale is one fp32 multiply, as on the CPU, so the fp32 build's output
// equals dropout_apply's; in bf16 the product is rounded to bf16 once.
__device__ inline void dropout_grid(floatX *out, const floatX *in, size_t n, float p, float scale,
                                    uint64_t key) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint64_t h = dropout_mix64(key + DROPOUT_GOLDEN_GAMMA * (uint64_t)(i + 1));
        const float u = (float)(h >> 40) * 0x1p-24f;
        out[i] = from_float<floatX>(u >= p ? to_float(in[i]) * scale : 0.0f);
    }
}
__global__ void dropout_kernel(floatX *out, const floatX *in, size_t n, float p, float scale,
                               uint64_t key) {
    dropout_grid(out, in, n, p, scale, key);
}
// the key read from device memory: a launch captured in a CUDA graph draws
// the masks of whatever draw the host wrote there before the graph's launch
__global__ void dropout_device_key_kernel(floatX *out, const floatX *in, size_t n, float p,
                                          float scale, const uint64_t *key) {
    dropout_grid(out, in, n, p, scale, *key);
}

// the mask key of stream `stream` under `seed` (the kernels hash it with each index)
static inline uint64_t dropout_key(uint64_t seed, uint64_t stream) {
    return dropout_mix64(seed + DROPOUT_GOLDEN_GAMMA * (stream + 1));
}

static inline int dropout_grid_blocks(size_t n) {
    const size_t blocks = (n + 255) / 256;
    return blocks < 8192 ? (int)blocks : 8192; // grid-stride beyond
}

// out = dropout(in) with mask stream `stream` (out may be in); 0 <= p < 1
static inline void dropout_cuda(floatX *out, const floatX *in, size_t n, float p, uint64_t seed,
                                uint64_t stream, cudaStream_t st) {
    if (n == 0) return;
    const float scale = 1.0f / (1.0f - p); // dropout_apply's scale, bit for bit
    dropout_kernel<<<dropout_grid_blocks(n), 256, 0, st>>>(out, in, n, p, scale,
                                                           dropout_key(seed, stream));
    CUDA_CHECK_LAUNCH();
}

// dropout_cuda with the key (dropout_key) in device memory at key_dev
static inline void dropout_device_key_cuda(floatX *out, const floatX *in, size_t n, float p,
                                           const uint64_t *key_dev, cudaStream_t st) {
    if (n == 0) return;
    const float scale = 1.0f / (1.0f - p);
    dropout_device_key_kernel<<<dropout_grid_blocks(n), 256, 0, st>>>(out, in, n, p, scale, key_dev);
    CUDA_CHECK_LAUNCH();
}

#endif
