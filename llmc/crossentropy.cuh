// Fused softmax + cross-entropy over logits (N, Vp), the first V columns
// real (llmc/crossentropy.c). One block per row. A target < 0 masks the
// row: loss 0 and, in the backward, a zero gradient.
#ifndef FOLDNORM_CROSSENTROPY_CUH
#define FOLDNORM_CROSSENTROPY_CUH

#include "cuda_common.cuh"

#define CE_THREADS 512

// losses[n] = logsumexp(x) - x[target]; with write_grad, the row is
// overwritten by its gradient scale (softmax(x) - onehot(target)), zero in
// the padding columns V..Vp-1.
__global__ void crossentropy_kernel(float *losses, floatX *logits, const int *targets, int V,
                                    int Vp, float scale, int write_grad) {
    floatX *x = logits + (size_t)blockIdx.x * Vp;
    const int target = targets[blockIdx.x];
    if (target < 0) {
        if (threadIdx.x == 0) losses[blockIdx.x] = 0.0f;
        if (write_grad) {
            for (int i = threadIdx.x; i < Vp; i += blockDim.x) x[i] = from_float<floatX>(0.0f);
        }
        return;
    }
    float m = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, to_float(x[i]));
    m = block_max(m);
    float sum = 0.0f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) sum += expf(to_float(x[i]) - m);
    sum = block_sum(sum);
    const float x_target = to_float(x[target]);
    if (threadIdx.x == 0) losses[blockIdx.x] = logf(sum) + m - x_target;
    if (!write_grad) return;
    __syncthreads(); // every thread has read x[target] before it is overwritten
    const float inv = 1.0f / sum;
    for (int i = threadIdx.x; i < Vp; i += blockDim.x) {
        float g = i < V ? (expf(to_float(x[i]) - m) * inv - (i == target ? 1.0f : 0.0f)) * scale
                        : 0.0f;
        x[i] = from_float<floatX>(g);
    }
}

// losses (N) on the device; write_grad: logits become dlogits (scale each)
static inline void crossentropy_cuda(float *losses, floatX *logits, const int *targets, int N,
                                     int V, int Vp, float scale, int write_grad,
                                     cudaStream_t stream) {
    crossentropy_kernel<<<N, CE_THREADS, 0, stream>>>(losses, logits, targets, V, Vp, scale,
                                                      write_grad);
    CUDA_CHECK_LAUNCH();
}

#endif
