#include "crossentropy.h"

#include <math.h>
#include <stddef.h>

#include "fast_exp.h"

// The exponentials run in omp simd loops through fast_expf (relative error
// <= 2e-7, tested in test_kernels), which gcc vectorizes; libm's expf is
// scalar. Sums are kept per block of EXP_BLOCK columns in fp32 (16 lanes of
// EXP_BLOCK / 16 terms each when vectorised, EXP_BLOCK in a row when not, as
// under the sanitizers' -O1) and the blocks added in double, so the relative
// error of a 50,257-word sum is that of a 256-term fp32 sum (~1e-6 at most in
// the tests), not of a 50,257-term one.
// fast_expf clamps below -87: a logit more than 87 under the row max counts
// exp(-87) = 1.6e-38 instead of less, which no fp32 sum or gradient can see.
enum { EXP_BLOCK = 256 };

static float row_max(const float *x, int V) {
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int i = 0; i < V; i++) {
        m = x[i] > m ? x[i] : m;
    }
    return m;
}

// sum over i < V of exp(x[i] - m)
static double row_exp_sum(const float *x, float m, int V) {
    double sum = 0.0;
    for (int i0 = 0; i0 < V; i0 += EXP_BLOCK) {
        const int i1 = i0 + EXP_BLOCK < V ? i0 + EXP_BLOCK : V;
        float block = 0.0f;
#pragma omp simd reduction(+ : block)
        for (int i = i0; i < i1; i++) {
            block += fast_expf(x[i] - m);
        }
        sum += block;
    }
    return sum;
}

void crossentropy_forward(float *losses, float *row_stats, const float *logits, const int *targets,
                          int N, int V, int Vp) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * Vp;
        float m = row_max(x, V);
        double sum = row_exp_sum(x, m, V);
        double lse = log(sum) + m;
        row_stats[2 * n] = m;
        row_stats[2 * n + 1] = (float)(1.0 / sum);
        // masked out (SFT prompt tokens, target < 0): no loss
        losses[n] = targets[n] < 0 ? 0.0f : (float)(lse - x[targets[n]]);
    }
}

void crossentropy_backward_inplace(float *logits, const float *row_stats, const int *targets,
                                   float scale, int N, int V, int Vp) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *x = logits + (size_t)n * Vp;
        if (targets[n] < 0) { // masked out: no gradient
            for (int i = 0; i < Vp; i++) {
                x[i] = 0.0f;
            }
            continue;
        }
        // softmax = exp(x - m) / sum: one pass, nothing recomputed (x - lse
        // would round lse, |lse| ulp, which is 4e-6 for logits near 100)
        const float m = row_stats[2 * n], inv_sum_scale = row_stats[2 * n + 1] * scale;
#pragma omp simd
        for (int i = 0; i < V; i++) {
            x[i] = fast_expf(x[i] - m) * inv_sum_scale;
        }
        x[targets[n]] -= scale;
        for (int i = V; i < Vp; i++) {
            x[i] = 0.0f;
        }
    }
}
