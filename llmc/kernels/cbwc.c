#include "cbwc.h"

#include <stddef.h>

enum { COLUMN_BLOCK = 256 };
// Below this many elements a pass runs on one thread: a parallel region's
// barrier costs more than the work (biases, position tables, small weights).
enum { PARALLEL_MIN = 1 << 15 };

void cbwc_project_weights(float *V, float *bias_c, const float *W, const float *bias, int OC,
                          int IC) {
#pragma omp parallel for schedule(static) if ((long)OC * IC >= PARALLEL_MIN)
    for (int i0 = 0; i0 < IC; i0 += COLUMN_BLOCK) {
        int width = i0 + COLUMN_BLOCK < IC ? COLUMN_BLOCK : IC - i0;
        float column_mean[COLUMN_BLOCK];
        for (int k = 0; k < width; k++) {
            column_mean[k] = 0.0f;
        }
        for (int o = 0; o < OC; o++) {
            const float *w = W + (size_t)o * IC + i0;
            for (int k = 0; k < width; k++) {
                column_mean[k] += w[k];
            }
        }
        for (int k = 0; k < width; k++) {
            column_mean[k] /= (float)OC;
        }
        for (int o = 0; o < OC; o++) {
            const float *w = W + (size_t)o * IC + i0;
            float *v = V + (size_t)o * IC + i0;
            for (int k = 0; k < width; k++) {
                v[k] = w[k] - column_mean[k];
            }
        }
    }
    if (bias != NULL) {
        cbwc_centre_rows(bias_c, bias, 1, OC);
    }
}

void cbwc_centre_rows(float *out, const float *x, int N, int C) {
#pragma omp parallel for schedule(static) if ((long)N * C >= PARALLEL_MIN)
    for (int n = 0; n < N; n++) {
        const float *row = x + (size_t)n * C;
        float *dst = out + (size_t)n * C;
        float sum = 0.0f;
        for (int c = 0; c < C; c++) {
            sum += row[c];
        }
        float mean = sum / (float)C;
        for (int c = 0; c < C; c++) {
            dst[c] = row[c] - mean;
        }
    }
}
