// Fully connected layer y = x W^T + b with llm.c's layout: x (N, IC),
// W (OC, IC) row-major, y (N, OC). Backed by cblas_sgemm when built with
// FOLDNORM_BLAS (OpenBLAS), else by the portable OpenMP loops in matmul.c.
#ifndef FOLDNORM_MATMUL_H
#define FOLDNORM_MATMUL_H

#include <stddef.h>
#include <stdint.h>

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

// Matmul precision of a model's linear layers (train_gpt2 -mp):
//   fp32       the functions above (OpenBLAS or the portable loops), the default
//   bf16       inputs (activations and weights) rounded to bf16, products
//              accumulated and written in fp32, through oneDNN's matmul
//   dnnl-fp32  fp32 through oneDNN's matmul (for comparing it with OpenBLAS)
// The oneDNN ones exist in FOLDNORM_DNNL builds (llmc/matmul_dnnl.c).
typedef enum { MATMUL_FP32, MATMUL_BF16, MATMUL_DNNL_FP32 } MatmulPrecision;
const char *matmul_precision_name(MatmulPrecision p);
// 0 and *p set for "fp32", "bf16" or "dnnl-fp32"; -1 for anything else.
int matmul_precision_parse(const char *name, MatmulPrecision *p);
// 1 when this build has oneDNN (bf16 and dnnl-fp32 work), else 0.
int matmul_dnnl_available(void);

// bf16 = the upper 16 bits of an fp32, rounded to nearest even (NaN stays NaN).
void matmul_to_bf16(uint16_t *dst, const float *src, size_t n);

// A oneDNN context: engine, stream, one cached primitive per product and
// shape, and the bf16 copies of a call's activations. Not shared between
// threads. matmul_dnnl_create dies with a clear message in a build without
// oneDNN, or for MATMUL_FP32.
typedef struct MatmulDnnl MatmulDnnl;
MatmulDnnl *matmul_dnnl_create(MatmulPrecision precision);
void matmul_dnnl_free(MatmulDnnl *mm); // NULL is fine
MatmulPrecision matmul_dnnl_precision(const MatmulDnnl *mm);

// out = [residual +] inp W^T [+ bias] with W (OC, IC) given in bf16; the
// input is rounded to bf16 here; residual and bias may be NULL, out may be
// residual. Needs a bf16 context.
void matmul_bf16_forward(MatmulDnnl *mm, float *out, const float *residual, const float *inp,
                         const uint16_t *weight, const float *bias, int N, int IC, int OC);
// dinp (+)= dout W (accumulated when accumulate_dinp, else overwritten),
// dweight += dout^T inp, with dout and inp rounded to bf16; dbias += sum_n
// dout[n] in fp32. Any of dinp, dweight, dbias may be NULL.
void matmul_bf16_backward(MatmulDnnl *mm, float *dinp, int accumulate_dinp, float *dweight,
                          float *dbias, const float *dout, const float *inp,
                          const uint16_t *weight, int N, int IC, int OC);
// The same two in fp32 through oneDNN (a dnnl-fp32 context).
void matmul_dnnl_fp32_forward(MatmulDnnl *mm, float *out, const float *residual,
                              const float *inp, const float *weight, const float *bias, int N,
                              int IC, int OC);
void matmul_dnnl_fp32_backward(MatmulDnnl *mm, float *dinp, int accumulate_dinp, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, int N, int IC, int OC);

#endif
