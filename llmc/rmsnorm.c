#include <math.h>
#include <stddef.h>

#include "norm.h"

void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *gain,
                     const float *bias, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        float sq = 0.0f;
        for (int c = 0; c < C; c++) {
            sq += x[c] * x[c];
        }
        float rs = 1.0f / sqrtf(sq / (float)C + NORM_EPS);
        for (int c = 0; c < C; c++) {
            y[c] = gain[c] * (x[c] * rs) + bias[c];
        }
        rstd[n] = rs;
    }
}

// dx = rstd * (dxhat - xhat * mean(dxhat * xhat)), xhat = x * rstd, dxhat = g * dy
void rmsnorm_backward(float *dinp, float *dgain, float *dbias, const float *dout,
                      const float *inp, const float *gain, const float *rstd, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        const float *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        float rs = rstd[n];
        float dxhat_xhat_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            dxhat_xhat_mean += gain[c] * dy[c] * (x[c] * rs);
        }
        dxhat_xhat_mean /= (float)C;
        for (int c = 0; c < C; c++) {
            dx[c] += rs * (gain[c] * dy[c] - (x[c] * rs) * dxhat_xhat_mean);
        }
    }
    norm_param_grads(dgain, dbias, dout, inp, NULL, rstd, N, C);
}
