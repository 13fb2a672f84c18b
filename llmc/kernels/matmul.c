// The fp32 matmul kernels (matmul_kernels.h): the portable loops, OpenBLAS
// and the tile kernels, and which OpenBLAS this build runs (matmul.h). Which
// kernel runs a product is matmul_engine.c's choice, not this file's.
#include "matmul.h"
#include "matmul_kernels.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tile_gemm.h"
#include "core/utils.h"

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

const char *matmul_blas_core(void) {
#ifdef FOLDNORM_BLAS
    return openblas_get_corename(); // OPENBLAS_CORETYPE overrides its choice
#else
    return "none";
#endif
}

const char *matmul_blas_better_core(void) {
#if defined(FOLDNORM_BLAS) && defined(__x86_64__)
    static const char *const OLD_CORES[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                            "Atom", "Sandybridge", "Barcelona", "Opteron",
                                            "Opteron_SSE3", "Bobcat", "Nano", "Katmai",
                                            "Coppermine", "Northwood", "Banias", "Unknown"};
    if (getenv("OPENBLAS_CORETYPE") != NULL) {
        return NULL; // the user chose
    }
    const char *core = matmul_blas_core();
    int old = 0;
    for (size_t i = 0; i < sizeof(OLD_CORES) / sizeof(OLD_CORES[0]); i++) {
        old |= strcasecmp(core, OLD_CORES[i]) == 0;
    }
    if (!old) {
        return NULL;
    }
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        return "SkylakeX";
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        return "Haswell";
    }
#endif
    return NULL;
}

const char *matmul_blas_core_note(void) {
    const char *better = matmul_blas_better_core();
    if (better == NULL) {
        return NULL;
    }
    static char note[320];
    snprintf(note, sizeof(note),
             "OpenBLAS does not recognise this CPU and runs its %s kernels, older than it: set "
             "OPENBLAS_CORETYPE=%s for its %s ones (3x faster demo steps on an AVX-512 Xeon "
             "read as Prescott: docs/performance.md)",
             matmul_blas_core(), better, strcmp(better, "SkylakeX") == 0 ? "AVX-512" : "AVX2");
    return note;
}

void matmul_blas_print_core_note(void) {
    const char *note = matmul_blas_core_note();
    if (note != NULL) {
        printf("note: %s\n", note);
    }
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

void matmul_fill_rows(float *out, const float *residual, const float *bias, int N, int OC) {
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

void matmul_bias_grad(float *dbias, const float *dout, int N, int OC) {
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
int matmul_blas_built(void) { return 1; }

void matmul_blas_forward(float *out, const float *inp, const float *weight, int N, int IC, int OC,
                         float beta) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC,
                beta, out, OC);
}

void matmul_blas_dinp(float *dinp, const float *dout, const float *weight, int N, int IC, int OC,
                      float beta) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight, IC,
                beta, dinp, IC);
}

void matmul_blas_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                         int OC) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f,
                dweight, IC);
}
#else
int matmul_blas_built(void) { return 0; }

static _Noreturn void no_blas(void) { fatal("matmul: this build has no OpenBLAS"); }

void matmul_blas_forward(float *out, const float *inp, const float *weight, int N, int IC, int OC,
                         float beta) {
    (void)out, (void)inp, (void)weight, (void)N, (void)IC, (void)OC, (void)beta;
    no_blas();
}

void matmul_blas_dinp(float *dinp, const float *dout, const float *weight, int N, int IC, int OC,
                      float beta) {
    (void)dinp, (void)dout, (void)weight, (void)N, (void)IC, (void)OC, (void)beta;
    no_blas();
}

void matmul_blas_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                         int OC) {
    (void)dweight, (void)dout, (void)inp, (void)N, (void)IC, (void)OC;
    no_blas();
}
#endif

// Portable loops: blocked so that a tile of weight rows stays in cache while
// the rows of the input stream past it; inner loops vectorize. Used without
// OpenBLAS, and with it inside a parallel region (classifier.c's per-thread
// model copies): OpenBLAS's OpenMP build makes concurrent callers spin-wait
// for each other, while these loops just run on the calling thread.
enum { ROW_TILE = 4, OUT_TILE = 64 };

void matmul_portable_forward(float *out, const float *inp, const float *weight, int N, int IC,
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

void matmul_portable_dinp(float *dinp, const float *dout, const float *weight, int N, int IC,
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

void matmul_portable_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
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

// The tile kernels' blocking: rows per chunk (forward, dinp), the batch
// rows per step of a weight gradient, and the width of a panel of W^T.
enum { TILE_ROWS = 96, TILE_K_CHUNK = 256, TILE_PANEL = 64 };

// out = [residual + bias +] inp W^T, a chunk of TILE_ROWS rows at a time
// (filled, then accumulated into while it is in cache). W^T is laid out in
// panels of TILE_PANEL columns, each (IC, TILE_PANEL) contiguous: read with a
// short row stride, a panel stays in L1 (a stride of OC floats put its rows
// on a few cache sets).
void matmul_tiles_forward(float *out, const float *residual, const float *bias, int fill,
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

void matmul_tiles_dinp(float *dinp, int accumulate, const float *dout, const float *weight, int N,
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
void matmul_tiles_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
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
