#include "adamw.h"

#include <math.h>

#include "bf16.h"
#include "core/utils.h"

// The update of one tensor; with params_bf16 != NULL it also writes the bf16
// rounding of every new parameter (bf16.h) in the same pass, so that a bf16
// run does not read the fp32 parameters again to round them.
static inline __attribute__((always_inline)) void
adamw_update_rounding(float *params, uint16_t *params_bf16, const float *grads, float *m, float *v,
                      size_t n, const AdamWConfig *cfg, int weight_decay_on, int t,
                      float grad_scale) {
    const float lr = cfg->learning_rate;
    const float b1 = cfg->beta1;
    const float b2 = cfg->beta2;
    const float decay = weight_decay_on ? 1.0f - lr * cfg->weight_decay : 1.0f;
    const float bias_correction1 = 1.0f - powf(b1, (float)t);
    const float bias_correction2_sqrt = sqrtf(1.0f - powf(b2, (float)t));
    const float step_size = lr / bias_correction1;
    // one pass, 7 streams (read p, g, m, v; write p, m, v) and the bf16 copy;
    // vectorized (sqrtf inlines as vsqrtps since this file is built with
    // -fno-math-errno)
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * grad_scale;
        float p = params[i] * decay;
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float updated = p - step_size * mi / (sqrtf(vi) / bias_correction2_sqrt + cfg->eps);
        params[i] = updated;
        if (params_bf16 != NULL) {
            params_bf16[i] = bf16_from_float(updated);
        }
    }
}

void adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                  const AdamWConfig *cfg, int weight_decay_on, int t, float grad_scale) {
    adamw_update_rounding(params, NULL, grads, m, v, n, cfg, weight_decay_on, t, grad_scale);
}

// a separate copy of the loop, so that adamw_update's keeps no bf16 branch
static void adamw_update_bf16(float *params, uint16_t *params_bf16, const float *grads, float *m,
                              float *v, size_t n, const AdamWConfig *cfg, int weight_decay_on,
                              int t, float grad_scale) {
    adamw_update_rounding(params, params_bf16, grads, m, v, n, cfg, weight_decay_on, t,
                          grad_scale);
}

// adamw_step_tensors_range, writing the bf16 copy too when params_bf16 != NULL
static void step_tensors_range(float *params, uint16_t *params_bf16, const float *grads, float **m,
                               float **v, int *step, size_t num_params, const size_t *sizes,
                               const unsigned char *decay, int num_tensors,
                               const AdamWConfig *cfg, float grad_scale, size_t lo, size_t hi) {
    if (*m == NULL) {
        *m = calloc_check(num_params, sizeof(float), "AdamW m");
        *v = calloc_check(num_params, sizeof(float), "AdamW v");
    }
    *step += 1;
    size_t offset = 0;
    for (int i = 0; i < num_tensors; i++) {
        // the part of tensor i = [offset, offset + sizes[i]) inside [lo, hi)
        size_t a = offset > lo ? offset : lo;
        size_t b = offset + sizes[i] < hi ? offset + sizes[i] : hi;
        if (a < b && params_bf16 != NULL) {
            adamw_update_bf16(params + a, params_bf16 + a, grads + a, *m + a, *v + a, b - a, cfg,
                              decay[i], *step, grad_scale);
        } else if (a < b) {
            adamw_update(params + a, grads + a, *m + a, *v + a, b - a, cfg, decay[i], *step,
                         grad_scale);
        }
        offset += sizes[i];
    }
}

void adamw_step_tensors_range(float *params, const float *grads, float **m, float **v, int *step,
                              size_t num_params, const size_t *sizes,
                              const unsigned char *decay, int num_tensors, const AdamWConfig *cfg,
                              float grad_scale, size_t lo, size_t hi) {
    step_tensors_range(params, NULL, grads, m, v, step, num_params, sizes, decay, num_tensors, cfg,
                       grad_scale, lo, hi);
}

void adamw_step_tensors(float *params, uint16_t *params_bf16, const float *grads, float **m,
                        float **v, int *step, size_t num_params, const size_t *sizes,
                        const unsigned char *decay, int num_tensors, const AdamWConfig *cfg,
                        float grad_clip) {
    float scale = clip_grad_scale(sqrt(sum_of_squares(grads, num_params)), grad_clip);
    step_tensors_range(params, params_bf16, grads, m, v, step, num_params, sizes, decay,
                       num_tensors, cfg, scale, 0, num_params);
}

double sum_of_squares(const float *x, size_t n) {
    double sum = 0.0;
#pragma omp parallel for simd reduction(+ : sum) schedule(static)
    for (size_t i = 0; i < n; i++) {
        sum += (double)x[i] * (double)x[i];
    }
    return sum;
}

float clip_grad_scale(double grad_norm, float clip) {
    if (clip <= 0.0f) {
        return 1.0f;
    }
    double coef = (double)clip / (grad_norm + 1e-6);
    return coef < 1.0 ? (float)coef : 1.0f;
}
