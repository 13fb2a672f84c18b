// Label-smoothed cross-entropy of a classifier head on the GPU
// (llmc/kernels/classifier_loss.c): q = (1 - s) onehot(y) + s / K,
//   loss_n = lse(z_n) - (1 - s) z_ny - (s / K) sum_k z_nk,
//   dz_nk = scale (softmax(z_n)_k - q_k);
// with mixed targets (mixup / cutmix: labels2, lam), z_ny becomes
// lam_n z_ny + (1 - lam_n) z_ny2 and q = s / K + (1 - s) (lam_n onehot(y) + (1 - lam_n) onehot(y2)).
// One warp per image (K is small: tens to a thousand classes).
#ifndef FOLDNORM_CLASSIFIER_LOSS_CUH
#define FOLDNORM_CLASSIFIER_LOSS_CUH

#include "cuda_common.cuh"

extern "C" {
#include "kernels/classifier_loss.h"
}

// losses (N) fp32; dlogits (N, K) written when not NULL
// labels2, lam (N): the mixed targets, or both NULL
__global__ void classifier_loss_kernel(float *losses, floatX *dlogits, const floatX *logits,
                                       const int *labels, const int *labels2, const float *lam,
                                       float smoothing, float scale, int N, int K) {
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
    const int y2 = labels2 != NULL ? labels2[n] : y;
    const float w = labels2 != NULL ? lam[n] : 1.0f; // the weight of y
    if (lane == 0) {
        const float lse = m + logf(sum_exp);
        const float z_mix = w * to_float(z[y]) + (1.0f - w) * to_float(z[y2]);
        losses[n] = lse - (1.0f - smoothing) * z_mix - smoothing * sum_z / (float)K;
    }
    if (dlogits == NULL) return;
    for (int k = lane; k < K; k += 32) {
        const float p = expf(to_float(z[k]) - m) / sum_exp;
        const float hot = (k == y ? w : 0.0f) + (k == y2 ? 1.0f - w : 0.0f);
        const float q = smoothing / (float)K + (1.0f - smoothing) * hot;
        dlogits[(size_t)n * K + k] = from_float<floatX>(scale * (p - q));
    }
}

// A model's mixed targets on the device: room for max_B of each (the
// model's free list releases them), active after a classifier_mix_upload of a mixed batch.
struct MixTargetsCuda {
    int *labels2;
    float *lam;
    int active;
};

static inline void classifier_mix_alloc(MixTargetsCuda *m, int max_B) {
    CUDA_CHECK(cudaMalloc(&m->labels2, (size_t)max_B * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&m->lam, (size_t)max_B * sizeof(float)));
    m->active = 0;
}

// The host's mixed targets of B images (kernels/classifier_loss.h) copied in
// stream order, or none when mix.labels2 is NULL.
static inline void classifier_mix_upload(MixTargetsCuda *m, MixTargets mix, int B,
                                         cudaStream_t stream) {
    m->active = mix.labels2 != NULL;
    if (!m->active) return;
    CUDA_CHECK(cudaMemcpyAsync(m->labels2, mix.labels2, (size_t)B * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(m->lam, mix.lam, (size_t)B * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
}

// losses (N) and, with dlogits != NULL, dlogits = scale dloss_n/dlogits;
// mix NULL or inactive: one label a row
static inline void classifier_loss_cuda(float *losses, floatX *dlogits, const floatX *logits,
                                        const int *labels, const MixTargetsCuda *mix,
                                        float smoothing, float scale, int N, int K,
                                        cudaStream_t stream) {
    const int mixed = mix != NULL && mix->active;
    classifier_loss_kernel<<<ceil_div(N, 4), 128, 0, stream>>>(
        losses, dlogits, logits, labels, mixed ? mix->labels2 : NULL, mixed ? mix->lam : NULL,
        smoothing, scale, N, K);
    CUDA_CHECK_LAUNCH();
}

#endif
