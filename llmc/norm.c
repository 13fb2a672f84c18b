#include "norm.h"

#include <stddef.h>

enum { CHANNEL_BLOCK = 64 };

void norm_param_grads(float *dgain, float *dbias, const float *dout, const float *inp,
                      const float *mean, const float *rstd, int N, int C) {
    // parallel over channel blocks so that no two threads write the same gain
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += CHANNEL_BLOCK) {
        int c1 = c0 + CHANNEL_BLOCK < C ? c0 + CHANNEL_BLOCK : C;
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C;
            const float *dy = dout + (size_t)n * C;
            float mu = mean != NULL ? mean[n] : 0.0f;
            float rs = rstd[n];
            for (int c = c0; c < c1; c++) {
                dgain[c] += (x[c] - mu) * rs * dy[c];
                dbias[c] += dy[c];
            }
        }
    }
}

void norm_forward(NormKind kind, float *out, float *mean, float *rstd, const float *inp,
                  const float *gain, const float *bias, int N, int C) {
    if (kind == NORM_LAYER) {
        layernorm_forward(out, mean, rstd, inp, gain, bias, N, C);
    } else {
        rmsnorm_forward(out, rstd, inp, gain, bias, N, C);
    }
}

void norm_backward(NormKind kind, float *dinp, float *dgain, float *dbias, const float *dout,
                   const float *inp, const float *gain, const float *mean, const float *rstd,
                   int N, int C) {
    if (kind == NORM_LAYER) {
        layernorm_backward(dinp, dgain, dbias, dout, inp, gain, mean, rstd, N, C);
    } else {
        rmsnorm_backward(dinp, dgain, dbias, dout, inp, gain, rstd, N, C);
    }
}
