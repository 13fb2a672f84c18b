// The cuBLASLt matmul plans and their context (matmul_cublaslt.cuh builds
// and runs them; matmul_algo_choice.cuh times and records their algorithms).
// A plan is one shape, layout and epilogue; column-major as cuBLAS:
//   D (m, n) = alpha op(A) (m, k) op(B) (k, n) + beta D, then the epilogue.
#ifndef FOLDNORM_MATMUL_PLAN_CUH
#define FOLDNORM_MATMUL_PLAN_CUH

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

// The epilogues foldnorm asks of cuBLASLt (cuBLASLt's documented meaning):
typedef enum {
    MATMUL_EPILOGUE_NONE = 0, // D as above
    MATMUL_EPILOGUE_BIAS,     // D += bias (m, floatX) on every column
    // aux = AB + bias, the pre-GELU value (floatX, ld m); D = GELU_tanh(aux)
    MATMUL_EPILOGUE_GELU_AUX_BIAS,
    // D = AB * GELU_tanh'(aux) (aux read, ld m); bias (m, fp32) = the sums of D's rows
    MATMUL_EPILOGUE_DGELU_BGRAD,
    // bias (n, fp32) = the sums of op(B) over k: the bias gradient of a dW GEMM
    MATMUL_EPILOGUE_BGRADB,
} MatmulEpilogue;

static inline const char *matmul_epilogue_name(MatmulEpilogue e) {
    switch (e) {
    case MATMUL_EPILOGUE_NONE: return "none";
    case MATMUL_EPILOGUE_BIAS: return "bias";
    case MATMUL_EPILOGUE_GELU_AUX_BIAS: return "gelu_aux_bias";
    case MATMUL_EPILOGUE_DGELU_BGRAD: return "dgelu_bgrad";
    case MATMUL_EPILOGUE_BGRADB: return "bgradb";
    }
    return "?";
}

// A cuBLASLt matmul set up once per key (shape, transposes, epilogue, output
// type, pointer alignments): descriptors, layouts and the algorithm, reused
// by every later call with the same key (only the bias and aux pointers are
// set per call).
typedef struct {
    int m, n, k, trans_a, trans_b;
    MatmulEpilogue epilogue;
    cudaDataType_t d_type;
    uint32_t align_a, align_b, align_d;
} MatmulPlanKey;

typedef struct {
    MatmulPlanKey key;
    int supported; // 0: cuBLASLt offers no algorithm (a fused call then falls back)
    int candidate; // the algorithm's index in the heuristic's list
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
} MatmulPlan;

static inline int matmul_plan_key_equal(const MatmulPlanKey *a, const MatmulPlanKey *b) {
    return a->m == b->m && a->n == b->n && a->k == b->k && a->trans_a == b->trans_a &&
           a->trans_b == b->trans_b && a->epilogue == b->epilogue && a->d_type == b->d_type &&
           a->align_a == b->align_a && a->align_b == b->align_b && a->align_d == b->align_d;
}

#define MATMUL_PLAN_CAPACITY 128 // more shapes (sampling's growing T): the oldest is replaced

typedef struct {
    MatmulPlan plans[MATMUL_PLAN_CAPACITY];
    int count;
    int next_evicted;
} MatmulPlanCache;

typedef struct MatmulAlgoChoice MatmulAlgoChoice; // matmul_algo_choice.cuh

typedef struct {
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    void *workspace;
    size_t workspace_bytes;
    cudaStream_t stream;
    MatmulPlanCache *plans; // a pointer: matmuls take the context const
    // -fe: GELU, its gradient and the bias gradients in the GEMMs' epilogues
    // (1, the default) or as separate kernels (0) (transformer_block.cuh)
    int fuse_epilogues;
    MatmulAlgoChoice *choice; // -ga 1: timed and recorded algorithms; NULL: the heuristic's first
} MatmulContext;

// -fe's and -ga's flag-table entries (train_gpt2cu, train_vitcu), dest an int *
#define FUSE_EPILOGUES_CLI_FLAG(dest)                                                          \
    {"-fe", CLI_INT, dest, 0, 1,                                                                 \
     "fuse GELU, its gradient and the bias gradients into the cuBLASLt GEMMs'\n"               \
     "epilogues: 1 = yes, 0 = separate kernels (default 1)", NULL, 0, 0}
#define GEMM_ALGO_CLI_FLAG(dest)                                                               \
    {"-ga", CLI_INT, dest, 0, 1,                                                                 \
     "cuBLASLt algorithms: 0 = the heuristic's first; 1 = time its top 8 once per\n"           \
     "matmul plan, keep the fastest, record them in the -o folder (matmul_algos.txt)\n"        \
     "for a bit-exact resume (default 0)", NULL, 0, 0}

// largest power of two (<= 256) dividing the address: cuBLASLt's heuristics
// otherwise assume 256-byte aligned operands
static inline uint32_t pointer_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    uint32_t align = 256;
    while (align > 1 && a % align != 0) align >>= 1;
    return align;
}

// The pointers and scalars of one call of a plan. bias: the BIAS epilogues'
// input or the BGRAD epilogues' output; aux: GELU_AUX_BIAS's output or
// DGELU_BGRAD's input.
typedef struct {
    const void *a, *b;
    void *d;
    void *bias, *aux;
    float alpha, beta;
} MatmulCall;

#endif
