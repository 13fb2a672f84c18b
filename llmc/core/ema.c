// The weights' exponential moving average (ema.h).
#include "ema.h"

#include <stdlib.h>
#include <string.h>

#include "utils.h"

void ema_update(float *ema, const float *weights, size_t n, float decay) {
    const float keep = decay, take = 1.0f - decay;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        ema[i] = keep * ema[i] + take * weights[i];
    }
}

void ema_swap(float *a, float *b, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

WeightEma ema_start(const float *weights, size_t n, float decay) {
    WeightEma ema = {.values = malloc_check(mul_size_check(n, sizeof(float), "EMA") + 1, "EMA"),
                     .decay = decay};
    memcpy(ema.values, weights, n * sizeof(float));
    return ema;
}

void ema_free(WeightEma *ema) {
    free(ema->values);
    ema->values = NULL;
    ema->decay = 0.0f;
}
