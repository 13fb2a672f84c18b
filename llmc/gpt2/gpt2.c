#include "gpt2.h"
#include "gpt2_private.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cbwc.h"
#include "kernels/crossentropy.h"
#include "kernels/drop_path.h"
#include "kernels/dropout.h"
#include "kernels/encoder.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/transformer_block.h"
#include "core/rand.h"
#include "core/tensor_table.h"
#include "core/utils.h"

void gpt2_param_sizes(size_t sizes[GPT2_NUM_PARAM_TENSORS], const GPT2Config *cfg) {
    size_t Vp = (size_t)cfg->padded_vocab_size, C = (size_t)cfg->channels;
    size_t L = (size_t)cfg->num_layers, maxT = (size_t)cfg->max_seq_len;
    sizes[GPT2_WTE] = Vp * C;
    sizes[GPT2_WPE] = maxT * C;
    sizes[GPT2_LN1W] = L * C;
    sizes[GPT2_LN1B] = L * C;
    sizes[GPT2_QKVW] = L * 3 * C * C;
    sizes[GPT2_QKVB] = L * 3 * C;
    sizes[GPT2_ATTPROJW] = L * C * C;
    sizes[GPT2_ATTPROJB] = L * C;
    sizes[GPT2_LN2W] = L * C;
    sizes[GPT2_LN2B] = L * C;
    sizes[GPT2_FCW] = L * 4 * C * C;
    sizes[GPT2_FCB] = L * 4 * C;
    sizes[GPT2_FCPROJW] = L * C * 4 * C;
    sizes[GPT2_FCPROJB] = L * C;
    sizes[GPT2_LNFW] = C;
    sizes[GPT2_LNFB] = C;
}

const char *gpt2_config_error(const GPT2Config *c) {
    if (c->max_seq_len <= 0 || c->vocab_size <= 0 || c->padded_vocab_size <= 0 ||
        c->num_layers <= 0 || c->num_heads <= 0 || c->channels <= 0) {
        return "every dimension must be positive";
    }
    if (c->channels % c->num_heads != 0) {
        return "channels must be a multiple of the number of heads";
    }
    if (c->vocab_size > c->padded_vocab_size) {
        return "vocab size exceeds the padded vocab size";
    }
    // keep every tensor and every (B, T, C) product well inside size_t and int indexing
    if (c->channels > (1 << 16) || c->max_seq_len > (1 << 20) || c->num_layers > 4096 ||
        c->padded_vocab_size > (1 << 24)) {
        return "a dimension is implausibly large";
    }
    return NULL;
}

#define STREAM LAYER_ROLE_STREAM_WRITER
#define NORM LAYER_ROLE_NORM
#define INNER LAYER_ROLE_INNER
// name, role, per_layer, bias_of, is_bias, folded_bit, decayed
static const GPT2TensorInfo TENSORS[GPT2_NUM_PARAM_TENSORS] = {
    [GPT2_WTE] = {"wte", STREAM, 0, -1, 0, GPT2_FOLDED_WTE, 1},
    [GPT2_WPE] = {"wpe", STREAM, 0, -1, 0, GPT2_FOLDED_WPE, 1},
    [GPT2_LN1W] = {"ln1w", NORM, 1, -1, 0, 0, 0},
    [GPT2_LN1B] = {"ln1b", NORM, 1, -1, 1, 0, 0},
    [GPT2_QKVW] = {"qkvw", INNER, 1, GPT2_QKVB, 0, 0, 1},
    [GPT2_QKVB] = {"qkvb", INNER, 1, -1, 1, 0, 0},
    [GPT2_ATTPROJW] = {"attprojw", STREAM, 1, GPT2_ATTPROJB, 0, GPT2_FOLDED_ATTPROJ, 1},
    [GPT2_ATTPROJB] = {"attprojb", STREAM, 1, -1, 1, GPT2_FOLDED_ATTPROJ, 0},
    [GPT2_LN2W] = {"ln2w", NORM, 1, -1, 0, 0, 0},
    [GPT2_LN2B] = {"ln2b", NORM, 1, -1, 1, 0, 0},
    [GPT2_FCW] = {"fcw", INNER, 1, GPT2_FCB, 0, 0, 1},
    [GPT2_FCB] = {"fcb", INNER, 1, -1, 1, 0, 0},
    [GPT2_FCPROJW] = {"fcprojw", STREAM, 1, GPT2_FCPROJB, 0, GPT2_FOLDED_FCPROJ, 1},
    [GPT2_FCPROJB] = {"fcprojb", STREAM, 1, -1, 1, GPT2_FOLDED_FCPROJ, 0},
    [GPT2_LNFW] = {"lnfw", NORM, 0, -1, 0, 0, 0},
    [GPT2_LNFB] = {"lnfb", NORM, 0, -1, 1, 0, 0},
};
#undef STREAM
#undef NORM
#undef INNER

const GPT2TensorInfo *gpt2_tensor_info(int i) {
    if (!(i >= 0 && i < GPT2_NUM_PARAM_TENSORS)) {
        fatal("internal: GPT-2 has no parameter tensor %d", i);
    }
    return &TENSORS[i];
}

const char *gpt2_param_name(int i) {
    return i >= 0 && i < GPT2_NUM_PARAM_TENSORS ? TENSORS[i].name : "?";
}

int gpt2_grads_ready_group(int layer, int num_layers, int tensors[GPT2_NUM_PARAM_TENSORS]) {
    int n = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        const GPT2TensorInfo *t = &TENSORS[i];
        int in_group = t->per_layer; // 0 <= layer < L
        if (layer < 0) { // the embeddings
            in_group = !t->per_layer && t->role == LAYER_ROLE_STREAM_WRITER;
        } else if (layer == num_layers) { // the final norm
            in_group = !t->per_layer && t->role == LAYER_ROLE_NORM;
        }
        if (in_group) {
            tensors[n++] = i;
        }
    }
    return n;
}

// Parameters and gradients for model->config; -1 when memory runs out.
int gpt2_allocate_params(GPT2 *model) {
    gpt2_param_sizes(model->param_sizes, &model->config);
    size_t total = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        total += model->param_sizes[i];
    }
    model->num_parameters = total;
    size_t bytes;
    if (size_mul(total, sizeof(float), &bytes) != 0) {
        return -1;
    }
    model->params_memory = malloc(bytes == 0 ? 1 : bytes);
    model->grads_memory = calloc(total == 0 ? 1 : total, sizeof(float));
    if (model->params_memory == NULL || model->grads_memory == NULL) {
        return -1;
    }
    point_tensors((float **)&model->params, model->param_sizes, GPT2_NUM_PARAM_TENSORS,
                  model->params_memory);
    point_tensors((float **)&model->grads, model->param_sizes, GPT2_NUM_PARAM_TENSORS,
                  model->grads_memory);
    return 0;
}

void gpt2_reset_state(GPT2 *model) {
    memset(model, 0, sizeof(*model));
    model->mean_loss = -1.0f;
    model->centred_stale = 1;
    model->bf16_stale = 1;
    model->centred_bf16_stale = 1;
}

void gpt2_init_random(GPT2 *model, const GPT2Config *config, NormMode mode,
                      unsigned long long seed) {
    gpt2_reset_state(model);
    const char *why = gpt2_config_error(config);
    if (why != NULL) {
        fatal("bad model config: %s", why);
    }
    model->config = *config;
    model->mode = mode;
    if (gpt2_allocate_params(model) != 0) {
        fatal("out of memory allocating %zu parameters", model->num_parameters);
    }
    Rng rng;
    rng_seed(&rng, seed);
    const float std = 0.02f;
    const float residual_std = 0.02f / sqrtf(2.0f * (float)config->num_layers);
    // in file order, so the draws follow llm.c's: the weights N(0, std), the
    // per-layer stream writers' (the residual projections) N(0, residual_std)
    float **tensors = (float **)&model->params;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        const GPT2TensorInfo *t = &TENSORS[i];
        const size_t n = model->param_sizes[i];
        if (t->decayed) {
            const int residual = t->role == LAYER_ROLE_STREAM_WRITER && t->per_layer;
            rng_normal_fill(&rng, tensors[i], n, 0.0f, residual ? residual_std : std);
        } else if (t->is_bias) {
            memset(tensors[i], 0, n * sizeof(float));
        } else { // a norm's gain
            for (size_t j = 0; j < n; j++) {
                tensors[i][j] = 1.0f;
            }
        }
    }
    size_t C = (size_t)config->channels;
    memset(model->params.wte + (size_t)config->vocab_size * C, 0,
           (size_t)(config->padded_vocab_size - config->vocab_size) * C * sizeof(float));
}

// Reads an unsigned decimal after a one-letter key; -1 if none.
static long parse_field(const char **s) {
    if (!isdigit((unsigned char)**s)) {
        return -1;
    }
    char *end;
    long v = strtol(*s, &end, 10);
    *s = end;
    return v;
}

// Heads when the descriptor names none: head size 64 as in GPT-2, else the
// most heads of at least 64 channels that divide C (1 for C < 128).
static long default_heads(long C) {
    long NH = C / 64 > 0 ? C / 64 : 1;
    while (C % NH != 0) {
        NH--;
    }
    return NH;
}

int gpt2_parse_descriptor(const char *d, GPT2Config *cfg) {
    if (d[0] != 'd') {
        return -1;
    }
    const char *s = d + 1;
    long L = parse_field(&s);
    if (L <= 0 || L > (1L << 24)) {
        return -1;
    }
    long C = 0, NH = 0, V = 50257, maxT = 1024;
    while (*s != '\0') {
        char key = *s++;
        long v = parse_field(&s);
        if (v <= 0 || v > (1L << 24)) {
            return -1;
        }
        switch (key) {
        case 'c': C = v; break;
        case 'h': NH = v; break;
        case 'v': V = v; break;
        case 't': maxT = v; break;
        default: return -1;
        }
    }
    if (C == 0) { // the GPT-2 family's widths (as in llm.c), else GPT-2 small's 64 per layer
        C = L == 6 ? 384 : L == 12 ? 768 : L == 24 ? 1024 : L == 36 ? 1280 : L == 48 ? 1600 : 64 * L;
    }
    if (NH == 0) {
        NH = default_heads(C);
    }
    cfg->num_layers = (int)L;
    cfg->channels = (int)C;
    cfg->num_heads = (int)NH;
    cfg->vocab_size = (int)V;
    cfg->padded_vocab_size = (int)((V + 127) / 128 * 128);
    cfg->max_seq_len = (int)maxT;
    return 0;
}

static void gpt2_allocate_activations(GPT2 *model, int B, int T) {
    free(model->acts_memory);
    free(model->scratch_memory);
    free(model->inputs);
    free(model->targets);
    const GPT2Config *c = &model->config;
    size_t L = (size_t)c->num_layers, C = (size_t)c->channels, NH = (size_t)c->num_heads;
    size_t BT = (size_t)B * (size_t)T, Vp = (size_t)c->padded_vocab_size;
    // encoded, the layers' (att: the lse, no T x T kept: attention.h), lnf, mean, rstd, logits,
    // losses, logits_stats
    size_t act[GPT2_NUM_ACT_TENSORS] = {BT * C};
    block_acts_sizes(act + 1, L * BT, C, 4 * C, L * B * NH * T);
    const size_t head[] = {BT * C, BT, BT, BT * Vp, BT, BT * 2};
    memcpy(act + 1 + BLOCK_NUM_ACTS, head, sizeof(head));
    size_t scratch[GPT2_NUM_SCRATCH_TENSORS] = {BT * C, BT * C, BT * C, BT * C,
                                                BT * 3 * C, BT * 4 * C, BT * 4 * C, 0};
    model->acts_memory = alloc_tensors((float **)&model->acts, act, GPT2_NUM_ACT_TENSORS, 0, "activations");
    model->scratch_memory = alloc_tensors((float **)&model->scratch, scratch,
                                          GPT2_NUM_SCRATCH_TENSORS, 0, "backward scratch");
    model->scratch.block.dscore_sum = NULL; // causal attention has no score bias
    model->inputs = malloc_check(BT * sizeof(int), "inputs");
    model->targets = malloc_check(BT * sizeof(int), "targets");
    model->batch_size = B;
    model->seq_len = T;
}

// cbwc's centred weights in centred_memory, in this order: V of attn c_proj,
// its P b, V of mlp c_proj, its P b.
#define CENTRED_TENSORS 4
static void centred_sizes(const GPT2 *model, size_t sizes[CENTRED_TENSORS]) {
    const size_t L = (size_t)model->config.num_layers, C = (size_t)model->config.channels;
    sizes[0] = L * C * C;
    sizes[1] = L * C;
    sizes[2] = L * C * 4 * C;
    sizes[3] = L * C;
}

// V = P W and P b for every attn c_proj and mlp c_proj (docs/math.md
// section 2), recomputed from the proxy weights after each update.
static void cbwc_refresh(GPT2 *model) {
    const size_t L = (size_t)model->config.num_layers, C = (size_t)model->config.channels;
    if (model->centred_memory == NULL) {
        size_t sizes[CENTRED_TENSORS];
        centred_sizes(model, sizes);
        model->centred_memory = alloc_tensors(&model->centred_attprojw, sizes, CENTRED_TENSORS, 0,
                                              "cbwc effective weights");
    }
    const ParameterTensors *w = &model->params;
    for (size_t l = 0; l < L; l++) {
        cbwc_project_weights(model->centred_attprojw + l * C * C, model->centred_attprojb + l * C,
                             w->attprojw + l * C * C, w->attprojb + l * C, (int)C, (int)C);
        cbwc_project_weights(model->centred_fcprojw + l * 4 * C * C, model->centred_fcprojb + l * C,
                             w->fcprojw + l * 4 * C * C, w->fcprojb + l * C, (int)C, 4 * (int)C);
    }
    model->centred_stale = 0;
    model->centred_bf16_stale = 1; // V's bf16 copy too
}

// 1 when the linear layers run in bf16 (gpt2_set_matmul_precision).
static int uses_bf16(const GPT2 *model) {
    return model->matmul_engine != NULL && matmul_engine_precision(model->matmul_engine) == MATMUL_BF16;
}

// The bf16 copies of every parameter and of cbwc's centred weights, from the
// fp32 masters (after cbwc_refresh, so V is rounded from the fresh V), where
// stale (gpt2_update rounds the parameters in AdamW's pass).
static void bf16_refresh(GPT2 *model) {
    if (model->params_bf16 == NULL) {
        model->params_bf16 = malloc_check(model->num_parameters * sizeof(uint16_t),
                                          "bf16 parameters");
        model->bf16_stale = 1;
    }
    if (model->bf16_stale) {
        matmul_to_bf16(model->params_bf16, model->params_memory, model->num_parameters);
        model->bf16_stale = 0;
    }
    if (norm_policy(model->mode)->cbwc && model->centred_bf16_stale) {
        size_t sizes[CENTRED_TENSORS];
        centred_sizes(model, sizes);
        const size_t count = sizes[0] + sizes[1] + sizes[2] + sizes[3];
        if (model->centred_bf16 == NULL) {
            model->centred_bf16 = malloc_check(count * sizeof(uint16_t), "bf16 centred weights");
        }
        matmul_to_bf16(model->centred_bf16, model->centred_memory, count);
        model->centred_bf16_stale = 0;
    }
}

// Parameter tensor `tensor` (a GPT2_ index), as ParameterTensors points it.
static LinearWeight param_weight(const GPT2 *model, int tensor) {
    size_t offset = 0;
    for (int i = 0; i < tensor; i++) {
        offset += model->param_sizes[i];
    }
    const uint16_t *bf16 = uses_bf16(model) ? model->params_bf16 : NULL;
    return linear_weight_at((LinearWeight){model->params_memory, bf16}, offset);
}

// The forward's stream-writing matrices, as gpt2_stream_weights picks them:
// the proxy W in ln/rms, cbwc's V (in centred_memory) in cbwc.
static void stream_weights(const GPT2 *model, LinearWeight *attprojw, LinearWeight *fcprojw) {
    if (!norm_policy(model->mode)->cbwc) {
        *attprojw = param_weight(model, GPT2_ATTPROJW);
        *fcprojw = param_weight(model, GPT2_FCPROJW);
        return;
    }
    size_t sizes[CENTRED_TENSORS];
    centred_sizes(model, sizes);
    const uint16_t *bf16 = uses_bf16(model) ? model->centred_bf16 : NULL;
    *attprojw = (LinearWeight){model->centred_memory, bf16};
    *fcprojw = linear_weight_at(*attprojw, sizes[0] + sizes[1]);
}

void gpt2_set_matmul_precision(GPT2 *model, MatmulPrecision precision) {
    matmul_engine_free(model->matmul_engine);
    model->matmul_engine = precision == MATMUL_FP32 ? NULL : matmul_engine_create(precision);
    model->bf16_stale = 1;
    model->centred_bf16_stale = 1;
}

// Folded tied head: wte holds V = W - m 1^T, so h . W_t = h . V_t + m_t sum_c h_c
// (docs/math.md section 4).
static void tied_head_mean_correction(float *logits, const float *h, const float *row_means,
                                      int BT, int C, int Vp) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < BT; i++) {
        float sum = 0.0f;
        for (int c = 0; c < C; c++) {
            sum += h[(size_t)i * C + c];
        }
        float *row = logits + (size_t)i * Vp;
        for (int t = 0; t < Vp; t++) {
            row[t] += row_means[t] * sum;
        }
    }
}

void gpt2_head_forward(const GPT2 *model, float *logits, const float *lnf, int N) {
    const int C = model->config.channels, Vp = model->config.padded_vocab_size;
    // tied head reads the proxy wte in every mode (docs/math.md section 4)
    matmul_forward(logits, lnf, model->params.wte, NULL, N, C, Vp);
    if (norm_policy(model->mode)->folded) {
        tied_head_mean_correction(logits, lnf, model->head_row_means, N, C, Vp);
    }
}

GPT2StreamWeights gpt2_stream_weights(GPT2 *model) {
    const ParameterTensors *p = &model->params;
    if (!norm_policy(model->mode)->cbwc) {
        return (GPT2StreamWeights){p->attprojw, p->attprojb, p->fcprojw, p->fcprojb};
    }
    if (model->centred_stale) {
        cbwc_refresh(model);
    }
    return (GPT2StreamWeights){model->centred_attprojw, model->centred_attprojb,
                               model->centred_fcprojw, model->centred_fcprojb};
}

// residual dropout and drop-path both act on the residual branches: one at a time
static void stochastic_branch_check(const char *what, float value, float other) {
    if (!(value >= 0.0f && value < 1.0f)) fatal("%s %g: must be in [0, 1)", what, (double)value);
    if (value > 0.0f && other > 0.0f) fatal("residual dropout and drop-path: choose one");
}

void gpt2_set_resid_dropout(GPT2 *model, float p, uint64_t seed) {
    stochastic_branch_check("residual dropout", p, model->drop_path);
    model->resid_dropout = p;
    model->dropout_seed = seed;
}

void gpt2_set_drop_path(GPT2 *model, float rate, uint64_t seed) {
    stochastic_branch_check("drop-path rate", rate, model->resid_dropout);
    model->drop_path = rate;
    model->drop_path_seed = seed;
}

void gpt2_set_drop_path_scales(GPT2 *model, const float *scales) {
    model->drop_scales_fixed = scales;
}

// The drop-path scales of a train forward of B samples with draw `draw`, or
// NULL when stochastic depth is off.
static const float *drop_path_scales(GPT2 *model, int B, uint64_t draw) {
    if (model->drop_scales_fixed != NULL) {
        return model->drop_scales_fixed;
    }
    if (model->drop_path == 0.0f) {
        return NULL;
    }
    const int L = model->config.num_layers;
    if (model->drop_scales_B != B) {
        free(model->drop_scales);
        model->drop_scales =
            malloc_check((size_t)B * L * DROP_PATH_BRANCHES * sizeof(float), "drop-path scales");
        model->drop_scales_B = B;
    }
    Rng rng;
    rng_seed(&rng, drop_path_draw_seed(model->drop_path_seed, draw));
    drop_path_draw(model->drop_scales, B, L, model->drop_path, &rng);
    return model->drop_scales;
}

// Layer l as the shared block sees it (transformer_block.h): causal
// attention, the residual dropout of the last forward, the model's matmuls.
static BlockConfig block_config(const GPT2 *model, int l) {
    const GPT2Config *cfg = &model->config;
    const int B = model->batch_size, T = model->seq_len, C = cfg->channels;
    const float p = model->dropout_active ? model->resid_dropout : 0.0f;
    BlockConfig c = {B * T, C, cfg->num_heads, 4 * C, norm_mode_kernel(model->mode, true),
                     norm_policy(model->mode)->cbwc, model->matmul_engine,
                     .attention = {.causal = 1, .groups = B, .T = T},
                     .residual = {.dropout = 1, .dropout_p = p, .dropout_seed = model->dropout_seed}};
    for (int j = 0; j < 2; j++) {
        c.residual.dropout_stream[j] = dropout_branch_stream(model->dropout_draw, cfg->num_layers, l, j);
    }
    if (model->drop_path_active) { // per sample and branch: block l's scales of (B, L, 2)
        const float *scales = model->drop_scales_fixed != NULL ? model->drop_scales_fixed
                                                               : model->drop_scales;
        c.residual = (BlockResidual){.drop_scales = scales + (size_t)l * DROP_PATH_BRANCHES,
                                     .drop_stride = (size_t)cfg->num_layers * DROP_PATH_BRANCHES,
                                     .samples = B};
    }
    return c;
}

// Layer l's slices of the per-layer tensors in t (the weights or gradients).
static BlockTensors layer_tensors(const GPT2 *model, const ParameterTensors *t, int l) {
    const BlockTensors stack = {t->ln1w, t->ln1b, t->qkvw,    t->qkvb, t->attprojw, t->attprojb,
                                t->ln2w, t->ln2b, t->fcw,     t->fcb,  t->fcprojw,  t->fcprojb};
    return block_tensors_layer(&stack, l, model->config.channels, 4 * model->config.channels);
}

// Layer l's weights; the stream writers as given (V and P b in the forward,
// the proxies in the backward).
static BlockWeights block_weights(const GPT2 *model, int l, LinearWeight attprojw,
                                  const float *attprojb, LinearWeight fcprojw, const float *fcprojb) {
    const BlockTensors p = layer_tensors(model, &model->params, l);
    const size_t C = (size_t)model->config.channels, lc = (size_t)l * C;
    return (BlockWeights){p.ln1w, p.ln1b, p.qkvb, attprojb + lc, p.ln2w, p.ln2b, p.fcb, fcprojb + lc,
                          linear_weight_at(param_weight(model, GPT2_QKVW), 3 * lc * C),
                          linear_weight_at(attprojw, lc * C),
                          linear_weight_at(param_weight(model, GPT2_FCW), 4 * lc * C),
                          linear_weight_at(fcprojw, 4 * lc * C)};
}

static void gpt2_forward_pass(GPT2 *model, const int *inputs, const int *targets, int B, int T);

void gpt2_forward(GPT2 *model, const int *inputs, const int *targets, int B, int T) {
    model->dropout_active = 0;
    model->drop_path_active = 0;
    gpt2_forward_pass(model, inputs, targets, B, T);
}

void gpt2_forward_train(GPT2 *model, const int *inputs, const int *targets, int B, int T,
                        uint64_t draw) {
    model->dropout_active = model->resid_dropout > 0.0f;
    model->dropout_draw = draw;
    model->drop_path_active = drop_path_scales(model, B, draw) != NULL;
    gpt2_forward_pass(model, inputs, targets, B, T);
}

static void gpt2_forward_pass(GPT2 *model, const int *inputs, const int *targets, int B, int T) {
    if (model->acts_memory == NULL || B != model->batch_size || T != model->seq_len) {
        gpt2_allocate_activations(model, B, T);
    }
    const GPT2Config *cfg = &model->config;
    const int L = cfg->num_layers, C = cfg->channels, NH = cfg->num_heads;
    const int V = cfg->vocab_size, Vp = cfg->padded_vocab_size, BT = B * T;
    const NormKind norm = norm_mode_kernel(model->mode, true);
    ParameterTensors p = model->params;
    ActivationTensors a = model->acts;
    memcpy(model->inputs, inputs, (size_t)BT * sizeof(int));
    // the stream-writing projections: proxy W in ln/rms, effective V in cbwc
    const GPT2StreamWeights sw = gpt2_stream_weights(model); // refreshes cbwc's V
    if (uses_bf16(model)) {
        bf16_refresh(model); // only the stale copies
    }
    LinearWeight attprojw, fcprojw;
    stream_weights(model, &attprojw, &fcprojw);

    encoder_forward(a.encoded, inputs, p.wte, p.wpe, B, T, C, norm_policy(model->mode)->cbwc);
    for (int l = 0; l < L; l++) {
        const BlockConfig c = block_config(model, l);
        const BlockWeights w = block_weights(model, l, attprojw, sw.attprojb, fcprojw, sw.fcprojb);
        const BlockActs acts = block_acts_layer(&a.layers, l, BT, C, 4 * C, (size_t)BT * NH);
        block_forward(&c, &w, &acts, l == 0 ? a.encoded : acts.out - (size_t)BT * C,
                      &model->scratch.block);
    }
    const float *last = a.layers.out + (size_t)(L - 1) * BT * C;
    norm_forward(norm, a.lnf, a.lnf_mean, a.lnf_rstd, last, p.lnfw, p.lnfb, BT, C);
    if (model->matmul_engine == NULL) {
        gpt2_head_forward(model, a.logits, a.lnf, BT);
    } else { // gpt2_head_forward in the model's matmul precision
        linear_forward(model->matmul_engine, a.logits, NULL, a.lnf, param_weight(model, GPT2_WTE),
                       NULL, BT, C, Vp);
        if (norm_policy(model->mode)->folded) {
            tied_head_mean_correction(a.logits, a.lnf, model->head_row_means, BT, C, Vp);
        }
    }

    if (targets == NULL) {
        model->mean_loss = -1.0f;
        return;
    }
    memcpy(model->targets, targets, (size_t)BT * sizeof(int));
    crossentropy_forward(a.losses, a.logits_stats, a.logits, targets, BT, V, Vp);
    double sum = 0.0;
    int counted = 0;
    for (int i = 0; i < BT; i++) {
        sum += a.losses[i];
        counted += targets[i] >= 0;
    }
    // mean over the positions with a target (targets < 0 are masked out)
    model->loss_tokens = counted;
    model->mean_loss = counted > 0 ? (float)(sum / counted) : 0.0f;
}

void gpt2_zero_grad(GPT2 *model) {
    memset(model->grads_memory, 0, model->num_parameters * sizeof(float));
}

void gpt2_set_grads_ready(GPT2 *model, GPT2GradsReady fn, void *ctx) {
    model->grads_ready = fn;
    model->grads_ready_ctx = ctx;
}

static void grads_ready(GPT2 *model, int layer) {
    if (model->grads_ready != NULL) {
        model->grads_ready(model->grads_ready_ctx, layer);
    }
}

void gpt2_backward(GPT2 *model, float loss_scale) {
    if (model->mean_loss < 0.0f) {
        fatal("gpt2_backward: needs a forward pass with targets first");
    }
    if (!norm_policy(model->mode)->trainable) {
        fatal("gpt2_backward: a folded model is for inference only (train the ln model)");
    }
    const GPT2Config *cfg = &model->config;
    const int B = model->batch_size, T = model->seq_len, BT = B * T;
    const int L = cfg->num_layers, C = cfg->channels, NH = cfg->num_heads;
    const int V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
    const NormKind norm = norm_mode_kernel(model->mode, true);
    const size_t btc = (size_t)BT * C;
    ParameterTensors p = model->params;
    ParameterTensors g = model->grads;
    ActivationTensors a = model->acts;
    BackwardScratch s = model->scratch;
    // the proxy weights in every mode (cbwc's V enters through the centred dout)
    const LinearWeight attprojw = param_weight(model, GPT2_ATTPROJW);
    const LinearWeight fcprojw = param_weight(model, GPT2_FCPROJW);

    crossentropy_backward_inplace(a.logits, a.logits_stats, model->targets, loss_scale, BT, V, Vp);
    linear_backward(model->matmul_engine, s.block.dln, g.wte, NULL, a.logits, a.lnf,
                    param_weight(model, GPT2_WTE), BT, C, Vp);
    memset(s.dresidual, 0, btc * sizeof(float));
    const float *last = a.layers.out + (size_t)(L - 1) * btc;
    norm_backward(norm, s.dresidual, g.lnfw, g.lnfb, s.block.dln, last, p.lnfw, a.lnf_mean, a.lnf_rstd,
                  BT, C);
    grads_ready(model, L);

    for (int l = L - 1; l >= 0; l--) {
        const BlockConfig c = block_config(model, l);
        const BlockWeights w = block_weights(model, l, attprojw, p.attprojb, fcprojw, p.fcprojb);
        const BlockActs acts = block_acts_layer(&a.layers, l, BT, C, 4 * C, (size_t)BT * NH);
        const BlockTensors dw = layer_tensors(model, &g, l);
        block_backward(&c, &w, &dw, &acts, l == 0 ? a.encoded : acts.out - btc, s.dresidual,
                       &s.block);
        grads_ready(model, l);
    }
    encoder_backward(g.wte, g.wpe, s.dresidual, model->inputs, B, T, C,
                     norm_policy(model->mode)->cbwc);
    grads_ready(model, -1);
    model->mean_loss = -1.0f; // the logits now hold their gradient
}

// AdamW's weight decay per tensor (adamw.h), from the table
static void decayed_tensors(unsigned char decay_on[GPT2_NUM_PARAM_TENSORS]) {
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        decay_on[i] = (unsigned char)TENSORS[i].decayed;
    }
}

void gpt2_update(GPT2 *model, const AdamWConfig *cfg, float grad_clip) {
    unsigned char decay_on[GPT2_NUM_PARAM_TENSORS];
    decayed_tensors(decay_on);
    // in bf16 the update writes the parameters' bf16 copy in the same pass
    uint16_t *params_bf16 = uses_bf16(model) ? model->params_bf16 : NULL;
    adamw_step_tensors(model->params_memory, params_bf16, model->grads_memory, &model->m_memory,
                       &model->v_memory, &model->adamw_step, model->num_parameters,
                       model->param_sizes, decay_on, GPT2_NUM_PARAM_TENSORS, cfg,
                       grad_clip);
    model->centred_stale = 1;
    model->bf16_stale = params_bf16 == NULL;
}

void gpt2_update_shard(GPT2 *model, const AdamWConfig *cfg, float grad_scale, size_t lo,
                       size_t hi) {
    unsigned char decay_on[GPT2_NUM_PARAM_TENSORS];
    decayed_tensors(decay_on);
    adamw_step_tensors_range(model->params_memory, model->grads_memory, &model->m_memory,
                             &model->v_memory, &model->adamw_step, model->num_parameters,
                             model->param_sizes, decay_on, GPT2_NUM_PARAM_TENSORS,
                             cfg, grad_scale, lo, hi);
    model->centred_stale = 1;
    model->bf16_stale = 1;
}

void gpt2_free(GPT2 *model) {
    free(model->params_memory);
    free(model->grads_memory);
    free(model->m_memory);
    free(model->v_memory);
    free(model->acts_memory);
    free(model->scratch_memory);
    free(model->centred_memory);
    free(model->head_row_means);
    free(model->drop_scales);
    matmul_engine_free(model->matmul_engine);
    free(model->params_bf16);
    free(model->centred_bf16);
    free(model->inputs);
    free(model->targets);
    gpt2_reset_state(model);
}
