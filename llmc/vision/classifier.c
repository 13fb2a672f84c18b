#include "classifier.h"

#include <stdlib.h>
#include <string.h>

#include "classifier_ops.h"
#include "classifier_replicas.h"
#include "core/utils.h"
#include "vision_layout.h"

// An empty model of config's family, with its tensor table.
static void classifier_reset(Classifier *model, const VisionConfig *config) {
    memset(model, 0, sizeof(*model)); // also: no replicas
    model->family = config->family == FAMILY_SWIN ? FAMILY_SWIN : FAMILY_VIT;
    model->ops = classifier_family_ops(model->family);
    vision_layout(config, &model->tensors);
}

int classifier_try_load(Classifier *model, const char *path, int expected_family, char *err,
                        size_t err_bytes) {
    VisionConfig config;
    float *params;
    size_t n;
    if (vision_model_load_file(path, expected_family, &config, &params, &n, err, err_bytes) != 0) {
        return -1;
    }
    classifier_reset(model, &config);
    model->ops->build(model, &config);
    memcpy(model->ops->params(model), params, n * sizeof(float));
    free(params);
    return 0;
}

void classifier_load(Classifier *model, const char *path, int expected_family) {
    char err[4096 + READER_ERR_BYTES];
    if (classifier_try_load(model, path, expected_family, err, sizeof(err)) != 0) {
        fatal("%s", err);
    }
}

void classifier_save(const Classifier *model, const char *path) {
    VisionConfig config = classifier_config(model);
    // the ops take a mutable model; saving only reads the parameters
    vision_model_write(path, &config, model->ops->params((Classifier *)model),
                       model->tensors.num_parameters);
}

void classifier_init(Classifier *model, const VisionConfig *config, unsigned long long seed) {
    classifier_reset(model, config);
    model->ops->init_random(model, config, seed);
}

void classifier_init_vit(Classifier *model, const ViTConfig *config, NormMode mode,
                         unsigned long long seed) {
    const VisionConfig c = {.family = FAMILY_VIT, .mode = mode, .vit = *config};
    classifier_init(model, &c, seed);
}

void classifier_init_swin(Classifier *model, const SwinConfig *config, NormMode mode,
                          unsigned long long seed) {
    const VisionConfig c = {.family = FAMILY_SWIN, .mode = mode, .swin = *config};
    classifier_init(model, &c, seed);
}

VisionConfig classifier_config(const Classifier *model) {
    VisionConfig config;
    model->ops->describe(model, &config);
    return config;
}

NormMode classifier_mode(const Classifier *model) {
    return classifier_config(model).mode;
}

void classifier_set_mode(Classifier *model, NormMode mode) {
    model->ops->set_mode(model, mode);
}

int classifier_image_size(const Classifier *model) {
    VisionConfig config = classifier_config(model);
    return vision_config_image_size(&config);
}

int classifier_image_channels(const Classifier *model) {
    VisionConfig config = classifier_config(model);
    return vision_config_image_channels(&config);
}

int classifier_num_classes(const Classifier *model) {
    VisionConfig config = classifier_config(model);
    return vision_config_num_classes(&config);
}

size_t classifier_num_parameters(const Classifier *model) {
    return model->tensors.num_parameters;
}

float *classifier_params(Classifier *model) {
    return model->ops->params(model);
}

void classifier_params_changed(Classifier *model) {
    model->ops->set_mode(model, classifier_mode(model)); // the same mode, centred weights stale
}

float *classifier_grads(Classifier *model) {
    return model->ops->grads(model);
}

int classifier_num_tensors(const Classifier *model) {
    return model->tensors.count;
}

const char *classifier_tensor_name(const Classifier *model, int i) {
    return model->tensors.names[i];
}

size_t classifier_tensor_size(const Classifier *model, int i) {
    return model->tensors.sizes[i];
}

void classifier_forward(Classifier *model, const float *images, const int *labels,
                        float smoothing, int B) {
    const int count = replica_count(B);
    if (count > 1) {
        replicas_forward(model, count, images, labels, smoothing, B);
        return;
    }
    replicas_deactivate(model->replicas);
    model->ops->set_drop_path(model, model->drop_scales);
    model->ops->set_mix_targets(model, model->mix);
    model->ops->forward(model, images, labels, smoothing, B);
}

int classifier_num_blocks(const Classifier *model) {
    return model->ops->num_blocks(model);
}

void classifier_set_drop_path(Classifier *model, const float *scales) {
    model->drop_scales = scales;
}

void classifier_set_mix_targets(Classifier *model, MixTargets mix) {
    model->mix = mix;
}

const float *classifier_logits(const Classifier *model) {
    return replicas_active(model->replicas) ? replicas_logits(model->replicas)
                                            : model->ops->logits(model);
}

float classifier_mean_loss(const Classifier *model) {
    return replicas_active(model->replicas) ? replicas_mean_loss(model->replicas)
                                            : model->ops->mean_loss(model);
}

void classifier_zero_grad(Classifier *model) {
    model->ops->zero_grad(model);
}

void classifier_backward(Classifier *model, float loss_scale) {
    if (replicas_active(model->replicas)) {
        replicas_backward(model, loss_scale);
    } else {
        model->ops->backward(model, loss_scale);
    }
}

double classifier_grad_norm(const Classifier *model) {
    return model->ops->grad_norm(model);
}

void classifier_update(Classifier *model, const AdamWConfig *cfg, float grad_clip) {
    model->ops->update(model, cfg, grad_clip);
}

void classifier_update_shard(Classifier *model, const AdamWConfig *cfg, float grad_scale,
                             size_t lo, size_t hi) {
    model->ops->update_shard(model, cfg, grad_scale, lo, hi);
}

ClassifierAdamW classifier_adamw(Classifier *model) {
    if (model->family == FAMILY_VIT) {
        return (ClassifierAdamW){&model->vit.m_memory, &model->vit.v_memory,
                                 &model->vit.adamw_step};
    }
    return (ClassifierAdamW){&model->swin.m_memory, &model->swin.v_memory,
                             &model->swin.adamw_step};
}

void classifier_free(Classifier *model) {
    replicas_free(model->replicas);
    model->replicas = NULL;
    model->ops->free(model);
    tensor_table_free(&model->tensors);
}
