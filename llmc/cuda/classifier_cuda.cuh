// One interface over the GPU image classifiers (llmc/cuda/vit_cuda.cuh,
// llmc/cuda/swin_cuda.cuh) for train_vit.cu, as llmc/vision/classifier.h is for the CPU
// ones: each call goes to the model of the host classifier's family.
#ifndef FOLDNORM_CLASSIFIER_CUDA_CUH
#define FOLDNORM_CLASSIFIER_CUDA_CUH

#include "swin_cuda.cuh"
#include "vit_cuda.cuh"

extern "C" {
#include "vision/classifier.h"
}

typedef struct {
    VisionFamily family;
    ViTCuda vit;   // when family == FAMILY_VIT
    SwinCuda swin; // when family == FAMILY_SWIN
} ClassifierCuda;

// attention: the kernels (attention_kind.cuh): tc, cublas, flash or cudnn for ViT, tc or window
// for Swin; recompute: -r, ViT only (transformer_block.cuh)
static inline void classifier_cuda_init(ClassifierCuda *m, const Classifier *host, int max_B,
                                        AttentionKind attention, int recompute = 0) {
    memset(m, 0, sizeof(*m));
    m->family = host->family;
    if (m->family == FAMILY_VIT) {
        vitcuda_init(&m->vit, &host->vit, max_B, attention, recompute);
    } else {
        if (recompute != 0) {
            fatal("swincuda: -r %d: activation recompute is ViT's and GPT-2's only", recompute);
        }
        swincuda_init(&m->swin, &host->swin, max_B, attention);
    }
}

// drop-path scales (B, blocks, 2) for the following forwards and backwards
// (vitcuda_set_drop_path, swincuda_set_drop_path), or NULL
static inline void classifier_cuda_set_drop_path(ClassifierCuda *m, const float *scales, int B) {
    if (m->family == FAMILY_VIT)
        vitcuda_set_drop_path(&m->vit, scales, B);
    else
        swincuda_set_drop_path(&m->swin, scales, B);
}

// mixup / cutmix: the mixed targets of the following forwards and backwards
// (vitcuda_set_mix_targets, swincuda_set_mix_targets), or {NULL, NULL}
static inline void classifier_cuda_set_mix_targets(ClassifierCuda *m, MixTargets mix, int B) {
    if (m->family == FAMILY_VIT)
        vitcuda_set_mix_targets(&m->vit, mix, B);
    else
        swincuda_set_mix_targets(&m->swin, mix, B);
}

// waits for the logits and the mean loss (classifier_cuda_logits, _mean_loss)
static inline void classifier_cuda_forward(ClassifierCuda *m, const float *images,
                                           const int *labels, float smoothing, int B) {
    if (m->family == FAMILY_VIT)
        vitcuda_forward(&m->vit, images, labels, smoothing, B);
    else
        swincuda_forward(&m->swin, images, labels, smoothing, B);
}
// queued only: the mean loss stays on the device (classifier_cuda_scalars)
static inline void classifier_cuda_forward_queued(ClassifierCuda *m, const float *images,
                                                  const int *labels, float smoothing, int B) {
    if (m->family == FAMILY_VIT)
        vitcuda_forward_queued(&m->vit, images, labels, smoothing, B);
    else
        swincuda_forward_queued(&m->swin, images, labels, smoothing, B);
}
// the step's scalars on the device (step_scalars.cuh) and their page-locked host copy
static inline StepScalars *classifier_cuda_scalars(ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.scalars : m->swin.scalars;
}
static inline StepScalars *classifier_cuda_scalars_host(ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? m->vit.scalars_host : m->swin.scalars_host;
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
// queues one AdamW step clipped by the scale in the scalars (step_clip)
static inline void classifier_cuda_update_queued(ClassifierCuda *m, const AdamWConfig *cfg) {
    if (m->family == FAMILY_VIT)
        vitcuda_update_queued(&m->vit, cfg);
    else
        swincuda_update_queued(&m->swin, cfg);
}
// the fp32 master weights into the host classifier's parameters (file order)
static inline void classifier_cuda_params_to_host(const ClassifierCuda *m, Classifier *host) {
    if (m->family == FAMILY_VIT)
        vitcuda_params_to_host(&m->vit, host->vit.params_memory);
    else
        swincuda_params_to_host(&m->swin, host->swin.params_memory);
}
// The device parameter vector's table for a sharded update
// (llmc/cuda/vision_grad_sync.cuh): tensor i at offset (the device layout, Swin's
// padded), its size and whether AdamW decays it.
static inline int classifier_cuda_num_tensors(const ClassifierCuda *m) {
    return m->family == FAMILY_VIT ? VIT_NUM_PARAM_TENSORS : m->swin.count;
}
static inline void classifier_cuda_tensor(const ClassifierCuda *m, int i, size_t *offset,
                                          size_t *size, int *decayed) {
    if (m->family == FAMILY_VIT) {
        size_t o = 0;
        for (int k = 0; k < i; k++) o += m->vit.param_sizes[k];
        *offset = o;
        *size = m->vit.param_sizes[i];
        *decayed = vit_param_decayed(i);
    } else {
        *offset = m->swin.dev_offsets[i];
        *size = m->swin.sizes[i];
        *decayed = m->swin.decayed[i];
    }
}

// The training state on the device: the fp32 master parameters (device
// layout), the AdamW moments (NULL before the first update of a fresh model)
// and step.
typedef struct {
    float *params;
    float **m, **v;
    int *adamw_step;
} ClassifierCudaState;
static inline ClassifierCudaState classifier_cuda_state(ClassifierCuda *m) {
    if (m->family == FAMILY_VIT) {
        ClassifierCudaState s = {m->vit.params_memory, &m->vit.m_memory, &m->vit.v_memory,
                                 &m->vit.adamw_step};
        return s;
    }
    ClassifierCudaState s = {m->swin.params_memory, &m->swin.m_memory, &m->swin.v_memory,
                             &m->swin.adamw_step};
    return s;
}

// After the fp32 master parameters changed outside the model's update (a
// ZeRO-1 all-gather): the kernels' floatX copy from them, cbwc's V at the next forward.
static inline void classifier_cuda_params_changed(ClassifierCuda *m) {
    if (m->family == FAMILY_VIT) {
        vitcuda_sync_params_x(&m->vit);
        m->vit.centred_stale = 1;
    } else {
        swincuda_sync_params_x(&m->swin);
        m->swin.centred_stale = 1;
    }
}

// A device vector in the device layout (parameters, moments) into host, in file order.
static inline void classifier_cuda_vector_to_host(const ClassifierCuda *m, float *host,
                                                  const float *dev) {
    CUDA_CHECK(cudaStreamSynchronize(classifier_cuda_stream(m)));
    if (m->family == FAMILY_VIT) {
        CUDA_CHECK(cudaMemcpy(host, dev, m->vit.num_parameters * sizeof(float),
                              cudaMemcpyDeviceToHost));
    } else {
        swincuda_gather(&m->swin, host, dev);
    }
}

// A host vector in file order into a device one in the device layout (Swin's padding zeroed).
static inline void classifier_cuda_vector_from_host(const ClassifierCuda *m, float *dev,
                                                    const float *host) {
    CUDA_CHECK(cudaStreamSynchronize(classifier_cuda_stream(m)));
    if (m->family == FAMILY_VIT) {
        CUDA_CHECK(cudaMemcpy(dev, host, m->vit.num_parameters * sizeof(float),
                              cudaMemcpyHostToDevice));
    } else {
        swincuda_scatter(&m->swin, dev, host);
    }
}

static inline void classifier_cuda_free(ClassifierCuda *m) {
    if (m->family == FAMILY_VIT)
        vitcuda_free(&m->vit);
    else
        swincuda_free(&m->swin);
}

#endif
