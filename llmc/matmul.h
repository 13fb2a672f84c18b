// Fully connected layer y = x W^T + b with llm.c's layout: x (N, IC),
// W (OC, IC) row-major, y (N, OC). Backed by cblas_sgemm when built with
// FOLDNORM_BLAS (OpenBLAS), else by the portable OpenMP loops in matmul.c.
#ifndef FOLDNORM_MATMUL_H
#define FOLDNORM_MATMUL_H

// out = inp W^T + bias; bias may be NULL.
void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                    int IC, int OC);

// out = residual + inp W^T + bias (a residual add fused into the layer);
// bias may be NULL; out may be residual (in place).
void matmul_forward_residual(float *out, const float *residual, const float *inp,
                             const float *weight, const float *bias, int N, int IC, int OC);

// Accumulates dinp += dout W, dweight += dout^T inp, dbias += sum_n dout[n];
// any of dinp, dweight, dbias may be NULL to skip it.
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int IC, int OC);

// The same, but writes dinp = dout W (no zeroing needed beforehand);
// dweight and dbias still accumulate.
void matmul_backward_set_dinp(float *dinp, float *dweight, float *dbias, const float *dout,
                              const float *inp, const float *weight, int N, int IC, int OC);

// "openblas" or "portable": which implementation this build uses.
const char *matmul_backend_name(void);

#endif
