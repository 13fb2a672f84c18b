// What classifier.c and classifier_replicas.c need from a model family:
// one table of operations per family (classifier_families.c), so that no
// caller branches on the family.
#ifndef FOLDNORM_CLASSIFIER_OPS_H
#define FOLDNORM_CLASSIFIER_OPS_H

#include "classifier.h"

struct ClassifierOps {
    // parameters allocated, uninitialised (a loader or a replica fills them)
    void (*build)(Classifier *model, const VisionConfig *config);
    void (*init_random)(Classifier *model, const VisionConfig *config, unsigned long long seed);
    void (*describe)(const Classifier *model, VisionConfig *config);
    void (*set_mode)(Classifier *model, NormMode mode); // also marks centred weights stale
    float *(*params)(Classifier *model);
    float *(*grads)(Classifier *model);
    void (*forward)(Classifier *model, const float *images, const int *labels, float smoothing,
                    int B);
    const float *(*logits)(const Classifier *model);
    float (*mean_loss)(const Classifier *model);
    void (*zero_grad)(Classifier *model);
    void (*backward)(Classifier *model, float loss_scale);
    double (*grad_norm)(const Classifier *model);
    void (*update)(Classifier *model, const AdamWConfig *cfg, float grad_clip);
    void (*update_shard)(Classifier *model, const AdamWConfig *cfg, float grad_scale, size_t lo,
                         size_t hi);
    void (*free)(Classifier *model);
    // drop-path: the residual blocks, and the (B, blocks, 2) scales to apply or NULL
    int (*num_blocks)(const Classifier *model);
    void (*set_drop_path)(Classifier *model, const float *scales);
    // mixed targets (B of each) of the next forward's loss and its backward
    void (*set_mix_targets)(Classifier *model, MixTargets mix);
};

// The operations of family (ViT for any value but FAMILY_SWIN).
const ClassifierOps *classifier_family_ops(VisionFamily family);

#endif
