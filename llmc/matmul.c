#include "matmul.h"

#include <stddef.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tile_gemm.h"
#include "utils.h"

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

// row = residual + bias, either may be NULL (then 0): the matmuls then
// accumulate into the row (beta = 1), so the bias and the residual cost no pass of their own.
static void fill_row(float *row, const float *residual, const float *bias, int OC) {
    if (residual != NULL && bias != NULL) {
#pragma omp simd
        for (int o = 0; o < OC; o++) {
            row[o] = residual[o] + bias[o];
        }
    } else if (residual != NULL || bias != NULL) {
        const float *src = residual != NULL ? residual : bias;
#pragma omp simd
        for (int o = 0; o < OC; o++) {
            row[o] = src[o];
        }
    } else {
#pragma omp simd
        for (int o = 0; o < OC; o++) {
            row[o] = 0.0f;
        }
    }
}

static void fill_rows(float *out, const float *residual, const float *bias, int N, int OC) {
#pragma omp parallel for schedule(static) if ((long)N * OC >= 1 << 15)
    for (int n = 0; n < N; n++) {
        fill_row(out + (size_t)n * OC, residual == NULL ? NULL : residual + (size_t)n * OC, bias,
                 OC);
    }
}

// dbias[o] += sum_n dout[n][o]. The rows go in fixed chunks (a function of N
// only, so the sums do not depend on the thread count), each summed by one
// vectorized pass over its rows; then the chunk sums are added in order.
enum { BIAS_GRAD_CHUNKS = 8 };

static void accumulate_bias_grad(float *dbias, const float *dout, int N, int OC) {
    const int chunks = N < BIAS_GRAD_CHUNKS ? N : BIAS_GRAD_CHUNKS;
    if (chunks == 0) {
        return;
    }
    float *partial = malloc_check((size_t)chunks * OC * sizeof(float), "bias gradient partials");
#pragma omp parallel for schedule(static)
    for (int k = 0; k < chunks; k++) {
        float *sum = partial + (size_t)k * OC;
        int n0 = (int)((long)N * k / chunks), n1 = (int)((long)N * (k + 1) / chunks);
        for (int o = 0; o < OC; o++) {
            sum[o] = 0.0f;
        }
        for (int n = n0; n < n1; n++) {
            const float *row = dout + (size_t)n * OC;
#pragma omp simd
            for (int o = 0; o < OC; o++) {
                sum[o] += row[o];
            }
        }
    }
    for (int k = 1; k < chunks; k++) {
#pragma omp simd
        for (int o = 0; o < OC; o++) {
            partial[o] += partial[(size_t)k * OC + o];
        }
    }
#pragma omp simd
    for (int o = 0; o < OC; o++) {
        dbias[o] += partial[o];
    }
    free(partial);
}

// The three products, out = beta out + ...:  forward (N, OC) += inp W^T,
// dinp (N, IC) += dout W, dweight (OC, IC) += dout^T inp.
#ifdef FOLDNORM_BLAS

static void blas_forward(float *out, const float *inp, const float *weight, int N, int IC, int OC,
                         float beta) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC,
                beta, out, OC);
}

static void blas_dinp(float *dinp, const float *dout, const float *weight, int N, int IC, int OC,
                      float beta) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight, IC,
                beta, dinp, IC);
}

static void blas_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                         int OC) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f,
                dweight, IC);
}

#endif

// Portable loops: blocked so that a tile of weight rows stays in cache while
// the rows of the input stream past it; inner loops vectorize. Used without
// OpenBLAS, and with it inside a parallel region (classifier.c's per-thread
// model copies): OpenBLAS's OpenMP build makes concurrent callers spin-wait
// for each other, while these loops just run on the calling thread.
enum { ROW_TILE = 4, OUT_TILE = 64 };

static void portable_forward(float *out, const float *inp, const float *weight, int N, int IC,
                             int OC, float beta) {
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
                    float *y = out + (size_t)n * OC + o;
                    *y = beta == 0.0f ? sum : *y + sum;
                }
            }
        }
    }
}

static void portable_dinp(float *dinp, const float *dout, const float *weight, int N, int IC,
                          int OC, float beta) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        float *dx = dinp + (size_t)n * IC;
        const float *dy = dout + (size_t)n * OC;
        if (beta == 0.0f) {
            for (int i = 0; i < IC; i++) {
                dx[i] = 0.0f;
            }
        }
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

static void portable_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                             int OC) {
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

#ifdef FOLDNORM_BLAS
// OpenBLAS where it is built in, unless called inside a parallel region.
static int use_blas(void) {
#ifdef _OPENMP
    return !omp_in_parallel();
#else
    return 1;
#endif
}
#endif

static void gemm_forward(float *out, const float *inp, const float *weight, int N, int IC, int OC,
                         float beta) {
#ifdef FOLDNORM_BLAS
    if (use_blas()) {
        blas_forward(out, inp, weight, N, IC, OC, beta);
        return;
    }
#endif
    portable_forward(out, inp, weight, N, IC, OC, beta);
}

static void gemm_dinp(float *dinp, const float *dout, const float *weight, int N, int IC, int OC,
                      float beta) {
#ifdef FOLDNORM_BLAS
    if (use_blas()) {
        blas_dinp(dinp, dout, weight, N, IC, OC, beta);
        return;
    }
#endif
    portable_dinp(dinp, dout, weight, N, IC, OC, beta);
}

static void gemm_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                         int OC) {
#ifdef FOLDNORM_BLAS
    if (use_blas()) {
        blas_dweight(dweight, dout, inp, N, IC, OC);
        return;
    }
#endif
    portable_dweight(dweight, dout, inp, N, IC, OC);
}

// Narrow layers (both sides multiples of 16, at most MATMUL_TILE_MAX) go
// through tile_gemm's register-blocked kernels where the target has
// AVX-512: their weights fit in L1/L2, and OpenBLAS's packing and its AVX2
// kernel (what it picks on this EPYC) cost more than the arithmetic there
// (docs/performance.md, the ViT/Swin section, has the measured crossover).
#ifndef MATMUL_TILE_MAX
#define MATMUL_TILE_MAX 256
#endif
enum { TILE_ROWS = 96, TILE_K_CHUNK = 256, TILE_PANEL = 64 };

static int tiles_fit(int IC, int OC) {
#ifdef __AVX512F__
    return IC % 16 == 0 && OC % 16 == 0 && IC <= MATMUL_TILE_MAX && OC <= MATMUL_TILE_MAX;
#else
    (void)IC;
    (void)OC;
    return 0;
#endif
}

// out = [residual + bias +] inp W^T, a chunk of TILE_ROWS rows at a time
// (filled, then accumulated into while it is in cache). W^T is laid out in
// panels of TILE_PANEL columns, each (IC, TILE_PANEL) contiguous: read with a
// short row stride, a panel stays in L1 (a stride of OC floats put its rows
// on a few cache sets).
static void tiles_forward(float *out, const float *residual, const float *bias, int fill,
                          const float *inp, const float *weight, int N, int IC, int OC) {
    float *wt = malloc_check((size_t)IC * OC * sizeof(float), "transposed weights");
    for (int o0 = 0; o0 < OC; o0 += TILE_PANEL) {
        int width = OC - o0 < TILE_PANEL ? OC - o0 : TILE_PANEL;
        float *panel = wt + (size_t)o0 * IC;
        for (int o = 0; o < width; o++) {
            for (int i = 0; i < IC; i++) {
                panel[(size_t)i * width + o] = weight[(size_t)(o0 + o) * IC + i];
            }
        }
    }
    const int chunks = (N + TILE_ROWS - 1) / TILE_ROWS;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < chunks; c++) {
        int n0 = c * TILE_ROWS, rows = N - n0 < TILE_ROWS ? N - n0 : TILE_ROWS;
        float *y = out + (size_t)n0 * OC;
        for (int n = 0; fill && n < rows; n++) {
            fill_row(y + (size_t)n * OC,
                     residual == NULL ? NULL : residual + (size_t)(n0 + n) * OC, bias, OC);
        }
        for (int o0 = 0; o0 < OC; o0 += TILE_PANEL) {
            int width = OC - o0 < TILE_PANEL ? OC - o0 : TILE_PANEL;
            tile_gemm(y + o0, OC, inp + (size_t)n0 * IC, IC, 0, wt + (size_t)o0 * IC, width, rows,
                      width, IC, 1.0f, fill);
        }
    }
    free(wt);
}

static void tiles_dinp(float *dinp, int accumulate, const float *dout, const float *weight, int N,
                       int IC, int OC) {
    const int chunks = (N + TILE_ROWS - 1) / TILE_ROWS;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < chunks; c++) {
        int n0 = c * TILE_ROWS, rows = N - n0 < TILE_ROWS ? N - n0 : TILE_ROWS;
        tile_gemm(dinp + (size_t)n0 * IC, IC, dout + (size_t)n0 * OC, OC, 0, weight, IC, rows, IC,
                  OC, 1.0f, accumulate);
    }
}

// dweight += dout^T inp: each thread owns a range of output rows and sums
// over the N rows of the batch in chunks of TILE_K_CHUNK (kept in cache),
// in the same order for any thread count.
static void tiles_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                          int OC) {
#pragma omp parallel
    {
#ifdef _OPENMP
        int threads = omp_get_num_threads(), id = omp_get_thread_num();
#else
        int threads = 1, id = 0;
#endif
        int o0 = (int)((long)OC * id / threads), o1 = (int)((long)OC * (id + 1) / threads);
        for (int k0 = 0; k0 < N && o1 > o0; k0 += TILE_K_CHUNK) {
            int k = N - k0 < TILE_K_CHUNK ? N - k0 : TILE_K_CHUNK;
            tile_gemm(dweight + (size_t)o0 * IC, IC, dout + (size_t)k0 * OC + o0, OC, 1,
                      inp + (size_t)k0 * IC, IC, o1 - o0, IC, k, 1.0f, 1);
        }
    }
}

// A few rows (generation with a KV cache runs one): the work is one read of
// the weights, which OpenBLAS's packing and the tiles' transpose would first
// copy whole; the portable dot-product loops read them in place.
enum { FEW_ROWS = 4 };

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                    int IC, int OC) {
    if (N <= FEW_ROWS) {
        fill_rows(out, NULL, bias, N, OC);
        portable_forward(out, inp, weight, N, IC, OC, 1.0f);
        return;
    }
    if (tiles_fit(IC, OC)) {
        tiles_forward(out, NULL, bias, bias != NULL, inp, weight, N, IC, OC);
        return;
    }
    if (bias == NULL) {
        gemm_forward(out, inp, weight, N, IC, OC, 0.0f);
    } else {
        fill_rows(out, NULL, bias, N, OC);
        gemm_forward(out, inp, weight, N, IC, OC, 1.0f);
    }
}

void matmul_forward_residual(float *out, const float *residual, const float *inp,
                             const float *weight, const float *bias, int N, int IC, int OC) {
    if (N <= FEW_ROWS) {
        fill_rows(out, residual, bias, N, OC);
        portable_forward(out, inp, weight, N, IC, OC, 1.0f);
        return;
    }
    if (tiles_fit(IC, OC)) {
        tiles_forward(out, residual, bias, 1, inp, weight, N, IC, OC);
        return;
    }
    fill_rows(out, residual, bias, N, OC);
    gemm_forward(out, inp, weight, N, IC, OC, 1.0f);
}

static void backward(float *dinp, float dinp_beta, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int IC, int OC) {
    const int tiles = tiles_fit(IC, OC);
    if (dinp != NULL) {
        if (tiles) {
            tiles_dinp(dinp, dinp_beta != 0.0f, dout, weight, N, IC, OC);
        } else {
            gemm_dinp(dinp, dout, weight, N, IC, OC, dinp_beta);
        }
    }
    if (dweight != NULL) {
        if (tiles) {
            tiles_dweight(dweight, dout, inp, N, IC, OC);
        } else {
            gemm_dweight(dweight, dout, inp, N, IC, OC);
        }
    }
    if (dbias != NULL) {
        accumulate_bias_grad(dbias, dout, N, OC);
    }
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int IC, int OC) {
    backward(dinp, 1.0f, dweight, dbias, dout, inp, weight, N, IC, OC);
}

void matmul_backward_set_dinp(float *dinp, float *dweight, float *dbias, const float *dout,
                              const float *inp, const float *weight, int N, int IC, int OC) {
    backward(dinp, 0.0f, dweight, dbias, dout, inp, weight, N, IC, OC);
}
