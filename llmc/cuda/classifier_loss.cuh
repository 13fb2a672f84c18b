// Label-smoothed cross-entropy of a classifier head on the GPU
// (llmc/kernels/classifier_loss.c): q = (1 - s) onehot(y) + s / K,
//   loss_n = lse(z_n) - (1 - s) z_ny - (s / K) sum_k z_nk,
//   dz_nk = scale (softmax(z_n)_k - q_k).
// One warp per image (K is small: tens to a thousand classes).
#ifndef FOLDNORM_CLASSIFIER_LOSS_CUH
#define FOLDNORM_CLASSIFIER_LOSS_CUH

#include "cuda_common.cuh"

// losses (N) fp32; dlogits (N, K) written when not NULL
__global__ void classifier_loss_kernel(float *losses, floatX *dlogits, const floatX *logits,
                                       const int *labels, float smoothing, float scale, int N,
                                       int K) {
    const int lane = threadIdx.x % 32;
    const int n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (n >= N) return;
    const floatX *z = logits + (size_t)n * K;
    float m = -INFINITY;
    for (int k = lane; k < K; k += 32) m = fmaxf(m, to_float(z[k]));
    m = warp_max(m);
    float sum_exp = 0.0f, sum_z = 0.0f;
    for (int k = lane; k < K; k += 32) {
        sum_exp += expf(to_float(z[k]) - m);
        sum_z += to_float(z[k]);
    }
    sum_exp = warp_sum(sum_exp);
    sum_z = warp_sum(sum_z);
    const int y = labels[n];
    if (lane == 0) {
        const float lse = m + logf(sum_exp);
        losses[n] = lse - (1.0f - smoothing) * to_float(z[y]) - smoothing * sum_z / (float)K;
    }
    if (dlogits == NULL) return;
    for (int k = lane; k < K; k += 32) {
        const float p = expf(to_float(z[k]) - m) / sum_exp;
        const float q = smoothing / (float)K + (k == y ? 1.0f - smoothing : 0.0f);
        dlogits[(size_t)n * K + k] = from_float<floatX>(scale * (p - q));
    }
}

// losses (N) and, with dlogits != NULL, dlogits = scale dloss_n/dlogits
static inline void classifier_loss_cuda(float *losses, floatX *dlogits, const floatX *logits,
                                        const int *labels, float smoothing, float scale, int N,
                                        int K, cudaStream_t stream) {
    classifier_loss_kernel<<<ceil_div(N, 4), 128, 0, stream>>>(losses, dlogits, logits, labels,
                                                               smoothing, scale, N, K);
    CUDA_CHECK_LAUNCH();
}

#endif
