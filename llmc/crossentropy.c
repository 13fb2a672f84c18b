#include "crossentropy.h"

#include <math.h>
#include <stddef.h>

static float row_max(const float *x, int V) {
    float m = -INFINITY;
    for (int i = 0; i < V; i++) {
        m = x[i] > m ? x[i] : m;
    }
    return m;
}

void crossentropy_forward(float *losses, const float *logits, const int *targets, int N, int V,
                          int Vp) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        if (targets[n] < 0) { // masked out (SFT prompt tokens): no loss
            losses[n] = 0.0f;
            continue;
        }
        const float *x = logits + (size_t)n * Vp;
        float m = row_max(x, V);
        double sum = 0.0;
        for (int i = 0; i < V; i++) {
            sum += expf(x[i] - m);
        }
        losses[n] = (float)(log(sum) + m - x[targets[n]]);
    }
}

void crossentropy_backward_inplace(float *logits, const int *targets, float scale, int N, int V,
                                   int Vp) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *x = logits + (size_t)n * Vp;
        if (targets[n] < 0) { // masked out: no gradient
            for (int i = 0; i < Vp; i++) {
                x[i] = 0.0f;
            }
            continue;
        }
        float m = row_max(x, V);
        float sum = 0.0f;
        for (int i = 0; i < V; i++) {
            x[i] = expf(x[i] - m);
            sum += x[i];
        }
        float inv = 1.0f / sum;
        for (int i = 0; i < V; i++) {
            x[i] = x[i] * inv * scale;
        }
        x[targets[n]] -= scale;
        for (int i = V; i < Vp; i++) {
            x[i] = 0.0f;
        }
    }
}
