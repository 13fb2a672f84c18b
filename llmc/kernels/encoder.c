#include "encoder.h"

#include <stddef.h>

static float row_mean(const float *x, int C) {
    float sum = 0.0f;
    for (int c = 0; c < C; c++) {
        sum += x[c];
    }
    return sum / (float)C;
}

void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe, int B,
                     int T, int C, int centred) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            const float *e = wte + (size_t)tokens[b * T + t] * C;
            const float *p = wpe + (size_t)t * C;
            float shift = centred ? row_mean(e, C) + row_mean(p, C) : 0.0f;
            for (int c = 0; c < C; c++) {
                o[c] = e[c] + p[c] - shift;
            }
        }
    }
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int T,
                      int C, int centred) {
    // serial over positions: two positions may hold the same token
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((size_t)b * T + t) * C;
            float *de = dwte + (size_t)tokens[b * T + t] * C;
            float *dp = dwpe + (size_t)t * C;
            float shift = centred ? row_mean(d, C) : 0.0f;
            for (int c = 0; c < C; c++) {
                de[c] += d[c] - shift;
                dp[c] += d[c] - shift;
            }
        }
    }
}
