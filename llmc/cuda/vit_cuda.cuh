// ViT on the GPU in the three norm modes of llmc/vision/vit.c (same parameter
// layout, same math, same AdamW), built from the GPT-2 kernels (norm, GELU,
// cuBLASLt matmul, AdamW, CBWC) and the vision ones (patch_embed.cuh,
// vit_tokens.cuh, the bidirectional attention of the kind chosen (attention_layers.cuh),
// classifier_loss.cuh).
// Parameters: fp32 master copy and a floatX copy the kernels read (the same
// buffer in fp32 builds); gradients fp32; activations floatX.
// The final norm runs over every token (as dev/reference/vit.py): only the
// class-token rows reach the head, so the others get a zero gradient.
// cbwc: V = P W and P b of the patch embedding, every attn proj and mlp fc2
// are projected from the proxy weights in their AdamW pass (at the first
// forward for fresh weights); their output gradient is centred before their
// backward; the cls token and the position rows are centred at the read.
// One GPU; train_vit.cu averages the gradients over NCCL ranks between
// backward and update. Swin is llmc/cuda/swin_cuda.cuh.
#ifndef FOLDNORM_VIT_CUDA_CUH
#define FOLDNORM_VIT_CUDA_CUH

#include <math.h>
#include <string.h>

extern "C" {
#include "kernels/adamw.h"
#include "kernels/drop_path.h"
#include "core/utils.h"
#include "vision/vit.h"
}

#include "adamw.cuh"
#include "attention_layers.cuh"
#include "cbwc.cuh"
#include "classifier_loss.cuh"
#include "cuda_common.cuh"
#include "cuda_params.cuh"
#include "drop_path.cuh"
#include "gelu.cuh"
#include "matmul_cublaslt.cuh"
#include "norm.cuh"
#include "patch_embed.cuh"
#include "reduce.cuh"
#include "step_scalars.cuh"
#include "transformer_block.cuh"
#include "vit_tokens.cuh"

// the 20 parameter tensors in the model file's order (VIT_PARAM_NAMES)
template <typename T> struct ViTParamsOf {
    T *patchw, *patchb, *cls, *pos;
    T *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb;
    T *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
    T *lnfw, *lnfb, *headw, *headb;
};

enum { VITCUDA_PATCHW = 0, VITCUDA_ATTPROJW = 8, VITCUDA_FCPROJW = 14 };

typedef struct {
    float *images;               // (B, Cin, S, S) fp32 from the host
    floatX *patches;             // (B Np, PD)
    floatX *patch_out;           // (B Np, C)
    floatX *encoded;             // (B, T, C)
    floatX *ln1;                 // (L, B, T, C)
    float *ln1_mean, *ln1_rstd;  // (L, B, T)
    floatX *qkv;                 // (L, B, T, 3C)
    floatX *atty;                // (L, B, T, C)
    floatX *residual2, *ln2;     // (L, B, T, C)
    float *ln2_mean, *ln2_rstd;  // (L, B, T)
    floatX *fch, *fch_gelu;      // (L, B, T, H)
    floatX *residual3;           // (L, B, T, C)
    floatX *lnf;                 // (B, T, C)
    float *lnf_mean, *lnf_rstd;  // (B, T)
    floatX *lnf_cls;             // (B, C) the head's input
    floatX *logits, *dlogits;    // (B, K)
    float *losses;               // (B)
} ViTActivationsCuda;

typedef struct {
    floatX *dresidual, *branch, *dln, *datty; // (B, T, C)
    floatX *dqkv;                             // (B, T, 3C)
    floatX *dfch, *dfch_gelu;                 // (B, T, H)
    float *dbias; // one layer's bias gradients from the epilogues (transformer_block.cuh)
    floatX *dlnf_cls;                         // (B, C)
    floatX *dpatch;                           // (B Np, C)
    float *reduce;                            // norm and bias-gradient partials
    double *sumsq;                            // SUMSQ_BLOCKS
} ViTScratchCuda;

typedef struct {
    ViTConfig config;
    NormMode mode;
    size_t param_sizes[VIT_NUM_PARAM_TENSORS];
    size_t num_parameters;
    float *params_memory;    // fp32 master
    floatX *params_x_memory; // the kernels' copy (== params_memory in fp32 builds)
    float *grads_memory;
    float *m_memory, *v_memory;
    ViTParamsOf<float> params, grads;
    ViTParamsOf<floatX> params_x;
    // cbwc: V and P b of the patch embedding, attn proj (L, C, C) and mlp fc2 (L, C, H)
    floatX *centred_patchw, *centred_patchb, *centred_attprojw, *centred_attprojb;
    floatX *centred_fcprojw, *centred_fcprojb;
    int centred_stale;
    int adamw_step;
    int max_B; // what the activations were allocated for
    int recompute;          // -r: 0, 1 (GELU) or 2 (GELU and the norms) (transformer_block.cuh)
    size_t block_act_bytes; // the blocks' stored activations at that level
    int B;     // of the last forward
    ViTActivationsCuda acts;
    ViTScratchCuda scratch;
    AttentionLayers attention; // the kind chosen and what it keeps per layer (lse, or att)
    int *labels;         // device (B)
    float *logits_host;  // (B, K) of the last vitcuda_forward, fp32
    floatX *logits_x_host; // (B, K) staging for the copy
    float smoothing;     // of the last forward with labels
    float mean_loss;     // of the last vitcuda_forward with labels, -1 without
    int backward_ready;  // a forward with labels since the last backward
    // the mean loss of the last forward with labels, the clip AdamW reads (step_scalars.cuh)
    StepScalars *scalars, *scalars_host;
    int num_sms;
    MatmulContext mm;
    // drop-path: the (max_B, L, 2) scales of the next forwards and backwards
    // (vitcuda_set_drop_path), applied while drop_active
    float *drop_scales;
    int drop_active;
    MixTargetsCuda mix; // mixup / cutmix targets of the next forwards (vitcuda_set_mix_targets)
} ViTCuda;

// transformer_block.cuh's branch mask: drop-path's per-sample scales
struct ViTDropPath {
    const ViTCuda *m;
    bool operator()(floatX *out, const floatX *in, int l, int branch) const {
        if (!m->drop_active) return false;
        const int L = m->config.num_layers, T = vit_num_tokens(&m->config);
        drop_path_scale_cuda(out, in, m->drop_scales + DROP_PATH_BRANCHES * l + branch,
                             DROP_PATH_BRANCHES * (size_t)L, m->B,
                             (size_t)T * m->config.channels, m->mm.stream);
        return true;
    }
};

static inline void vitcuda_sync_params_x(ViTCuda *m) {
    cuda_params_sync_x(m->params_x_memory, m->params_memory, m->num_parameters, m->mm.stream);
}

static inline int vitcuda_patch_dim(const ViTConfig *c) {
    return c->image_channels * c->patch_size * c->patch_size;
}

// Copies the parameters of a host ViT (loaded or initialised by llmc/vision/vit.c)
// and allocates everything for batches of up to max_B images; attention: the
// kernels (attention_kind.cuh; tc, cublas, flash or cudnn).
// recompute: -r, the activations the backward recomputes (transformer_block.cuh).
static inline void vitcuda_init(ViTCuda *m, const ViT *host, int max_B, AttentionKind attention,
                                int recompute = 0) {
    memset(m, 0, sizeof(*m));
    if (recompute < 0 || recompute > 2) {
        fatal("vitcuda: recompute level %d, not 0, 1 or 2", recompute);
    }
    m->recompute = recompute;
    m->config = host->config;
    m->mode = host->mode;
    norm_mode_require_gpu(m->mode, "vitcuda");
    const ViTConfig *c = &m->config;
    if (c->channels % PACK_X != 0) {
        fatal("vitcuda: C=%d must be a multiple of %d (16-byte rows)", c->channels, PACK_X);
    }
    fa_check_shape(c->channels, c->num_heads); // head size <= 128, as every kind needs
    if (max_B <= 0) fatal("vitcuda: batch size %d must be positive", max_B);
    memcpy(m->param_sizes, host->param_sizes, sizeof(m->param_sizes));
    m->num_parameters = host->num_parameters;
    m->num_sms = cuda_device_sm_count();
    matmul_context_create(&m->mm);

    const size_t P = m->num_parameters;
    cuda_model_params_init(m, host->params_memory, VIT_NUM_PARAM_TENSORS);
    if (host->m_memory != NULL) { // a resumed host model: its moments come along
        m->m_memory = cuda_alloc_copy(host->m_memory, P);
        m->v_memory = cuda_alloc_copy(host->v_memory, P);
    }
    m->adamw_step = host->adamw_step;

    const size_t L = (size_t)c->num_layers, C = (size_t)c->channels, NH = (size_t)c->num_heads;
    const size_t H = C * (size_t)c->mlp_ratio, T = (size_t)vit_num_tokens(c), Np = T - 1;
    const size_t PD = (size_t)vitcuda_patch_dim(c), K = (size_t)c->num_classes;
    const size_t S = (size_t)c->image_size, Cin = (size_t)c->image_channels;
    m->centred_patchw = cuda_alloc<floatX>(C * PD);
    m->centred_patchb = cuda_alloc<floatX>(C);
    m->centred_attprojw = cuda_alloc<floatX>(L * C * C);
    m->centred_attprojb = cuda_alloc<floatX>(L * C);
    m->centred_fcprojw = cuda_alloc<floatX>(L * C * H);
    m->centred_fcprojb = cuda_alloc<floatX>(L * C);
    m->centred_stale = 1;

    const size_t B = (size_t)max_B, BT = B * T;
    ViTActivationsCuda *a = &m->acts;
    a->images = cuda_alloc<float>(B * Cin * S * S);
    a->patches = cuda_alloc<floatX>(B * Np * PD);
    a->patch_out = cuda_alloc<floatX>(B * Np * C);
    a->encoded = cuda_alloc<floatX>(BT * C);
    m->block_act_bytes = transformer_blocks_alloc_acts(a, L, BT, C, H, recompute);
    a->lnf = cuda_alloc<floatX>(BT * C);
    a->lnf_mean = cuda_alloc<float>(BT);
    a->lnf_rstd = cuda_alloc<float>(BT);
    a->lnf_cls = cuda_alloc<floatX>(B * C);
    a->logits = cuda_alloc<floatX>(B * K);
    a->dlogits = cuda_alloc<floatX>(B * K);
    a->losses = cuda_alloc<float>(B);

    ViTScratchCuda *s = &m->scratch;
    transformer_blocks_alloc_scratch(s, BT, C, H);
    s->dlnf_cls = cuda_alloc<floatX>(B * C);
    s->dpatch = cuda_alloc<floatX>(B * Np * C);
    attention_layers_init(&m->attention, attention, false, (int)L, max_B, (int)T, (int)C, (int)NH,
                          0);
    const size_t widest = H > 3 * C ? H : 3 * C; // bias gradients: fcb (H), qkvb (3C)
    size_t norm_floats = norm_backward_scratch_floats((int)BT, (int)C, m->num_sms);
    size_t bias_floats = (size_t)column_sum_chunks((int)BT) * (widest > K ? widest : K);
    s->reduce = cuda_alloc<float>(norm_floats > bias_floats ? norm_floats : bias_floats);
    s->sumsq = cuda_alloc<double>(SUMSQ_BLOCKS);
    m->labels = cuda_alloc<int>(B);
    classifier_mix_alloc(&m->mix, B);
    m->drop_scales = cuda_alloc<float>((size_t)B * c->num_layers * DROP_PATH_BRANCHES);
    step_scalars_alloc(&m->scalars, &m->scalars_host);
    m->logits_host = (float *)malloc_check(B * K * sizeof(float), "vitcuda logits");
    m->logits_x_host = (floatX *)malloc_check(B * K * sizeof(floatX), "vitcuda logits copy");
    m->max_B = max_B;
    m->mean_loss = -1.0f;
}

// V = P W and P b of the stream writers from the fp32 proxy weights
static inline void vitcuda_cbwc_refresh(ViTCuda *m) {
    const ViTConfig *c = &m->config;
    const int L = c->num_layers, C = c->channels, H = C * c->mlp_ratio;
    const cudaStream_t st = m->mm.stream;
    cbwc_project_cuda(m->centred_patchw, m->centred_patchb, m->params.patchw, m->params.patchb, 1,
                      C, vitcuda_patch_dim(c), st);
    cbwc_project_cuda(m->centred_attprojw, m->centred_attprojb, m->params.attprojw,
                      m->params.attprojb, L, C, C, st);
    cbwc_project_cuda(m->centred_fcprojw, m->centred_fcprojb, m->params.fcprojw, m->params.fcprojb,
                      L, C, H, st);
    m->centred_stale = 0;
}

// Forward of B host images (B, Cin, S, S); labels (B) may be NULL (no loss):
// queued, nothing waits for the GPU; the mean loss stays on the device
// (scalars->loss), the logits in acts.logits. vitcuda_forward waits for them.
// Split for CUDA graphs (llmc/cuda/vit_step_graph.cuh): vitcuda_stage (the
// host's part: the images' and labels' copies, cbwc's projection when
// stale), vitcuda_forward_launches (device work only: capturable),
// vitcuda_forward_done (the host's flags).
static inline void vitcuda_stage(ViTCuda *m, const float *images, const int *labels, int B) {
    if (B > m->max_B || B <= 0) fatal("vitcuda_forward: B=%d outside 1..%d", B, m->max_B);
    const ViTConfig *c = &m->config;
    const int S = c->image_size, Cin = c->image_channels;
    const cudaStream_t st = m->mm.stream;
    m->B = B;
    if (norm_policy(m->mode)->cbwc && m->centred_stale) vitcuda_cbwc_refresh(m);
    CUDA_CHECK(cudaMemcpyAsync(m->acts.images, images, (size_t)B * Cin * S * S * sizeof(float),
                               cudaMemcpyHostToDevice, st));
    if (labels == NULL) return;
    CUDA_CHECK(cudaMemcpyAsync(m->labels, labels, (size_t)B * sizeof(int), cudaMemcpyHostToDevice,
                               st));
}

static inline void vitcuda_forward_launches(ViTCuda *m, int has_labels, float smoothing) {
    const ViTConfig *c = &m->config;
    const int B = m->B, C = c->channels, H = C * c->mlp_ratio;
    const int T = vit_num_tokens(c), K = c->num_classes;
    const int S = c->image_size, Cin = c->image_channels;
    const int centred = norm_policy(m->mode)->cbwc;
    const cudaStream_t st = m->mm.stream;
    const MatmulContext *mm = &m->mm;
    ViTParamsOf<floatX> p = m->params_x;
    ViTActivationsCuda a = m->acts;
    const floatX *patchw = centred ? m->centred_patchw : p.patchw;
    const floatX *patchb = centred ? m->centred_patchb : p.patchb;

    patch_embed_forward_cuda(mm, a.patch_out, a.patches, a.images, patchw, patchb, B, Cin, S,
                             c->patch_size, C);
    vit_tokens_forward_cuda(a.encoded, a.patch_out, p.cls, p.pos, B, T, C, centred, st);
    transformer_blocks_forward(m, B, T, H, ViTDropPath{m});
    vit_cls_rows_cuda(a.lnf_cls, a.lnf, B, T, C, st);
    matmul_forward_cuda(mm, a.logits, a.lnf_cls, p.headw, p.headb, B, C, K);
    if (!has_labels) return;
    classifier_loss_cuda(a.losses, NULL, a.logits, m->labels, &m->mix, smoothing, 0.0f, B, K, st);
    step_loss_reset(m->scalars, st); // loss_sum: this forward's mean loss alone
    step_loss_add(m->scalars, a.losses, B, B, st);
}

static inline void vitcuda_forward_done(ViTCuda *m, int has_labels, float smoothing) {
    m->backward_ready = has_labels;
    if (has_labels) m->smoothing = smoothing;
}

static inline void vitcuda_forward_queued(ViTCuda *m, const float *images, const int *labels,
                                          float smoothing, int B) {
    vitcuda_stage(m, images, labels, B);
    vitcuda_forward_launches(m, labels != NULL, smoothing);
    vitcuda_forward_done(m, labels != NULL, smoothing);
}

// vitcuda_forward_queued, then the logits (and the mean loss) on the host:
// waits for the GPU (the tests, the evaluation's accuracy).
static inline void vitcuda_forward(ViTCuda *m, const float *images, const int *labels,
                                   float smoothing, int B) {
    vitcuda_forward_queued(m, images, labels, smoothing, B);
    const int K = m->config.num_classes;
    CUDA_CHECK(cudaMemcpyAsync(m->logits_x_host, m->acts.logits, (size_t)B * K * sizeof(floatX),
                               cudaMemcpyDeviceToHost, m->mm.stream));
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    for (size_t i = 0; i < (size_t)B * K; i++) m->logits_host[i] = to_float(m->logits_x_host[i]);
    m->mean_loss = labels != NULL ? m->scalars_host->loss : -1.0f;
}

static inline void vitcuda_zero_grad(ViTCuda *m) {
    CUDA_CHECK(cudaMemsetAsync(m->grads_memory, 0, m->num_parameters * sizeof(float), m->mm.stream));
}

// The drop-path scales (B, L, 2) of host memory (drop_path_draw's) that the
// following forwards of B images and their backwards apply, copied in stream
// order; NULL: none.
static inline void vitcuda_set_drop_path(ViTCuda *m, const float *scales, int B) {
    m->drop_active = scales != NULL;
    if (scales == NULL) return;
    if (B > m->max_B || B <= 0) fatal("vitcuda_set_drop_path: B=%d outside 1..%d", B, m->max_B);
    CUDA_CHECK(cudaMemcpyAsync(m->drop_scales, scales,
                               (size_t)B * m->config.num_layers * DROP_PATH_BRANCHES * sizeof(float),
                               cudaMemcpyHostToDevice, m->mm.stream));
}

// The mixed targets (kernels/classifier_loss.h) of B host images that the
// following forwards' losses and backwards use, copied in stream order;
// {NULL, NULL}: the labels alone.
static inline void vitcuda_set_mix_targets(ViTCuda *m, MixTargets mix, int B) {
    if (B > m->max_B || B <= 0) fatal("vitcuda_set_mix_targets: B=%d outside 1..%d", B, m->max_B);
    classifier_mix_upload(&m->mix, mix, B, m->mm.stream);
}

// The backward's device work (capturable: its grids are fixed by B and the model).
static inline void vitcuda_backward_launches(ViTCuda *m, float loss_scale) {
    const ViTConfig *c = &m->config;
    const int B = m->B, T = vit_num_tokens(c), BT = B * T, Np = T - 1;
    const int C = c->channels, H = C * c->mlp_ratio;
    const int K = c->num_classes, PD = vitcuda_patch_dim(c);
    const int centred = norm_policy(m->mode)->cbwc;
    const cudaStream_t st = m->mm.stream;
    const MatmulContext *mm = &m->mm;
    ViTParamsOf<floatX> p = m->params_x;
    ViTParamsOf<float> g = m->grads;
    ViTActivationsCuda a = m->acts;
    ViTScratchCuda s = m->scratch;

    classifier_loss_cuda(a.losses, a.dlogits, a.logits, m->labels, &m->mix, m->smoothing,
                         loss_scale, B, K, st);
    column_sum_accumulate(g.headb, s.reduce, a.dlogits, B, K, st);
    matmul_backward_cuda(mm, s.dlnf_cls, g.headw, a.dlogits, a.lnf_cls, p.headw, B, C, K);
    vit_cls_rows_backward_cuda(s.dln, s.dlnf_cls, B, T, C, st);
    transformer_blocks_backward(m, B, T, H, NULL, NULL, ViTDropPath{m});
    // tokens: cls, pos and the patch embedding all write the stream: cbwc centres d first
    const floatX *dstream = s.dresidual;
    if (centred) {
        centre_rows_cuda(s.branch, s.dresidual, BT, C, st);
        dstream = s.branch;
    }
    vit_tokens_backward_cuda(g.cls, g.pos, s.dpatch, dstream, B, T, C, st);
    patch_embed_backward_cuda(mm, g.patchw, g.patchb, s.reduce, s.dpatch, a.patches, B * Np, PD, C);
}

// Accumulates the gradients of loss_scale * sum of per-image losses.
static inline void vitcuda_backward(ViTCuda *m, float loss_scale) {
    if (!m->backward_ready) fatal("vitcuda_backward: needs a forward pass with labels first");
    vitcuda_backward_launches(m, loss_scale);
    m->backward_ready = 0;
}

// queues scalars->sumsq = the gradients' sum of squares
static inline void vitcuda_grad_sum_of_squares(ViTCuda *m) {
    sum_of_squares_device(&m->scalars->sumsq, 0, m->grads_memory, m->num_parameters,
                          m->scratch.sumsq, m->mm.stream);
}

// Queues one AdamW step (torch semantics, decay on the matrices only), the
// gradients clipped by the scale the GPU computed (scalars->clip, step_clip;
// no update at all when it says so). cbwc: the proxy weights of the stream
// writers are updated and projected in one pass.
static inline void vitcuda_update_queued(ViTCuda *m, const AdamWConfig *cfg) {
    const size_t P = m->num_parameters;
    cuda_moments_ensure(&m->m_memory, &m->v_memory, P);
    m->adamw_step += 1;
    const bool separate_x = (void *)m->params_x_memory != (void *)m->params_memory;
    const bool cbwc = norm_policy(m->mode)->cbwc;
    const ViTConfig *c = &m->config;
    const int L = c->num_layers, C = c->channels, H = C * c->mlp_ratio;
    const cudaStream_t st = m->mm.stream;
    size_t offset = 0;
    for (int i = 0; i < VIT_NUM_PARAM_TENSORS; i++) {
        AdamWStep step = adamw_step_constants(cfg->learning_rate, cfg->beta1, cfg->beta2, cfg->eps,
                                              cfg->weight_decay, vit_param_decayed(i),
                                              m->adamw_step, 1.0f);
        step.clip = &m->scalars->clip;
        float *p = m->params_memory + offset;
        floatX *p_x = separate_x ? m->params_x_memory + offset : NULL;
        float *g = m->grads_memory + offset, *mm = m->m_memory + offset, *vv = m->v_memory + offset;
        if (cbwc && i == VITCUDA_PATCHW) {
            adamw_cbwc_project_cuda(m->centred_patchw, p, p_x, g, mm, vv, step, 1, C,
                                    vitcuda_patch_dim(c), st);
        } else if (cbwc && i == VITCUDA_ATTPROJW) {
            adamw_cbwc_project_cuda(m->centred_attprojw, p, p_x, g, mm, vv, step, L, C, C, st);
        } else if (cbwc && i == VITCUDA_FCPROJW) {
            adamw_cbwc_project_cuda(m->centred_fcprojw, p, p_x, g, mm, vv, step, L, C, H, st);
        } else {
            adamw_update_cuda(p, p_x, g, mm, vv, m->param_sizes[i], step, st);
        }
        offset += m->param_sizes[i];
    }
    if (cbwc) {
        cbwc_centre_bias_cuda(m->centred_patchb, m->params.patchb, 1, C, st);
        cbwc_centre_bias_cuda(m->centred_attprojb, m->params.attprojb, L, C, st);
        cbwc_centre_bias_cuda(m->centred_fcprojb, m->params.fcprojb, L, C, st);
    }
    // otherwise V is projected at the next forward (if the mode is, or becomes, cbwc)
    m->centred_stale = !cbwc;
}

// One AdamW step with global norm clipping (clip <= 0: none), the norm and
// scale computed on the GPU; returns the gradient norm before clipping
// (waits for the GPU to read it).
static inline float vitcuda_update(ViTCuda *m, const AdamWConfig *cfg, float grad_clip) {
    vitcuda_grad_sum_of_squares(m);
    step_clip(m->scalars, grad_clip, 0, m->mm.stream);
    vitcuda_update_queued(m, cfg);
    step_scalars_to_host(m->scalars_host, m->scalars, m->mm.stream);
    return (float)m->scalars_host->norm;
}

// host copies: fp32 parameters, gradients, moments (num_parameters each)
static inline void vitcuda_params_to_host(const ViTCuda *m, float *out) {
    CUDA_CHECK(cudaMemcpy(out, m->params_memory, m->num_parameters * sizeof(float),
                          cudaMemcpyDeviceToHost));
}
static inline void vitcuda_grads_to_host(const ViTCuda *m, float *out) {
    CUDA_CHECK(cudaMemcpy(out, m->grads_memory, m->num_parameters * sizeof(float),
                          cudaMemcpyDeviceToHost));
}

static inline void vitcuda_free(ViTCuda *m) {
    void *buffers[] = {
        m->params_memory, m->grads_memory, m->m_memory, m->v_memory, m->centred_patchw,
        m->centred_patchb, m->centred_attprojw, m->centred_attprojb, m->centred_fcprojw,
        m->centred_fcprojb, m->acts.images, m->acts.patches, m->acts.patch_out, m->acts.encoded,
        m->acts.ln1, m->acts.ln1_mean, m->acts.ln1_rstd, m->acts.qkv, m->acts.atty,
        m->acts.residual2, m->acts.ln2, m->acts.ln2_mean, m->acts.ln2_rstd, m->acts.fch,
        m->acts.fch_gelu, m->acts.residual3, m->acts.lnf, m->acts.lnf_mean, m->acts.lnf_rstd,
        m->acts.lnf_cls, m->acts.logits, m->acts.dlogits, m->acts.losses, m->scratch.dresidual,
        m->scratch.branch, m->scratch.dln, m->scratch.datty, m->scratch.dqkv, m->scratch.dfch,
        m->scratch.dfch_gelu, m->scratch.dbias, m->scratch.dlnf_cls, m->scratch.dpatch,
        m->scratch.reduce, m->scratch.sumsq, m->labels, m->drop_scales, m->mix.labels2, m->mix.lam};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) {
        if (buffers[i] != NULL) CUDA_CHECK(cudaFree(buffers[i]));
    }
    cuda_params_x_free(m->params_x_memory, m->params_memory);
    attention_layers_free(&m->attention);
    step_scalars_free(m->scalars, m->scalars_host);
    free(m->logits_host);
    free(m->logits_x_host);
    matmul_context_destroy(&m->mm);
    memset(m, 0, sizeof(*m));
}

#endif
