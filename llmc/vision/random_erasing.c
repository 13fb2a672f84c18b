#include "random_erasing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

ErasingDraw random_erasing_draw(float prob, int H, int W, Rng *rng) {
    ErasingDraw d;
    memset(&d, 0, sizeof(d));
    if (prob <= 0.0f || rng_uniform(rng) > prob)
        return d; // timm: random() > p keeps the image
    const double area = (double)H * W;
    const double log_lo = log(ERASING_MIN_ASPECT), log_hi = log(1.0 / ERASING_MIN_ASPECT);
    for (int attempt = 0; attempt < ERASING_ATTEMPTS; attempt++) {
        const double target =
            (ERASING_MIN_AREA + (ERASING_MAX_AREA - ERASING_MIN_AREA) * rng_uniform(rng)) * area;
        const double aspect = exp(log_lo + (log_hi - log_lo) * rng_uniform(rng));
        // Python's round(): halves to even, as nearbyint in the default rounding mode
        const int h = (int)nearbyint(sqrt(target * aspect));
        const int w = (int)nearbyint(sqrt(target / aspect));
        if (w < W && h < H) {
            d.erased = 1;
            d.h = h;
            d.w = w;
            d.top = (int)(rng_u32(rng) % (uint32_t)(H - h + 1)); // random.randint(0, H - h)
            d.left = (int)(rng_u32(rng) % (uint32_t)(W - w + 1));
            const uint64_t hi = rng_u32(rng);
            d.fill_seed = hi << 32 | rng_u32(rng);
            break;
        }
    }
    return d;
}

void random_erasing_apply(float *image, int C, int H, int W, const ErasingDraw *d) {
    if (!d->erased || d->h == 0 || d->w == 0)
        return;
    const size_t n = (size_t)C * d->h * d->w;
    float *fill = malloc_check(n * sizeof(float), "erasing fill");
    Rng rng;
    rng_seed(&rng, d->fill_seed);
    rng_normal_fill(&rng, fill, n, 0.0f, 1.0f);
    const float *f = fill;
    for (int c = 0; c < C; c++) {
        for (int y = d->top; y < d->top + d->h; y++) {
            memcpy(image + ((size_t)c * H + y) * W + d->left, f, (size_t)d->w * sizeof(float));
            f += d->w;
        }
    }
    free(fill);
}
