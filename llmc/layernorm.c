#include <math.h>
#include <stddef.h>

#include "norm.h"

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *gain,
                       const float *bias, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        float sum = 0.0f;
        for (int c = 0; c < C; c++) {
            sum += x[c];
        }
        float mu = sum / (float)C;
        float sq = 0.0f;
        for (int c = 0; c < C; c++) {
            float d = x[c] - mu;
            sq += d * d;
        }
        float rs = 1.0f / sqrtf(sq / (float)C + NORM_EPS);
        for (int c = 0; c < C; c++) {
            y[c] = gain[c] * ((x[c] - mu) * rs) + bias[c];
        }
        mean[n] = mu;
        rstd[n] = rs;
    }
}

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * dy
void layernorm_backward(float *dinp, float *dgain, float *dbias, const float *dout,
                        const float *inp, const float *gain, const float *mean,
                        const float *rstd, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        const float *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        float mu = mean[n];
        float rs = rstd[n];
        float dxhat_mean = 0.0f;
        float dxhat_xhat_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - mu) * rs;
            float dxhat = gain[c] * dy[c];
            dxhat_mean += dxhat;
            dxhat_xhat_mean += dxhat * xhat;
        }
        dxhat_mean /= (float)C;
        dxhat_xhat_mean /= (float)C;
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - mu) * rs;
            float dxhat = gain[c] * dy[c];
            dx[c] += rs * (dxhat - dxhat_mean - xhat * dxhat_xhat_mean);
        }
    }
    norm_param_grads(dgain, dbias, dout, inp, mean, rstd, N, C);
}
