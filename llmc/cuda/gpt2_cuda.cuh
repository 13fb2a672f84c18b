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
#include "kernels/drop_path.h"
#include "gpt2/gpt2.h"
#include "gpt2/token_prefetch.h"
#include "core/utils.h"
}

#include "adamw.cuh"
#include "attention_layers.cuh"
#include "cbwc.cuh"
#include "crossentropy.cuh"
#include "drop_path.cuh"
#include "dropout.cuh"
#include "cuda_common.cuh"
#include "cuda_params.cuh"
#include "encoder.cuh"
#include "gelu.cuh"
#include "matmul_cublaslt.cuh"
#include "norm.cuh"
#include "pinned.cuh"
#include "reduce.cuh"
#include "step_scalars.cuh"
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
    float *dbias; // one layer's bias gradients from the epilogues (transformer_block.cuh)
    float *reduce;                            // norm and bias-gradient partials
    float *row_shift;                         // (B, T)
    float *wte_partials;                      // the wte gradient's pieces (encoder.cuh)
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
    // ZeRO-1 with a floatX copy: the ranks gather that copy, so the fp32 master
    // is current only in this rank's slices (and in the tensors cbwc projects
    // V from); grad_sync_params_to_host gathers it whole
    int master_partial;
    float *m_memory, *v_memory;
    ParamsOf<float> params, grads;
    ParamsOf<floatX> params_x;
    // cbwc: V and P b of attn c_proj (L, C, C), (L, C) and mlp c_proj (L, C, 4C), (L, C)
    floatX *centred_attprojw, *centred_attprojb, *centred_fcprojw, *centred_fcprojb;
    int centred_stale;
    int adamw_step;
    int max_B, max_T; // what the activations were allocated for
    int recompute;    // -r: 0, 1 (GELU) or 2 (GELU and the norms) (transformer_block.cuh)
    size_t block_act_bytes; // the blocks' stored activations at that level
    int inference;    // forward only: no backward (no token buckets)
    int B, T;         // of the last forward
    ActivationsCuda acts;
    ScratchCuda scratch;
    AttentionLayers attention; // the kind chosen and what it keeps per layer (lse, or att)
    int *inputs, *targets; // device (B, T), in batch_dev
    int logits_are_grads;  // the last forward already wrote dlogits
    int backward_ready;    // a forward with targets since the last backward
    int loss_ready;        // a forward with targets has queued its mean loss
    int loss_tokens;
    // the mean loss of each forward with targets, and their sum since
    // gpt2cuda_zero_grad / gpt2cuda_loss_reset (step_scalars.cuh); host: pinned
    StepScalars *scalars, *scalars_host;
    int num_sms;
    MatmulContext mm;
    // the last forward's batch on the device: one copy of its page-locked
    // storage (llmc/gpt2/token_prefetch.h); inputs, targets (above) and the
    // rows of each token (the deterministic wte gradient) point into it
    int *batch_dev;
    size_t batch_dev_ints;
    DeviceTokenBuckets wte_rows;
    // gpt2cuda_forward's batch of host tokens (page-locked) and the event after
    // its copy, waited on before the next gpt2cuda_forward refills it
    TokenBatch staged;
    cudaEvent_t staged_copied;
    // called during the backward when a group of gradients is final: layer
    // L - 1 .. 0 (that layer's slices), L (lnfw, lnfb, first) and -1 (wte,
    // wpe, last); NULL: none (the data parallel reduction hooks in here)
    void (*grads_ready)(void *ctx, int layer);
    void *grads_ready_ctx;
    // residual dropout as llmc/gpt2/gpt2.c's (gpt2cuda_set_resid_dropout; 0: off),
    // applied by gpt2cuda_forward_train only; the backward redraws its masks
    float resid_dropout;
    uint64_t dropout_seed;
    int dropout_active;     // the last forward applied dropout, with draw dropout_draw
    int dropout_next;       // set by gpt2cuda_forward_train for the forward it calls
    uint64_t dropout_draw;
    // stochastic depth as gpt2.c's (gpt2cuda_set_drop_path; 0: off): a train
    // forward draws the CPU's (B, L, 2) scales on the host (drop_scales_host)
    // and copies them to drop_scales (max_B, L, 2) for it and its backward
    float drop_path;
    uint64_t drop_path_seed;
    float *drop_scales, *drop_scales_host;
    int drop_active;
    // the dropout mask keys of the last train forward's draw, (L, 2): device, host
    uint64_t *dropout_keys, *dropout_keys_host;
} GPT2Cuda;

// x = dropout(y) for residual branch `branch` (0 attention, 1 MLP) of layer l
// in the last forward's draw: the CPU model's mask (dropout_branch_stream),
// its key read from device memory (dropout_keys), so a captured CUDA graph
// draws each forward's masks (llmc/cuda/gpt2_step_graph.cuh)
static inline void gpt2cuda_branch_dropout(const GPT2Cuda *m, floatX *x, const floatX *y, int l,
                                           int branch) {
    dropout_device_key_cuda(x, y, (size_t)m->B * m->T * m->config.channels, m->resid_dropout,
                            m->dropout_keys + DROP_PATH_BRANCHES * l + branch, m->mm.stream);
}

// transformer_block.cuh's branch mask: the residual dropout of a train forward
// (and of the backward after it); none otherwise
struct GPT2BranchDropout {
    const GPT2Cuda *m;
    bool operator()(floatX *out, const floatX *in, int l, int branch) const {
        if (m->drop_active) { // drop-path: one scale per sample, from (B, L, 2)
            drop_path_scale_cuda(out, in, m->drop_scales + DROP_PATH_BRANCHES * l + branch,
                                 DROP_PATH_BRANCHES * (size_t)m->config.num_layers, m->B,
                                 (size_t)m->T * m->config.channels, m->mm.stream);
            return true;
        }
        if (!m->dropout_active) return false;
        gpt2cuda_branch_dropout(m, out, in, l, branch);
        return true;
    }
};

// Copies the parameters of a host model (loaded or initialised by llmc/gpt2/gpt2.c)
// and allocates everything for micro-batches up to (max_B, max_T). inference:
// forward passes only. attention: the kernels (attention_kind.cuh; tc, cublas, flash or cudnn).
// recompute: -r, the activations the backward recomputes (transformer_block.cuh).
static inline void gpt2cuda_init(GPT2Cuda *m, const GPT2 *host, int max_B, int max_T,
                                 int inference, AttentionKind attention, int recompute = 0) {
    memset(m, 0, sizeof(*m));
    if (recompute < 0 || recompute > 2) {
        fatal("gpt2cuda: recompute level %d, not 0, 1 or 2", recompute);
    }
    m->inference = inference;
    m->recompute = recompute;
    if (norm_policy(host->mode)->folded) {
        fatal("gpt2cuda: folded models are not supported on the GPU yet");
    }
    norm_mode_require_gpu(host->mode, "gpt2cuda");
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
    m->block_act_bytes = transformer_blocks_alloc_acts(a, L, BT, C, 4 * C, recompute);
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
    s->wte_partials = cuda_alloc<float>((size_t)token_pieces_max_slots((int)BT) * C);
    s->sumsq = cuda_alloc<double>(SUMSQ_BLOCKS);
    step_scalars_alloc(&m->scalars, &m->scalars_host);
    const TokenBatchAllocator pinned = {cuda_pinned_alloc, cuda_pinned_free};
    token_batch_init(&m->staged, max_B, max_T, c->vocab_size, !inference, pinned);
    CUDA_CHECK(cudaEventCreateWithFlags(&m->staged_copied, cudaEventDisableTiming));
    m->batch_dev_ints = m->staged.storage_ints;
    m->batch_dev = cuda_alloc<int>(m->batch_dev_ints);
    const size_t drop_floats = (size_t)max_B * c->num_layers * DROP_PATH_BRANCHES;
    m->drop_scales = cuda_alloc<float>(drop_floats);
    m->drop_scales_host = (float *)malloc_check(drop_floats * sizeof(float), "drop-path scales");
    const size_t keys = (size_t)c->num_layers * DROP_PATH_BRANCHES;
    m->dropout_keys = cuda_alloc<uint64_t>(keys);
    m->dropout_keys_host = (uint64_t *)malloc_check(keys * sizeof(uint64_t), "dropout keys");
    m->max_B = max_B;
    m->max_T = max_T;
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

// Forward over a prepared batch (llmc/gpt2/token_prefetch.h: tokens, targets
// or none, and, for a backward, their token buckets) in page-locked memory:
// its copies are queued first, then `copied` is recorded (NULL: none), and
// the batch must stay untouched until that event has passed. With targets
// and dlogits_scale > 0 the cross-entropy also writes dlogits =
// dlogits_scale * dloss_n/dlogits (the logits are then gone); the backward
// then needs no scale of its own. Queues the work and returns without
// waiting for the GPU: the mean loss over the counted targets stays on the
// device (gpt2cuda_mean_loss reads it, gpt2cuda_loss_sum the sum since the
// last reset).
// Split for CUDA graphs (llmc/cuda/gpt2_step_graph.cuh): gpt2cuda_stage_batch
// (the host's part: checks, this forward's dropout keys or drop-path scales,
// the batch's copies), gpt2cuda_forward_launches (device work only, nothing
// that waits or allocates: capturable), gpt2cuda_forward_done (the host's
// flags after it).
static inline void gpt2cuda_stage_batch(GPT2Cuda *m, const TokenBatch *batch, cudaEvent_t copied) {
    const int B = batch->B, T = batch->T;
    if (B > m->max_B || T > m->max_T || B <= 0 || T <= 0) {
        fatal("gpt2cuda_forward: B=%d T=%d outside the allocated %d x %d", B, T, m->max_B,
              m->max_T);
    }
    const GPT2Config *cfg = &m->config;
    const int centred = norm_policy(m->mode)->cbwc;
    const cudaStream_t st = m->mm.stream;
    m->B = B;
    m->T = T;
    m->dropout_active = m->dropout_next && m->resid_dropout > 0.0f; // only a train forward
    m->drop_active = m->dropout_next && m->drop_path > 0.0f;
    m->dropout_next = 0;
    if (m->drop_active) { // the CPU model's scales of this draw (gpt2.c drop_path_scales)
        const size_t n = (size_t)B * cfg->num_layers * DROP_PATH_BRANCHES;
        Rng rng;
        rng_seed(&rng, drop_path_draw_seed(m->drop_path_seed, m->dropout_draw));
        drop_path_draw(m->drop_scales_host, B, cfg->num_layers, m->drop_path, &rng);
        // pageable: the call returns once the host buffer has been read
        CUDA_CHECK(cudaMemcpyAsync(m->drop_scales, m->drop_scales_host, n * sizeof(float),
                                   cudaMemcpyHostToDevice, st));
    }
    if (m->dropout_active) { // this draw's mask keys, which the dropout kernels read
        const int L = cfg->num_layers;
        for (int l = 0; l < L; l++) {
            for (int b = 0; b < DROP_PATH_BRANCHES; b++) {
                m->dropout_keys_host[DROP_PATH_BRANCHES * l + b] =
                    dropout_key(m->dropout_seed, dropout_branch_stream(m->dropout_draw, L, l, b));
            }
        }
        // pageable: the call returns once the host buffer has been read
        CUDA_CHECK(cudaMemcpyAsync(m->dropout_keys, m->dropout_keys_host,
                                   (size_t)L * DROP_PATH_BRANCHES * sizeof(uint64_t),
                                   cudaMemcpyHostToDevice, st));
    }
    if (batch->storage_ints > m->batch_dev_ints) {
        fatal("gpt2cuda_forward: a batch of %zu ints, room for %zu", batch->storage_ints,
              m->batch_dev_ints);
    }
    // the whole batch in one asynchronous copy: tokens, targets, buckets
    CUDA_CHECK(cudaMemcpyAsync(m->batch_dev, batch->storage, batch->storage_ints * sizeof(int),
                               cudaMemcpyHostToDevice, st));
    if (copied != NULL) CUDA_CHECK(cudaEventRecord(copied, st));
    m->inputs = m->batch_dev + (batch->inputs - batch->storage);
    m->targets = m->batch_dev + (batch->targets - batch->storage);
    if (!m->inference) { // the rows of each token, for the wte gradient
        if (!batch->has_buckets) fatal("gpt2cuda_forward: a training model needs token buckets");
        const TokenPieces *tp = &batch->pieces;
        DeviceTokenBuckets *w = &m->wte_rows;
        w->num_pieces = tp->num_pieces;
        w->num_split = tp->num_split;
        w->rows = m->batch_dev + (batch->buckets.rows - batch->storage);
        w->piece_start = m->batch_dev + (tp->piece_start - batch->storage);
        w->piece_dest = m->batch_dev + (tp->piece_dest - batch->storage);
        w->split_token = m->batch_dev + (tp->split_token - batch->storage);
        w->split_first = m->batch_dev + (tp->split_first - batch->storage);
        w->partials = m->scratch.wte_partials;
    }
    if (centred && m->centred_stale) gpt2cuda_cbwc_refresh(m);
}

// the staged forward's device work (counted: the targets counted on the host)
static inline void gpt2cuda_forward_launches(GPT2Cuda *m, int has_targets, int counted,
                                             float dlogits_scale) {
    const GPT2Config *cfg = &m->config;
    const int B = m->B, T = m->T, C = cfg->channels;
    const int V = cfg->vocab_size, Vp = cfg->padded_vocab_size, BT = B * T;
    const int centred = norm_policy(m->mode)->cbwc;
    const cudaStream_t st = m->mm.stream;
    const MatmulContext *mm = &m->mm;
    ParamsOf<floatX> p = m->params_x;
    ActivationsCuda a = m->acts;

    encoder_forward_cuda(a.encoded, m->inputs, p.wte, p.wpe, B, T, C, centred, st);
    transformer_blocks_forward(m, B, T, 4 * C, GPT2BranchDropout{m});
    // tied head reads the proxy wte in every mode (docs/math.md section 4)
    matmul_forward_cuda(mm, a.logits, a.lnf, p.wte, NULL, BT, C, Vp);
    if (!has_targets) return;
    crossentropy_cuda(a.losses, a.logits, m->targets, BT, V, Vp, dlogits_scale,
                      dlogits_scale > 0.0f, st);
    step_loss_add(m->scalars, a.losses, BT, counted, st);
}

static inline void gpt2cuda_forward_done(GPT2Cuda *m, int has_targets, int counted,
                                         float dlogits_scale) {
    m->logits_are_grads = has_targets && dlogits_scale > 0.0f;
    m->backward_ready = has_targets;
    if (!has_targets) return;
    m->loss_tokens = counted;
    m->loss_ready = 1;
}

static inline void gpt2cuda_forward_batch(GPT2Cuda *m, const TokenBatch *batch,
                                          float dlogits_scale, cudaEvent_t copied) {
    gpt2cuda_stage_batch(m, batch, copied);
    gpt2cuda_forward_launches(m, batch->has_targets, batch->counted, dlogits_scale);
    gpt2cuda_forward_done(m, batch->has_targets, batch->counted, dlogits_scale);
}

// Forward over host tokens (B, T) and targets (NULL: no loss), as
// gpt2cuda_forward_batch: they are copied into the model's page-locked batch
// first (after the copies of the previous call out of it), its buckets built
// for a training model. Returns without waiting for this forward.
static inline void gpt2cuda_forward(GPT2Cuda *m, const int *inputs, const int *targets, int B,
                                    int T, float dlogits_scale) {
    if (B > m->max_B || T > m->max_T || B <= 0 || T <= 0) {
        fatal("gpt2cuda_forward: B=%d T=%d outside the allocated %d x %d", B, T, m->max_B,
              m->max_T);
    }
    CUDA_CHECK(cudaEventSynchronize(m->staged_copied));
    token_batch_fill(&m->staged, inputs, targets, B, T);
    gpt2cuda_forward_batch(m, &m->staged, dlogits_scale, m->staged_copied);
}

// The last forward's mean loss over its counted targets (0 when none): waits for the GPU.
static inline float gpt2cuda_mean_loss(GPT2Cuda *m) {
    if (!m->loss_ready) fatal("gpt2cuda_mean_loss: no forward with targets yet");
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    return m->scalars_host->loss;
}

// The sum of the mean losses of the forwards since the last reset (each
// rounded to float, added in double): waits for the GPU.
static inline double gpt2cuda_loss_sum(GPT2Cuda *m) {
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    return m->scalars_host->loss_sum;
}
static inline void gpt2cuda_loss_reset(GPT2Cuda *m) { step_loss_reset(m->scalars, m->mm.stream); }

// Residual dropout with probability p (0: off) and mask seed `seed`, as
// gpt2_set_resid_dropout: the GPU model then draws the CPU model's masks.
static inline void gpt2cuda_set_resid_dropout(GPT2Cuda *m, float p, uint64_t seed) {
    if (!(p >= 0.0f && p < 1.0f)) fatal("residual dropout %g: must be in [0, 1)", (double)p);
    m->resid_dropout = p;
    m->dropout_seed = seed;
}

// Stochastic depth with rate `rate` at the last block (0: off) and mask seed
// `seed`, as gpt2_set_drop_path: the GPU model then applies the CPU model's
// scales. Not with residual dropout.
static inline void gpt2cuda_set_drop_path(GPT2Cuda *m, float rate, uint64_t seed) {
    if (!(rate >= 0.0f && rate < 1.0f)) fatal("drop-path rate %g: must be in [0, 1)", (double)rate);
    if (rate > 0.0f && m->resid_dropout > 0.0f) fatal("drop-path and residual dropout: choose one");
    m->drop_path = rate;
    m->drop_path_seed = seed;
}

// The next forward (and only it) in train mode: the dropout masks of draw
// `draw`, one draw per micro-batch and rank.
static inline void gpt2cuda_arm_dropout(GPT2Cuda *m, uint64_t draw) {
    m->dropout_next = m->resid_dropout > 0.0f || m->drop_path > 0.0f;
    m->dropout_draw = draw;
}

// gpt2cuda_forward in train mode, as gpt2_forward_train: the dropout masks of
// draw `draw` (one draw per micro-batch and rank); the backward after it
// goes through the same masks.
static inline void gpt2cuda_forward_train(GPT2Cuda *m, const int *inputs, const int *targets,
                                          int B, int T, float dlogits_scale, uint64_t draw) {
    gpt2cuda_arm_dropout(m, draw);
    gpt2cuda_forward(m, inputs, targets, B, T, dlogits_scale);
}

// A new step: the gradients and the loss sum to zero.
static inline void gpt2cuda_zero_grad(GPT2Cuda *m) {
    CUDA_CHECK(cudaMemsetAsync(m->grads_memory, 0, m->num_parameters * sizeof(float), m->mm.stream));
    gpt2cuda_loss_reset(m);
}

// The backward's device work down to the embeddings (capturable: its grids
// are fixed by B, T and the model), and the embeddings' gradient, whose wte
// part launches a grid per batch (the token buckets the host built).
static inline void gpt2cuda_backward_launches(GPT2Cuda *m, float loss_scale) {
    const GPT2Config *cfg = &m->config;
    const int B = m->B, T = m->T, BT = B * T;
    const int C = cfg->channels;
    const int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
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
    transformer_blocks_backward(m, B, T, 4 * C, m->grads_ready, m->grads_ready_ctx,
                                GPT2BranchDropout{m});
}

static inline void gpt2cuda_backward_embeddings(GPT2Cuda *m) {
    const int C = m->config.channels;
    const int centred = norm_policy(m->mode)->cbwc;
    ScratchCuda s = m->scratch;
    encoder_backward_cuda(m->grads.wte, m->grads.wpe, s.row_shift, s.dresidual, &m->wte_rows, m->B,
                          m->T, C, centred, m->mm.stream);
    if (m->grads_ready != NULL) m->grads_ready(m->grads_ready_ctx, -1);
}

static inline void gpt2cuda_backward_done(GPT2Cuda *m) {
    m->backward_ready = 0; // the logits now hold their gradient
    m->logits_are_grads = 0;
}

// Accumulates the parameter gradients of loss_scale * sum of per-token
// losses (ignored when the forward already wrote dlogits with its scale).
static inline void gpt2cuda_backward(GPT2Cuda *m, float loss_scale) {
    if (!m->backward_ready) fatal("gpt2cuda_backward: needs a forward pass with targets first");
    if (m->inference) fatal("gpt2cuda_backward: the model was set up for inference only");
    gpt2cuda_backward_launches(m, loss_scale);
    gpt2cuda_backward_embeddings(m);
    gpt2cuda_backward_done(m);
}

// queues scalars->sumsq = the sum of squares of this rank's reduced gradients
// (all of them with one rank)
static inline void gpt2cuda_grad_sum_of_squares(GPT2Cuda *m) {
    sum_of_squares_device(&m->scalars->sumsq, 0, m->grads_shard, m->shard.shard_params,
                          m->scratch.sumsq, m->mm.stream);
}

// Queues one AdamW step of this rank's shard (everything with one rank), decay
// on the matrices only, the gradients clipped by the scale the GPU computed
// (scalars->clip, step_clip; no update at all when it says so); the floatX
// copy of what it updates is written in the same pass. With several ranks the
// caller then all-gathers the parameters (grad_sync_update).
static inline void gpt2cuda_update_shard(GPT2Cuda *m, const AdamWConfig *cfg) {
    const size_t S = m->shard.shard_params;
    cuda_moments_ensure(&m->m_memory, &m->v_memory, S);
    m->adamw_step += 1;
    const int sharded = m->shard.world > 1;
    const bool separate_x = (void *)m->params_x_memory != (void *)m->params_memory;
    // cbwc, one rank: the c_proj proxy weights are updated and projected in one
    // pass; with shards V needs whole columns, so the next forward projects it
    const bool fuse_cbwc = norm_policy(m->mode)->cbwc && !sharded;
    const int L = m->config.num_layers, C = m->config.channels;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        const GPT2TensorInfo *info = gpt2_tensor_info(i);
        const int decay = info->decayed; // weight decay on the matrices only
        AdamWStep step = adamw_step_constants(cfg->learning_rate, cfg->beta1, cfg->beta2,
                                              cfg->eps, cfg->weight_decay, decay, m->adamw_step,
                                              1.0f);
        step.clip = &m->scalars->clip;
        const ShardTensor *t = &m->shard.tensors[i];
        float *p = m->params_memory + t->offset;
        // with shards: this rank's slices of it, which the ranks then all-gather
        floatX *p_x = separate_x ? m->params_x_memory + t->offset : NULL;
        float *g = m->grads_shard + t->shard_offset;
        float *mm = m->m_memory + t->shard_offset, *vv = m->v_memory + t->shard_offset;
        // a c_proj proxy weight: V = P W of each layer (C, chunk_n / C) with its update
        if (fuse_cbwc && info->per_layer && info->bias_of >= 0 &&
            norm_policy_centres(norm_policy(m->mode), info->role)) {
            adamw_cbwc_project_cuda(i == GPT2_ATTPROJW ? m->centred_attprojw : m->centred_fcprojw, p,
                                    p_x, g, mm, vv, step, L, C, (int)(t->chunk_n / (size_t)C),
                                    m->mm.stream);
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

// One AdamW step on one rank with global-norm clipping (clip <= 0: none), the
// norm and scale computed on the GPU; returns the gradient norm before
// clipping (waits for the GPU to read it).
static inline float gpt2cuda_update(GPT2Cuda *m, const AdamWConfig *cfg, float grad_clip) {
    if (m->shard.world != 1) {
        fatal("gpt2cuda_update: one rank only (sharded: gpt2cuda_update_shard)");
    }
    gpt2cuda_grad_sum_of_squares(m);
    step_clip(m->scalars, grad_clip, 0, m->mm.stream);
    gpt2cuda_update_shard(m, cfg);
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    return (float)m->scalars_host->norm;
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
    if (m->master_partial) {
        fatal("gpt2cuda_params_to_host: the fp32 master is sharded (grad_sync_params_to_host "
              "gathers it)");
    }
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
        m->scratch.dbias, m->scratch.reduce, m->scratch.row_shift, m->scratch.wte_partials,
        m->scratch.sumsq,
        m->batch_dev, m->drop_scales, m->dropout_keys};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) {
        if (buffers[i] != NULL) CUDA_CHECK(cudaFree(buffers[i]));
    }
    free(m->drop_scales_host);
    free(m->dropout_keys_host);
    cuda_params_x_free(m->params_x_memory, m->params_memory);
    if (m->grads_shard != m->grads_memory) CUDA_CHECK(cudaFree(m->grads_shard));
    attention_layers_free(&m->attention);
    CUDA_CHECK(cudaEventSynchronize(m->staged_copied));
    token_batch_free(&m->staged, TokenBatchAllocator{cuda_pinned_alloc, cuda_pinned_free});
    CUDA_CHECK(cudaEventDestroy(m->staged_copied));
    step_scalars_free(m->scalars, m->scalars_host);
    matmul_context_destroy(&m->mm);
    memset(m, 0, sizeof(*m));
}

#endif
