#include "norm.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/utils.h"

// LayerNorm and RMSNorm are one kernel with a `centre` flag: RMSNorm is
// LayerNorm with the mean taken as 0 (xhat = x * rstd) and no mean-gradient
// term. The row functions are inlined with a constant flag, so each mode
// compiles to its own loops, and with mu = 0 every expression is exactly
// RMSNorm's (x - 0 == x, a - 0 == a in IEEE arithmetic).
#if defined(__GNUC__)
#define ROW_KERNEL static inline __attribute__((always_inline))
#else
#define ROW_KERNEL static inline
#endif

ROW_KERNEL void norm_row_forward(bool centre, float *y, float *mean, float *rstd,
                                 const float *x, const float *gain, const float *bias, int C) {
    float mu = 0.0f;
    if (centre) {
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int c = 0; c < C; c++) {
            sum += x[c];
        }
        mu = sum / (float)C;
    }
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
    if (centre) {
        *mean = mu;
    }
    *rstd = rs;
}

// dx += rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * dy,
// the mean(dxhat) term only when centring; dgain += xhat * dy, dbias += dy;
// one pass over x and dy per row.
ROW_KERNEL void norm_row_backward(bool centre, float *dx, float *pg, float *pb, const float *dy,
                                  const float *x, const float *gain, float mu, float rs, int C) {
    float dxhat_mean = 0.0f, dxhat_xhat_mean;
    if (centre) {
        float dxhat_sum = 0.0f, dxhat_xhat_sum = 0.0f;
#pragma omp simd reduction(+ : dxhat_sum, dxhat_xhat_sum)
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - mu) * rs;
            float dxhat = gain[c] * dy[c];
            dxhat_sum += dxhat;
            dxhat_xhat_sum += dxhat * xhat;
        }
        dxhat_mean = dxhat_sum / (float)C;
        dxhat_xhat_mean = dxhat_xhat_sum / (float)C;
    } else {
        float dxhat_x_sum = 0.0f;
#pragma omp simd reduction(+ : dxhat_x_sum)
        for (int c = 0; c < C; c++) {
            dxhat_x_sum += gain[c] * dy[c] * x[c];
        }
        // mean(dxhat * xhat) = rs * mean(g * dy * x)
        dxhat_xhat_mean = rs * dxhat_x_sum / (float)C;
    }
#pragma omp simd
    for (int c = 0; c < C; c++) {
        float xhat = (x[c] - mu) * rs;
        dx[c] += rs * (gain[c] * dy[c] - dxhat_mean - xhat * dxhat_xhat_mean);
        pg[c] += xhat * dy[c];
        pb[c] += dy[c];
    }
}

// Partial RMSNorm (no centring): rs = 1 / sqrt(mean(x_c^2, c < K) + eps)
// scales all C features.
static void partial_row_forward(float *y, float *rstd, const float *x, const float *gain,
                                const float *bias, int K, int C) {
    float sq = 0.0f;
    for (int c = 0; c < K; c++) {
        sq += x[c] * x[c];
    }
    const float rs = 1.0f / sqrtf(sq / (float)K + NORM_EPS);
    for (int c = 0; c < C; c++) {
        y[c] = gain[c] * (x[c] * rs) + bias[c];
    }
    *rstd = rs;
}

// d rs / d x_c = -rs^3 x_c / K for c < K (0 beyond), so with dxhat = g dy and
// S = sum over all C of dxhat_j xhat_j: dx_c += rs (dxhat_c - [c < K] xhat_c S / K).
static void partial_row_backward(float *dx, float *pg, float *pb, const float *dy, const float *x,
                                 const float *gain, float rs, int K, int C) {
    float s = 0.0f;
    for (int c = 0; c < C; c++) {
        s += gain[c] * dy[c] * x[c] * rs;
    }
    const float s_mean = s / (float)K;
    for (int c = 0; c < C; c++) {
        const float xhat = x[c] * rs;
        dx[c] += rs * (gain[c] * dy[c] - (c < K ? xhat * s_mean : 0.0f));
        pg[c] += xhat * dy[c];
        pb[c] += dy[c];
    }
}

int norm_partial_features(NormKind kind, int C) {
    if (kind.partial_share <= 0.0f || kind.partial_share >= 1.0f) {
        return C;
    }
    const int k = (int)ceilf(kind.partial_share * (float)C);
    return k < 1 ? 1 : k > C ? C : k;
}

void norm_forward(NormKind kind, float *out, float *mean, float *rstd, const float *inp,
                  const float *gain, const float *bias, int N, int C) {
    const bool centre = kind.centre;
    const int K = norm_partial_features(kind, C);
    if (centre && K < C) {
        fatal("norm_forward: partial RMSNorm does not centre");
    }
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *y = out + (size_t)n * C;
        const float *x = inp + (size_t)n * C;
        if (K < C) {
            partial_row_forward(y, rstd + n, x, gain, bias, K, C);
        } else if (centre) {
            norm_row_forward(true, y, mean + n, rstd + n, x, gain, bias, C);
        } else {
            norm_row_forward(false, y, NULL, rstd + n, x, gain, bias, C);
        }
    }
}

// The gain and bias gradients are sums over all N rows. Each row chunk sums
// its rows into its own partials, then the chunks are added in order: one
// pass over x and dy, and the same result for any number of threads.
enum { MAX_CHUNKS = 32 };

void norm_backward(NormKind kind, float *dinp, float *dgain, float *dbias, const float *dout,
                   const float *inp, const float *gain, const float *mean, const float *rstd,
                   int N, int C) {
    const bool centre = kind.centre;
    const int K = norm_partial_features(kind, C);
    const int num_chunks = N < MAX_CHUNKS ? N : MAX_CHUNKS;
    // [chunk][gain, bias][C]
    float *partials = calloc_check((size_t)num_chunks * 2 * (size_t)C, sizeof(float),
                                   "norm gradient partials");
#pragma omp parallel for schedule(static)
    for (int k = 0; k < num_chunks; k++) {
        float *pg = partials + (size_t)k * 2 * C;
        float *pb = pg + C;
        const int n0 = (int)((long)N * k / num_chunks), n1 = (int)((long)N * (k + 1) / num_chunks);
        for (int n = n0; n < n1; n++) {
            const size_t row = (size_t)n * C;
            if (K < C) {
                partial_row_backward(dinp + row, pg, pb, dout + row, inp + row, gain, rstd[n], K,
                                     C);
            } else if (centre) {
                norm_row_backward(true, dinp + row, pg, pb, dout + row, inp + row, gain, mean[n],
                                  rstd[n], C);
            } else {
                norm_row_backward(false, dinp + row, pg, pb, dout + row, inp + row, gain, 0.0f,
                                  rstd[n], C);
            }
        }
    }
    // serial: C x num_chunks additions cost less than a parallel region's barrier
    for (int c = 0; c < C; c++) {
        float g = 0.0f, b = 0.0f;
        for (int k = 0; k < num_chunks; k++) {
            g += partials[((size_t)k * 2) * C + c];
            b += partials[((size_t)k * 2 + 1) * C + c];
        }
        dgain[c] += g;
        dbias[c] += b;
    }
    free(partials);
}
