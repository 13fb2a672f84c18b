#include "matmul.h"

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

static MatmulRoute forced_route = MATMUL_ROUTE_AUTO;

void matmul_force_route(MatmulRoute route) { forced_route = route; }

#ifdef FOLDNORM_BLAS
// OpenBLAS where it is built in, unless called inside a parallel region.
static int use_blas(void) {
    if (forced_route != MATMUL_ROUTE_AUTO) {
        return forced_route == MATMUL_ROUTE_BLAS;
    }
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
    const int shape_fits = IC % 16 == 0 && OC % 16 == 0;
    if (forced_route != MATMUL_ROUTE_AUTO) {
        return forced_route == MATMUL_ROUTE_TILES && shape_fits;
    }
#ifdef __AVX512F__
    return shape_fits && IC <= MATMUL_TILE_MAX && OC <= MATMUL_TILE_MAX;
#else
    (void)shape_fits;
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

// Without AVX-512 the narrow layers (and, inside a parallel region, where
// OpenBLAS's OpenMP build cannot be called, every layer) go through oneDNN's
// fp32 matmul: its AVX2 kernels measured 1.2-3x OpenBLAS and the tile
// kernels, and 3-5x the portable loops, at the ViT, Swin and demo GPT-2
// shapes on one thread and two (dev/bench/bench_narrow_gemm.c,
// docs/performance.md). Each thread has its own engine (an engine is not
// shared between threads: the per-thread model replicas call it at once),
// made on first use and freed at exit. With AVX-512 the tile kernels stay
// (measured faster than OpenBLAS there); without oneDNN nothing changes.
#ifndef __AVX512F__
#ifndef MATMUL_DNNL_MAX
#define MATMUL_DNNL_MAX 512
#endif
enum { MAX_ROUTE_ENGINES = 256 };
static MatmulEngine *route_engines[MAX_ROUTE_ENGINES];
static int route_engine_count;

static void free_route_engines(void) {
    for (int i = 0; i < route_engine_count; i++) {
        matmul_engine_free(route_engines[i]);
    }
    route_engine_count = 0;
}

// FOLDNORM_FP32_ONEDNN=0 keeps every fp32 product off oneDNN: the routes of
// a build without it, so the two builds' fp32 results can be compared bit
// for bit (test/suites/cpu_bf16.sh), or a slow oneDNN ruled out
static int fp32_onednn_allowed(void) {
    const char *env = getenv("FOLDNORM_FP32_ONEDNN");
    return env == NULL || strcmp(env, "0") != 0;
}

static MatmulEngine *thread_engine(void) {
    static _Thread_local MatmulEngine *engine;
    static _Thread_local int tried;
    if (!tried) {
        tried = 1;
#pragma omp critical(matmul_route_engines)
        if (matmul_dnnl_available() && fp32_onednn_allowed() &&
            route_engine_count < MAX_ROUTE_ENGINES) {
            engine = matmul_engine_create(MATMUL_DNNL_FP32);
            if (route_engine_count == 0) {
                atexit(free_route_engines);
            }
            route_engines[route_engine_count++] = engine;
        }
    }
    return engine;
}
#endif

// The engine for a layer's products, or NULL; *dweight_too says whether its
// weight gradient goes there as well. Narrow layers (and every layer inside
// a parallel region) go whole. Wide layers, one side narrow and the other not
// (the demo GPT-2's LM head, 128 in, 50304 out), outside parallel regions:
// oneDNN's fp32 matmul wins the forward and dinp (1.2-1.8x OpenBLAS at
// 512 x 128 x 50304 on AVX2, 1 and 2 threads) and OpenBLAS the weight
// gradient (1.1-1.25x oneDNN): bin/bench_narrow_gemm -s demo,
// docs/performance.md. So only those two go. Without AVX-512 only, as above.
static MatmulEngine *dnnl_route(int IC, int OC, int *dweight_too) {
    *dweight_too = 0;
#ifndef __AVX512F__
    if (forced_route != MATMUL_ROUTE_AUTO) {
        return NULL;
    }
#ifdef _OPENMP
    const int parallel = omp_in_parallel();
#else
    const int parallel = 0;
#endif
    const int ic_narrow = IC <= MATMUL_DNNL_MAX, oc_narrow = OC <= MATMUL_DNNL_MAX;
    if (parallel || (ic_narrow && oc_narrow)) {
        *dweight_too = 1;
        return thread_engine();
    }
    if (ic_narrow != oc_narrow) {
        return thread_engine();
    }
#else
    (void)IC;
    (void)OC;
#endif
    return NULL;
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
    int dweight_too;
    MatmulEngine *dnnl = dnnl_route(IC, OC, &dweight_too);
    if (dnnl != NULL) {
        matmul_dnnl_fp32_forward(dnnl, out, NULL, inp, weight, bias, N, IC, OC);
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
    int dweight_too;
    MatmulEngine *dnnl = dnnl_route(IC, OC, &dweight_too);
    if (dnnl != NULL) {
        matmul_dnnl_fp32_forward(dnnl, out, residual, inp, weight, bias, N, IC, OC);
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
    int dweight_too;
    MatmulEngine *dnnl = dnnl_route(IC, OC, &dweight_too);
    float *dnnl_dweight = dweight_too ? dweight : NULL;
    if (dnnl != NULL && (dinp != NULL || dnnl_dweight != NULL)) {
        matmul_dnnl_fp32_backward(dnnl, dinp, dinp_beta != 0.0f, dnnl_dweight, NULL, dout, inp,
                                  weight, N, IC, OC);
        dinp = NULL; // done; a wide layer's dweight below (OpenBLAS), the bias gradient as on every route
        dweight = dweight_too ? NULL : dweight;
    }
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
