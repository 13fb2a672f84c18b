// The data parallel gradient reduction of GPT2Cuda over NCCL, overlapped with
// the backward: when a layer's gradients are final (GPT2Cuda.grads_ready), an
// event on the compute stream orders the reduction of that layer's chunks
// (zero_shard.cuh) on a stream of its own, while the compute stream goes on
// with the layers below. ZeRO-1: reduce-scatter each chunk into the rank's
// compact shard (the mean over the ranks), AdamW on the shard, all-gather
// the parameters in the compute precision (the floatX copy every forward
// reads: bf16 in bf16 builds; the fp32 master stays per rank, gathered for a
// checkpoint); else all-reduce each chunk in place, every rank updates all.
// grad_sync_wait puts the compute stream behind the reductions.
#ifndef FOLDNORM_GRAD_SYNC_CUH
#define FOLDNORM_GRAD_SYNC_CUH

#include "gpt2_cuda.cuh"
#include "multi_gpu.cuh"

typedef struct {
    MultiGpu *mg;
    GPT2Cuda *model;
    int sharded;            // ZeRO-1
    cudaStream_t comm;      // the reductions' stream
    cudaEvent_t grads_done; // recorded on the compute stream: a group of gradients is final
    cudaEvent_t comm_done;  // recorded on comm: the reductions issued so far are done
} GradSync;

// zero_stage 1: ZeRO-1 (sets the model's sharding), 0: all-reduce
static inline void grad_sync_init(GradSync *gs, MultiGpu *mg, GPT2Cuda *model, int zero_stage) {
    memset(gs, 0, sizeof(*gs));
    gs->mg = mg;
    gs->model = model;
    gs->sharded = zero_stage == 1 && mg->world > 1;
    if (gs->sharded) gpt2cuda_set_sharding(model, mg->rank, mg->world);
    CUDA_CHECK(cudaStreamCreateWithFlags(&gs->comm, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&gs->grads_done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&gs->comm_done, cudaEventDisableTiming));
}

static inline void grad_sync_free(GradSync *gs) {
    CUDA_CHECK(cudaEventDestroy(gs->grads_done));
    CUDA_CHECK(cudaEventDestroy(gs->comm_done));
    CUDA_CHECK(cudaStreamDestroy(gs->comm));
}

// GPT2Cuda.grads_ready: reduce the group on the comm stream, after the compute
// stream's work so far
static inline void grad_sync_layer_ready(void *ctx, int layer) {
    GradSync *gs = (GradSync *)ctx;
    if (gs->mg->world == 1) return;
#ifdef FOLDNORM_NCCL
    GPT2Cuda *m = gs->model;
    const int L = m->config.num_layers;
    CUDA_CHECK(cudaEventRecord(gs->grads_done, m->mm.stream));
    CUDA_CHECK(cudaStreamWaitEvent(gs->comm, gs->grads_done, 0));
    int tensors[GPT2_NUM_PARAM_TENSORS];
    const int n = gpt2_grads_ready_group(layer, L, tensors);
    NCCL_CHECK(ncclGroupStart());
    for (int k = 0; k < n; k++) {
        const ShardTensor *t = &m->shard.tensors[tensors[k]];
        const int c = t->chunks == 1 ? 0 : layer; // a per-layer tensor: this layer's chunk
        float *chunk = m->grads_memory + shard_chunk_offset(t, c);
        if (gs->sharded) {
            float *mine = m->grads_shard + t->shard_offset + (size_t)c * t->slice;
            NCCL_CHECK(ncclReduceScatter(chunk, mine, t->slice, ncclFloat, ncclAvg, gs->mg->comm,
                                         gs->comm));
        } else {
            NCCL_CHECK(ncclAllReduce(chunk, chunk, t->chunk_n, ncclFloat, ncclAvg, gs->mg->comm,
                                     gs->comm));
        }
    }
    NCCL_CHECK(ncclGroupEnd());
#else
    (void)layer;
#endif
}

// hook the reductions into the model's next backward passes (the last micro-step's)
static inline void grad_sync_attach(GradSync *gs) {
    gs->model->grads_ready = grad_sync_layer_ready;
    gs->model->grads_ready_ctx = gs;
}
static inline void grad_sync_detach(GradSync *gs) {
    gs->model->grads_ready = NULL;
    gs->model->grads_ready_ctx = NULL;
}

// every group's reduction, in the backward's order (a rank whose last
// micro-batch had no counted target runs no backward, yet must issue the
// same collectives as the others)
static inline void grad_sync_reduce_all(GradSync *gs) {
    const int L = gs->model->config.num_layers;
    for (int layer = L; layer >= -1; layer--) grad_sync_layer_ready(gs, layer);
}

// the compute stream waits for every reduction issued so far
static inline void grad_sync_wait(GradSync *gs) {
    CUDA_CHECK(cudaEventRecord(gs->comm_done, gs->comm));
    CUDA_CHECK(cudaStreamWaitEvent(gs->model->mm.stream, gs->comm_done, 0));
}

// Queues, after the reductions (grad_sync_wait), the step's scalars on the
// GPU (step_scalars.cuh): the mean loss of the micro_steps forwards and its
// mean over the ranks; the global gradient norm (the sum of squares of every
// rank's shard summed over the ranks, or, not sharded, of all the gradients
// on every rank, counted once); the clip scale AdamW reads, and whether the
// update runs (the loss and the norm finite and not above loss_limit and
// norm_limit: -sl / -sg). Nothing waits for the GPU.
static inline void grad_sync_clip(GradSync *gs, int micro_steps, float grad_clip,
                                  double loss_limit, double norm_limit) {
    GPT2Cuda *m = gs->model;
    StepScalars *s = m->scalars;
    const cudaStream_t st = m->mm.stream;
    step_loss_finish(s, micro_steps, st);
    gpt2cuda_grad_sum_of_squares(m);
#ifdef FOLDNORM_NCCL
    if (gs->mg->world > 1) {
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclAllReduce(&s->step_loss, &s->step_loss, 1, ncclFloat, ncclAvg,
                                 gs->mg->comm, st));
        if (gs->sharded) {
            NCCL_CHECK(ncclAllReduce(&s->sumsq, &s->sumsq, 1, ncclDouble, ncclSum, gs->mg->comm,
                                     st));
        }
        NCCL_CHECK(ncclGroupEnd());
    }
#endif
    step_clip_gated(s, grad_clip, 1, loss_limit, norm_limit, st);
}

// The step's loss (the ranks' mean) and gradient norm on the host: the one
// wait of a step, after its update is queued. Returns 0 when either was not
// finite or above its limit (the update was then skipped on the GPU: the
// parameters and moments are those before the step).
static inline int grad_sync_step_result(GradSync *gs, float *loss, double *grad_norm) {
    GPT2Cuda *m = gs->model;
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    *loss = m->scalars_host->step_loss;
    *grad_norm = m->scalars_host->norm;
    return m->scalars_host->clip.apply;
}

// Which tensors grad_sync_all_gather gathers.
typedef enum {
    GRAD_SYNC_ALL_TENSORS,
    // cbwc's c_proj proxies and biases (the per-layer stream writers): V = P W
    // is projected from their fp32 master at the next forward
    GRAD_SYNC_CBWC_PROXIES,
} GradSyncTensors;

static inline bool grad_sync_gathers(GradSyncTensors which, int tensor) {
    const GPT2TensorInfo *t = gpt2_tensor_info(tensor);
    return which == GRAD_SYNC_ALL_TENSORS || (t->role == LAYER_ROLE_STREAM_WRITER && t->per_layer);
}

// Every rank's slices of every chunk of the tensors `which` names, from the
// compact shard src (shard_params values) or, src == NULL, in place in the
// flat vector dst, gathered into dst (num_parameters values) on the compute stream.
static inline void grad_sync_all_gather(GradSync *gs, float *dst, const float *src,
                                        GradSyncTensors which) {
#ifdef FOLDNORM_NCCL
    GPT2Cuda *m = gs->model;
    NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        if (!grad_sync_gathers(which, i)) continue;
        const ShardTensor *t = &m->shard.tensors[i];
        for (int c = 0; c < t->chunks; c++) {
            const float *mine = src != NULL ? src + t->shard_offset + (size_t)c * t->slice
                                            : dst + shard_slice_offset(&m->shard, t, c);
            NCCL_CHECK(ncclAllGather(mine, dst + shard_chunk_offset(t, c), t->slice, ncclFloat,
                                     gs->mg->comm, m->mm.stream));
        }
    }
    NCCL_CHECK(ncclGroupEnd());
#else
    (void)gs, (void)dst, (void)src, (void)which;
#endif
}

// The floatX copy gathered in place (each rank's update wrote its slices), in
// the compute precision: bf16 moves half the bytes of the fp32 master.
static inline void grad_sync_all_gather_x(GradSync *gs) {
#ifdef FOLDNORM_NCCL
    GPT2Cuda *m = gs->model;
    const ncclDataType_t type = sizeof(floatX) == 2 ? ncclBfloat16 : ncclFloat;
    NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        const ShardTensor *t = &m->shard.tensors[i];
        for (int c = 0; c < t->chunks; c++) {
            NCCL_CHECK(ncclAllGather(m->params_x_memory + shard_slice_offset(&m->shard, t, c),
                                     m->params_x_memory + shard_chunk_offset(t, c), t->slice, type,
                                     gs->mg->comm, m->mm.stream));
        }
    }
    NCCL_CHECK(ncclGroupEnd());
#else
    (void)gs;
#endif
}

// One AdamW step after grad_sync_clip, clipped by the GPU's scale: the rank's
// shard, then (ZeRO-1) the parameters gathered from all ranks: in fp32 builds
// the fp32 master (the kernels' copy); in bf16 builds the bf16 copy the
// forwards read, and the fp32 master stays sharded but for cbwc's proxies.
static inline void grad_sync_update(GradSync *gs, const AdamWConfig *cfg) {
    GPT2Cuda *m = gs->model;
    gpt2cuda_update_shard(m, cfg);
    if (!gs->sharded) return;
    if ((void *)m->params_x_memory == (void *)m->params_memory) {
        grad_sync_all_gather(gs, m->params_memory, NULL, GRAD_SYNC_ALL_TENSORS);
        return;
    }
    grad_sync_all_gather_x(gs);
    if (norm_policy(m->mode)->cbwc) {
        grad_sync_all_gather(gs, m->params_memory, NULL, GRAD_SYNC_CBWC_PROXIES);
    }
    m->master_partial = 1;
}

// The fp32 master whole on the host (a checkpoint; every rank must call it when
// sharded: the ranks' slices are gathered first).
static inline void grad_sync_params_to_host(GradSync *gs, float *host) {
    GPT2Cuda *m = gs->model;
    if (m->master_partial) {
        grad_sync_all_gather(gs, m->params_memory, NULL, GRAD_SYNC_ALL_TENSORS);
        m->master_partial = 0;
    }
    gpt2cuda_params_to_host(m, host);
}

// The AdamW moments whole on the host (a checkpoint; every rank must call it
// when sharded): host_m, host_v hold num_parameters floats each.
static inline void grad_sync_moments_to_host(GradSync *gs, float *host_m, float *host_v) {
    GPT2Cuda *m = gs->model;
    const size_t bytes = m->num_parameters * sizeof(float);
    if (!gs->sharded) {
        CUDA_CHECK(cudaMemcpy(host_m, m->m_memory, bytes, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(host_v, m->v_memory, bytes, cudaMemcpyDeviceToHost));
        return;
    }
    float *whole = cuda_alloc<float>(m->num_parameters);
    grad_sync_all_gather(gs, whole, m->m_memory, GRAD_SYNC_ALL_TENSORS);
    CUDA_CHECK(cudaMemcpyAsync(host_m, whole, bytes, cudaMemcpyDeviceToHost, m->mm.stream));
    CUDA_CHECK(cudaStreamSynchronize(m->mm.stream));
    grad_sync_all_gather(gs, whole, m->v_memory, GRAD_SYNC_ALL_TENSORS);
    CUDA_CHECK(cudaMemcpyAsync(host_v, whole, bytes, cudaMemcpyDeviceToHost, m->mm.stream));
    CUDA_CHECK(cudaStreamSynchronize(m->mm.stream));
    CUDA_CHECK(cudaFree(whole));
}

#endif
