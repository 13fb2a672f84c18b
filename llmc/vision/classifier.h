// One interface over the image classifiers (ViT, Swin) for the trainer and
// the tests: load/save/init by family, forward/backward/update, sizes.
// classifier.c dispatches through a small table of operations per family
// (classifier_families.c); data-parallel steps run on per-thread copies
// (classifier_replicas.c).
#ifndef FOLDNORM_CLASSIFIER_H
#define FOLDNORM_CLASSIFIER_H

#include <stddef.h>

#include "kernels/adamw.h"
#include "swin.h"
#include "core/tensor_table.h"
#include "vision_config.h"
#include "vision_model.h"
#include "vit.h"

typedef struct ClassifierOps ClassifierOps;           // classifier_ops.h
typedef struct ClassifierReplicas ClassifierReplicas; // classifier_replicas.h

// With more than one OpenMP thread and a batch of at least 8 images per
// thread, a step runs data parallel over threads: per-thread copies of the
// model (replicas, made on first use and given the model's parameters and
// mode at every forward) each take a contiguous slice of the batch on one
// thread, and backward sums their gradients into the model's in slice order
// (the same result for a given thread count). A step then has a handful of
// barriers instead of one per kernel (~150), which on a shared machine, where
// a thread is often descheduled, is most of a 2-thread step's time.
typedef struct Classifier {
    VisionFamily family;
    const ClassifierOps *ops; // the family's operations
    ViT vit;   // when family == FAMILY_VIT
    Swin swin; // when family == FAMILY_SWIN
    TensorTable tensors;          // the parameter tensors in file order
    ClassifierReplicas *replicas; // NULL until a data-parallel forward
    const float *drop_scales;     // drop-path scales (B, blocks, 2) of the next forward, or NULL
    MixTargets mix;               // mixed targets (B each) of the next forward, or {NULL, NULL}
} Classifier;

// Reads the file once and builds the model it holds; when expected >= 0 a
// file of another family is an error naming the file.
void classifier_load(Classifier *model, const char *path, int expected_family);
// The same, but 0, or -1 with "PATH: reason" in err (model untouched); never exits.
int classifier_try_load(Classifier *model, const char *path, int expected_family, char *err,
                        size_t err_bytes);
void classifier_save(const Classifier *model, const char *path);
// A model of a checked config, randomly initialised from seed.
void classifier_init(Classifier *model, const VisionConfig *config, unsigned long long seed);
void classifier_init_vit(Classifier *model, const ViTConfig *config, NormMode mode,
                         unsigned long long seed);
void classifier_init_swin(Classifier *model, const SwinConfig *config, NormMode mode,
                          unsigned long long seed);

// The family, mode and config (what the model file's header holds).
VisionConfig classifier_config(const Classifier *model);
NormMode classifier_mode(const Classifier *model);
void classifier_set_mode(Classifier *model, NormMode mode);
int classifier_image_size(const Classifier *model);
int classifier_image_channels(const Classifier *model);
int classifier_num_classes(const Classifier *model);
size_t classifier_num_parameters(const Classifier *model);
float *classifier_params(Classifier *model);
// After the caller changed the parameters in place (an EMA swapped in for a
// test pass, and back): what the model derives from them (cbwc's centred
// weights) is rebuilt at the next forward.
void classifier_params_changed(Classifier *model);
float *classifier_grads(Classifier *model);
// Name and size of parameter tensor i (i < count), in file order.
int classifier_num_tensors(const Classifier *model);
const char *classifier_tensor_name(const Classifier *model, int i);
size_t classifier_tensor_size(const Classifier *model, int i);

// Drop-path (kernels/drop_path.h): the residual blocks (ViT's layers, Swin's
// blocks), and the scales (B, blocks, 2) that the following forwards (of B
// images) and backwards apply, the caller's to keep alive; NULL: none.
int classifier_num_blocks(const Classifier *model);
void classifier_set_drop_path(Classifier *model, const float *scales);
// Mixup / cutmix (kernels/classifier_loss.h): each image's second label and
// the weight of its first (B of each, the caller's to keep alive) that the
// following forwards' losses and backwards use; {NULL, NULL}: the labels alone.
void classifier_set_mix_targets(Classifier *model, MixTargets mix);
void classifier_forward(Classifier *model, const float *images, const int *labels,
                        float smoothing, int B);
const float *classifier_logits(const Classifier *model);
float classifier_mean_loss(const Classifier *model);
void classifier_zero_grad(Classifier *model);
void classifier_backward(Classifier *model, float loss_scale);
double classifier_grad_norm(const Classifier *model);
void classifier_update(Classifier *model, const AdamWConfig *cfg, float grad_clip);
// The AdamW step on the parameters [lo, hi) of the flat vector only (a ZeRO-1
// shard; tensors straddling its ends in part), the gradients scaled by
// grad_scale (the caller's clip from the global norm); the moments are kept
// for all parameters, so a checkpoint can hold them whole.
void classifier_update_shard(Classifier *model, const AdamWConfig *cfg, float grad_scale,
                             size_t lo, size_t hi);
// The AdamW state, for checkpoints: pointers to the moments (NULL before the
// first update, then num_parameters floats each, malloc'd) and the step count.
typedef struct {
    float **m, **v;
    int *step;
} ClassifierAdamW;
ClassifierAdamW classifier_adamw(Classifier *model);
void classifier_free(Classifier *model);

#endif
