// Fully connected layer y = x W^T + b with llm.c's layout: x (N, IC),
// W (OC, IC) row-major, y (N, OC). One router (matmul_engine.c) picks each
// product's kernel by shape and ISA: matmul.c's fp32 kernels (OpenBLAS when
// built with FOLDNORM_BLAS, the tile kernels, the portable OpenMP loops) or
// oneDNN's matmul (matmul_dnnl.c); matmul_print_routes lists the choices.
#ifndef FOLDNORM_MATMUL_H
#define FOLDNORM_MATMUL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

// Which implementation runs the products: MATMUL_ROUTE_AUTO (the default:
// the tile kernels for narrow layers where they win, OpenBLAS outside
// parallel regions, else the portable loops) or one forced for every call
// (a benchmark's switch: dev/bench/bench_narrow_gemm.c; not thread-safe, set
// it before the products run). TILES applies where both sides are multiples
// of 16 (else the portable loops run); BLAS falls back to the portable loops
// in a build without OpenBLAS.
typedef enum {
    MATMUL_ROUTE_AUTO,
    MATMUL_ROUTE_BLAS,
    MATMUL_ROUTE_TILES,
    MATMUL_ROUTE_PORTABLE
} MatmulRoute;
void matmul_force_route(MatmulRoute route);
// The route table for this build and CPU (bin/cpu_info): the rule, and the
// kernels of forward/dinp/dweight at a few model shapes, in and outside a
// parallel region, and what -mp bf16 and dnnl-fp32 run.
void matmul_print_routes(FILE *f);

// "openblas" or "portable": which implementation this build uses.
const char *matmul_backend_name(void);
// OpenBLAS's kernel family for this CPU ("Haswell", "SkylakeX", ...; the
// environment's OPENBLAS_CORETYPE forces one), or "none" without OpenBLAS.
const char *matmul_blas_core(void);
// NULL, or a note when OpenBLAS runs kernels older than this CPU: OpenBLAS
// 0.3.21 reads some virtualised CPUs ("Intel(R) Xeon(R) Processor", with
// AVX-512) as Prescott, whose SSE3 sgemm is 3-4x slower there than its
// SkylakeX one; the note names the OPENBLAS_CORETYPE to set (it is read when
// the library loads, before main, so a program cannot set it for itself).
const char *matmul_blas_core_note(void);
// The OPENBLAS_CORETYPE that note names ("SkylakeX", "Haswell"), or NULL.
const char *matmul_blas_better_core(void);
// Prints "note: NOTE" on stdout when there is one (the programs' run lines).
void matmul_blas_print_core_note(void);

// Matmul precision of a model's linear layers (train_gpt2 -mp):
//   fp32       the functions above (OpenBLAS or the portable loops), the default
//   bf16       inputs (activations and weights) rounded to bf16, products
//              accumulated and written in fp32 (a MatmulEngine below)
//   dnnl-fp32  fp32 through oneDNN's matmul (for comparing it with OpenBLAS)
typedef enum { MATMUL_FP32, MATMUL_BF16, MATMUL_DNNL_FP32 } MatmulPrecision;
const char *matmul_precision_name(MatmulPrecision p);
// 0 and *p set for "fp32", "bf16" or "dnnl-fp32"; -1 for anything else.
int matmul_precision_parse(const char *name, MatmulPrecision *p);
// 1 when this build has oneDNN (dnnl-fp32 works), else 0. bf16 works in every build.
int matmul_dnnl_available(void);

// bf16 = the upper 16 bits of an fp32, rounded to nearest even (NaN stays NaN).
void matmul_to_bf16(uint16_t *dst, const float *src, size_t n);

// The engine of a bf16 or dnnl-fp32 precision (matmul_engine.c): oneDNN's
// primitives (from the router's per-thread pool), or for bf16 where oneDNN has no bf16
// matmul (a CPU without AVX-512, or a build without oneDNN) the
// same arithmetic through the fp32 routes above: the inputs rounded to bf16
// and kept in fp32 (a product of two bf16 values is exact in fp32), fp32
// accumulation, so the two differ only in summation order. The environment
// variable FOLDNORM_BF16_MATMUL picks: auto (the default: oneDNN where it
// has the matmul, else the fallback), onednn (refused where it has none,
// naming what the CPU lacks) or sgemm (the fallback everywhere).
// matmul_engine_create dies with a clear message for dnnl-fp32 in a build
// without oneDNN, or for MATMUL_FP32. Not shared between threads.
typedef struct MatmulEngine MatmulEngine;
MatmulEngine *matmul_engine_create(MatmulPrecision precision);
void matmul_engine_free(MatmulEngine *mm); // NULL is fine
MatmulPrecision matmul_engine_precision(const MatmulEngine *mm);
// "onednn" or "sgemm": what runs the products
const char *matmul_engine_kind(const MatmulEngine *mm);
// One line for a run line: the engine and why it was chosen, with the ISA
// oneDNN reports, e.g. "sgemm (openblas) on bf16-rounded inputs: oneDNN 2.6
// has no bf16 matmul on this CPU (its ISA: avx2; it needs AVX-512, ...)".
const char *matmul_engine_describe(const MatmulEngine *mm);

// out = [residual +] inp W^T [+ bias] with W (OC, IC) given in bf16; the
// input is rounded to bf16 here; residual and bias may be NULL, out may be
// residual. Needs a bf16 engine.
void matmul_bf16_forward(MatmulEngine *mm, float *out, const float *residual, const float *inp,
                         const uint16_t *weight, const float *bias, int N, int IC, int OC);
// dinp (+)= dout W (accumulated when accumulate_dinp, else overwritten),
// dweight += dout^T inp, with dout and inp rounded to bf16; dbias += sum_n
// dout[n] in fp32. Any of dinp, dweight, dbias may be NULL.
void matmul_bf16_backward(MatmulEngine *mm, float *dinp, int accumulate_dinp, float *dweight,
                          float *dbias, const float *dout, const float *inp,
                          const uint16_t *weight, int N, int IC, int OC);
// The same two in fp32 through oneDNN (a dnnl-fp32 engine).
void matmul_dnnl_fp32_forward(MatmulEngine *mm, float *out, const float *residual,
                              const float *inp, const float *weight, const float *bias, int N,
                              int IC, int OC);
void matmul_dnnl_fp32_backward(MatmulEngine *mm, float *dinp, int accumulate_dinp, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, int N, int IC, int OC);

#endif
