// The fp32 matmul kernels (matmul.c) that matmul_engine.c's router picks
// from; only the router calls them. Layout as matmul.h: x (N, IC), W (OC, IC)
// row-major, y (N, OC). beta: 0 overwrites the output, 1 accumulates into it.
#ifndef FOLDNORM_MATMUL_KERNELS_H
#define FOLDNORM_MATMUL_KERNELS_H

// out = residual + bias, either may be NULL (then 0): the rows a product then adds to.
void matmul_fill_rows(float *out, const float *residual, const float *bias, int N, int OC);
// dbias[o] += sum_n dout[n][o], in an order fixed by N alone.
void matmul_bias_grad(float *dbias, const float *dout, int N, int OC);

// Blocked OpenMP loops: any shape, callable inside a parallel region.
void matmul_portable_forward(float *out, const float *inp, const float *weight, int N, int IC,
                             int OC, float beta);
void matmul_portable_dinp(float *dinp, const float *dout, const float *weight, int N, int IC,
                          int OC, float beta);
void matmul_portable_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                             int OC);

// cblas_sgemm; 1 when this build has OpenBLAS, else 0 (then the three die).
int matmul_blas_built(void);
void matmul_blas_forward(float *out, const float *inp, const float *weight, int N, int IC, int OC,
                         float beta);
void matmul_blas_dinp(float *dinp, const float *dout, const float *weight, int N, int IC, int OC,
                      float beta);
void matmul_blas_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                         int OC);

// tile_gemm's register-blocked kernels; IC and OC multiples of 16.
// forward: out = [residual + bias +] inp W^T, the fill (fill != 0) done per row chunk.
void matmul_tiles_forward(float *out, const float *residual, const float *bias, int fill,
                          const float *inp, const float *weight, int N, int IC, int OC);
void matmul_tiles_dinp(float *dinp, int accumulate, const float *dout, const float *weight, int N,
                       int IC, int OC);
void matmul_tiles_dweight(float *dweight, const float *dout, const float *inp, int N, int IC,
                          int OC);

#endif
