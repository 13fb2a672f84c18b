#include "classifier.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "utils.h"

#define IS_VIT(m) ((m)->family == FAMILY_VIT)

enum { REPLICA_MIN_IMAGES = 8 }; // per thread, for a data-parallel step (classifier.h)

struct ClassifierReplicas {
    int count;
    Classifier *copies; // count single-thread copies
    int active;         // the last forward ran on the copies
    float *logits;      // (capacity, K) of the last forward
    int capacity;       // images the logits buffer holds
    float mean_loss;    // of the last forward, -1 without labels
};

static void replicas_free(ClassifierReplicas *r) {
    if (r == NULL) {
        return;
    }
    for (int i = 0; i < r->count; i++) {
        classifier_free(&r->copies[i]);
    }
    free(r->copies);
    free(r->logits);
    free(r);
}

// How many copies a step on B images runs on: the thread count, or 1.
static int replica_count(int B) {
#ifdef _OPENMP
    if (omp_in_parallel()) {
        return 1;
    }
    int threads = omp_get_max_threads();
    return threads > 1 && B >= threads * REPLICA_MIN_IMAGES ? threads : 1;
#else
    (void)B;
    return 1;
#endif
}

static int slice_begin(int B, int count, int i) {
    return (int)((long)B * i / count);
}

void classifier_load(Classifier *model, const char *path, int expected_family) {
    memset(model, 0, sizeof(*model)); // also: no replicas
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

static void single_forward(Classifier *model, const float *images, const int *labels,
                           float smoothing, int B) {
    if (IS_VIT(model)) {
        vit_forward(&model->vit, images, labels, smoothing, B);
    } else {
        swin_forward(&model->swin, images, labels, smoothing, B);
    }
}

static const float *single_logits(const Classifier *model) {
    return IS_VIT(model) ? model->vit.acts.logits : model->swin.logits;
}

static float single_mean_loss(const Classifier *model) {
    return IS_VIT(model) ? model->vit.mean_loss : model->swin.mean_loss;
}

// The copies for count threads (made once; the model's config) and a logits buffer for B.
static ClassifierReplicas *replicas_prepare(Classifier *model, int count, int B) {
    ClassifierReplicas *r = model->replicas;
    if (r != NULL && r->count != count) {
        replicas_free(r);
        r = model->replicas = NULL;
    }
    if (r == NULL) {
        r = calloc_check(1, sizeof(*r), "model replicas");
        r->count = count;
        r->copies = calloc_check((size_t)count, sizeof(Classifier), "model replicas");
        for (int i = 0; i < count; i++) {
            if (IS_VIT(model)) {
                classifier_init_vit(&r->copies[i], &model->vit.config, classifier_mode(model), 0);
            } else {
                classifier_init_swin(&r->copies[i], &model->swin.config, classifier_mode(model), 0);
            }
        }
        model->replicas = r;
    }
    if (r->capacity < B) {
        free(r->logits);
        r->logits = malloc_check((size_t)B * classifier_num_classes(model) * sizeof(float),
                                 "replica logits");
        r->capacity = B;
    }
    return r;
}

void classifier_forward(Classifier *model, const float *images, const int *labels,
                        float smoothing, int B) {
    const int count = replica_count(B);
    if (count == 1) {
        if (model->replicas != NULL) {
            model->replicas->active = 0;
        }
        single_forward(model, images, labels, smoothing, B);
        return;
    }
    ClassifierReplicas *r = replicas_prepare(model, count, B);
    const int K = classifier_num_classes(model), S = classifier_image_size(model);
    const size_t image_floats = (size_t)classifier_image_channels(model) * S * S;
    const size_t n = classifier_num_parameters(model);
    const float *params = classifier_params(model);
    const NormMode mode = classifier_mode(model);
#pragma omp parallel num_threads(count)
    {
#ifdef _OPENMP
        omp_set_num_threads(1); // the kernels inside run on this thread alone
#endif
#pragma omp for schedule(static)
        for (int i = 0; i < count; i++) {
            Classifier *c = &r->copies[i];
            int b0 = slice_begin(B, count, i), b1 = slice_begin(B, count, i + 1);
            memcpy(classifier_params(c), params, n * sizeof(float));
            classifier_set_mode(c, mode); // also marks its centred weights stale
            single_forward(c, images + (size_t)b0 * image_floats,
                           labels == NULL ? NULL : labels + b0, smoothing, b1 - b0);
            memcpy(r->logits + (size_t)b0 * K, single_logits(c),
                   (size_t)(b1 - b0) * K * sizeof(float));
        }
    }
    double loss_sum = 0.0;
    for (int i = 0; i < count; i++) {
        loss_sum += (double)single_mean_loss(&r->copies[i]) *
                    (slice_begin(B, count, i + 1) - slice_begin(B, count, i));
    }
    r->mean_loss = labels == NULL ? -1.0f : (float)(loss_sum / B);
    r->active = 1;
}

const float *classifier_logits(const Classifier *model) {
    const ClassifierReplicas *r = model->replicas;
    return r != NULL && r->active ? r->logits : single_logits(model);
}

float classifier_mean_loss(const Classifier *model) {
    const ClassifierReplicas *r = model->replicas;
    return r != NULL && r->active ? r->mean_loss : single_mean_loss(model);
}

void classifier_zero_grad(Classifier *model) {
    if (IS_VIT(model)) {
        vit_zero_grad(&model->vit);
    } else {
        swin_zero_grad(&model->swin);
    }
}

static void single_backward(Classifier *model, float loss_scale) {
    if (IS_VIT(model)) {
        vit_backward(&model->vit, loss_scale);
    } else {
        swin_backward(&model->swin, loss_scale);
    }
}

void classifier_backward(Classifier *model, float loss_scale) {
    ClassifierReplicas *r = model->replicas;
    if (r == NULL || !r->active) {
        single_backward(model, loss_scale);
        return;
    }
    if (r->mean_loss < 0.0f) {
        fatal("classifier_backward: needs a forward pass with labels first");
    }
#pragma omp parallel num_threads(r->count)
    {
#ifdef _OPENMP
        omp_set_num_threads(1);
#endif
#pragma omp for schedule(static)
        for (int i = 0; i < r->count; i++) {
            classifier_zero_grad(&r->copies[i]);
            single_backward(&r->copies[i], loss_scale);
        }
    }
    // the model's gradients += the copies', in slice order
    float *grads = classifier_grads(model);
    const size_t n = classifier_num_parameters(model);
    float **copy_grads = malloc_check((size_t)r->count * sizeof(float *), "replica gradients");
    for (int i = 0; i < r->count; i++) {
        copy_grads[i] = classifier_grads(&r->copies[i]);
    }
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++) {
        float sum = grads[j];
        for (int i = 0; i < r->count; i++) {
            sum += copy_grads[i][j];
        }
        grads[j] = sum;
    }
    free(copy_grads);
    r->mean_loss = -1.0f;
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
    replicas_free(model->replicas);
    model->replicas = NULL;
    if (IS_VIT(model)) {
        vit_free(&model->vit);
    } else {
        swin_free(&model->swin);
    }
}
