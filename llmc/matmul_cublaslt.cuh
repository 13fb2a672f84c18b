// Matmuls through cuBLASLt (bias epilogue) and strided-batched cuBLAS
// (attention). Row-major tensors as in the CPU code: x (N, IC), W (OC, IC),
// y = x W^T + b (N, OC); in cuBLAS's column-major view y^T = W x^T.
#ifndef FOLDNORM_MATMUL_CUBLASLT_CUH
#define FOLDNORM_MATMUL_CUBLASLT_CUH

#include <stdint.h>

#include "cuda_common.cuh"

typedef struct {
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    void *workspace;
    size_t workspace_bytes;
    cudaStream_t stream;
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
}

static inline void matmul_context_destroy(MatmulContext *ctx) {
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

// Column-major D (m, n) = alpha op(A) op(B) + beta D [+ bias (m) broadcast over
// columns]. A is (m, k) or, transposed, stored (k, m); B is (k, n) or stored
// (n, k). A and B are floatX; D is floatX or float (d_type); bias (floatX,
// only with a floatX D) may be NULL.
static inline void matmul_lt(const MatmulContext *ctx, void *d, cudaDataType_t d_type,
                             const floatX *a, const floatX *b, const floatX *bias, int m, int n,
                             int k, bool trans_a, bool trans_b, float alpha, float beta) {
    cublasLtMatmulDesc_t op;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (bias != NULL) {
        if (d_type != FLOATX_CUDA_TYPE) {
            fprintf(stderr, "error: matmul_lt: a bias epilogue needs a floatX output\n");
            exit(EXIT_FAILURE);
        }
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                    sizeof(epilogue)));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof(bias)));
    }
    cublasLtMatrixLayout_t la, lb, ld;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, FLOATX_CUDA_TYPE, trans_a ? k : m,
                                            trans_a ? m : k, trans_a ? k : m));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, FLOATX_CUDA_TYPE, trans_b ? n : k,
                                            trans_b ? k : n, trans_b ? n : k));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ld, d_type, m, n, m));
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->workspace_bytes,
        sizeof(ctx->workspace_bytes)));
    uint32_t align_a = pointer_alignment(a), align_b = pointer_alignment(b);
    uint32_t align_d = pointer_alignment(d);
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)));
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(ctx->lt, op, la, lb, ld, ld, pref, 1,
                                                           &heuristic, &found);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
        fprintf(stderr,
                "error: cuBLASLt has no algorithm for m=%d n=%d k=%d transA=%d transB=%d "
                "(bias %d, output %s, alignments %u %u %u): %s\n",
                m, n, k, (int)trans_a, (int)trans_b, bias != NULL,
                d_type == CUDA_R_32F ? "fp32" : "bf16", align_a, align_b, align_d,
                cublasGetStatusString(status));
        exit(EXIT_FAILURE);
    }
    CUBLAS_CHECK(cublasLtMatmul(ctx->lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld,
                                &heuristic.algo, ctx->workspace, ctx->workspace_bytes,
                                ctx->stream));
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(la));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lb));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(ld));
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(op));
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
