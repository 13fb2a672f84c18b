// Stochastic depth on the GPU (llmc/kernels/drop_path.h): a residual branch
// of B samples times one scale per sample, read from the (B, blocks, 2)
// scales the host drew (drop_path_draw), so the GPU applies the CPU's masks.
// One fp32 multiply per value, as the CPU's s * branch; in bf16 the product is
// rounded to bf16 once.
#ifndef FOLDNORM_DROP_PATH_CUH
#define FOLDNORM_DROP_PATH_CUH

#include "cuda_common.cuh"

// out[b, i] = scales[b * stride] * in[b, i] for n = B * per_sample values
__global__ void drop_path_scale_kernel(floatX *out, const floatX *in, const float *scales,
                                       size_t stride, size_t per_sample, size_t n) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        out[i] = from_float<floatX>(scales[(i / per_sample) * stride] * to_float(in[i]));
    }
}

// out = the branch in scaled per sample (out may be in)
static inline void drop_path_scale_cuda(floatX *out, const floatX *in, const float *scales,
                                        size_t stride, int B, size_t per_sample, cudaStream_t st) {
    const size_t n = (size_t)B * per_sample;
    if (n == 0) return;
    const int threads = 256;
    const size_t blocks = (n + threads - 1) / threads;
    const int grid = blocks < 8192 ? (int)blocks : 8192; // grid-stride beyond
    drop_path_scale_kernel<<<grid, threads, 0, st>>>(out, in, scales, stride, per_sample, n);
    CUDA_CHECK_LAUNCH();
}

#endif
