// Random erasing of a normalised training image, as timm's RandomErasing in
// mode 'pixel' with one box: with probability p, up to 10 attempts at a box
// of area uniform in [0.02, 1/3] of the image and log-uniform aspect
// (h / w) in [0.3, 1/0.3]; the first that fits is filled with N(0, 1) values
// per pixel and channel.
#ifndef FOLDNORM_RANDOM_ERASING_H
#define FOLDNORM_RANDOM_ERASING_H

#include <stdint.h>

#include "core/rand.h"

#define ERASING_MIN_AREA   0.02
#define ERASING_MAX_AREA   (1.0 / 3.0)
#define ERASING_MIN_ASPECT 0.3
#define ERASING_ATTEMPTS   10

// One image's draws: erased (a box was placed) and the box, its fill from
// the stream of fill_seed (rng_normal_fill of C x h x w values, (c, y, x) order).
typedef struct {
    int erased, top, left, h, w;
    uint64_t fill_seed;
} ErasingDraw;

// The image's (H x W) draws from rng in timm's order: the probability test,
// then per attempt the area and the aspect, for the box that fits its top
// and left, then the fill seed (two values).
ErasingDraw random_erasing_draw(float prob, int H, int W, Rng *rng);
// Fills the box of d in image (C, H, W); nothing when d->erased is 0.
void random_erasing_apply(float *image, int C, int H, int W, const ErasingDraw *d);

#endif
