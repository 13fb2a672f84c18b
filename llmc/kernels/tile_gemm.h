// Register-blocked products of small matrices, for the shapes where a BLAS
// call costs more in packing and call overhead than in arithmetic: the
// per-(window, head) products of attention (T <= a few hundred, head size
// 16-64) and the linear layers of narrow models (ViT/Swin with C = 32-256).
// Row-major throughout; N (the columns of B and C) a multiple of 16.
#ifndef FOLDNORM_TILE_GEMM_H
#define FOLDNORM_TILE_GEMM_H

// C (M, N) = alpha op(A) B, or C += alpha op(A) B when accumulate; op(A) is
// A (M, K) with row stride lda, or when a_transposed A^T with A stored (K, M).
// B is (K, N) with row stride ldb. Single-threaded; C must not overlap A or B.
void tile_gemm(float *C, int ldc, const float *A, int lda, int a_transposed, const float *B,
               int ldb, int M, int N, int K, float alpha, int accumulate);

#endif
