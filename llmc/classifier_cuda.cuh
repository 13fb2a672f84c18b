// One interface over the GPU image classifiers (llmc/vit_cuda.cuh,
// llmc/swin_cuda.cuh) for train_vit.cu, as llmc/classifier.h is for the CPU
// ones: each call goes to the model of the host classifier's family.
#ifndef FOLDNORM_CLASSIFIER_CUDA_CUH
#define FOLDNORM_CLASSIFIER_CUDA_CUH

#include "swin_cuda.cuh"
#include "vit_cuda.cuh"

extern "C" {
#include "classifier.h"
}

typedef struct {
    VisionFamily family;
    ViTCuda vit;   // when family == FAMILY_VIT
    SwinCuda swin; // when family == FAMILY_SWIN
} ClassifierCuda;

static inline void classifier_cuda_init(ClassifierCuda *m, const Classifier *host, int max_B) {
    memset(m, 0, sizeof(*m));
    m->family = host->family;
    if (m->family == FAMILY_VIT)
        vitcuda_init(&m->vit, &host->vit, max_B);
    else
        swincuda_init(&m->swin, &host->swin, max_B);
}

static inline void classifier_cuda_forward(ClassifierCuda *m, const float *images,
                                           const int *labels, float smoothing, int B) {
    if (m->family == FAMILY_VIT)
        vitcuda_forward(&m->vit, images, labels, smoothing, B);
    else
        swincuda_forward(&m->swin, images, labels, smoothing, B);
}

static inline float classifier_cuda_mean_loss(const ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.mean_loss : m->swin.mean_loss;
}
static inline const float *classifier_cuda_logits(const ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.logits_host : m->swin.logits_host;
}
static inline int classifier_cuda_num_classes(const ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.config.num_classes : m->swin.config.num_classes;
}
static inline NormMode classifier_cuda_mode(const ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.mode : m->swin.mode;
}
static inline size_t classifier_cuda_num_parameters(const ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.num_parameters : m->swin.num_parameters;
}
// the gradient buffer the ranks average (Swin's holds its alignment padding, zero)
static inline float *classifier_cuda_grads(ClassifierCuda *m, size_t *count) {
    *count = m->family == FAMILY_VIT ? m->vit.num_parameters : m->swin.dev_parameters;
    return m->family == FAMILY_VIT ? m->vit.grads_memory : m->swin.grads_memory;
}
static inline cudaStream_t classifier_cuda_stream(const ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.mm.stream : m->swin.mm.stream;
}

static inline void classifier_cuda_zero_grad(ClassifierCuda *m) {
    if (m->family == FAMILY_VIT)
        vitcuda_zero_grad(&m->vit);
    else
        swincuda_zero_grad(&m->swin);
}
static inline void classifier_cuda_backward(ClassifierCuda *m, float loss_scale) {
    if (m->family == FAMILY_VIT)
        vitcuda_backward(&m->vit, loss_scale);
    else
        swincuda_backward(&m->swin, loss_scale);
}
static inline float classifier_cuda_update(ClassifierCuda *m, const AdamWConfig *cfg,
                                           float grad_clip) {
    return m->family == FAMILY_VIT ? vitcuda_update(&m->vit, cfg, grad_clip)
                                   : swincuda_update(&m->swin, cfg, grad_clip);
}
// the fp32 master weights into the host classifier's parameters (file order)
static inline void classifier_cuda_params_to_host(const ClassifierCuda *m, Classifier *host) {
    if (m->family == FAMILY_VIT)
        vitcuda_params_to_host(&m->vit, host->vit.params_memory);
    else
        swincuda_params_to_host(&m->swin, host->swin.params_memory);
}
static inline void classifier_cuda_free(ClassifierCuda *m) {
    if (m->family == FAMILY_VIT)
        vitcuda_free(&m->vit);
    else
        swincuda_free(&m->swin);
}

#endif
