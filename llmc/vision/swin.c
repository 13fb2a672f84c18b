#include "swin.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/transformer_block.h"
#include "kernels/cbwc.h"
#include "kernels/classifier_loss.h"
#include "kernels/drop_path.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/patch_embed.h"
#include "core/rand.h"
#include "kernels/swin_window.h"
#include "core/utils.h"

// The window-order -> image-token permutation, the relative position index
// and the shifted-window mask (swin_window.h).
static void block_build_tables(SwinBlock *blk) {
    const int W = blk->window, T = blk->T;
    blk->perm = malloc_check((size_t)blk->N * sizeof(int), "window permutation");
    swin_window_perm(blk->perm, blk->res, W, blk->shift);
    blk->rel_index = malloc_check((size_t)T * T * sizeof(int), "relative position index");
    swin_relative_index(blk->rel_index, W);
    blk->mask = NULL;
    blk->nbias = 1;
    if (blk->shift > 0) {
        blk->nbias = blk->nW;
        blk->mask = malloc_check((size_t)blk->nW * T * T * sizeof(float), "shift mask");
        swin_shift_mask(blk->mask, blk->res, W, blk->shift);
    }
    blk->bias = malloc_check((size_t)blk->nbias * blk->NH * T * T * sizeof(float), "score bias");
}

// The blocks' and merges' shapes from the config (their one owner: the GPU
// model, llmc/cuda/swin_cuda.cuh, copies them); their parameters at the
// offsets of the layout (vision_layout.c).
static void swin_build_blocks(Swin *m) {
    const SwinConfig *c = &m->config;
    m->num_blocks = swin_num_blocks(c);
    m->blocks = calloc_check((size_t)m->num_blocks, sizeof(SwinBlock), "blocks");
    m->res0 = swin_stage_resolution(c, 0);
    m->PD = c->image_channels * c->patch_size * c->patch_size;
    int res = m->res0;
    for (int s = 0, b = 0; s < c->num_stages; s++) {
        const int C = c->embed_dim << s, rms = swin_stage_rms_in_cbwc(c, s);
        res = swin_stage_resolution(c, s);
        if (s > 0) {
            SwinMerge *mg = &m->merges[s];
            mg->C_in = C / 2;
            mg->res_out = res;
            mg->N_out = res * res;
            mg->off = &m->off.merges[s];
            mg->rms_in_cbwc = swin_merge_norm_rms_in_cbwc(c);
            mg->centred_reduction = rms;
        }
        for (int i = 0; i < c->depths[s]; i++, b++) {
            SwinBlock *blk = &m->blocks[b];
            blk->stage = s;
            blk->C = C;
            blk->NH = c->heads[s];
            blk->res = res;
            blk->window = swin_stage_window(c, res);
            blk->shift = (i % 2 == 1 && res > c->window) ? c->window / 2 : 0;
            blk->N = res * res;
            blk->T = blk->window * blk->window;
            blk->nW = blk->N / blk->T;
            blk->hidden = C * c->mlp_ratio;
            blk->rms_in_cbwc = rms;
            blk->off = &m->off.blocks[b];
            block_build_tables(blk);
        }
    }
    m->C_last = c->embed_dim << (c->num_stages - 1);
    m->N_last = res * res;
}

static void swin_reset(Swin *m) {
    memset(m, 0, sizeof(*m));
    m->mean_loss = -1.0f;
    m->centred_stale = 1;
}

void swin_build(Swin *m, const SwinConfig *config, NormMode mode) {
    swin_reset(m);
    const char *why = swin_config_error(config);
    if (why != NULL) {
        fatal("bad Swin config: %s", why);
    }
    if (config->paper_variant && !norm_policy(mode)->cbwc) {
        fatal("the Swin paper variant is a cbwc model, not %s", norm_mode_name(mode));
    }
    m->config = *config;
    m->mode = mode;
    swin_layout(config, &m->table, &m->off);
    swin_build_blocks(m);
    m->num_parameters = m->table.num_parameters;
    m->params_memory = malloc_check(mul_size_check(m->num_parameters, sizeof(float), "parameters"),
                                    "parameters");
    m->grads_memory = calloc_check(m->num_parameters, sizeof(float), "gradients");
}

void swin_init_random(Swin *m, const SwinConfig *config, NormMode mode, unsigned long long seed) {
    swin_build(m, config, mode);
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < m->table.count; i++) {
        float *p = m->params_memory + m->table.offsets[i];
        size_t n = m->table.sizes[i];
        const char *name = m->table.names[i];
        size_t len = strlen(name);
        int gain = len >= 1 && name[len - 1] == 'w' &&
                   (strstr(name, "ln") != NULL || strstr(name, "pnw") != NULL ||
                    strstr(name, "mnw") != NULL);
        if (m->table.decayed[i] || strstr(name, "rpb") != NULL) {
            rng_normal_fill(&rng, p, n, 0.0f, 0.02f);
        } else {
            for (size_t j = 0; j < n; j++) {
                p[j] = gain ? 1.0f : 0.0f;
            }
        }
    }
}

// Hands out consecutive slices of one buffer (first pass: counts only).
typedef struct {
    float *base;
    size_t used;
} Arena;

static float *arena_take(Arena *a, size_t n) {
    float *p = a->base != NULL ? a->base + a->used : NULL;
    a->used += n;
    return p;
}

static void swin_lay_out_activations(Swin *m, Arena *a, int B) {
    const size_t Bs = (size_t)B, E = (size_t)m->config.embed_dim, N0 = (size_t)m->res0 * m->res0;
    m->patches = arena_take(a, Bs * N0 * m->PD);
    m->patch_out = arena_take(a, Bs * N0 * E);
    m->pn = arena_take(a, Bs * N0 * E);
    m->pn_mean = arena_take(a, Bs * N0);
    m->pn_rstd = arena_take(a, Bs * N0);
    m->stream0 = arena_take(a, Bs * N0 * E);
    for (int s = 1; s < m->config.num_stages; s++) {
        SwinMerge *mg = &m->merges[s];
        size_t n = Bs * mg->N_out;
        mg->merged = arena_take(a, n * 4 * mg->C_in);
        mg->normed = arena_take(a, n * 4 * mg->C_in);
        mg->mean = arena_take(a, n);
        mg->rstd = arena_take(a, n);
        mg->out = arena_take(a, n * 2 * mg->C_in);
    }
    for (int i = 0; i < m->num_blocks; i++) {
        SwinBlock *k = &m->blocks[i];
        size_t sizes[BLOCK_NUM_ACTS];
        block_acts_sizes(sizes, Bs * k->N, k->C, k->hidden, Bs * k->nW * k->NH * k->T * k->T);
        for (int j = 0; j < BLOCK_NUM_ACTS; j++) {
            ((float **)&k->acts)[j] = arena_take(a, sizes[j]);
        }
    }
    size_t K = (size_t)m->config.num_classes, NL = Bs * m->N_last * m->C_last;
    m->lnf = arena_take(a, NL);
    m->lnf_mean = arena_take(a, Bs * m->N_last);
    m->lnf_rstd = arena_take(a, Bs * m->N_last);
    m->pooled = arena_take(a, Bs * m->C_last);
    m->logits = arena_take(a, Bs * K);
    m->dlogits = arena_take(a, Bs * K);
    m->losses = arena_take(a, Bs);
}

static void swin_lay_out_scratch(Swin *m, Arena *a, int B) {
    size_t nc = (size_t)m->res0 * m->res0 * m->config.embed_dim, nh = 0, sc = 0;
    for (int i = 0; i < m->num_blocks; i++) {
        const SwinBlock *k = &m->blocks[i];
        nc = (size_t)k->N * k->C > nc ? (size_t)k->N * k->C : nc;
        nh = (size_t)k->N * k->hidden > nh ? (size_t)k->N * k->hidden : nh;
        size_t s = (size_t)k->NH * k->T * k->T;
        sc = s > sc ? s : sc;
    }
    size_t Bs = (size_t)B;
    m->s_a = arena_take(a, Bs * nc);
    m->s_b = arena_take(a, Bs * nc);
    m->s_dln = arena_take(a, Bs * nc);
    m->s_datty = arena_take(a, Bs * nc);
    m->s_branch = arena_take(a, Bs * nc);
    m->s_dqkv = arena_take(a, 3 * Bs * nc);
    m->s_dfch = arena_take(a, Bs * nh);
    m->s_dfchg = arena_take(a, Bs * nh);
    m->s_dscore_sum = arena_take(a, sc);
    m->s_pooled = arena_take(a, Bs * m->C_last);
}

static void swin_allocate_activations(Swin *m, int B) {
    free(m->acts_memory);
    free(m->scratch_memory);
    free(m->labels);
    Arena a = {NULL, 0};
    swin_lay_out_activations(m, &a, B);
    m->acts_memory = malloc_check(mul_size_check(a.used, sizeof(float), "activations"), "activations");
    a = (Arena){m->acts_memory, 0};
    swin_lay_out_activations(m, &a, B);
    a = (Arena){NULL, 0};
    swin_lay_out_scratch(m, &a, B);
    m->scratch_memory = malloc_check(mul_size_check(a.used, sizeof(float), "scratch"), "scratch");
    a = (Arena){m->scratch_memory, 0};
    swin_lay_out_scratch(m, &a, B);
    m->labels = malloc_check((size_t)B * sizeof(int), "labels");
    m->batch_size = B;
}

// cbwc: V = P W (+ P b) for every tensor flagged centred (its bias follows it).
static void swin_refresh_centred(Swin *m) {
    if (m->centred_memory == NULL) {
        m->centred_memory = calloc_check(m->num_parameters, sizeof(float), "cbwc centred weights");
    }
    float *v = m->centred_memory;
    const float *w = m->params_memory;
    cbwc_project_weights(v + m->off.patchw, v + m->off.patchb, w + m->off.patchw, w + m->off.patchb,
                         m->config.embed_dim, m->PD);
    for (int s = 1; s < m->config.num_stages; s++) {
        const SwinMerge *mg = &m->merges[s];
        if (mg->centred_reduction) {
            cbwc_project_weights(v + mg->off->redw, NULL, w + mg->off->redw, NULL, 2 * mg->C_in, 4 * mg->C_in);
        }
    }
    for (int i = 0; i < m->num_blocks; i++) {
        const SwinBlock *k = &m->blocks[i];
        if (k->rms_in_cbwc) {
            cbwc_project_weights(v + k->off->projw, v + k->off->projb, w + k->off->projw, w + k->off->projb, k->C, k->C);
            cbwc_project_weights(v + k->off->fc2w, v + k->off->fc2b, w + k->off->fc2w, w + k->off->fc2b, k->C, k->hidden);
        }
    }
    m->centred_stale = 0;
}

// cbwc and folded: RMS on the foldable norms (folded: the file holds V and P b).
static NormKind norm_kind(const Swin *m, int foldable) {
    return norm_mode_kernel(m->mode, foldable);
}

// Weights a layer reads: the centred copy for a CBWC layer in cbwc, else the
// stored ones (a folded model stores the centred ones).
static const float *effective(const Swin *m, size_t offset, int centred_layer) {
    return norm_policy(m->mode)->cbwc && centred_layer ? m->centred_memory + offset
                                                 : m->params_memory + offset;
}

void swin_set_drop_path(Swin *m, const float *scales) {
    m->drop_scales = scales;
}

void swin_set_mix_targets(Swin *m, MixTargets mix) {
    m->mix = mix;
}

// Block k's parameter tensors in base (the weights, gradients or centred copies).
static BlockTensors block_tensors(float *base, const SwinBlockOffsets *o) {
    return (BlockTensors){base + o->ln1w, base + o->ln1b, base + o->qkvw, base + o->qkvb,
                          base + o->projw, base + o->projb, base + o->ln2w, base + o->ln2b,
                          base + o->fcw,  base + o->fcb,  base + o->fc2w, base + o->fc2b};
}

// Block i (k) as the shared block sees it (transformer_block.h): full
// attention in its windows with the score bias, drop-path where scales are
// set, its proj and fc2 centred where cbwc centres them; the weights of the
// forward (forward = 1: the centred copies there) or of the backward.
static BlockConfig block_view(const Swin *m, const SwinBlock *k, int B, int i, int forward,
                              BlockWeights *w) {
    const int centred = norm_policy(m->mode)->cbwc && k->rms_in_cbwc;
    const float *drop = m->drop_scales; // (B, blocks, 2)
    const BlockConfig c = {B * k->N, k->C, k->NH, k->hidden, norm_kind(m, k->rms_in_cbwc), centred, NULL,
                       .attention = {.groups = B * k->nW, .T = k->T, .bias = k->bias,
                                     .nbias = k->nbias, .perm = k->perm, .nW = k->nW},
                       .residual = {drop == NULL ? NULL : drop + DROP_PATH_BRANCHES * (size_t)i,
                                    DROP_PATH_BRANCHES * (size_t)m->num_blocks, B}};
    const BlockTensors p = block_tensors(m->params_memory, k->off);
    const BlockTensors v = forward && centred ? block_tensors(m->centred_memory, k->off) : p;
    *w = block_weights_fp32(&p, &v);
    return c;
}

void swin_forward(Swin *m, const float *images, const int *labels, float smoothing, int B) {
    if (m->acts_memory == NULL || B != m->batch_size) {
        swin_allocate_activations(m, B);
    }
    const SwinConfig *c = &m->config;
    if (norm_policy(m->mode)->cbwc && m->centred_stale) {
        swin_refresh_centred(m);
    }
    const float *p = m->params_memory;
    const int E = c->embed_dim, BN0 = B * m->res0 * m->res0, K = c->num_classes;
    patches_from_images(m->patches, images, B, c->image_channels, c->image_size, c->patch_size);
    matmul_forward(m->patch_out, m->patches, effective(m, m->off.patchw, 1), effective(m, m->off.patchb, 1),
                   BN0, m->PD, E);
    norm_forward(norm_kind(m, 1), m->pn, m->pn_mean, m->pn_rstd, m->patch_out, p + m->off.pnw,
                 p + m->off.pnb, BN0, E);
    if (c->centre_ops) {
        cbwc_centre_rows(m->stream0, m->pn, BN0, E); // the explicit centring op
    } else {
        memcpy(m->stream0, m->pn, (size_t)BN0 * E * sizeof(float));
    }
    const float *x = m->stream0;
    int b = 0;
    for (int s = 0; s < c->num_stages; s++) {
        if (s > 0) {
            SwinMerge *mg = &m->merges[s];
            int n = B * mg->N_out;
            if (c->centre_ops) { // the explicit centring op before the merge
                cbwc_centre_rows(m->s_branch, x, B * 4 * mg->N_out, mg->C_in);
                x = m->s_branch;
            }
            swin_patch_merge_forward(mg->merged, x, B, mg->res_out, mg->C_in);
            norm_forward(norm_kind(m, mg->rms_in_cbwc), mg->normed, mg->mean, mg->rstd, mg->merged,
                         p + mg->off->normw, p + mg->off->normb, n, 4 * mg->C_in);
            matmul_forward(mg->out, mg->normed, effective(m, mg->off->redw, mg->centred_reduction), NULL,
                           n, 4 * mg->C_in,
                           2 * mg->C_in);
            x = mg->out;
        }
        for (int i = 0; i < c->depths[s]; i++, b++) {
            SwinBlock *k = &m->blocks[b];
            // score bias: relative position bias (+ the shift mask of window w)
            swin_score_bias(k->bias, p + k->off->rpb, k->rel_index, k->mask, k->nbias, k->NH, k->T);
            BlockWeights w;
            const BlockConfig bc = block_view(m, k, B, b, 1, &w);
            block_forward(&bc, &w, &k->acts, x, &(BlockScratch){.branch = m->s_branch});
            x = k->acts.out;
        }
    }
    const int CL = m->C_last, NL = m->N_last;
    norm_forward(norm_kind(m, swin_stage_rms_in_cbwc(c, c->num_stages - 1)), m->lnf,
                 m->lnf_mean, m->lnf_rstd, x, p + m->off.lnfw, p + m->off.lnfb, B * NL, CL);
#pragma omp parallel for schedule(static)
    for (int bb = 0; bb < B; bb++) {
        for (int ch = 0; ch < CL; ch++) {
            float sum = 0.0f;
            for (int t = 0; t < NL; t++) {
                sum += m->lnf[((size_t)bb * NL + t) * CL + ch];
            }
            m->pooled[(size_t)bb * CL + ch] = sum / (float)NL;
        }
    }
    matmul_forward(m->logits, m->pooled, p + m->off.headw, p + m->off.headb, B, CL, K);
    if (labels == NULL) {
        m->mean_loss = -1.0f;
        return;
    }
    memcpy(m->labels, labels, (size_t)B * sizeof(int));
    m->smoothing = smoothing;
    classifier_loss_forward(m->losses, m->logits, labels, m->mix, smoothing, B, K);
    double sum = 0.0;
    for (int bb = 0; bb < B; bb++) {
        sum += m->losses[bb];
    }
    m->mean_loss = (float)(sum / B);
}

void swin_zero_grad(Swin *m) {
    memset(m->grads_memory, 0, m->num_parameters * sizeof(float));
}

void swin_backward(Swin *m, float loss_scale) {
    if (!norm_policy(m->mode)->trainable) {
        fatal("swin_backward: a folded model is for inference only (train its ln or cbwc model)");
    }
    if (m->mean_loss < 0.0f) {
        fatal("swin_backward: needs a forward pass with labels first");
    }
    const SwinConfig *c = &m->config;
    const float *p = m->params_memory;
    float *g = m->grads_memory;
    const int B = m->batch_size, K = c->num_classes, CL = m->C_last, NL = m->N_last;
    const int E = c->embed_dim, BN0 = B * m->res0 * m->res0, cbwc = norm_policy(m->mode)->cbwc;
    classifier_loss_backward(m->dlogits, m->logits, m->labels, m->mix, m->smoothing, loss_scale,
                             B, K);
    matmul_backward_set_dinp(m->s_pooled, g + m->off.headw, g + m->off.headb, m->dlogits, m->pooled,
                             p + m->off.headw, B, CL, K);
#pragma omp parallel for schedule(static)
    for (int bb = 0; bb < B; bb++) {
        for (int t = 0; t < NL; t++) {
            for (int ch = 0; ch < CL; ch++) {
                m->s_dln[((size_t)bb * NL + t) * CL + ch] = m->s_pooled[(size_t)bb * CL + ch] / (float)NL;
            }
        }
    }
    float *d = m->s_a, *other = m->s_b;
    memset(d, 0, (size_t)B * NL * CL * sizeof(float));
    const float *x_last = m->num_blocks > 0 ? m->blocks[m->num_blocks - 1].acts.out : m->stream0;
    norm_backward(norm_kind(m, swin_stage_rms_in_cbwc(c, c->num_stages - 1)), d, g + m->off.lnfw,
                  g + m->off.lnfb, m->s_dln, x_last, p + m->off.lnfw, m->lnf_mean, m->lnf_rstd, B * NL, CL);
    const BlockScratch scratch = {m->s_branch, m->s_dln,   m->s_datty,     m->s_dqkv,
                                  m->s_dfch,   m->s_dfchg, m->s_dscore_sum};
    int b = m->num_blocks - 1;
    for (int s = c->num_stages - 1; s >= 0; s--) {
        for (int i = c->depths[s] - 1; i >= 0; i--, b--) {
            const float *x = i > 0 ? m->blocks[b - 1].acts.out : s > 0 ? m->merges[s].out : m->stream0;
            SwinBlock *k = &m->blocks[b];
            BlockWeights w;
            const BlockConfig bc = block_view(m, k, B, b, 0, &w);
            const BlockTensors gk = block_tensors(g, k->off);
            block_backward(&bc, &w, &gk, &k->acts, x, d, &scratch);
            // relative position bias: dtable[idx(i,j)][h] += sum over windows of dscore[h][i][j]
            swin_bias_table_backward(g + k->off->rpb, m->s_dscore_sum, k->rel_index, k->NH, k->T);
        }
        if (s > 0) {
            SwinMerge *mg = &m->merges[s];
            int n = B * mg->N_out, C4 = 4 * mg->C_in;
            stream_writer_backward(NULL, cbwc && mg->centred_reduction, m->s_branch, m->s_dln,
                                   g + mg->off->redw, NULL, d, mg->normed,
                                   (LinearWeight){p + mg->off->redw, NULL}, n, C4, 2 * mg->C_in);
            memset(m->s_datty, 0, (size_t)n * C4 * sizeof(float));
            norm_backward(norm_kind(m, mg->rms_in_cbwc), m->s_datty, g + mg->off->normw, g + mg->off->normb,
                          m->s_dln, mg->merged, p + mg->off->normw, mg->mean, mg->rstd, n, C4);
            swin_patch_merge_backward(other, m->s_datty, B, mg->res_out, mg->C_in);
            if (c->centre_ops) {
                cbwc_centre_rows(other, other, B * 4 * mg->N_out, mg->C_in);
            }
            float *t = d;
            d = other;
            other = t;
        }
    }
    if (c->centre_ops) {
        cbwc_centre_rows(d, d, BN0, E); // the centring op is its own adjoint
    }
    memset(m->s_dln, 0, (size_t)BN0 * E * sizeof(float));
    norm_backward(norm_kind(m, 1), m->s_dln, g + m->off.pnw, g + m->off.pnb, d, m->patch_out, p + m->off.pnw,
                  m->pn_mean, m->pn_rstd, BN0, E);
    stream_writer_backward(NULL, cbwc, m->s_branch, NULL, g + m->off.patchw, g + m->off.patchb,
                           m->s_dln, m->patches, (LinearWeight){p + m->off.patchw, NULL}, BN0, m->PD, E);
    m->mean_loss = -1.0f;
}

double swin_grad_norm(const Swin *m) {
    return sqrt(sum_of_squares(m->grads_memory, m->num_parameters));
}

void swin_update(Swin *m, const AdamWConfig *cfg, float grad_clip) {
    swin_update_shard(m, cfg, clip_grad_scale(swin_grad_norm(m), grad_clip), 0, m->num_parameters);
}

void swin_update_shard(Swin *m, const AdamWConfig *cfg, float grad_scale, size_t lo, size_t hi) {
    if (!norm_policy(m->mode)->trainable) {
        fatal("swin_update: a folded model is for inference only (train its ln or cbwc model)");
    }
    // tensors are laid out back to back (add_tensor)
    adamw_step_tensors_range(m->params_memory, m->grads_memory, &m->m_memory, &m->v_memory,
                             &m->adamw_step, m->num_parameters, m->table.sizes, m->table.decayed,
                             m->table.count, cfg, grad_scale, lo, hi);
    m->centred_stale = 1;
}

void swin_free(Swin *m) {
    for (int i = 0; i < m->num_blocks; i++) {
        free(m->blocks[i].perm);
        free(m->blocks[i].rel_index);
        free(m->blocks[i].mask);
        free(m->blocks[i].bias);
    }
    free(m->blocks);
    tensor_table_free(&m->table);
    free(m->off.blocks);
    free(m->params_memory);
    free(m->grads_memory);
    free(m->m_memory);
    free(m->v_memory);
    free(m->centred_memory);
    free(m->acts_memory);
    free(m->scratch_memory);
    free(m->labels);
    swin_reset(m);
}
