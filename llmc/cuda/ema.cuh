// The EMA of the weights' update on the GPU (-ema): ema = decay * ema +
// (1 - decay) * w over n fp32 values, one thread a value. Its CPU oracle is
// llmc/core/ema.c's ema_update (dev/cuda/vit_kernels.cu checks and times it);
// llmc/cuda/vision_ema.cuh runs it over the trainer's layout.
#ifndef FOLDNORM_EMA_CUH
#define FOLDNORM_EMA_CUH

#include "cuda_common.cuh"

__global__ void ema_update_kernel(float *ema, const float *weights, size_t n, float keep,
                                  float take) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ema[i] = keep * ema[i] + take * weights[i];
}

// queued on stream; nothing for n = 0
static inline void ema_update_cuda(float *ema, const float *weights, size_t n, float decay,
                                   cudaStream_t stream) {
    if (n == 0) return;
    ema_update_kernel<<<ceil_div((long long)n, 256), 256, 0, stream>>>(ema, weights, n, decay,
                                                                      1.0f - decay);
    CUDA_CHECK_LAUNCH();
}

#endif
