// The ViT and Swin operations behind the classifier interface (classifier_ops.h).
#include <stddef.h>

#include "classifier_ops.h"
#include "core/utils.h" // fatal

static void vit_op_build(Classifier *m, const VisionConfig *c) {
    vit_build(&m->vit, &c->vit, c->mode);
}
static void vit_op_init_random(Classifier *m, const VisionConfig *c, unsigned long long seed) {
    vit_init_random(&m->vit, &c->vit, c->mode, seed);
}
static void vit_op_describe(const Classifier *m, VisionConfig *c) {
    *c = (VisionConfig){.family = FAMILY_VIT, .mode = m->vit.mode, .vit = m->vit.config};
}
static void vit_op_set_mode(Classifier *m, NormMode mode) {
    m->vit.mode = mode;
    m->vit.centred_stale = 1;
}
static float *vit_op_params(Classifier *m) { return m->vit.params_memory; }
static float *vit_op_grads(Classifier *m) { return m->vit.grads_memory; }
static void vit_op_forward(Classifier *m, const float *images, const int *labels,
                           float smoothing, int B) {
    vit_forward(&m->vit, images, labels, smoothing, B);
}
static const float *vit_op_logits(const Classifier *m) { return m->vit.acts.logits; }
static float vit_op_mean_loss(const Classifier *m) { return m->vit.mean_loss; }
static void vit_op_zero_grad(Classifier *m) { vit_zero_grad(&m->vit); }
static void vit_op_backward(Classifier *m, float loss_scale) { vit_backward(&m->vit, loss_scale); }
static double vit_op_grad_norm(const Classifier *m) { return vit_grad_norm(&m->vit); }
static void vit_op_update(Classifier *m, const AdamWConfig *cfg, float grad_clip) {
    vit_update(&m->vit, cfg, grad_clip);
}
static void vit_op_update_shard(Classifier *m, const AdamWConfig *cfg, float grad_scale,
                                size_t lo, size_t hi) {
    vit_update_shard(&m->vit, cfg, grad_scale, lo, hi);
}
static void vit_op_free(Classifier *m) { vit_free(&m->vit); }
static int vit_op_num_blocks(const Classifier *m) { return m->vit.config.num_layers; }
static void vit_op_set_drop_path(Classifier *m, const float *scales) {
    vit_set_drop_path(&m->vit, scales);
}
static void vit_op_set_mix_targets(Classifier *m, MixTargets mix) {
    vit_set_mix_targets(&m->vit, mix);
}

static const ClassifierOps VIT_OPS = {
    .build = vit_op_build,
    .init_random = vit_op_init_random,
    .describe = vit_op_describe,
    .set_mode = vit_op_set_mode,
    .params = vit_op_params,
    .grads = vit_op_grads,
    .forward = vit_op_forward,
    .logits = vit_op_logits,
    .mean_loss = vit_op_mean_loss,
    .zero_grad = vit_op_zero_grad,
    .backward = vit_op_backward,
    .grad_norm = vit_op_grad_norm,
    .update = vit_op_update,
    .update_shard = vit_op_update_shard,
    .free = vit_op_free,
    .num_blocks = vit_op_num_blocks,
    .set_drop_path = vit_op_set_drop_path,
    .set_mix_targets = vit_op_set_mix_targets,
};

static void swin_op_build(Classifier *m, const VisionConfig *c) {
    swin_build(&m->swin, &c->swin, c->mode);
}
static void swin_op_init_random(Classifier *m, const VisionConfig *c, unsigned long long seed) {
    swin_init_random(&m->swin, &c->swin, c->mode, seed);
}
static void swin_op_describe(const Classifier *m, VisionConfig *c) {
    *c = (VisionConfig){.family = FAMILY_SWIN, .mode = m->swin.mode, .swin = m->swin.config};
}
static void swin_op_set_mode(Classifier *m, NormMode mode) {
    if (m->swin.config.paper_variant && !norm_policy(mode)->cbwc) {
        fatal("mode %s: this Swin is the paper variant, a cbwc model (docs/math.md section 3)",
              norm_mode_name(mode));
    }
    m->swin.mode = mode;
    m->swin.centred_stale = 1;
}
static float *swin_op_params(Classifier *m) { return m->swin.params_memory; }
static float *swin_op_grads(Classifier *m) { return m->swin.grads_memory; }
static void swin_op_forward(Classifier *m, const float *images, const int *labels,
                            float smoothing, int B) {
    swin_forward(&m->swin, images, labels, smoothing, B);
}
static const float *swin_op_logits(const Classifier *m) { return m->swin.logits; }
static float swin_op_mean_loss(const Classifier *m) { return m->swin.mean_loss; }
static void swin_op_zero_grad(Classifier *m) { swin_zero_grad(&m->swin); }
static void swin_op_backward(Classifier *m, float loss_scale) {
    swin_backward(&m->swin, loss_scale);
}
static double swin_op_grad_norm(const Classifier *m) { return swin_grad_norm(&m->swin); }
static void swin_op_update(Classifier *m, const AdamWConfig *cfg, float grad_clip) {
    swin_update(&m->swin, cfg, grad_clip);
}
static void swin_op_update_shard(Classifier *m, const AdamWConfig *cfg, float grad_scale,
                                 size_t lo, size_t hi) {
    swin_update_shard(&m->swin, cfg, grad_scale, lo, hi);
}
static void swin_op_free(Classifier *m) { swin_free(&m->swin); }
static int swin_op_num_blocks(const Classifier *m) { return m->swin.num_blocks; }
static void swin_op_set_drop_path(Classifier *m, const float *scales) {
    swin_set_drop_path(&m->swin, scales);
}
static void swin_op_set_mix_targets(Classifier *m, MixTargets mix) {
    swin_set_mix_targets(&m->swin, mix);
}

static const ClassifierOps SWIN_OPS = {
    .build = swin_op_build,
    .init_random = swin_op_init_random,
    .describe = swin_op_describe,
    .set_mode = swin_op_set_mode,
    .params = swin_op_params,
    .grads = swin_op_grads,
    .forward = swin_op_forward,
    .logits = swin_op_logits,
    .mean_loss = swin_op_mean_loss,
    .zero_grad = swin_op_zero_grad,
    .backward = swin_op_backward,
    .grad_norm = swin_op_grad_norm,
    .update = swin_op_update,
    .update_shard = swin_op_update_shard,
    .free = swin_op_free,
    .num_blocks = swin_op_num_blocks,
    .set_drop_path = swin_op_set_drop_path,
    .set_mix_targets = swin_op_set_mix_targets,
};

const ClassifierOps *classifier_family_ops(VisionFamily family) {
    return family == FAMILY_SWIN ? &SWIN_OPS : &VIT_OPS;
}
