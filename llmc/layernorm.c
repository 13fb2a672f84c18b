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
#pragma omp simd reduction(+ : sum)
        for (int c = 0; c < C; c++) {
            sum += x[c];
        }
        float mu = sum / (float)C;
        float sq = 0.0f; // two-pass variance: no cancellation when |mu| >> std
#pragma omp simd reduction(+ : sq)
        for (int c = 0; c < C; c++) {
            float d = x[c] - mu;
            sq += d * d;
        }
        float rs = 1.0f / sqrtf(sq / (float)C + NORM_EPS);
#pragma omp simd
        for (int c = 0; c < C; c++) {
            y[c] = gain[c] * ((x[c] - mu) * rs) + bias[c];
        }
        mean[n] = mu;
        rstd[n] = rs;
    }
}

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * dy,
// dgain += xhat * dy, dbias += dy, all in one pass over x and dy per row.
void layernorm_backward(float *dinp, float *dgain, float *dbias, const float *dout,
                        const float *inp, const float *gain, const float *mean,
                        const float *rstd, int N, int C) {
    const int num_chunks = norm_num_chunks(N);
    float *partials = norm_partials_alloc(num_chunks, C);
#pragma omp parallel for schedule(static)
    for (int k = 0; k < num_chunks; k++) {
        float *pg = partials + (size_t)k * 2 * C;
        float *pb = pg + C;
        int n0, n1;
        norm_chunk_rows(k, num_chunks, N, &n0, &n1);
        for (int n = n0; n < n1; n++) {
            const float *x = inp + (size_t)n * C;
            const float *dy = dout + (size_t)n * C;
            float *dx = dinp + (size_t)n * C;
            const float mu = mean[n], rs = rstd[n];
            float dxhat_sum = 0.0f, dxhat_xhat_sum = 0.0f;
#pragma omp simd reduction(+ : dxhat_sum, dxhat_xhat_sum)
            for (int c = 0; c < C; c++) {
                float xhat = (x[c] - mu) * rs;
                float dxhat = gain[c] * dy[c];
                dxhat_sum += dxhat;
                dxhat_xhat_sum += dxhat * xhat;
            }
            const float dxhat_mean = dxhat_sum / (float)C;
            const float dxhat_xhat_mean = dxhat_xhat_sum / (float)C;
#pragma omp simd
            for (int c = 0; c < C; c++) {
                float xhat = (x[c] - mu) * rs;
                dx[c] += rs * (gain[c] * dy[c] - dxhat_mean - xhat * dxhat_xhat_mean);
                pg[c] += xhat * dy[c];
                pb[c] += dy[c];
            }
        }
    }
    norm_partials_reduce(dgain, dbias, partials, num_chunks, C);
}
