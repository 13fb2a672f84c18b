#include "vit.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cbwc.h"
#include "kernels/classifier_loss.h"
#include "kernels/drop_path.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/patch_embed.h"
#include "kernels/transformer_block.h"
#include "core/rand.h"
#include "core/tensor_table.h"
#include "core/utils.h"

static void vit_reset(ViT *model) {
    memset(model, 0, sizeof(*model));
    model->mean_loss = -1.0f;
    model->centred_stale = 1;
}

void vit_build(ViT *model, const ViTConfig *config, NormMode mode) {
    vit_reset(model);
    const char *why = vit_config_error(config);
    if (why != NULL) {
        fatal("bad ViT config: %s", why);
    }
    model->config = *config;
    model->mode = mode;
    vit_param_sizes(model->param_sizes, &model->config);
    size_t total = 0;
    for (int i = 0; i < VIT_NUM_PARAM_TENSORS; i++) {
        total += model->param_sizes[i];
    }
    model->num_parameters = total;
    model->params_memory = malloc_check(mul_size_check(total, sizeof(float), "parameters"), "parameters");
    model->grads_memory = calloc_check(total, sizeof(float), "gradients");
    point_tensors((float **)&model->params, model->param_sizes, VIT_NUM_PARAM_TENSORS,
                  model->params_memory);
    point_tensors((float **)&model->grads, model->param_sizes, VIT_NUM_PARAM_TENSORS,
                  model->grads_memory);
}

void vit_init_random(ViT *model, const ViTConfig *config, NormMode mode, unsigned long long seed) {
    vit_build(model, config, mode);
    Rng rng;
    rng_seed(&rng, seed);
    float **p = (float **)&model->params;
    for (int i = 0; i < VIT_NUM_PARAM_TENSORS; i++) {
        size_t n = model->param_sizes[i];
        int gain = i == VIT_LN1W || i == VIT_LN2W || i == VIT_LNFW;
        if (vit_param_decayed(i) || i == VIT_POS || i == VIT_CLS) {
            rng_normal_fill(&rng, p[i], n, 0.0f, 0.02f);
        } else {
            for (size_t j = 0; j < n; j++) {
                p[i][j] = gain ? 1.0f : 0.0f;
            }
        }
    }
}

static void vit_allocate_activations(ViT *model, int B) {
    free(model->acts_memory);
    free(model->scratch_memory);
    free(model->labels);
    const ViTConfig *c = &model->config;
    size_t L = (size_t)c->num_layers, C = (size_t)c->channels, NH = (size_t)c->num_heads;
    size_t T = (size_t)vit_num_tokens(c), Np = T - 1, H = C * (size_t)c->mlp_ratio;
    size_t PD = (size_t)c->image_channels * c->patch_size * c->patch_size;
    size_t Bs = (size_t)B, BT = Bs * T, K = (size_t)c->num_classes;
    // patches, patch_out, encoded, the layers', cls_rows, lnf, mean, rstd, logits, dlogits
    size_t act[VIT_NUM_ACT_TENSORS] = {Bs * Np * PD, Bs * Np * C, BT * C};
    block_acts_sizes(act + 3, L * BT, C, H, L * Bs * NH * T * T);
    const size_t head[] = {Bs * C, Bs * C, Bs, Bs, Bs * K, Bs * K};
    memcpy(act + 3 + BLOCK_NUM_ACTS, head, sizeof(head));
    // losses (B) follows as the 23rd slice
    model->acts_memory = alloc_tensors((float **)&model->acts, act, VIT_NUM_ACT_TENSORS, Bs, "activations");
    model->acts.losses = model->acts.dlogits + Bs * K;
    size_t scratch[VIT_NUM_SCRATCH_TENSORS] = {BT * C, BT * C, BT * C, BT * C, BT * 3 * C,
                                               BT * H, BT * H, 0, Bs * C, Bs * Np * C};
    model->scratch_memory = alloc_tensors((float **)&model->scratch, scratch,
                                          VIT_NUM_SCRATCH_TENSORS, 0, "backward scratch");
    model->scratch.block.dscore_sum = NULL; // no score bias
    model->labels = malloc_check(Bs * sizeof(int), "labels");
    model->batch_size = B;
}

// The centred copies of the stream writers (docs/math.md sections 2-3):
// V = P W and P b for the patch embedding, attn proj and mlp fc2; cls and
// every pos row centred over C. Recomputed from the proxy weights after each update.
static void vit_refresh_centred(ViT *model) {
    const ViTConfig *c = &model->config;
    const int L = c->num_layers, C = c->channels, H = C * c->mlp_ratio, T = vit_num_tokens(c);
    const int PD = c->image_channels * c->patch_size * c->patch_size;
    if (model->centred_memory == NULL) {
        model->centred_memory = calloc_check(model->num_parameters, sizeof(float), "cbwc centred weights");
        point_tensors((float **)&model->centred, model->param_sizes, VIT_NUM_PARAM_TENSORS,
                      model->centred_memory);
    }
    const ViTParams *w = &model->params;
    ViTParams *v = &model->centred;
    cbwc_project_weights(v->patchw, v->patchb, w->patchw, w->patchb, C, PD);
    cbwc_centre_rows(v->cls, w->cls, 1, C);
    cbwc_centre_rows(v->pos, w->pos, T, C);
    for (size_t l = 0; l < (size_t)L; l++) {
        cbwc_project_weights(v->attprojw + l * C * C, v->attprojb + l * C, w->attprojw + l * C * C,
                             w->attprojb + l * C, C, C);
        cbwc_project_weights(v->fcprojw + l * C * H, v->fcprojb + l * C, w->fcprojw + l * C * H,
                             w->fcprojb + l * C, C, H);
    }
    model->centred_stale = 0;
}

// Layer l as the shared block sees it (transformer_block.h): full attention
// over each image's T tokens, drop-path where scales are set, fp32.
static BlockConfig block_config(const ViT *model, int l) {
    const ViTConfig *c = &model->config;
    const int B = model->batch_size, T = vit_num_tokens(c), L = c->num_layers;
    const float *drop = model->drop_scales; // (B, L, 2): branch j of layer l at [b][l][j]
    return (BlockConfig){B * T, c->channels, c->num_heads, c->channels * c->mlp_ratio,
                         norm_mode_kernel(model->mode, true), norm_policy(model->mode)->cbwc, NULL,
                         .attention = {.groups = B, .T = T},
                         .residual = {drop == NULL ? NULL : drop + DROP_PATH_BRANCHES * l,
                                      DROP_PATH_BRANCHES * (size_t)L, B}};
}

// Layer l's slices of the tensors t (the weights, gradients or centred copies).
static BlockTensors layer_tensors(const ViT *model, const ViTParams *t, int l) {
    const BlockTensors stack = {t->ln1w, t->ln1b, t->qkvw,    t->qkvb, t->attprojw, t->attprojb,
                                t->ln2w, t->ln2b, t->fcw,     t->fcb,  t->fcprojw,  t->fcprojb};
    return block_tensors_layer(&stack, l, model->config.channels,
                               model->config.channels * model->config.mlp_ratio);
}

void vit_forward(ViT *model, const float *images, const int *labels, float smoothing, int B) {
    if (model->acts_memory == NULL || B != model->batch_size) {
        vit_allocate_activations(model, B);
    }
    const ViTConfig *c = &model->config;
    const int L = c->num_layers, C = c->channels, NH = c->num_heads, H = C * c->mlp_ratio;
    const int T = vit_num_tokens(c), Np = T - 1, K = c->num_classes, BT = B * T;
    const int PD = c->image_channels * c->patch_size * c->patch_size;
    const NormKind norm = norm_mode_kernel(model->mode, true);
    const int centred = norm_policy(model->mode)->cbwc;
    if (centred && model->centred_stale) {
        vit_refresh_centred(model);
    }
    const ViTParams p = model->params;
    const ViTParams e = centred ? model->centred : model->params; // what the stream writers read
    ViTActivations a = model->acts;

    // tokens: [cls, patch_1 .. patch_Np] + pos
    patches_from_images(a.patches, images, B, c->image_channels, c->image_size, c->patch_size);
    matmul_forward(a.patch_out, a.patches, e.patchw, e.patchb, B * Np, PD, C);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *src = t == 0 ? e.cls : a.patch_out + ((size_t)b * Np + t - 1) * C;
            const float *pos = e.pos + (size_t)t * C;
            float *dst = a.encoded + ((size_t)b * T + t) * C;
            for (int i = 0; i < C; i++) {
                dst[i] = src[i] + pos[i];
            }
        }
    }
    for (int l = 0; l < L; l++) {
        const BlockConfig bc = block_config(model, l);
        const BlockTensors p_l = layer_tensors(model, &p, l), e_l = layer_tensors(model, &e, l);
        const BlockWeights w = block_weights_fp32(&p_l, &e_l);
        const BlockActs acts = block_acts_layer(&a.layers, l, BT, C, H, (size_t)BT * NH * T);
        block_forward(&bc, &w, &acts, l == 0 ? a.encoded : acts.out - (size_t)BT * C,
                      &model->scratch.block);
    }
    // final norm and head on the cls token only (the other rows do not reach the loss)
    const float *last = a.layers.out + (size_t)(L - 1) * BT * C;
    for (int b = 0; b < B; b++) {
        memcpy(a.cls_rows + (size_t)b * C, last + (size_t)b * T * C, (size_t)C * sizeof(float));
    }
    norm_forward(norm, a.lnf, a.lnf_mean, a.lnf_rstd, a.cls_rows, p.lnfw, p.lnfb, B, C);
    matmul_forward(a.logits, a.lnf, p.headw, p.headb, B, C, K);
    if (labels == NULL) {
        model->mean_loss = -1.0f;
        return;
    }
    memcpy(model->labels, labels, (size_t)B * sizeof(int));
    model->smoothing = smoothing;
    classifier_loss_forward(a.losses, a.logits, labels, model->mix, smoothing, B, K);
    double sum = 0.0;
    for (int b = 0; b < B; b++) {
        sum += a.losses[b];
    }
    model->mean_loss = (float)(sum / B);
}

void vit_zero_grad(ViT *model) {
    memset(model->grads_memory, 0, model->num_parameters * sizeof(float));
}

void vit_set_drop_path(ViT *model, const float *scales) {
    model->drop_scales = scales;
}

void vit_set_mix_targets(ViT *model, MixTargets mix) {
    model->mix = mix;
}

void vit_backward(ViT *model, float loss_scale) {
    if (!norm_policy(model->mode)->trainable) {
        fatal("vit_backward: a folded model is for inference only (train its ln or cbwc model)");
    }
    if (model->mean_loss < 0.0f) {
        fatal("vit_backward: needs a forward pass with labels first");
    }
    const ViTConfig *c = &model->config;
    const int B = model->batch_size;
    const int L = c->num_layers, C = c->channels, NH = c->num_heads, H = C * c->mlp_ratio;
    const int T = vit_num_tokens(c), Np = T - 1, K = c->num_classes, BT = B * T;
    const int PD = c->image_channels * c->patch_size * c->patch_size;
    const NormKind norm = norm_mode_kernel(model->mode, true);
    const size_t btc = (size_t)BT * C;
    const ViTParams p = model->params;
    ViTParams g = model->grads;
    ViTActivations a = model->acts;
    ViTScratch s = model->scratch;

    classifier_loss_backward(a.dlogits, a.logits, model->labels, model->mix, model->smoothing,
                             loss_scale, B, K);
    memset(s.dcls_rows, 0, (size_t)B * C * sizeof(float));
    float *dlnf = s.block.dln; // (B, C) slice of a (B, T, C) buffer
    memset(dlnf, 0, (size_t)B * C * sizeof(float));
    matmul_backward(dlnf, g.headw, g.headb, a.dlogits, a.lnf, p.headw, B, C, K);
    norm_backward(norm, s.dcls_rows, g.lnfw, g.lnfb, dlnf, a.cls_rows, p.lnfw, a.lnf_mean,
                  a.lnf_rstd, B, C);
    memset(s.dresidual, 0, btc * sizeof(float));
    for (int b = 0; b < B; b++) {
        memcpy(s.dresidual + (size_t)b * T * C, s.dcls_rows + (size_t)b * C, (size_t)C * sizeof(float));
    }
    for (int l = L - 1; l >= 0; l--) {
        const BlockConfig bc = block_config(model, l);
        const BlockTensors p_l = layer_tensors(model, &p, l), g_l = layer_tensors(model, &g, l);
        const BlockWeights w = block_weights_fp32(&p_l, &p_l);
        const BlockActs acts = block_acts_layer(&a.layers, l, BT, C, H, (size_t)BT * NH * T);
        block_backward(&bc, &w, &g_l, &acts, l == 0 ? a.encoded : acts.out - btc, s.dresidual,
                       &s.block);
    }
    // tokens: dpos[t] += E(sum_b d[b,t]), dcls += E(sum_b d[b,0]), E = centring in cbwc
    float *dpos_sum = s.block.dln; // (T, C) slice
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < C; i++) {
            float sum = 0.0f;
            for (int b = 0; b < B; b++) {
                sum += s.dresidual[((size_t)b * T + t) * C + i];
            }
            dpos_sum[(size_t)t * C + i] = sum;
        }
    }
    if (norm_policy(model->mode)->cbwc) {
        cbwc_centre_rows(dpos_sum, dpos_sum, T, C);
    }
    for (size_t i = 0; i < (size_t)T * C; i++) {
        g.pos[i] += dpos_sum[i];
    }
    for (int i = 0; i < C; i++) {
        g.cls[i] += dpos_sum[i];
    }
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        memcpy(s.dpatch + (size_t)b * Np * C, s.dresidual + ((size_t)b * T + 1) * C,
               (size_t)Np * C * sizeof(float));
    }
    stream_writer_backward(NULL, norm_policy(model->mode)->cbwc, s.block.branch, NULL, g.patchw, g.patchb,
                           s.dpatch, a.patches, (LinearWeight){p.patchw, NULL}, B * Np, PD, C);
    model->mean_loss = -1.0f;
}

double vit_grad_norm(const ViT *model) {
    return sqrt(sum_of_squares(model->grads_memory, model->num_parameters));
}

void vit_update(ViT *model, const AdamWConfig *cfg, float grad_clip) {
    vit_update_shard(model, cfg, clip_grad_scale(vit_grad_norm(model), grad_clip), 0,
                     model->num_parameters);
}

void vit_update_shard(ViT *model, const AdamWConfig *cfg, float grad_scale, size_t lo, size_t hi) {
    if (!norm_policy(model->mode)->trainable) {
        fatal("vit_update: a folded model is for inference only (train its ln or cbwc model)");
    }
    unsigned char decay[VIT_NUM_PARAM_TENSORS];
    for (int i = 0; i < VIT_NUM_PARAM_TENSORS; i++) {
        decay[i] = (unsigned char)vit_param_decayed(i);
    }
    adamw_step_tensors_range(model->params_memory, model->grads_memory, &model->m_memory,
                             &model->v_memory, &model->adamw_step, model->num_parameters,
                             model->param_sizes, decay, VIT_NUM_PARAM_TENSORS, cfg, grad_scale,
                             lo, hi);
    model->centred_stale = 1;
}

void vit_free(ViT *model) {
    free(model->params_memory);
    free(model->grads_memory);
    free(model->m_memory);
    free(model->v_memory);
    free(model->acts_memory);
    free(model->scratch_memory);
    free(model->centred_memory);
    free(model->labels);
    vit_reset(model);
}
