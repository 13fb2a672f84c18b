// AdamW on the GPU as torch.optim.AdamW (llmc/kernels/adamw.c): fp32 master weights,
// moments and gradients; decoupled decay p *= 1 - lr wd, then
// p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps). The floatX copy
// the kernels read is rewritten in the same pass (bf16 builds).
#ifndef FOLDNORM_ADAMW_CUH
#define FOLDNORM_ADAMW_CUH

#include <math.h>

#include "cuda_common.cuh"

// The clip AdamW reads from device memory when it is computed on the GPU
// (llmc/cuda/step_scalars.cuh): the gradients' scale, and whether the update
// runs at all (0 after a non-finite loss or norm: nothing is written).
typedef struct {
    float scale;
    int apply;
} AdamWClip;

// the per-step constants of one tensor's update
typedef struct {
    float beta1, beta2, eps;
    float decay;                 // 1 - lr wd, or 1 without decay
    float step_size;             // lr / (1 - beta1^t)
    float bias_correction2_sqrt; // sqrt(1 - beta2^t)
    float grad_scale;            // global-norm clipping
    const AdamWClip *clip;       // device: read instead of grad_scale when not NULL
} AdamWStep;

static inline AdamWStep adamw_step_constants(float lr, float beta1, float beta2, float eps,
                                             float weight_decay, int decay_on, int t,
                                             float grad_scale) {
    AdamWStep a;
    a.beta1 = beta1;
    a.beta2 = beta2;
    a.eps = eps;
    a.decay = decay_on ? 1.0f - lr * weight_decay : 1.0f;
    a.step_size = lr / (1.0f - powf(beta1, (float)t));
    a.bias_correction2_sqrt = sqrtf(1.0f - powf(beta2, (float)t));
    a.grad_scale = grad_scale;
    a.clip = NULL;
    return a;
}

// the clip computed on the GPU called the update off
__device__ inline bool adamw_skipped(const AdamWStep &a) {
    return a.clip != NULL && !a.clip->apply;
}

// the update of one parameter; m and v updated in place
__device__ inline float adamw_apply(float p, float g, float *m, float *v, const AdamWStep &a) {
    g *= a.clip != NULL ? a.clip->scale : a.grad_scale;
    p *= a.decay;
    const float mi = a.beta1 * *m + (1.0f - a.beta1) * g;
    const float vi = a.beta2 * *v + (1.0f - a.beta2) * g * g;
    *m = mi;
    *v = vi;
    return p - a.step_size * mi / (sqrtf(vi) / a.bias_correction2_sqrt + a.eps);
}

__global__ void adamw_kernel(float *params, floatX *params_x, const float *grads, float *m,
                             float *v, size_t n, AdamWStep a) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || adamw_skipped(a)) return;
    const float updated = adamw_apply(params[i], grads[i], m + i, v + i, a);
    params[i] = updated;
    if (params_x != NULL) params_x[i] = from_float<floatX>(updated);
}

// one step t (1-based) over n parameters; params_x may be NULL (fp32 builds)
static inline void adamw_update_cuda(float *params, floatX *params_x, const float *grads, float *m,
                                     float *v, size_t n, const AdamWStep &a, cudaStream_t stream) {
    adamw_kernel<<<ceil_div((long long)n, 256), 256, 0, stream>>>(params, params_x, grads, m, v, n,
                                                                  a);
    CUDA_CHECK_LAUNCH();
}

// The update of one rank's slices of a tensor stored as chunks (a ZeRO-1
// shard, llmc/cuda/zero_shard.cuh): compact index j (grads, m, v) is element
// j % slice of the rank's slice of chunk j / slice, at flat index
// (j / slice) chunk_n + rank_offset + j % slice of params. One rank
// (slice == chunk_n, rank_offset 0): j is the flat index, as adamw_kernel.
// The chunk is the grid's y (a chunk's slice its x), so no element pays for
// a 64-bit divide and modulo.
__global__ void adamw_slices_kernel(float *params, floatX *params_x, const float *grads, float *m,
                                    float *v, size_t chunk_n, size_t slice, size_t rank_offset,
                                    AdamWStep a) {
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; // within the slice
    if (k >= slice || adamw_skipped(a)) return;
    const size_t chunk = blockIdx.y;
    const size_t j = chunk * slice + k, i = chunk * chunk_n + rank_offset + k;
    const float updated = adamw_apply(params[i], grads[j], m + j, v + j, a);
    params[i] = updated;
    if (params_x != NULL) params_x[i] = from_float<floatX>(updated);
}

// count = chunks x slice compact values (a multiple of slice)
static inline void adamw_slices_cuda(float *params, floatX *params_x, const float *grads, float *m,
                                     float *v, size_t count, size_t chunk_n, size_t slice,
                                     size_t rank_offset, const AdamWStep &a, cudaStream_t stream) {
    if (count == 0) return;
    if (slice == 0 || count % slice != 0) {
        fprintf(stderr, "error: adamw_slices_cuda: %zu values are not whole slices of %zu\n",
                count, slice);
        exit(EXIT_FAILURE);
    }
    const size_t chunks = count / slice;
    for (size_t c0 = 0; c0 < chunks; c0 += 65535) { // the grid's y limit
        const size_t n = chunks - c0 < 65535 ? chunks - c0 : 65535;
        const dim3 grid((unsigned)ceil_div((long long)slice, 256), (unsigned)n);
        adamw_slices_kernel<<<grid, 256, 0, stream>>>(
            params + c0 * chunk_n, params_x == NULL ? NULL : params_x + c0 * chunk_n,
            grads + c0 * slice, m + c0 * slice, v + c0 * slice, chunk_n, slice, rank_offset, a);
        CUDA_CHECK_LAUNCH();
    }
}

#endif
