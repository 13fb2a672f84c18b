// GPT-2 on the GPU in the three norm modes of llmc/gpt2/gpt2.c (same parameter
// layout, same math, same AdamW), built from the kernels in llmc/cuda/*.cuh.
// Parameters: fp32 master copy (what AdamW updates, what checkpoints hold)
// and a floatX copy the kernels read (the same buffer in fp32 builds).
// Gradients fp32; activations and their gradients floatX.
// cbwc: V = P W and P b of attn c_proj and mlp c_proj are projected from the
// proxy weights once per step; the output gradient of those projections is
// centred before their backward (dx = (P dy) W, dW = (P dy)^T x); wte and
// wpe rows are centred at the embedding read; the LM head reads the proxy wte.
#ifndef FOLDNORM_GPT2_CUDA_CUH
#define FOLDNORM_GPT2_CUDA_CUH

#include <math.h>
#include <string.h>

extern "C" {
#include "kernels/adamw.h"
#include "gpt2/gpt2.h"
#include "kernels/token_buckets.h"
#include "core/utils.h"
}

#include "adamw.cuh"
#include "attention_layers.cuh"
#include "cbwc.cuh"
#include "crossentropy.cuh"
#include "cuda_common.cuh"
#include "cuda_params.cuh"
#include "encoder.cuh"
#include "gelu.cuh"
#include "matmul_cublaslt.cuh"
#include "norm.cuh"
#include "reduce.cuh"
#include "transformer_block.cuh"
#include "zero_shard.cuh"

// the 16 parameter tensors in llm.c's order (as ParameterTensors in gpt2.h)
template <typename T> struct ParamsOf {
    T *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb;
    T *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb, *lnfw, *lnfb;
};

typedef struct {
    floatX *encoded;                     // (B, T, C)
    floatX *ln1;                         // (L, B, T, C)
    float *ln1_mean, *ln1_rstd;          // (L, B, T)
    floatX *qkv;                         // (L, B, T, 3C)
    floatX *atty;                        // (L, B, T, C)
    floatX *residual2;                   // (L, B, T, C)
    floatX *ln2;
    float *ln2_mean, *ln2_rstd;
    floatX *fch, *fch_gelu;              // (L, B, T, 4C)
    floatX *residual3;                   // (L, B, T, C)
    floatX *lnf;                         // (B, T, C)
    float *lnf_mean, *lnf_rstd;          // (B, T)
    floatX *logits;                      // (B, T, Vp); dlogits after the cross-entropy backward
    float *losses;                       // (B, T)
} ActivationsCuda;

typedef struct {
    floatX *dresidual, *branch, *dln, *datty; // (B, T, C); branch: c_proj output / P dy
    floatX *dqkv;                             // (B, T, 3C)
    floatX *dfch, *dfch_gelu;                 // (B, T, 4C)
    float *reduce;                            // norm and bias-gradient partials
    float *row_shift;                         // (B, T)
    double *sumsq;                            // SUMSQ_BLOCKS
} ScratchCuda;

typedef struct {
    GPT2Config config;
    NormMode mode;
    size_t param_sizes[GPT2_NUM_PARAM_TENSORS];
    size_t num_parameters;
    float *params_memory;    // fp32 master
    floatX *params_x_memory; // the kernels' copy (== params_memory in fp32 builds)
    float *grads_memory;
    // ZeRO-1 (zero_shard.cuh): this rank's reduced gradients and AdamW moments,
    // shard.shard_params each; grads_shard is grads_memory with one rank
    ShardLayout shard;
    float *grads_shard;
    float *m_memory, *v_memory;
    ParamsOf<float> params, grads;
    ParamsOf<floatX> params_x;
    // cbwc: V and P b of attn c_proj (L, C, C), (L, C) and mlp c_proj (L, C, 4C), (L, C)
    floatX *centred_attprojw, *centred_attprojb, *centred_fcprojw, *centred_fcprojb;
    int centred_stale;
    int adamw_step;
    int max_B, max_T; // what the activations were allocated for
    int inference;    // forward only: no backward (no token buckets)
    int B, T;         // of the last forward
    ActivationsCuda acts;
    ScratchCuda scratch;
    AttentionLayers attention; // the kind chosen and what it keeps per layer (lse, or att)
    int *inputs, *targets; // device (B, T)
    float *losses_host;
    int logits_are_grads;  // the last forward already wrote dlogits
    float mean_loss;       // -1: no forward with targets since the last backward
    int loss_tokens;
    int num_sms;
    MatmulContext mm;
    // the rows of the last forward grouped by token (deterministic wte gradient)
    TokenBuckets buckets;
    int *bucket_token, *bucket_start, *bucket_rows; // device copies
    // called during the backward when a group of gradients is final: layer
    // L - 1 .. 0 (that layer's slices), L (lnfw, lnfb, first) and -1 (wte,
    // wpe, last); NULL: none (the data parallel reduction hooks in here)
    void (*grads_ready)(void *ctx, int layer);
    void *grads_ready_ctx;
} GPT2Cuda;

static inline void gpt2cuda_sync_params_x(GPT2Cuda *m) {
    cuda_params_sync_x(m->params_x_memory, m->params_memory, m->num_parameters, m->mm.stream);
}

// Copies the parameters of a host model (loaded or initialised by llmc/gpt2/gpt2.c)
// and allocates everything for micro-batches up to (max_B, max_T). inference:
// forward passes only. attention: the kernels (attention_kind.cuh; tc, cublas, flash or cudnn).
static inline void gpt2cuda_init(GPT2Cuda *m, const GPT2 *host, int max_B, int max_T,
                                 int inference, AttentionKind attention) {
    memset(m, 0, sizeof(*m));
    m->inference = inference;
    if (host->mode == MODE_FOLDED) {
        fatal("gpt2cuda: folded models are not supported on the GPU yet");
    }
    m->config = host->config;
    m->mode = host->mode;
    const GPT2Config *c = &m->config;
    if (c->channels % PACK_X != 0) {
        fatal("gpt2cuda: C=%d must be a multiple of %d (16-byte rows)", c->channels, PACK_X);
    }
    if (max_T > c->max_seq_len) fatal("gpt2cuda: T=%d exceeds maxT=%d", max_T, c->max_seq_len);
    memcpy(m->param_sizes, host->param_sizes, sizeof(m->param_sizes));
    m->num_parameters = host->num_parameters;
    m->num_sms = cuda_device_sm_count();
    matmul_context_create(&m->mm);

    cuda_model_params_init(m, host->params_memory, GPT2_NUM_PARAM_TENSORS);
    shard_layout_init(&m->shard, m->param_sizes, c->num_layers, 0, 1);
    m->grads_shard = m->grads_memory;
    const size_t L = (size_t)c->num_layers, C = (size_t)c->channels;
    m->centred_attprojw = cuda_alloc<floatX>(L * C * C);
    m->centred_attprojb = cuda_alloc<floatX>(L * C);
    m->centred_fcprojw = cuda_alloc<floatX>(L * C * 4 * C);
    m->centred_fcprojb = cuda_alloc<floatX>(L * C);
    m->centred_stale = 1;

    const size_t B = (size_t)max_B, T = (size_t)max_T, BT = B * T, NH = (size_t)c->num_heads;
    const size_t Vp = (size_t)c->padded_vocab_size;
    ActivationsCuda *a = &m->acts;
    a->encoded = cuda_alloc<floatX>(BT * C);
    transformer_blocks_alloc_acts(a, L, BT, C, 4 * C);
    a->lnf = cuda_alloc<floatX>(BT * C);
    a->lnf_mean = cuda_alloc<float>(BT);
    a->lnf_rstd = cuda_alloc<float>(BT);
    a->logits = cuda_alloc<floatX>(BT * Vp);
    a->losses = cuda_alloc<float>(BT);

    ScratchCuda *s = &m->scratch;
    transformer_blocks_alloc_scratch(s, BT, C, 4 * C);
    attention_layers_init(&m->attention, attention, true, (int)L, max_B, max_T, (int)C, (int)NH,
                          inference);
    size_t norm_floats = norm_backward_scratch_floats((int)BT, (int)C, m->num_sms);
    size_t bias_floats = (size_t)column_sum_chunks((int)BT) * 4 * C;
    s->reduce = cuda_alloc<float>(norm_floats > bias_floats ? norm_floats : bias_floats);
    s->row_shift = cuda_alloc<float>(BT);
    s->sumsq = cuda_alloc<double>(SUMSQ_BLOCKS);
    m->inputs = cuda_alloc<int>(BT);
    m->targets = cuda_alloc<int>(BT);
    m->losses_host = (float *)malloc_check(BT * sizeof(float), "gpt2cuda losses");
    token_buckets_init(&m->buckets, c->vocab_size, (int)BT);
    m->bucket_token = cuda_alloc<int>(BT);
    m->bucket_start = cuda_alloc<int>(BT + 1);
    m->bucket_rows = cuda_alloc<int>(BT);
    m->max_B = max_B;
    m->max_T = max_T;
    m->mean_loss = -1.0f;
}

// ZeRO-1 over world ranks (before the first update): this rank keeps the
// reduced gradients and AdamW moments of its slices only (zero_shard.cuh)
static inline void gpt2cuda_set_sharding(GPT2Cuda *m, int rank, int world) {
    if (m->m_memory != NULL) fatal("gpt2cuda_set_sharding: the AdamW moments exist already");
    if (m->grads_shard != m->grads_memory) CUDA_CHECK(cudaFree(m->grads_shard));
    shard_layout_init(&m->shard, m->param_sizes, m->config.num_layers, rank, world);
    m->grads_shard = world > 1 ? cuda_alloc<float>(m->shard.shard_params) : m->grads_memory;
}

// V = P W and P b of every attn/mlp c_proj from the fp32 proxy weights
static inline void gpt2cuda_cbwc_refresh(GPT2Cuda *m) {
    const int L = m->config.num_layers, C = m->config.channels;
    cbwc_project_cuda(m->centred_attprojw, m->centred_attprojb, m->params.attprojw, m->params.attprojb,
                      L, C, C, m->mm.stream);
    cbwc_project_cuda(m->centred_fcprojw, m->centred_fcprojb, m->params.fcprojw, m->params.fcprojb, L, C,
                      4 * C, m->mm.stream);
    m->centred_stale = 0;
}

// Forward over host tokens (B, T); targets may be NULL (no loss). With
// targets and dlogits_scale > 0 the cross-entropy also writes dlogits =
// dlogits_scale * dloss_n/dlogits (the logits are then gone); the backward
// then needs no scale of its own. Returns after the losses are on the host.
static inline void gpt2cuda_forward(GPT2Cuda *m, const int *inputs, const int *targets, int B,
                                    int T, float dlogits_scale) {
    if (B > m->max_B || T > m->max_T || B <= 0 || T <= 0) {
        fatal("gpt2cuda_forward: B=%d T=%d outside the allocated %d x %d", B, T, m->max_B,
              m->max_T);
    }
    const GPT2Config *cfg = &m->config;
    const int C = cfg->channels;
    const int V = cfg->vocab_size, Vp = cfg->padded_vocab_size, BT = B * T;
    const int centred = m->mode == MODE_CBWC;
    const cudaStream_t st = m->mm.stream;
    const MatmulContext *mm = &m->mm;
    m->B = B;
    m->T = T;
    CUDA_CHECK(cudaMemcpyAsync(m->inputs, inputs, (size_t)BT * sizeof(int), cudaMemcpyHostToDevice,
                               st));
    if (!m->inference) { // the rows of each token, for the wte gradient
        token_buckets_build(&m->buckets, inputs, BT);
        const int nb = m->buckets.num_buckets;
        CUDA_CHECK(cudaMemcpyAsync(m->bucket_token, m->buckets.token, (size_t)nb * sizeof(int),
                                   cudaMemcpyHostToDevice, st));
        CUDA_CHECK(cudaMemcpyAsync(m->bucket_start, m->buckets.start,
                                   (size_t)(nb + 1) * sizeof(int), cudaMemcpyHostToDevice, st));
        CUDA_CHECK(cudaMemcpyAsync(m->bucket_rows, m->buckets.rows, (size_t)BT * sizeof(int),
                                   cudaMemcpyHostToDevice, st));
    }
    if (centred && m->centred_stale) gpt2cuda_cbwc_refresh(m);
    ParamsOf<floatX> p = m->params_x;
    ActivationsCuda a = m->acts;

    encoder_forward_cuda(a.encoded, m->inputs, p.wte, p.wpe, B, T, C, centred, st);
    transformer_blocks_forward(m, B, T, 4 * C);
    // tied head reads the proxy wte in every mode (docs/math.md section 4)
    matmul_forward_cuda(mm, a.logits, a.lnf, p.wte, NULL, BT, C, Vp);
    m->logits_are_grads = 0;
    if (targets == NULL) {
        m->mean_loss = -1.0f;
        CUDA_CHECK(cudaStreamSynchronize(st));
        return;
    }
    int counted = 0;
    for (int i = 0; i < BT; i++) counted += targets[i] >= 0;
    m->loss_tokens = counted;
    CUDA_CHECK(cudaMemcpyAsync(m->targets, targets, (size_t)BT * sizeof(int),
                               cudaMemcpyHostToDevice, st));
    const int write_grad = dlogits_scale > 0.0f;
    crossentropy_cuda(a.losses, a.logits, m->targets, BT, V, Vp, dlogits_scale, write_grad, st);
    m->logits_are_grads = write_grad;
    CUDA_CHECK(cudaMemcpyAsync(m->losses_host, a.losses, (size_t)BT * sizeof(float),
                               cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    double sum = 0.0;
    for (int i = 0; i < BT; i++) sum += m->losses_host[i];
    m->mean_loss = counted > 0 ? (float)(sum / counted) : 0.0f;
}

static inline void gpt2cuda_zero_grad(GPT2Cuda *m) {
    CUDA_CHECK(cudaMemsetAsync(m->grads_memory, 0, m->num_parameters * sizeof(float), m->mm.stream));
}

// Accumulates the parameter gradients of loss_scale * sum of per-token
// losses (ignored when the forward already wrote dlogits with its scale).
static inline void gpt2cuda_backward(GPT2Cuda *m, float loss_scale) {
    if (m->mean_loss < 0.0f) fatal("gpt2cuda_backward: needs a forward pass with targets first");
    if (m->inference) fatal("gpt2cuda_backward: the model was set up for inference only");
    const GPT2Config *cfg = &m->config;
    const int B = m->B, T = m->T, BT = B * T;
    const int C = cfg->channels;
    const int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
    const int centred = m->mode == MODE_CBWC;
    const cudaStream_t st = m->mm.stream;
    const MatmulContext *mm = &m->mm;
    ParamsOf<floatX> p = m->params_x;
    ParamsOf<float> g = m->grads;
    ActivationsCuda a = m->acts;
    ScratchCuda s = m->scratch;

    if (!m->logits_are_grads) {
        crossentropy_cuda(a.losses, a.logits, m->targets, BT, V, Vp, loss_scale, 1, st);
    }
    matmul_backward_cuda(mm, s.dln, g.wte, a.logits, a.lnf, p.wte, BT, C, Vp);
    transformer_blocks_backward(m, B, T, 4 * C, m->grads_ready, m->grads_ready_ctx);
    const DeviceTokenBuckets buckets = {m->buckets.num_buckets, m->bucket_token, m->bucket_start,
                                        m->bucket_rows};
    encoder_backward_cuda(g.wte, g.wpe, s.row_shift, s.dresidual, &buckets, B, T, C, centred, st);
    if (m->grads_ready != NULL) m->grads_ready(m->grads_ready_ctx, -1);
    m->mean_loss = -1.0f; // the logits now hold their gradient
    m->logits_are_grads = 0;
}

// sum of squares of this rank's reduced gradients (all of them with one rank)
static inline double gpt2cuda_grad_sum_of_squares(GPT2Cuda *m) {
    return sum_of_squares_cuda(m->grads_shard, m->shard.shard_params, m->scratch.sumsq,
                               m->mm.stream);
}

// One AdamW step of this rank's shard (everything with one rank), decay on the
// matrices only, gradients times grad_scale (clipping by the global norm).
// With several ranks the caller then all-gathers the parameters and calls
// gpt2cuda_params_gathered.
static inline void gpt2cuda_update_shard(GPT2Cuda *m, const AdamWConfig *cfg, float grad_scale) {
    const size_t S = m->shard.shard_params;
    cuda_moments_ensure(&m->m_memory, &m->v_memory, S);
    m->adamw_step += 1;
    const int sharded = m->shard.world > 1;
    const bool separate_x = (void *)m->params_x_memory != (void *)m->params_memory;
    // cbwc, one rank: the c_proj proxy weights are updated and projected in one
    // pass; with shards V needs whole columns, so the next forward projects it
    const bool fuse_cbwc = m->mode == MODE_CBWC && !sharded;
    const int L = m->config.num_layers, C = m->config.channels;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        // weight decay on the matrices only: wte, wpe, qkvw, attprojw, fcw, fcprojw
        const int decay = i == 0 || i == 1 || i == 4 || i == 6 || i == 10 || i == 12;
        const AdamWStep step = adamw_step_constants(cfg->learning_rate, cfg->beta1, cfg->beta2,
                                                    cfg->eps, cfg->weight_decay, decay,
                                                    m->adamw_step, grad_scale);
        const ShardTensor *t = &m->shard.tensors[i];
        float *p = m->params_memory + t->offset;
        // with shards the floatX copy is refreshed whole after the gather
        floatX *p_x = separate_x && !sharded ? m->params_x_memory + t->offset : NULL;
        float *g = m->grads_shard + t->shard_offset;
        float *mm = m->m_memory + t->shard_offset, *vv = m->v_memory + t->shard_offset;
        if (fuse_cbwc && (i == 6 || i == 12)) {
            adamw_cbwc_project_cuda(i == 6 ? m->centred_attprojw : m->centred_fcprojw, p, p_x, g, mm, vv,
                                    step, L, C, i == 6 ? C : 4 * C, m->mm.stream);
        } else {
            adamw_slices_cuda(p, p_x, g, mm, vv, t->slice * (size_t)t->chunks, t->chunk_n,
                              t->slice, (size_t)m->shard.rank * t->slice, step, m->mm.stream);
        }
    }
    if (fuse_cbwc) {
        cbwc_centre_bias_cuda(m->centred_attprojb, m->params.attprojb, L, C, m->mm.stream);
        cbwc_centre_bias_cuda(m->centred_fcprojb, m->params.fcprojb, L, C, m->mm.stream);
    }
    // otherwise V is projected at the next forward (if the mode is, or becomes, cbwc)
    m->centred_stale = !fuse_cbwc;
}

// after the all-gather of the fp32 parameters: their floatX copy
static inline void gpt2cuda_params_gathered(GPT2Cuda *m) { gpt2cuda_sync_params_x(m); }

// One AdamW step on one rank with global-norm clipping (clip <= 0: none);
// returns the gradient norm before clipping.
static inline float gpt2cuda_update(GPT2Cuda *m, const AdamWConfig *cfg, float grad_clip) {
    if (m->shard.world != 1) {
        fatal("gpt2cuda_update: one rank only (sharded: gpt2cuda_update_shard)");
    }
    const double norm = sqrt(gpt2cuda_grad_sum_of_squares(m));
    gpt2cuda_update_shard(m, cfg, clip_grad_scale(norm, grad_clip));
    return (float)norm;
}

// AdamW moments from full host copies (a checkpoint): this rank's slices
static inline void gpt2cuda_moments_from_host(GPT2Cuda *m, const float *host_m, const float *host_v,
                                              int adamw_step) {
    const size_t S = m->shard.shard_params;
    if (m->m_memory == NULL) {
        m->m_memory = cuda_alloc<float>(S);
        m->v_memory = cuda_alloc<float>(S);
    }
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        const ShardTensor *t = &m->shard.tensors[i];
        for (int c = 0; c < t->chunks; c++) {
            const size_t to = t->shard_offset + (size_t)c * t->slice;
            const size_t from = shard_slice_offset(&m->shard, t, c);
            CUDA_CHECK(cudaMemcpy(m->m_memory + to, host_m + from, t->slice * sizeof(float),
                                  cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(m->v_memory + to, host_v + from, t->slice * sizeof(float),
                                  cudaMemcpyHostToDevice));
        }
    }
    m->adamw_step = adamw_step;
}

// host copies: fp32 parameters and gradients (num_parameters each), logits
// (B, T, Vp) as float
static inline void gpt2cuda_params_to_host(const GPT2Cuda *m, float *out) {
    CUDA_CHECK(cudaMemcpy(out, m->params_memory, m->num_parameters * sizeof(float),
                          cudaMemcpyDeviceToHost));
}
static inline void gpt2cuda_grads_to_host(const GPT2Cuda *m, float *out) {
    CUDA_CHECK(cudaMemcpy(out, m->grads_memory, m->num_parameters * sizeof(float),
                          cudaMemcpyDeviceToHost));
}
static inline void gpt2cuda_logits_to_host(const GPT2Cuda *m, float *out) {
    const size_t n = (size_t)m->B * m->T * m->config.padded_vocab_size;
    floatX *tmp = (floatX *)malloc_check(n * sizeof(floatX), "logits copy");
    CUDA_CHECK(cudaMemcpy(tmp, m->acts.logits, n * sizeof(floatX), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) out[i] = to_float(tmp[i]);
    free(tmp);
}

static inline void gpt2cuda_free(GPT2Cuda *m) {
    void *buffers[] = {
        m->params_memory, m->grads_memory, m->m_memory, m->v_memory, m->centred_attprojw,
        m->centred_attprojb, m->centred_fcprojw, m->centred_fcprojb, m->acts.encoded, m->acts.ln1,
        m->acts.ln1_mean, m->acts.ln1_rstd, m->acts.qkv, m->acts.atty,
        m->acts.residual2, m->acts.ln2, m->acts.ln2_mean, m->acts.ln2_rstd, m->acts.fch,
        m->acts.fch_gelu, m->acts.residual3, m->acts.lnf, m->acts.lnf_mean, m->acts.lnf_rstd,
        m->acts.logits, m->acts.losses, m->scratch.dresidual, m->scratch.branch, m->scratch.dln,
        m->scratch.datty, m->scratch.dqkv, m->scratch.dfch, m->scratch.dfch_gelu,
        m->scratch.reduce, m->scratch.row_shift, m->scratch.sumsq,
        m->inputs, m->targets, m->bucket_token, m->bucket_start, m->bucket_rows};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) {
        if (buffers[i] != NULL) CUDA_CHECK(cudaFree(buffers[i]));
    }
    cuda_params_x_free(m->params_x_memory, m->params_memory);
    if (m->grads_shard != m->grads_memory) CUDA_CHECK(cudaFree(m->grads_shard));
    attention_layers_free(&m->attention);
    token_buckets_free(&m->buckets);
    free(m->losses_host);
    matmul_context_destroy(&m->mm);
    memset(m, 0, sizeof(*m));
}

#endif
