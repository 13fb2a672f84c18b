#include "batch_augment.h"

#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

int batch_augment_active(const BatchAugment *a) {
    return a != NULL &&
           (a->erase_prob > 0.0f || a->mix.mixup_alpha > 0.0f || a->mix.cutmix_alpha > 0.0f);
}

void batch_augment_draws_alloc(BatchAugmentDraws *d, int B) {
    memset(d, 0, sizeof(*d));
    d->erase = malloc_check((size_t)B * sizeof(ErasingDraw), "erasing draws");
    memset(d->erase, 0, (size_t)B * sizeof(ErasingDraw));
}

void batch_augment_draws_free(BatchAugmentDraws *d) {
    free(d->erase);
    memset(d, 0, sizeof(*d));
}

void batch_augment_draw(BatchAugmentDraws *d, const BatchAugment *a, int B, int H, int W,
                        Rng *rng) {
    const int on = rng != NULL && batch_augment_active(a);
    for (int b = 0; b < B; b++) {
        d->erase[b] = random_erasing_draw(on ? a->erase_prob : 0.0f, H, W, rng);
    }
    const MixupConfig off = {0.0f, 0.0f};
    d->mix = mixup_draw(on ? &a->mix : &off, H, W, rng);
}

MixTargets batch_augment_mix(float *images, const int *labels, int *labels2, float *lam, int B,
                             int C, int S, const BatchAugmentDraws *d) {
    MixTargets none = {NULL, NULL};
    if (!d->mix.active)
        return none;
    mixup_apply(images, labels, labels2, lam, B, C, S, S, &d->mix);
    MixTargets mixed = {labels2, lam};
    return mixed;
}
