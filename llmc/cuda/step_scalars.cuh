// The scalars of a training step kept on the device, so that the host queues
// a step's micro-steps, its clip and its update without waiting for the GPU
// and reads them once, at the step's end: the mean loss of each forward,
// summed over its rows in a fixed order (no atomics), the sum of those means
// over the micro-steps, and the gradient clip (norm, scale, go-ahead) that
// the AdamW kernels read from device memory (llmc/cuda/adamw.cuh).
#ifndef FOLDNORM_STEP_SCALARS_CUH
#define FOLDNORM_STEP_SCALARS_CUH

#include <string.h>

#include "adamw.cuh"
#include "cuda_common.cuh"

typedef struct {
    double loss_sum; // the forwards' mean losses since the last reset (each a float first)
    double sumsq;    // the gradients' sum of squares (over the ranks, once reduced)
    double norm;     // sqrt(sumsq): the gradient norm before clipping
    float loss;      // the last forward's mean loss
    float step_loss; // loss_sum / micro-steps (the mean over the ranks, once reduced)
    AdamWClip clip;  // what AdamW reads
} StepScalars;

#define LOSS_MEAN_THREADS 256

// loss = sum(losses[0..n)) / counted (0 when counted == 0), then loss_sum +=
// loss, as the host did with the losses copied back. Fixed order, in double:
// thread t sums the contiguous rows [t q, (t + 1) q) in order (q = ceil(n /
// threads)), then a halving tree over the threads (t += t + h for h =
// threads / 2, ..., 1). One block.
__global__ void loss_mean_kernel(StepScalars *s, const float *losses, int n, int counted) {
    __shared__ double sums[LOSS_MEAN_THREADS];
    const int per = (n + LOSS_MEAN_THREADS - 1) / LOSS_MEAN_THREADS;
    const int i0 = threadIdx.x * per, i1 = min(n, i0 + per);
    double sum = 0.0;
    for (int i = i0; i < i1; i++) sum += (double)losses[i];
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int half = LOSS_MEAN_THREADS / 2; half > 0; half >>= 1) {
        if ((int)threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x != 0) return;
    const float mean = counted > 0 ? (float)(sums[0] / counted) : 0.0f;
    s->loss = mean;
    s->loss_sum += (double)mean;
}

// queues the mean of n per-row losses over counted rows into s (device)
static inline void step_loss_add(StepScalars *s, const float *losses, int n, int counted,
                                 cudaStream_t stream) {
    loss_mean_kernel<<<1, LOSS_MEAN_THREADS, 0, stream>>>(s, losses, n, counted);
    CUDA_CHECK_LAUNCH();
}

// step_loss = loss_sum / micro_steps, as a float (the ranks' mean follows on the device)
__global__ void step_loss_finish_kernel(StepScalars *s, int micro_steps) {
    if (threadIdx.x == 0 && blockIdx.x == 0) s->step_loss = (float)(s->loss_sum / micro_steps);
}
static inline void step_loss_finish(StepScalars *s, int micro_steps, cudaStream_t stream) {
    step_loss_finish_kernel<<<1, 32, 0, stream>>>(s, micro_steps);
    CUDA_CHECK_LAUNCH();
}

// norm = sqrt(sumsq) and the scale of clip_grad_scale (llmc/kernels/adamw.c),
// in double as there (IEEE division and square root: --use_fast_math changes
// only float math), so the same bits as the host computed; the update goes
// ahead when the norm and, with check_loss, the step's loss are finite, and
// neither is above its limit (-sl / -sg, llmc/core/outlier.h: the host's
// comparison (double)loss > loss_limit, (double)(float)norm > norm_limit; +inf: off).
__global__ void clip_kernel(StepScalars *s, float grad_clip, int check_loss, double loss_limit,
                            double norm_limit) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const double norm = sqrt(s->sumsq);
    float scale = 1.0f;
    if (grad_clip > 0.0f) {
        const double coef = (double)grad_clip / (norm + 1e-6);
        scale = coef < 1.0 ? (float)coef : 1.0f;
    }
    s->norm = norm;
    s->clip.scale = scale;
    const int outlier =
        (double)(float)norm > norm_limit || (check_loss && (double)s->step_loss > loss_limit);
    s->clip.apply = isfinite(norm) && (!check_loss || isfinite(s->step_loss)) && !outlier;
}

// queues the clip from s->sumsq (grad_clip <= 0: scale 1), the update gated
// by the limits on the loss and the norm
static inline void step_clip_gated(StepScalars *s, float grad_clip, int check_loss,
                                   double loss_limit, double norm_limit, cudaStream_t stream) {
    clip_kernel<<<1, 32, 0, stream>>>(s, grad_clip, check_loss, loss_limit, norm_limit);
    CUDA_CHECK_LAUNCH();
}

// queues the clip from s->sumsq (grad_clip <= 0: scale 1), no limits
static inline void step_clip(StepScalars *s, float grad_clip, int check_loss, cudaStream_t stream) {
    step_clip_gated(s, grad_clip, check_loss, INFINITY, INFINITY, stream);
}

// queues loss_sum = 0
static inline void step_loss_reset(StepScalars *s, cudaStream_t stream) {
    CUDA_CHECK(cudaMemsetAsync(&s->loss_sum, 0, sizeof(s->loss_sum), stream));
}

// The device scalars on the host (pinned), after the stream's work so far: the one wait.
static inline void step_scalars_to_host(StepScalars *host, const StepScalars *dev,
                                        cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(host, dev, sizeof(*host), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
}

// a zeroed StepScalars on the device and its pinned host copy
static inline void step_scalars_alloc(StepScalars **dev, StepScalars **host) {
    CUDA_CHECK(cudaMalloc((void **)dev, sizeof(StepScalars)));
    CUDA_CHECK(cudaMemset(*dev, 0, sizeof(StepScalars)));
    CUDA_CHECK(cudaMallocHost((void **)host, sizeof(StepScalars)));
    memset(*host, 0, sizeof(StepScalars));
}
static inline void step_scalars_free(StepScalars *dev, StepScalars *host) {
    if (dev != NULL) CUDA_CHECK(cudaFree(dev));
    if (host != NULL) CUDA_CHECK(cudaFreeHost(host));
}

#endif
