// The data parallel gradient reduction and AdamW step of the GPU image
// classifiers (llmc/cuda/classifier_cuda.cuh) over NCCL, train_vitcu's
// counterpart of llmc/cuda/grad_sync.cuh. -z 0: one all-reduce (mean) of the
// gradients after the backward, every rank updates every parameter.
// -z 1 (ZeRO-1, core/zero_layout.h, ZERO_TAIL): the device parameter vector
// of n values is one chunk, cut into world slices of n / world values plus a
// tail of n % world (< world) values;
// rank r owns slice r and the AdamW moments of slice r and of the tail. A
// step reduce-scatters the gradients (mean) into each rank's slice and
// all-reduces the tail, updates the rank's slice and the tail (the tail on
// every rank: the same gradients and moments give the same values), then
// all-gathers the slices in place. The gradient norm for clipping is the sum
// of the slices' squares over the ranks plus the tail's. The loss, the norm and
// the clip scale stay on the device (step_scalars.cuh): the host waits once a
// step, after the update is queued. cbwc's V = P W is
// re-projected from the gathered weights at the next forward (the -z 0 path
// fuses it into ViT's update; the same kernel, so the same V).
#ifndef FOLDNORM_VISION_GRAD_SYNC_CUH
#define FOLDNORM_VISION_GRAD_SYNC_CUH

#include "classifier_cuda.cuh"
#include "multi_gpu.cuh"
#include "reduce.cuh"
extern "C" {
#include "core/zero_layout.h"
}

typedef struct {
    MultiGpu *mg;
    ClassifierCuda *model;
    int sharded;              // ZeRO-1
    size_t n;                 // the device parameter vector
    size_t slice;             // n / world: each rank's part
    size_t tail;              // n - world * slice: updated on every rank
    size_t tail_at;           // world * slice: the tail's start in the vector
    size_t first;             // rank * slice: this rank's slice in the vector
    float *m_shard, *v_shard; // ZeRO-1: the moments of the slice, then of the tail
    double *sumsq;            // SUMSQ_BLOCKS partials
    float loss;               // the last step's loss (the mean over the ranks)
} VisionGradSync;

// zero_stage 1 with several ranks: ZeRO-1. A model resumed with moments
// (whole, on the device) hands this rank's part to the shard and frees them.
static inline void vision_grad_sync_init(VisionGradSync *gs, MultiGpu *mg, ClassifierCuda *model,
                                         int zero_stage) {
    memset(gs, 0, sizeof(*gs));
    gs->mg = mg;
    gs->model = model;
    gs->sharded = zero_stage == 1 && mg->world > 1;
    classifier_cuda_grads(model, &gs->n);
    gs->sumsq = cuda_alloc<double>(SUMSQ_BLOCKS);
    if (!gs->sharded) return;
    const ZeroSlice mine = zero_slice(0, gs->n, mg->rank, mg->world, ZERO_TAIL);
    gs->slice = mine.count;
    gs->first = mine.offset;
    gs->tail_at = zero_tail(0, gs->n, mg->world, ZERO_TAIL).offset;
    gs->tail = zero_tail(0, gs->n, mg->world, ZERO_TAIL).count;
    const size_t own = gs->slice + gs->tail;
    gs->m_shard = cuda_alloc_zeroed(own);
    gs->v_shard = cuda_alloc_zeroed(own);
    ClassifierCudaState st = classifier_cuda_state(model);
    if (*st.m == NULL) return;
    float *const whole[2] = {*st.m, *st.v}, *const shard[2] = {gs->m_shard, gs->v_shard};
    const size_t tail_at = gs->tail_at;
    for (int k = 0; k < 2; k++) {
        CUDA_CHECK(cudaMemcpy(shard[k], whole[k] + gs->first, gs->slice * sizeof(float),
                              cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaMemcpy(shard[k] + gs->slice, whole[k] + tail_at, gs->tail * sizeof(float),
                              cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaFree(whole[k]));
    }
    *st.m = NULL;
    *st.v = NULL;
}

static inline void vision_grad_sync_free(VisionGradSync *gs) {
    void *buffers[] = {gs->m_shard, gs->v_shard, gs->sumsq};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) {
        if (buffers[i] != NULL) CUDA_CHECK(cudaFree(buffers[i]));
    }
}

// The mean of the gradients over the ranks after the backward: all of them
// (-z 0), or this rank's slice and the tail (ZeRO-1).
static inline void vision_grad_sync_reduce(VisionGradSync *gs) {
    size_t count = 0;
    float *grads = classifier_cuda_grads(gs->model, &count);
    const cudaStream_t stream = classifier_cuda_stream(gs->model);
    if (!gs->sharded) {
        multi_gpu_average(gs->mg, grads, count, stream);
        return;
    }
#ifdef FOLDNORM_NCCL
    const size_t tail_at = gs->tail_at;
    NCCL_CHECK(ncclGroupStart());
    // in place: rank r's result lands at grads + r * slice
    NCCL_CHECK(ncclReduceScatter(grads, grads + gs->first, gs->slice, ncclFloat, ncclAvg,
                                 gs->mg->comm, stream));
    if (gs->tail > 0) {
        NCCL_CHECK(ncclAllReduce(grads + tail_at, grads + tail_at, gs->tail, ncclFloat, ncclAvg,
                                 gs->mg->comm, stream));
    }
    NCCL_CHECK(ncclGroupEnd());
#endif
}

// AdamW on the part [lo, lo + count) of the device vector whose moments are
// at m, v: each tensor's overlap with it, with that tensor's constants, the
// clip read from the device.
static inline void vision_grad_sync_update_part(VisionGradSync *gs, const AdamWConfig *cfg,
                                                const AdamWClip *clip, int adamw_step, size_t lo,
                                                size_t count, float *m, float *v) {
    ClassifierCuda *model = gs->model;
    ClassifierCudaState st = classifier_cuda_state(model);
    size_t n = 0;
    float *grads = classifier_cuda_grads(model, &n);
    const cudaStream_t stream = classifier_cuda_stream(model);
    const size_t hi = lo + count;
    for (int i = 0; i < classifier_cuda_num_tensors(model); i++) {
        size_t offset, size;
        int decayed;
        classifier_cuda_tensor(model, i, &offset, &size, &decayed);
        const size_t a = offset > lo ? offset : lo, b = offset + size < hi ? offset + size : hi;
        if (a >= b) continue;
        AdamWStep step = adamw_step_constants(cfg->learning_rate, cfg->beta1, cfg->beta2,
                                              cfg->eps, cfg->weight_decay, decayed, adamw_step,
                                              1.0f);
        step.clip = clip;
        // the floatX copy is refreshed whole after the all-gather
        adamw_update_cuda(st.params + a, NULL, grads + a, m + (a - lo), v + (a - lo), b - a, step,
                          stream);
    }
}

// One AdamW step after vision_grad_sync_reduce with global norm clipping
// (grad_clip <= 0: none), queued with its scalars: the loss of the step's
// forward (the mean over the ranks), the norm and the clip scale, computed
// on the GPU; AdamW skips the update when the loss or the norm is not
// finite. Then the step's one wait: returns the gradient norm before
// clipping, gs->loss the loss (either not finite: the update was skipped).
static inline float vision_grad_sync_update(VisionGradSync *gs, const AdamWConfig *cfg,
                                            float grad_clip) {
    size_t n = 0;
    float *grads = classifier_cuda_grads(gs->model, &n);
    const cudaStream_t stream = classifier_cuda_stream(gs->model);
    StepScalars *s = classifier_cuda_scalars(gs->model);
    step_loss_finish(s, 1, stream); // one forward a step
#ifdef FOLDNORM_NCCL
    if (gs->mg->world > 1) {
        NCCL_CHECK(ncclAllReduce(&s->step_loss, &s->step_loss, 1, ncclFloat, ncclAvg,
                                 gs->mg->comm, stream));
    }
#endif
    if (!gs->sharded) {
        sum_of_squares_device(&s->sumsq, 0, grads, n, gs->sumsq, stream);
        step_clip(s, grad_clip, 1, stream);
        classifier_cuda_update_queued(gs->model, cfg);
    } else {
        const size_t tail_at = gs->tail_at;
        sum_of_squares_device(&s->sumsq, 0, grads + gs->first, gs->slice, gs->sumsq, stream);
#ifdef FOLDNORM_NCCL
        NCCL_CHECK(ncclAllReduce(&s->sumsq, &s->sumsq, 1, ncclDouble, ncclSum, gs->mg->comm,
                                 stream));
#endif
        if (gs->tail > 0) {
            sum_of_squares_device(&s->sumsq, 1, grads + tail_at, gs->tail, gs->sumsq, stream);
        }
        step_clip(s, grad_clip, 1, stream);
        ClassifierCudaState st = classifier_cuda_state(gs->model);
        *st.adamw_step += 1;
        vision_grad_sync_update_part(gs, cfg, &s->clip, *st.adamw_step, gs->first, gs->slice,
                                     gs->m_shard, gs->v_shard);
        vision_grad_sync_update_part(gs, cfg, &s->clip, *st.adamw_step, tail_at, gs->tail,
                                     gs->m_shard + gs->slice, gs->v_shard + gs->slice);
#ifdef FOLDNORM_NCCL
        // in place: rank r's slice is already at params + r * slice
        NCCL_CHECK(ncclAllGather(st.params + gs->first, st.params, gs->slice, ncclFloat,
                                 gs->mg->comm, stream));
#endif
        classifier_cuda_params_changed(gs->model);
    }
    StepScalars *host = classifier_cuda_scalars_host(gs->model);
    step_scalars_to_host(host, s, stream); // the step's one wait
    gs->loss = host->step_loss;
    return (float)host->norm;
}

// The AdamW moments whole on the host in file order (a checkpoint; every
// rank must call it when sharded): host_m, host_v hold the file's parameter
// count each. Returns 0 when there are none yet (no update so far), else 1.
static inline int vision_grad_sync_moments_to_host(VisionGradSync *gs, float *host_m,
                                                   float *host_v) {
    ClassifierCudaState st = classifier_cuda_state(gs->model);
    if (!gs->sharded) {
        if (*st.m == NULL) return 0;
        classifier_cuda_vector_to_host(gs->model, host_m, *st.m);
        classifier_cuda_vector_to_host(gs->model, host_v, *st.v);
        return 1;
    }
    const cudaStream_t stream = classifier_cuda_stream(gs->model);
    const size_t tail_at = gs->tail_at;
    float *whole = cuda_alloc_zeroed(gs->n); // Swin's padding stays zero
    const float *const shard[2] = {gs->m_shard, gs->v_shard};
    float *const host[2] = {host_m, host_v};
    for (int k = 0; k < 2; k++) {
#ifdef FOLDNORM_NCCL
        NCCL_CHECK(ncclAllGather(shard[k], whole, gs->slice, ncclFloat, gs->mg->comm, stream));
#endif
        CUDA_CHECK(cudaMemcpyAsync(whole + tail_at, shard[k] + gs->slice, gs->tail * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        classifier_cuda_vector_to_host(gs->model, host[k], whole);
    }
    CUDA_CHECK(cudaFree(whole));
    return 1;
}

#endif
