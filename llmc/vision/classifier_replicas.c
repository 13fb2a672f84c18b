#include "classifier_replicas.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "classifier_ops.h"
#include "core/utils.h"
#include "kernels/drop_path.h"

enum { REPLICA_MIN_IMAGES = 8 }; // per thread, for a data-parallel step (classifier.h)

struct ClassifierReplicas {
    int count;
    Classifier *copies; // count single-thread copies (a family model each, no tensor table)
    int active;         // the last forward ran on the copies
    float *logits;      // (capacity, K) of the last forward
    int capacity;       // images the logits buffer holds
    float mean_loss;    // of the last forward, -1 without labels
};

void replicas_free(ClassifierReplicas *r) {
    if (r == NULL) {
        return;
    }
    for (int i = 0; i < r->count; i++) {
        r->copies[i].ops->free(&r->copies[i]);
    }
    free(r->copies);
    free(r->logits);
    free(r);
}

int replica_count(int B) {
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

// The copies for count threads (made once; the model's config) and a logits buffer for B.
static ClassifierReplicas *replicas_prepare(Classifier *model, const VisionConfig *config,
                                            int count, int B) {
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
            r->copies[i].family = model->family;
            r->copies[i].ops = model->ops;
            model->ops->build(&r->copies[i], config); // parameters come at every forward
        }
        model->replicas = r;
    }
    if (r->capacity < B) {
        free(r->logits);
        r->logits = malloc_check((size_t)B * vision_config_num_classes(config) * sizeof(float),
                                 "replica logits");
        r->capacity = B;
    }
    return r;
}

void replicas_forward(Classifier *model, int count, const float *images, const int *labels,
                      float smoothing, int B) {
    const ClassifierOps *ops = model->ops;
    VisionConfig config;
    ops->describe(model, &config);
    ClassifierReplicas *r = replicas_prepare(model, &config, count, B);
    const int K = vision_config_num_classes(&config), S = vision_config_image_size(&config);
    const size_t image_floats = (size_t)vision_config_image_channels(&config) * S * S;
    const size_t n = model->tensors.num_parameters;
    const float *params = ops->params(model);
#pragma omp parallel num_threads(count)
    {
#ifdef _OPENMP
        omp_set_num_threads(1); // the kernels inside run on this thread alone
#endif
#pragma omp for schedule(static)
        for (int i = 0; i < count; i++) {
            Classifier *c = &r->copies[i];
            int b0 = slice_begin(B, count, i), b1 = slice_begin(B, count, i + 1);
            memcpy(ops->params(c), params, n * sizeof(float));
            ops->set_mode(c, config.mode); // also marks its centred weights stale
            // its slice of the (B, blocks, 2) drop-path scales
            ops->set_drop_path(c, model->drop_scales == NULL ? NULL
                                  : model->drop_scales + (size_t)b0 * ops->num_blocks(model) *
                                                             DROP_PATH_BRANCHES);
            // and of the mixed targets
            MixTargets mix = {NULL, NULL};
            if (model->mix.labels2 != NULL) {
                mix.labels2 = model->mix.labels2 + b0;
                mix.lam = model->mix.lam + b0;
            }
            ops->set_mix_targets(c, mix);
            ops->forward(c, images + (size_t)b0 * image_floats,
                         labels == NULL ? NULL : labels + b0, smoothing, b1 - b0);
            memcpy(r->logits + (size_t)b0 * K, ops->logits(c),
                   (size_t)(b1 - b0) * K * sizeof(float));
        }
    }
    double loss_sum = 0.0;
    for (int i = 0; i < count; i++) {
        loss_sum += (double)ops->mean_loss(&r->copies[i]) *
                    (slice_begin(B, count, i + 1) - slice_begin(B, count, i));
    }
    r->mean_loss = labels == NULL ? -1.0f : (float)(loss_sum / B);
    r->active = 1;
}

int replicas_active(const ClassifierReplicas *r) {
    return r != NULL && r->active;
}

const float *replicas_logits(const ClassifierReplicas *r) {
    return r->logits;
}

float replicas_mean_loss(const ClassifierReplicas *r) {
    return r->mean_loss;
}

void replicas_deactivate(ClassifierReplicas *r) {
    if (r != NULL) {
        r->active = 0;
    }
}

void replicas_backward(Classifier *model, float loss_scale) {
    ClassifierReplicas *r = model->replicas;
    const ClassifierOps *ops = model->ops;
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
            ops->zero_grad(&r->copies[i]);
            ops->backward(&r->copies[i], loss_scale);
        }
    }
    // the model's gradients += the copies', in slice order
    float *grads = ops->grads(model);
    const size_t n = model->tensors.num_parameters;
    float **copy_grads = malloc_check((size_t)r->count * sizeof(float *), "replica gradients");
    for (int i = 0; i < r->count; i++) {
        copy_grads[i] = ops->grads(&r->copies[i]);
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
