// Mixup and cutmix of a training batch with mixed soft targets, as timm's
// Mixup in mode 'batch' (one lambda per batch, each image mixed with its
// mirror in the batch, b with B-1-b): mixup x_b = lam x_b + (1 - lam) x_{B-1-b};
// cutmix pastes a box of x_{B-1-b} into x_b and corrects lam to the box area
// (timm's correct_lam). With both on, each batch is cutmix with probability
// MIXUP_SWITCH_PROB. The targets are lam q(y_b) + (1 - lam) q(y_{B-1-b}), q
// the label-smoothed one-hot (kernels/classifier_loss.h's MixTargets).
#ifndef FOLDNORM_MIXUP_H
#define FOLDNORM_MIXUP_H

#include "core/rand.h"

#define MIXUP_SWITCH_PROB 0.5f

typedef struct {
    float mixup_alpha;  // Beta(alpha, alpha) of mixup's lam; 0: off
    float cutmix_alpha; // Beta(alpha, alpha) of cutmix's lam; 0: off
} MixupConfig;

// One batch's draws: whether it is mixed (any alpha > 0), cutmix or mixup,
// the Beta draw and the cutmix box centre.
typedef struct {
    int active, use_cutmix;
    double lam; // the Beta draw, before cutmix's correction
    int cy, cx; // the box centre, uniform over the image's rows and columns
} MixupDraw;

// A Beta(alpha, alpha) value from rng (two Marsaglia-Tsang gamma draws).
double mixup_beta_draw(double alpha, Rng *rng);
// The batch's draws from rng (images of H x W), in this order: the switch
// (both on), cy, cx, then a seed of the Beta draw's own stream (so the
// number of draws per batch is fixed).
MixupDraw mixup_draw(const MixupConfig *c, int H, int W, Rng *rng);
// Mixes images (B, C, H, W) in place as d says and writes each image's second
// label (labels2 = labels reversed) and weight lam of its first; returns lam
// (cutmix: 1 - box area / image area).
float mixup_apply(float *images, const int *labels, int *labels2, float *lam, int B, int C, int H,
                  int W, const MixupDraw *d);

#endif
