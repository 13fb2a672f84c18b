#include "gelu.h"

#include <math.h>

#define GELU_SCALE 0.7978845608028654f // sqrt(2 / pi)
#define GELU_CUBE 0.044715f

void gelu_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + GELU_CUBE * x * x * x)));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float du_dx = GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * x * x);
        dinp[i] = (0.5f * (1.0f + th) + 0.5f * x * sech2 * du_dx) * dout[i];
    }
}
