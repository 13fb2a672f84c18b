// Matmuls through cuBLASLt (bias epilogue) and strided-batched cuBLAS
// (attention). Row-major tensors as in the CPU code: x (N, IC), W (OC, IC),
// y = x W^T + b (N, OC); in cuBLAS's column-major view y^T = W x^T.
#ifndef FOLDNORM_MATMUL_CUBLASLT_CUH
#define FOLDNORM_MATMUL_CUBLASLT_CUH

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

// A cuBLASLt matmul set up once per shape: descriptors, layouts and the
// heuristic's algorithm, reused by every later call of the same shape (only
// the bias pointer is set per call).
typedef struct {
    int m, n, k, trans_a, trans_b, has_bias;
    cudaDataType_t d_type;
    uint32_t align_a, align_b, align_d;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
} MatmulPlan;

#define MATMUL_PLAN_CAPACITY 128 // more shapes (sampling's growing T): the oldest is replaced

typedef struct {
    MatmulPlan plans[MATMUL_PLAN_CAPACITY];
    int count;
    int next_evicted;
} MatmulPlanCache;

typedef struct {
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    void *workspace;
    size_t workspace_bytes;
    cudaStream_t stream;
    MatmulPlanCache *plans; // a pointer: matmuls take the context const
} MatmulContext;

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
    CUBLAS_CHECK(cublasLtDestroy(ctx->lt));
    CUBLAS_CHECK(cublasDestroy(ctx->blas));
    CUDA_CHECK(cudaFree(ctx->workspace));
}

// largest power of two (<= 256) dividing the address: cuBLASLt's heuristics
// otherwise assume 256-byte aligned operands
static inline uint32_t pointer_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    uint32_t align = 256;
    while (align > 1 && a % align != 0) align >>= 1;
    return align;
}

// Builds the descriptors of p's shape and asks the heuristic for an algorithm.
static inline void matmul_plan_build(const MatmulContext *ctx, MatmulPlan *p) {
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (p->has_bias) {
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                    &epilogue, sizeof(epilogue)));
    }
    const int m = p->m, n = p->n, k = p->k;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la, FLOATX_CUDA_TYPE, p->trans_a ? k : m,
                                            p->trans_a ? m : k, p->trans_a ? k : m));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb, FLOATX_CUDA_TYPE, p->trans_b ? n : k,
                                            p->trans_b ? k : n, p->trans_b ? n : k));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->ld, p->d_type, m, n, m));
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->workspace_bytes,
        sizeof(ctx->workspace_bytes)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &p->align_a, sizeof(p->align_a)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &p->align_b, sizeof(p->align_b)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &p->align_d, sizeof(p->align_d)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &p->align_d, sizeof(p->align_d)));
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->la, p->lb, p->ld,
                                                           p->ld, pref, 1, &heuristic, &found);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
        fprintf(stderr,
                "error: cuBLASLt has no algorithm for m=%d n=%d k=%d transA=%d transB=%d "
                "(bias %d, output %s, alignments %u %u %u): %s\n",
                m, n, k, p->trans_a, p->trans_b, p->has_bias,
                p->d_type == CUDA_R_32F ? "fp32" : "bf16", p->align_a, p->align_b, p->align_d,
                cublasGetStatusString(status));
        exit(EXIT_FAILURE);
    }
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    p->algo = heuristic.algo;
}

// The cached plan of this shape and these alignments, built on first use.
static inline const MatmulPlan *matmul_plan_get(const MatmulContext *ctx, const MatmulPlan *key) {
    MatmulPlanCache *cache = ctx->plans;
    for (int i = 0; i < cache->count; i++) {
        const MatmulPlan *p = &cache->plans[i];
        if (p->m == key->m && p->n == key->n && p->k == key->k && p->trans_a == key->trans_a &&
            p->trans_b == key->trans_b && p->has_bias == key->has_bias &&
            p->d_type == key->d_type && p->align_a == key->align_a &&
            p->align_b == key->align_b && p->align_d == key->align_d) {
            return p;
        }
    }
    MatmulPlan *slot;
    if (cache->count < MATMUL_PLAN_CAPACITY) {
        slot = &cache->plans[cache->count++];
    } else {
        slot = &cache->plans[cache->next_evicted];
        cache->next_evicted = (cache->next_evicted + 1) % MATMUL_PLAN_CAPACITY;
        matmul_plan_destroy(slot);
    }
    *slot = *key;
    matmul_plan_build(ctx, slot);
    return slot;
}

// Column-major D (m, n) = alpha op(A) op(B) + beta D [+ bias (m) broadcast over
// columns]. A is (m, k) or, transposed, stored (k, m); B is (k, n) or stored
// (n, k). A and B are floatX; D is floatX or float (d_type); bias (floatX,
// only with a floatX D) may be NULL.
static inline void matmul_lt(const MatmulContext *ctx, void *d, cudaDataType_t d_type,
                             const floatX *a, const floatX *b, const floatX *bias, int m, int n,
                             int k, bool trans_a, bool trans_b, float alpha, float beta) {
    if (bias != NULL && d_type != FLOATX_CUDA_TYPE) {
        fprintf(stderr, "error: matmul_lt: a bias epilogue needs a floatX output\n");
        exit(EXIT_FAILURE);
    }
    MatmulPlan key;
    memset(&key, 0, sizeof(key));
    key.m = m;
    key.n = n;
    key.k = k;
    key.trans_a = trans_a;
    key.trans_b = trans_b;
    key.has_bias = bias != NULL;
    key.d_type = d_type;
    key.align_a = pointer_alignment(a);
    key.align_b = pointer_alignment(b);
    key.align_d = pointer_alignment(d);
    const MatmulPlan *plan = matmul_plan_get(ctx, &key);
    if (bias != NULL) {
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &bias, sizeof(bias)));
    }
    CUBLAS_CHECK(cublasLtMatmul(ctx->lt, plan->op, &alpha, a, plan->la, b, plan->lb, &beta, d,
                                plan->ld, d, plan->ld, &plan->algo, ctx->workspace,
                                ctx->workspace_bytes, ctx->stream));
}

// out (N, OC) = inp (N, IC) W^T + bias; bias may be NULL.
static inline void matmul_forward_cuda(const MatmulContext *ctx, floatX *out, const floatX *inp,
                                       const floatX *weight, const floatX *bias, int N, int IC,
                                       int OC) {
    matmul_lt(ctx, out, FLOATX_CUDA_TYPE, weight, inp, bias, OC, N, IC, true, false, 1.0f, 0.0f);
}

// dinp (N, IC) = dout W (overwritten); dweight (OC, IC) += dout^T inp (fp32).
// The bias gradient is column_sum_accumulate's (reduce.cuh).
static inline void matmul_backward_cuda(const MatmulContext *ctx, floatX *dinp, float *dweight,
                                        const floatX *dout, const floatX *inp,
                                        const floatX *weight, int N, int IC, int OC) {
    matmul_lt(ctx, dinp, FLOATX_CUDA_TYPE, weight, dout, NULL, IC, N, OC, false, false, 1.0f,
              0.0f);
    matmul_lt(ctx, dweight, CUDA_R_32F, inp, dout, NULL, IC, OC, N, false, true, 1.0f, 1.0f);
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
