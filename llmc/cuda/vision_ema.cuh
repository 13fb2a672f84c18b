// The EMA of the weights on the GPU (train_vitcu -ema; llmc/core/ema.h, the
// CPU's update, is its oracle): ema = decay * ema + (1 - decay) * w over the
// fp32 master weights after each AdamW step (the kernel: ema.cuh). Without ZeRO-1 the EMA is one
// vector in the device layout; under ZeRO-1 (llmc/cuda/vision_grad_sync.cuh)
// each rank keeps the EMA of what it updates, its slice then the tail, as it
// keeps the AdamW moments, and a test of the EMA or a checkpoint all-gathers
// the slices as the step gathers the weights.
#ifndef FOLDNORM_VISION_EMA_CUH
#define FOLDNORM_VISION_EMA_CUH

#include "ema.cuh"
#include "vision_grad_sync.cuh"
extern "C" {
#include "core/ema.h"
}

typedef struct {
    VisionGradSync *gs; // the layout (sharded or not) and the model
    float decay;        // in (0, 1)
    float *values;      // the whole vector (device layout), or ZeRO-1's slice then the tail
} VisionEmaCuda;

// The device EMA from a host one (file order: a new run's copy of the
// weights, or a checkpoint's), this rank's part of it under ZeRO-1.
static inline void vision_ema_cuda_init(VisionEmaCuda *e, VisionGradSync *gs,
                                        const WeightEma *host) {
    memset(e, 0, sizeof(*e));
    e->gs = gs;
    e->decay = host->decay;
    float *whole = cuda_alloc<float>(gs->n);
    classifier_cuda_vector_from_host(gs->model, whole, host->values);
    if (!gs->sharded) {
        e->values = whole;
        return;
    }
    e->values = cuda_alloc<float>(gs->slice + gs->tail);
    CUDA_CHECK(cudaMemcpy(e->values, whole + gs->first, gs->slice * sizeof(float),
                          cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaMemcpy(e->values + gs->slice, whole + gs->tail_at, gs->tail * sizeof(float),
                          cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaFree(whole));
}

static inline void vision_ema_cuda_free(VisionEmaCuda *e) {
    if (e->values != NULL) CUDA_CHECK(cudaFree(e->values));
    e->values = NULL;
}

// Queued after vision_grad_sync_update: the EMA of the weights this rank updated.
static inline void vision_ema_cuda_update(VisionEmaCuda *e) {
    VisionGradSync *gs = e->gs;
    const float *params = classifier_cuda_state(gs->model).params;
    const cudaStream_t stream = classifier_cuda_stream(gs->model);
    if (!gs->sharded) {
        ema_update_cuda(e->values, params, gs->n, e->decay, stream);
        return;
    }
    ema_update_cuda(e->values, params + gs->first, gs->slice, e->decay, stream);
    ema_update_cuda(e->values + gs->slice, params + gs->tail_at, gs->tail, e->decay, stream);
}

// The whole EMA in the device layout into dst (n values), queued; every rank
// must call it under ZeRO-1 (an all-gather).
static inline void vision_ema_cuda_whole(VisionEmaCuda *e, float *dst) {
    VisionGradSync *gs = e->gs;
    const cudaStream_t stream = classifier_cuda_stream(gs->model);
    if (!gs->sharded) {
        CUDA_CHECK(cudaMemcpyAsync(dst, e->values, gs->n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream));
        return;
    }
#ifdef FOLDNORM_NCCL
    NCCL_CHECK(ncclAllGather(e->values, dst, gs->slice, ncclFloat, gs->mg->comm, stream));
#endif
    CUDA_CHECK(cudaMemcpyAsync(dst + gs->tail_at, e->values + gs->slice, gs->tail * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream));
}

// The whole EMA on the host in file order (a checkpoint; every rank calls it).
static inline void vision_ema_cuda_to_host(VisionEmaCuda *e, float *host) {
    float *whole = cuda_alloc_zeroed(e->gs->n); // Swin's padding stays zero
    vision_ema_cuda_whole(e, whole);
    classifier_cuda_vector_to_host(e->gs->model, host, whole); // waits for the stream
    CUDA_CHECK(cudaFree(whole));
}

// Swaps the EMA into the model's fp32 master weights for a test pass
// (in = 1: the live weights are kept in *saved, allocated here) and back
// (in = 0: restored from *saved, freed), the floatX copy and cbwc's V following.
static inline void vision_ema_cuda_swap(VisionEmaCuda *e, int in, float **saved) {
    VisionGradSync *gs = e->gs;
    float *params = classifier_cuda_state(gs->model).params;
    const cudaStream_t stream = classifier_cuda_stream(gs->model);
    const size_t bytes = gs->n * sizeof(float);
    if (in) {
        *saved = cuda_alloc<float>(gs->n);
        CUDA_CHECK(cudaMemcpyAsync(*saved, params, bytes, cudaMemcpyDeviceToDevice, stream));
        vision_ema_cuda_whole(e, params);
    } else {
        CUDA_CHECK(cudaMemcpyAsync(params, *saved, bytes, cudaMemcpyDeviceToDevice, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        CUDA_CHECK(cudaFree(*saved));
        *saved = NULL;
    }
    classifier_cuda_params_changed(gs->model);
}

#endif
