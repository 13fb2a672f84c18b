// oneDNN's matmul primitive (matmul_dnnl.c), the engine behind matmul.h's
// bf16 and dnnl-fp32 precisions where oneDNN has them (matmul_engine.c).
// Every product is dst (M, N) [+]= src (M, K) wei (K, N) in row-major memory,
// fp32 output; "+=" is oneDNN's sum post-op. Only matmul_dnnl.c includes
// oneDNN, so a build without it (FOLDNORM_DNNL unset) swaps that one object.
#ifndef FOLDNORM_MATMUL_DNNL_H
#define FOLDNORM_MATMUL_DNNL_H

#include <stddef.h>

typedef struct DnnlMatmul DnnlMatmul;

// oneDNN's effective CPU ISA as it names it ("avx2", "avx512_core_bf16", ...;
// ONEDNN_MAX_CPU_ISA caps it), or "none" in a build without oneDNN.
const char *dnnl_isa_name(void);

// A context for bf16 (bf16 != 0) or fp32 inputs, or NULL when this build or
// this CPU's oneDNN has no such matmul: then why (why_size bytes) says which
// (for bf16 on a CPU without AVX-512, oneDNN 2.x reports "unimplemented").
DnnlMatmul *dnnl_matmul_create(int bf16, char *why, size_t why_size);
void dnnl_matmul_free(DnnlMatmul *mm); // NULL is fine

// out (N, OC) [+]= inp (N, IC) W^T, W stored (OC, IC); inputs of the context's type.
void dnnl_matmul_forward(DnnlMatmul *mm, float *out, int accumulate, const void *inp,
                         const void *weight, int N, int IC, int OC);
// dinp (N, IC) [+]= dout (N, OC) W.
void dnnl_matmul_dinp(DnnlMatmul *mm, float *dinp, int accumulate, const void *dout,
                      const void *weight, int N, int IC, int OC);
// dweight (OC, IC) += dout^T inp.
void dnnl_matmul_dweight(DnnlMatmul *mm, float *dweight, const void *dout, const void *inp, int N,
                         int IC, int OC);

#endif
