#include "matmul.h"

#include <stddef.h>

#ifdef FOLDNORM_BLAS
#include <cblas.h>
#endif

const char *matmul_backend_name(void) {
#ifdef FOLDNORM_BLAS
    return "openblas";
#else
    return "portable";
#endif
}

static void add_bias_rows(float *out, const float *bias, int N, int OC) {
    if (bias == NULL) {
        return;
    }
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        float *row = out + (size_t)n * OC;
        for (int o = 0; o < OC; o++) {
            row[o] += bias[o];
        }
    }
}

static void accumulate_bias_grad(float *dbias, const float *dout, int N, int OC) {
#pragma omp parallel for
    for (int o = 0; o < OC; o++) {
        float sum = 0.0f;
        for (int n = 0; n < N; n++) {
            sum += dout[(size_t)n * OC + o];
        }
        dbias[o] += sum;
    }
}

#ifdef FOLDNORM_BLAS

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                    int IC, int OC) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC,
                0.0f, out, OC);
    add_bias_rows(out, bias, N, OC);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int IC, int OC) {
    if (dinp != NULL) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight,
                    IC, 1.0f, dinp, IC);
    }
    if (dweight != NULL) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC,
                    1.0f, dweight, IC);
    }
    if (dbias != NULL) {
        accumulate_bias_grad(dbias, dout, N, OC);
    }
}

#else

// Portable loops: blocked so that a tile of weight rows stays in cache while
// the rows of the input stream past it; inner loops vectorize.
enum { ROW_TILE = 4, OUT_TILE = 64 };

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                    int IC, int OC) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int o0 = 0; o0 < OC; o0 += OUT_TILE) {
        for (int n0 = 0; n0 < N; n0 += ROW_TILE) {
            int o1 = o0 + OUT_TILE < OC ? o0 + OUT_TILE : OC;
            int n1 = n0 + ROW_TILE < N ? n0 + ROW_TILE : N;
            for (int n = n0; n < n1; n++) {
                const float *x = inp + (size_t)n * IC;
                for (int o = o0; o < o1; o++) {
                    const float *w = weight + (size_t)o * IC;
                    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                    for (int i = 0; i < IC; i++) {
                        sum += x[i] * w[i];
                    }
                    out[(size_t)n * OC + o] = sum;
                }
            }
        }
    }
    add_bias_rows(out, bias, N, OC);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int IC, int OC) {
    if (dinp != NULL) {
#pragma omp parallel for
        for (int n = 0; n < N; n++) {
            float *dx = dinp + (size_t)n * IC;
            const float *dy = dout + (size_t)n * OC;
            for (int o = 0; o < OC; o++) {
                const float *w = weight + (size_t)o * IC;
                float g = dy[o];
#pragma omp simd
                for (int i = 0; i < IC; i++) {
                    dx[i] += g * w[i];
                }
            }
        }
    }
    if (dweight != NULL) {
#pragma omp parallel for
        for (int o = 0; o < OC; o++) {
            float *dw = dweight + (size_t)o * IC;
            for (int n = 0; n < N; n++) {
                const float *x = inp + (size_t)n * IC;
                float g = dout[(size_t)n * OC + o];
#pragma omp simd
                for (int i = 0; i < IC; i++) {
                    dw[i] += g * x[i];
                }
            }
        }
    }
    if (dbias != NULL) {
        accumulate_bias_grad(dbias, dout, N, OC);
    }
}

#endif
