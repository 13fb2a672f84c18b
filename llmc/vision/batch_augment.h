// The training augmentations that act on rendered, normalised images: random
// erasing per image (random_erasing.h), then mixup / cutmix over the batch
// (mixup.h), as timm applies them after its per-image transforms. Their
// draws come from the run's Rng right after the batch's crops and flips
// (vision_draw_augment): each image's erasing in image order, then the
// batch's mix; so a batch built ahead (batch_prefetch.h) or resumed draws the same.
#ifndef FOLDNORM_BATCH_AUGMENT_H
#define FOLDNORM_BATCH_AUGMENT_H

#include "core/rand.h"
#include "kernels/classifier_loss.h"
#include "mixup.h"
#include "random_erasing.h"

typedef struct {
    float erase_prob; // -reprob: random erasing's probability per image; 0: off
    MixupConfig mix;  // -mixup, -cutmix
} BatchAugment;

// One batch's draws.
typedef struct {
    ErasingDraw *erase; // B of them
    MixupDraw mix;
} BatchAugmentDraws;

// Whether a (NULL: none) does anything.
int batch_augment_active(const BatchAugment *a);
void batch_augment_draws_alloc(BatchAugmentDraws *d, int B);
void batch_augment_draws_free(BatchAugmentDraws *d);
// The batch's draws (images H x W) from rng; a or rng NULL: none.
void batch_augment_draw(BatchAugmentDraws *d, const BatchAugment *a, int B, int H, int W, Rng *rng);
// The batch's mix (after every image's erasing) in place: its mixed
// targets, labels2 and lam (room for B each), or {NULL, NULL} when unmixed.
MixTargets batch_augment_mix(float *images, const int *labels, int *labels2, float *lam, int B,
                             int C, int S, const BatchAugmentDraws *d);

#endif
