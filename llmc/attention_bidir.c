#include "attention_bidir.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "utils.h"

void attention_bidir_forward(float *out, float *att, const float *qkv, const float *bias,
                             int num_bias, int G, int T, int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3) schedule(static)
    for (int g = 0; g < G; g++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)g * T + t) * C3 + (size_t)h * hs;
                float *a = att + (((size_t)g * NH + h) * T + t) * T;
                const float *bias_row =
                    bias == NULL ? NULL
                                 : bias + ((((size_t)(g % num_bias)) * NH + h) * T + t) * T;
                float maxval = -INFINITY;
                for (int t2 = 0; t2 < T; t2++) {
                    const float *k = qkv + ((size_t)g * T + t2) * C3 + C + (size_t)h * hs;
                    float dot = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        dot += q[i] * k[i];
                    }
                    a[t2] = dot * scale + (bias_row != NULL ? bias_row[t2] : 0.0f);
                    maxval = a[t2] > maxval ? a[t2] : maxval;
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 < T; t2++) {
                    a[t2] = expf(a[t2] - maxval);
                    sum += a[t2];
                }
                float inv = 1.0f / sum;
                float *o = out + ((size_t)g * T + t) * C + (size_t)h * hs;
                for (int i = 0; i < hs; i++) {
                    o[i] = 0.0f;
                }
                for (int t2 = 0; t2 < T; t2++) {
                    a[t2] *= inv;
                    const float *v = qkv + ((size_t)g * T + t2) * C3 + 2 * (size_t)C + (size_t)h * hs;
                    for (int i = 0; i < hs; i++) {
                        o[i] += a[t2] * v[i];
                    }
                }
            }
        }
    }
}

// Per (g, h): datt = dout . v, dscore = att * (datt - sum(att * datt)),
// dq = scale * dscore k, dk += scale * dscore q, dv += att dout.
// Parallel over (g, h) only: each pair owns its slices of dqkv.
void attention_bidir_backward(float *dqkv, float *dscores, const float *dout, const float *qkv,
                              const float *att, int G, int T, int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel
    {
        float *datt = malloc_check((size_t)T * sizeof(float), "attention backward scratch");
#pragma omp for collapse(2) schedule(static)
        for (int g = 0; g < G; g++) {
            for (int h = 0; h < NH; h++) {
                for (int t = 0; t < T; t++) {
                    const float *a = att + (((size_t)g * NH + h) * T + t) * T;
                    const float *dy = dout + ((size_t)g * T + t) * C + (size_t)h * hs;
                    const float *q = qkv + ((size_t)g * T + t) * C3 + (size_t)h * hs;
                    float *dq = dqkv + ((size_t)g * T + t) * C3 + (size_t)h * hs;
                    float *ds = dscores == NULL ? NULL : dscores + (((size_t)g * NH + h) * T + t) * T;
                    float att_datt = 0.0f;
                    for (int t2 = 0; t2 < T; t2++) {
                        size_t row = ((size_t)g * T + t2) * C3 + (size_t)h * hs;
                        const float *v = qkv + row + 2 * (size_t)C;
                        float *dv = dqkv + row + 2 * (size_t)C;
                        float d = 0.0f;
                        for (int i = 0; i < hs; i++) {
                            d += dy[i] * v[i];
                            dv[i] += a[t2] * dy[i];
                        }
                        datt[t2] = d;
                        att_datt += a[t2] * d;
                    }
                    for (int t2 = 0; t2 < T; t2++) {
                        size_t row = ((size_t)g * T + t2) * C3 + (size_t)h * hs;
                        const float *k = qkv + row + C;
                        float *dk = dqkv + row + C;
                        float dscore = a[t2] * (datt[t2] - att_datt);
                        if (ds != NULL) {
                            ds[t2] = dscore;
                        }
                        float dpre = dscore * scale;
                        for (int i = 0; i < hs; i++) {
                            dq[i] += dpre * k[i];
                            dk[i] += dpre * q[i];
                        }
                    }
                }
            }
        }
        free(datt);
    }
}
