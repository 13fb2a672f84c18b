#include "tile_gemm.h"

#include <stddef.h>
#include <string.h>

// C is computed ROWS rows by NV vectors at a time, the ROWS x NV accumulators
// in registers across the whole K loop: per k, NV vectors of B and ROWS
// broadcasts of A feed ROWS x NV FMAs. The vector is the target's widest
// register, through gcc's vector extensions: 16 floats (zmm) with AVX-512,
// else 8 (ymm). Each element of C is the same sum in the same order (k = 0,
// 1, ... with one FMA each) whatever the width and blocking, so the results
// are bit-identical across targets. Built with -ffp-contract=fast (mk/vit.mk)
// so that the multiply-adds are FMAs.
#ifdef __AVX512F__
typedef float vecf __attribute__((vector_size(64)));
// 32 zmm registers: ROWS x NV accumulators + NV of B + a broadcast
enum { VEC = 16, MAX_VECS = 4, MAX_ROWS = 8 };
#define ROWS_FOR(NV) ((NV) <= 2 ? 8 : 6)
#else
typedef float vecf __attribute__((vector_size(32)));
// 16 ymm registers: 6 rows x 2 vectors = 12 accumulators + 2 of B + a broadcast
// (the 6 x 16 block of AVX2 GEMM kernels); 4 x 3 fills all 16
enum { VEC = 8, MAX_VECS = 2, MAX_ROWS = 6 };
#define ROWS_FOR(NV) 6
#endif

static inline __attribute__((always_inline)) vecf vec_load(const float *p) {
    vecf v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline __attribute__((always_inline)) void vec_store(float *p, vecf v) {
    memcpy(p, &v, sizeof(v));
}

static inline __attribute__((always_inline)) void
gemm_rows(float *restrict C, int ldc, const float *restrict A, int lda, const float *restrict B,
          int ldb, int m, int K, float alpha, int accumulate, const int A_T, const int NV,
          const int ROWS) {
    vecf acc[MAX_ROWS][MAX_VECS];
    for (int r = 0; r < ROWS; r++) {
        for (int v = 0; v < NV; v++) {
            acc[r][v] = (vecf){0};
        }
    }
    for (int k = 0; k < K; k++) {
        vecf b[MAX_VECS];
        for (int v = 0; v < NV; v++) {
            b[v] = vec_load(B + (size_t)k * ldb + v * VEC);
        }
        for (int r = 0; r < ROWS; r++) {
            const float a = A_T ? A[(size_t)k * lda + m + r] : A[(size_t)(m + r) * lda + k];
            for (int v = 0; v < NV; v++) {
                acc[r][v] += a * b[v];
            }
        }
    }
    for (int r = 0; r < ROWS; r++) {
        for (int v = 0; v < NV; v++) {
            float *c = C + (size_t)(m + r) * ldc + v * VEC;
            vec_store(c, accumulate ? vec_load(c) + alpha * acc[r][v] : alpha * acc[r][v]);
        }
    }
}

// All rows for NV vectors of columns: blocks of ROWS_FOR(NV), then single
// rows. On AVX-512, ROWS >= 6 measured 2-3x faster than ROWS <= 4 at every NV
// (AMD EPYC); on AVX2, 6 x 2 ymm is the block that fits 16 registers.
static inline __attribute__((always_inline)) void
gemm_columns(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int K,
             float alpha, int accumulate, const int A_T, const int NV) {
    const int ROWS = ROWS_FOR(NV);
    int m = 0;
    for (; m + ROWS <= M; m += ROWS) {
        gemm_rows(C, ldc, A, lda, B, ldb, m, K, alpha, accumulate, A_T, NV, ROWS);
    }
    for (; m < M; m++) {
        gemm_rows(C, ldc, A, lda, B, ldb, m, K, alpha, accumulate, A_T, NV, 1);
    }
}

static void gemm_columns_any(float *C, int ldc, const float *A, int lda, int a_t, const float *B,
                             int ldb, int M, int K, float alpha, int accumulate, int nv) {
#define CASE(NV)                                                                                   \
    case NV:                                                                                       \
        if (a_t) {                                                                                 \
            gemm_columns(C, ldc, A, lda, B, ldb, M, K, alpha, accumulate, 1, NV);                  \
        } else {                                                                                   \
            gemm_columns(C, ldc, A, lda, B, ldb, M, K, alpha, accumulate, 0, NV);                  \
        }                                                                                          \
        break;
    switch (nv) {
        CASE(1)
        CASE(2)
#ifdef __AVX512F__
        CASE(3)
        CASE(4)
#endif
    default: break;
    }
#undef CASE
}

void tile_gemm(float *C, int ldc, const float *A, int lda, int a_transposed, const float *B,
               int ldb, int M, int N, int K, float alpha, int accumulate) {
    const int vectors = N / VEC;
    for (int v0 = 0; v0 < vectors; v0 += MAX_VECS) {
        int nv = vectors - v0 < MAX_VECS ? vectors - v0 : MAX_VECS;
        gemm_columns_any(C + v0 * VEC, ldc, A, lda, a_transposed, B + v0 * VEC, ldb, M, K, alpha,
                         accumulate, nv);
    }
}
