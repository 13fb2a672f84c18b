#include "classifier.h"

#include <stdint.h>
#include <string.h>

#include "utils.h"

#define IS_VIT(m) ((m)->family == FAMILY_VIT)

void classifier_load(Classifier *model, const char *path, int expected_family) {
    memset(model, 0, sizeof(*model));
    FILE *f = fopen_check(path, "rb");
    int32_t header[VISION_HEADER_INTS];
    long bytes = file_size_bytes(f, path);
    if (bytes < (long)sizeof(header)) {
        fatal("%s: %ld bytes, shorter than the %zu-byte model header", path, bytes, sizeof(header));
    }
    fread_check(header, sizeof(int32_t), VISION_HEADER_INTS, f, path, "the model header");
    fclose(f);
    if (header[VH_MAGIC] != VISION_MODEL_MAGIC) {
        fatal("%s: not a ViT/Swin model file (magic %d, expected %d)", path, header[VH_MAGIC],
              VISION_MODEL_MAGIC);
    }
    int family = expected_family >= 0 ? expected_family : header[VH_FAMILY];
    // the family loaders check the header's family against theirs
    if (family == FAMILY_SWIN) {
        model->family = FAMILY_SWIN;
        swin_load(&model->swin, path);
    } else {
        model->family = FAMILY_VIT;
        vit_load(&model->vit, path);
    }
}

void classifier_save(const Classifier *model, const char *path) {
    if (IS_VIT(model)) {
        vit_save(&model->vit, path);
    } else {
        swin_save(&model->swin, path);
    }
}

void classifier_init_vit(Classifier *model, const ViTConfig *config, NormMode mode,
                         unsigned long long seed) {
    memset(model, 0, sizeof(*model));
    model->family = FAMILY_VIT;
    vit_init_random(&model->vit, config, mode, seed);
}

void classifier_init_swin(Classifier *model, const SwinConfig *config, NormMode mode,
                          unsigned long long seed) {
    memset(model, 0, sizeof(*model));
    model->family = FAMILY_SWIN;
    swin_init_random(&model->swin, config, mode, seed);
}

NormMode classifier_mode(const Classifier *model) {
    return IS_VIT(model) ? model->vit.mode : model->swin.mode;
}

void classifier_set_mode(Classifier *model, NormMode mode) {
    if (IS_VIT(model)) {
        model->vit.mode = mode;
        model->vit.centred_stale = 1;
    } else {
        model->swin.mode = mode;
        model->swin.centred_stale = 1;
    }
}

int classifier_image_size(const Classifier *model) {
    return IS_VIT(model) ? model->vit.config.image_size : model->swin.config.image_size;
}

int classifier_image_channels(const Classifier *model) {
    return IS_VIT(model) ? model->vit.config.image_channels : model->swin.config.image_channels;
}

int classifier_num_classes(const Classifier *model) {
    return IS_VIT(model) ? model->vit.config.num_classes : model->swin.config.num_classes;
}

size_t classifier_num_parameters(const Classifier *model) {
    return IS_VIT(model) ? model->vit.num_parameters : model->swin.num_parameters;
}

float *classifier_params(Classifier *model) {
    return IS_VIT(model) ? model->vit.params_memory : model->swin.params_memory;
}

float *classifier_grads(Classifier *model) {
    return IS_VIT(model) ? model->vit.grads_memory : model->swin.grads_memory;
}

int classifier_num_tensors(const Classifier *model) {
    return IS_VIT(model) ? VIT_NUM_PARAM_TENSORS : model->swin.num_tensors;
}

const char *classifier_tensor_name(const Classifier *model, int i) {
    return IS_VIT(model) ? VIT_PARAM_NAMES[i] : model->swin.tensor_names[i];
}

size_t classifier_tensor_size(const Classifier *model, int i) {
    return IS_VIT(model) ? model->vit.param_sizes[i] : model->swin.tensor_sizes[i];
}

void classifier_forward(Classifier *model, const float *images, const int *labels,
                        float smoothing, int B) {
    if (IS_VIT(model)) {
        vit_forward(&model->vit, images, labels, smoothing, B);
    } else {
        swin_forward(&model->swin, images, labels, smoothing, B);
    }
}

const float *classifier_logits(const Classifier *model) {
    return IS_VIT(model) ? model->vit.acts.logits : model->swin.logits;
}

float classifier_mean_loss(const Classifier *model) {
    return IS_VIT(model) ? model->vit.mean_loss : model->swin.mean_loss;
}

void classifier_zero_grad(Classifier *model) {
    if (IS_VIT(model)) {
        vit_zero_grad(&model->vit);
    } else {
        swin_zero_grad(&model->swin);
    }
}

void classifier_backward(Classifier *model, float loss_scale) {
    if (IS_VIT(model)) {
        vit_backward(&model->vit, loss_scale);
    } else {
        swin_backward(&model->swin, loss_scale);
    }
}

double classifier_grad_norm(const Classifier *model) {
    return IS_VIT(model) ? vit_grad_norm(&model->vit) : swin_grad_norm(&model->swin);
}

void classifier_update(Classifier *model, const AdamWConfig *cfg, float grad_clip) {
    if (IS_VIT(model)) {
        vit_update(&model->vit, cfg, grad_clip);
    } else {
        swin_update(&model->swin, cfg, grad_clip);
    }
}

void classifier_free(Classifier *model) {
    if (IS_VIT(model)) {
        vit_free(&model->vit);
    } else {
        swin_free(&model->swin);
    }
}
