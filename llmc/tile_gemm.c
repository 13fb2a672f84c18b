#include "tile_gemm.h"

#include <stddef.h>
#include <string.h>

// C is computed ROWS rows by NV 16-float vectors at a time, the ROWS x NV
// accumulators in registers across the whole K loop: per k, NV vectors of B
// and ROWS broadcasts of A feed ROWS x NV FMAs. gcc vector extensions give
// AVX-512 where the target has it, else two AVX2 halves per vector. Built
// with -ffp-contract=fast (mk/vit.mk) so that the multiply-adds are FMAs.
typedef float vec16 __attribute__((vector_size(64)));
enum { VEC = 16, MAX_VECS = 4, MAX_ROWS = 8 };

static inline vec16 vec_load(const float *p) {
    vec16 v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline void vec_store(float *p, vec16 v) {
    memcpy(p, &v, sizeof(v));
}

static inline __attribute__((always_inline)) void
gemm_rows(float *restrict C, int ldc, const float *restrict A, int lda, const float *restrict B,
          int ldb, int m, int K, float alpha, int accumulate, const int A_T, const int NV,
          const int ROWS) {
    vec16 acc[MAX_ROWS][MAX_VECS];
    for (int r = 0; r < ROWS; r++) {
        for (int v = 0; v < NV; v++) {
            acc[r][v] = (vec16){0};
        }
    }
    for (int k = 0; k < K; k++) {
        vec16 b[MAX_VECS];
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

// All rows for NV vectors of columns: blocks of ROWS, then single rows.
// ROWS >= 6 measured 2-3x faster than ROWS <= 4 at every NV on the
// development machine (AMD EPYC, AVX-512), so the blocks are 6-8 rows.
static inline __attribute__((always_inline)) void
gemm_columns(float *C, int ldc, const float *A, int lda, const float *B, int ldb, int M, int K,
             float alpha, int accumulate, const int A_T, const int NV) {
#ifdef __AVX512F__
    const int ROWS = NV <= 2 ? 8 : 6; // ROWS x NV accumulators + NV of B: <= 28 of 32 registers
#else
    const int ROWS = NV <= 2 ? 4 : 2; // 16 ymm registers: half the accumulators
#endif
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
        CASE(3)
        CASE(4)
    default: break;
    }
#undef CASE
}

void tile_gemm(float *C, int ldc, const float *A, int lda, int a_transposed, const float *B,
               int ldb, int M, int N, int K, float alpha, int accumulate) {
    const int N16 = N / VEC;
    for (int v0 = 0; v0 < N16; v0 += MAX_VECS) {
        int nv = N16 - v0 < MAX_VECS ? N16 - v0 : MAX_VECS;
        gemm_columns_any(C + v0 * VEC, ldc, A, lda, a_transposed, B + v0 * VEC, ldb, M, K, alpha,
                         accumulate, nv);
    }
}
