// Matmuls through cuBLASLt (plans: matmul_plan.cuh; epilogues: bias, GELU
// with its pre-activation kept, GELU's gradient with the bias gradient, the
// bias gradient of a dW GEMM) and strided-batched cuBLAS (attention).
// Row-major tensors as in the CPU code: x (N, IC), W (OC, IC),
// y = x W^T + b (N, OC); in cuBLAS's column-major view y^T = W x^T.
#ifndef FOLDNORM_MATMUL_CUBLASLT_CUH
#define FOLDNORM_MATMUL_CUBLASLT_CUH

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"
#include "matmul_algo_choice.cuh"
#include "matmul_plan.cuh"

static inline void matmul_context_create(MatmulContext *ctx) {
    CUBLAS_CHECK(cublasLtCreate(&ctx->lt));
    CUBLAS_CHECK(cublasCreate(&ctx->blas));
    ctx->workspace_bytes = 32u << 20; // cuBLASLt's recommendation for Hopper
    CUDA_CHECK(cudaMalloc(&ctx->workspace, ctx->workspace_bytes));
    ctx->stream = 0;
    CUBLAS_CHECK(cublasSetStream(ctx->blas, ctx->stream));
    CUBLAS_CHECK(cublasSetWorkspace(ctx->blas, ctx->workspace, ctx->workspace_bytes));
    // fp32 builds: true fp32 products (no TF32), so the 1e-4 checks hold
    CUBLAS_CHECK(cublasSetMathMode(ctx->blas, CUBLAS_DEFAULT_MATH));
    ctx->fuse_epilogues = 1;
    ctx->choice = NULL;
    ctx->plans = (MatmulPlanCache *)calloc(1, sizeof(MatmulPlanCache));
    if (ctx->plans == NULL) {
        fprintf(stderr, "error: out of memory for the matmul plan cache\n");
        exit(EXIT_FAILURE);
    }
}

static inline void matmul_plan_destroy(MatmulPlan *p) {
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->la));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->lb));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->ld));
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(p->op));
}

static inline void matmul_context_destroy(MatmulContext *ctx) {
    for (int i = 0; i < ctx->plans->count; i++) matmul_plan_destroy(&ctx->plans->plans[i]);
    free(ctx->plans);
    ctx->plans = NULL;
    matmul_algo_choice_free(ctx);
    CUBLAS_CHECK(cublasLtDestroy(ctx->lt));
    CUBLAS_CHECK(cublasDestroy(ctx->blas));
    CUDA_CHECK(cudaFree(ctx->workspace));
}

static inline cublasLtEpilogue_t matmul_epilogue_lt(MatmulEpilogue e) {
    switch (e) {
    case MATMUL_EPILOGUE_BIAS: return CUBLASLT_EPILOGUE_BIAS;
    case MATMUL_EPILOGUE_GELU_AUX_BIAS: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case MATMUL_EPILOGUE_DGELU_BGRAD: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case MATMUL_EPILOGUE_BGRADB: return CUBLASLT_EPILOGUE_BGRADB;
    case MATMUL_EPILOGUE_NONE: break;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

// the fused epilogues, which fall back to separate kernels where cuBLASLt has no algorithm
static inline int matmul_epilogue_fused(MatmulEpilogue e) {
    return e == MATMUL_EPILOGUE_GELU_AUX_BIAS || e == MATMUL_EPILOGUE_DGELU_BGRAD ||
           e == MATMUL_EPILOGUE_BGRADB;
}

// Builds the descriptors of p's key and chooses its algorithm: the
// heuristic's first, or with -ga 1 the timed or recorded one (call: this
// first call's pointers, whose inputs the timing reads). Where cuBLASLt has
// no algorithm a fused epilogue's plan is marked unsupported (its calls fall
// back to separate kernels); a plain one stops the program.
static inline void matmul_plan_build(const MatmulContext *ctx, MatmulPlan *p,
                                     const MatmulCall *call) {
    const MatmulPlanKey *key = &p->key;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = key->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = key->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (key->epilogue != MATMUL_EPILOGUE_NONE) {
        cublasLtEpilogue_t epilogue = matmul_epilogue_lt(key->epilogue);
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                    &epilogue, sizeof(epilogue)));
    }
    if (key->epilogue == MATMUL_EPILOGUE_DGELU_BGRAD || key->epilogue == MATMUL_EPILOGUE_BGRADB) {
        cudaDataType_t bias_type = CUDA_R_32F; // the gradients are fp32 in both builds
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                    &bias_type, sizeof(bias_type)));
    }
    if (key->epilogue == MATMUL_EPILOGUE_GELU_AUX_BIAS ||
        key->epilogue == MATMUL_EPILOGUE_DGELU_BGRAD) {
        int64_t aux_ld = key->m; // aux is laid out as D
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                    &aux_ld, sizeof(aux_ld)));
    }
    const int m = key->m, n = key->n, k = key->k;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la, FLOATX_CUDA_TYPE, key->trans_a ? k : m,
                                            key->trans_a ? m : k, key->trans_a ? k : m));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb, FLOATX_CUDA_TYPE, key->trans_b ? n : k,
                                            key->trans_b ? k : n, key->trans_b ? n : k));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->ld, key->d_type, m, n, m));
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->workspace_bytes,
        sizeof(ctx->workspace_bytes)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key->align_a, sizeof(key->align_a)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key->align_b, sizeof(key->align_b)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key->align_d, sizeof(key->align_d)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key->align_d, sizeof(key->align_d)));
    cublasLtMatmulHeuristicResult_t heuristic[MATMUL_ALGO_CANDIDATES];
    const int requested = ctx->choice != NULL ? MATMUL_ALGO_CANDIDATES : 1;
    int found = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        ctx->lt, p->op, p->la, p->lb, p->ld, p->ld, pref, requested, heuristic, &found);
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
        if (matmul_epilogue_fused(key->epilogue)) {
            printf("note: cuBLASLt has no algorithm for the %s epilogue at m=%d n=%d k=%d (%s): "
                   "separate kernels there instead\n", matmul_epilogue_name(key->epilogue), m, n,
                   k, cublasGetStatusString(status));
            p->supported = 0;
            return;
        }
        fprintf(stderr,
                "error: cuBLASLt has no algorithm for m=%d n=%d k=%d transA=%d transB=%d "
                "(epilogue %s, output %s, alignments %u %u %u): %s\n",
                m, n, k, key->trans_a, key->trans_b, matmul_epilogue_name(key->epilogue),
                key->d_type == CUDA_R_32F ? "fp32" : "bf16", key->align_a, key->align_b,
                key->align_d, cublasGetStatusString(status));
        exit(EXIT_FAILURE);
    }
    p->supported = 1;
    if (ctx->choice != NULL) {
        matmul_algo_choose(ctx, p, heuristic, found, call);
    } else {
        p->algo = heuristic[0].algo;
        p->candidate = 0;
    }
}

// The cached plan of this key, built on first use (call: that use's pointers).
static inline const MatmulPlan *matmul_plan_get(const MatmulContext *ctx, const MatmulPlanKey *key,
                                                const MatmulCall *call) {
    MatmulPlanCache *cache = ctx->plans;
    for (int i = 0; i < cache->count; i++) {
        if (matmul_plan_key_equal(&cache->plans[i].key, key)) return &cache->plans[i];
    }
    MatmulPlan *slot;
    if (cache->count < MATMUL_PLAN_CAPACITY) {
        slot = &cache->plans[cache->count++];
    } else {
        slot = &cache->plans[cache->next_evicted];
        cache->next_evicted = (cache->next_evicted + 1) % MATMUL_PLAN_CAPACITY;
        matmul_plan_destroy(slot);
    }
    memset(slot, 0, sizeof(*slot));
    slot->key = *key;
    matmul_plan_build(ctx, slot, call);
    return slot;
}

// cuBLASLt's rules for the GELU aux matrix (its leading dimension a multiple
// of 8, its pointer 16-byte aligned) and the BGRAD output (16-byte aligned),
// checked before the call: a layout that breaks them stops with the reason.
static inline void matmul_check_epilogue_operands(MatmulEpilogue e, int m, int n, const void *bias,
                                                  const void *aux) {
    const int gelu = e == MATMUL_EPILOGUE_GELU_AUX_BIAS || e == MATMUL_EPILOGUE_DGELU_BGRAD;
    if (gelu && (aux == NULL || m % 8 != 0 || pointer_alignment(aux) < 16)) {
        fprintf(stderr,
                "error: the %s epilogue at m=%d n=%d: cuBLASLt needs the GELU aux matrix's "
                "leading dimension (m = the MLP width) a multiple of 8 and its pointer 16-byte "
                "aligned (aux %p, %u-byte aligned); run with -fe 0 (separate GELU kernels)\n",
                matmul_epilogue_name(e), m, n, aux, pointer_alignment(aux));
        exit(EXIT_FAILURE);
    }
    const int bgrad = e == MATMUL_EPILOGUE_DGELU_BGRAD || e == MATMUL_EPILOGUE_BGRADB;
    if (bgrad && (bias == NULL || pointer_alignment(bias) < 16)) {
        fprintf(stderr,
                "error: the %s epilogue at m=%d n=%d: the bias gradient's pointer %p is %u-byte "
                "aligned, cuBLASLt wants 16; run with -fe 0 (column-sum kernels)\n",
                matmul_epilogue_name(e), m, n, bias, pointer_alignment(bias));
        exit(EXIT_FAILURE);
    }
}

// Column-major D (m, n) = alpha op(A) op(B) + beta D, then the epilogue (see
// MatmulEpilogue; bias: BIAS and GELU_AUX_BIAS's floatX input, the BGRAD
// epilogues' fp32 output, overwritten; aux: GELU_AUX_BIAS's floatX output,
// DGELU_BGRAD's input). A is (m, k) or, transposed, stored (k, m); B is
// (k, n) or stored (n, k). A and B are floatX; D is floatX or float
// (d_type; the BIAS and GELU epilogues need floatX). Returns 0, having done
// nothing, where a fused epilogue has no cuBLASLt algorithm.
static inline int matmul_lt_epilogue(const MatmulContext *ctx, MatmulEpilogue epilogue, void *d,
                                     cudaDataType_t d_type, const floatX *a, const floatX *b,
                                     void *bias, void *aux, int m, int n, int k, bool trans_a,
                                     bool trans_b, float alpha, float beta) {
    const int bias_in =
        epilogue == MATMUL_EPILOGUE_BIAS || epilogue == MATMUL_EPILOGUE_GELU_AUX_BIAS;
    if (bias_in && d_type != FLOATX_CUDA_TYPE) {
        fprintf(stderr, "error: matmul_lt: the %s epilogue needs a floatX output\n",
                matmul_epilogue_name(epilogue));
        exit(EXIT_FAILURE);
    }
    matmul_check_epilogue_operands(epilogue, m, n, bias, aux);
    MatmulPlanKey key;
    memset(&key, 0, sizeof(key));
    key.m = m;
    key.n = n;
    key.k = k;
    key.trans_a = trans_a;
    key.trans_b = trans_b;
    key.epilogue = epilogue;
    key.d_type = d_type;
    key.align_a = pointer_alignment(a);
    key.align_b = pointer_alignment(b);
    key.align_d = pointer_alignment(d);
    const MatmulCall call = {a, b, d, bias, aux, alpha, beta};
    const MatmulPlan *plan = matmul_plan_get(ctx, &key, &call);
    if (!plan->supported) return 0;
    if (epilogue != MATMUL_EPILOGUE_NONE) {
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &bias, sizeof(bias)));
    }
    if (aux != NULL) {
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
    }
    CUBLAS_CHECK(cublasLtMatmul(ctx->lt, plan->op, &alpha, a, plan->la, b, plan->lb, &beta, d,
                                plan->ld, d, plan->ld, &plan->algo, ctx->workspace,
                                ctx->workspace_bytes, ctx->stream));
    return 1;
}

// the plain and BIAS matmuls (bias may be NULL)
static inline void matmul_lt(const MatmulContext *ctx, void *d, cudaDataType_t d_type,
                             const floatX *a, const floatX *b, const floatX *bias, int m, int n,
                             int k, bool trans_a, bool trans_b, float alpha, float beta) {
    matmul_lt_epilogue(ctx, bias != NULL ? MATMUL_EPILOGUE_BIAS : MATMUL_EPILOGUE_NONE, d, d_type,
                       a, b, (void *)bias, NULL, m, n, k, trans_a, trans_b, alpha, beta);
}

// out (N, OC) = inp (N, IC) W^T + bias; bias may be NULL.
static inline void matmul_forward_cuda(const MatmulContext *ctx, floatX *out, const floatX *inp,
                                       const floatX *weight, const floatX *bias, int N, int IC,
                                       int OC) {
    matmul_lt(ctx, out, FLOATX_CUDA_TYPE, weight, inp, bias, OC, N, IC, true, false, 1.0f, 0.0f);
}

// dinp (N, IC) = dout W (overwritten); dweight (OC, IC) += dout^T inp (fp32).
// The bias gradient is column_sum_accumulate's (reduce.cuh) or
// matmul_backward_weight_bgrad_cuda's.
static inline void matmul_backward_input_cuda(const MatmulContext *ctx, floatX *dinp,
                                              const floatX *dout, const floatX *weight, int N,
                                              int IC, int OC) {
    matmul_lt(ctx, dinp, FLOATX_CUDA_TYPE, weight, dout, NULL, IC, N, OC, false, false, 1.0f,
              0.0f);
}
static inline void matmul_backward_weight_cuda(const MatmulContext *ctx, float *dweight,
                                               const floatX *dout, const floatX *inp, int N,
                                               int IC, int OC) {
    matmul_lt(ctx, dweight, CUDA_R_32F, inp, dout, NULL, IC, OC, N, false, true, 1.0f, 1.0f);
}
static inline void matmul_backward_cuda(const MatmulContext *ctx, floatX *dinp, float *dweight,
                                        const floatX *dout, const floatX *inp,
                                        const floatX *weight, int N, int IC, int OC) {
    matmul_backward_input_cuda(ctx, dinp, dout, weight, N, IC, OC);
    matmul_backward_weight_cuda(ctx, dweight, dout, inp, N, IC, OC);
}

// out_gelu (N, OC) = GELU(pre_gelu), pre_gelu = inp W^T + bias, one GEMM
// (GELU_AUX_BIAS). Returns 0, having done nothing, where cuBLASLt has no
// algorithm for it (then: matmul_forward_cuda and gelu_forward_cuda).
static inline int matmul_forward_gelu_cuda(const MatmulContext *ctx, floatX *out_gelu,
                                           floatX *pre_gelu, const floatX *inp,
                                           const floatX *weight, const floatX *bias, int N, int IC,
                                           int OC) {
    return matmul_lt_epilogue(ctx, MATMUL_EPILOGUE_GELU_AUX_BIAS, out_gelu, FLOATX_CUDA_TYPE,
                              weight, inp, (void *)bias, pre_gelu, OC, N, IC, true, false, 1.0f,
                              0.0f);
}

// The backward of y = x W^T with x = GELU(pre_gelu), through the GELU: dpre
// (N, IC) = (dout W) * GELU'(pre_gelu) and dbias_pre (IC, fp32, overwritten)
// = the column sums of dpre (the bias gradient of the GEMM that made
// pre_gelu), one GEMM (DGELU_BGRAD). Returns 0, having done nothing, where
// cuBLASLt has no algorithm for it.
static inline int matmul_backward_dgelu_cuda(const MatmulContext *ctx, floatX *dpre,
                                             float *dbias_pre, const floatX *dout,
                                             const floatX *weight, const floatX *pre_gelu, int N,
                                             int IC, int OC) {
    return matmul_lt_epilogue(ctx, MATMUL_EPILOGUE_DGELU_BGRAD, dpre, FLOATX_CUDA_TYPE, weight,
                              dout, dbias_pre, (void *)pre_gelu, IC, N, OC, false, false, 1.0f,
                              0.0f);
}

// dweight (OC, IC) += dout^T inp (fp32) and dbias (OC, fp32, overwritten) =
// the column sums of dout, one GEMM (BGRADB: op(B) = dout (N, OC) summed
// over N). Returns 0, having done nothing, where cuBLASLt has no algorithm.
static inline int matmul_backward_weight_bgrad_cuda(const MatmulContext *ctx, float *dweight,
                                                    float *dbias, const floatX *dout,
                                                    const floatX *inp, int N, int IC, int OC) {
    return matmul_lt_epilogue(ctx, MATMUL_EPILOGUE_BGRADB, dweight, CUDA_R_32F, inp, dout, dbias,
                              NULL, IC, OC, N, false, true, 1.0f, 1.0f);
}

// Row-major, batched over `batch` (M, K) x (K, N) products with element
// strides between batches: C = alpha op(A) op(B) + beta C. trans_a: A is
// stored (K, M); trans_b: B is stored (N, K). C is float or floatX (c_type).
static inline void batched_matmul_rowmajor(const MatmulContext *ctx, void *c, cudaDataType_t c_type,
                                           const floatX *a, const floatX *b, int M, int N, int K,
                                           bool trans_a, bool trans_b, long long stride_a,
                                           long long stride_b, long long stride_c, int batch,
                                           float alpha, float beta) {
    // column-major C^T (N, M) = op(B)^T (N, K) op(A)^T (K, M)
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        ctx->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
        K, &alpha, b, FLOATX_CUDA_TYPE, trans_b ? K : N, stride_b, a, FLOATX_CUDA_TYPE,
        trans_a ? M : K, stride_a, &beta, c, c_type, N, stride_c, batch, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
}

#endif
