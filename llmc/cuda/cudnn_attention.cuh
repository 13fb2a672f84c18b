// Multi-head attention through cuDNN's fused flash attention (SDPA), built
// with the backend graph API (cudnnBackend*: descriptors, attributes,
// finalize, execute; no C++ frontend): GPT-2's causal attention and ViT's
// bidirectional one, on the trainer's layout. q, k, v are read in place from
// qkv (B, T, 3C) through strides, out is (B, T, C), the per-row statistics
// stats (B, NH, T) fp32 are the log-sum-exp of the scaled (masked) scores,
//   stats_i = m_i + log sum_j exp(s_ij - m_i),  m_i = max_j s_ij,  s = q.k / sqrt(hs)
// (natural log: flash_attention.cuh's lse, interchangeable with it), and the
// backward overwrites dqkv (B, T, 3C).
//
// cuDNN 9.19's native SDPA operation (CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR)
// has no causal mask: the frontend expresses one through a score-modifier
// subgraph attribute that arrives with 9.21. So both graphs here are the
// pattern graphs the fused attention engines recognise (the frontend's
// "composite" SDPA for cuDNN < 9.21), forward:
//   S = Q K^T (matmul) -> S * scale -> [causal: row = GEN_INDEX(axis 2),
//   col = GEN_INDEX(axis 3), keep = row >= col, S = keep ? S : -inf]
//   -> M = max S, E = exp(S - M), Z = sum E, stats = M + log Z, P = E / Z (bf16)
//   -> O = P V (matmul)
// backward (the form without an fp32 dQ accumulator, which is the frontend's
// deterministic one: dQ = dS K is its own product, not atomics over key tiles):
//   D = sum(dO * O) * 1 (softmax_sum, fp32, in the workspace)
//   P = exp(mask(Q K^T * scale - stats)); dV = P^T dO (P^T: a reshape, bf16)
//   dS = (dO V^T - D) * P * scale; dK = dS^T Q (reshape); dQ = dS K (K: a reshape of K^T)
// The backward keeps an engine free of CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
// when the heuristics offer one (cudnn_attention_deterministic says which was
// taken). Plans are built once per CudnnAttention (one shape), the heuristics
// queried once, one workspace allocated for both. Every backend call goes
// through CUDNN_CHECK (the call, file and line, cuDNN's last error message),
// or CUDNN_TRY where a failure is not the end (a plan an engine declines: the
// same words, reported when no engine takes the graph).
// bf16 only (cuDNN's SDPA takes fp16/bf16): an fp32 build, or one without
// cudnn.h (mk/cuda.mk), has the API but refuses to create it, saying why.
#ifndef FOLDNORM_CUDNN_ATTENTION_CUH
#define FOLDNORM_CUDNN_ATTENTION_CUH

#include <math.h>
#include <stdint.h>

#include "cuda_common.cuh"

#if defined(FOLDNORM_CUDNN) && !defined(FOLDNORM_FP32)
#define FOLDNORM_CUDNN_ATTENTION 1
#include <cudnn.h>
#endif

// NULL when this build can run cuDNN attention, else the reason it cannot
static inline const char *cudnn_attention_unavailable(void) {
#if !defined(FOLDNORM_CUDNN)
    return "this build has no cuDNN (mk/cuda.mk found no cudnn.h; install cuDNN 9 and rebuild)";
#elif defined(FOLDNORM_FP32)
    return "cuDNN's fused attention takes bf16 q, k, v; this is an fp32 build (FOLDNORM_FP32)";
#else
    return NULL;
#endif
}

#ifdef FOLDNORM_CUDNN_ATTENTION

#define CUDNN_CHECK(call) cudnn_check_((call), #call, __FILE__, __LINE__)
// a call that may fail without ending the run (an engine declining a plan):
// its status; a failure is described into the char array `failure`, as CUDNN_CHECK words it
#define CUDNN_TRY(call, failure) \
    cudnn_try_((call), #call, __FILE__, __LINE__, (failure), sizeof(failure))

// "CALL failed at FILE:LINE: cuDNN status N (NAME): cuDNN's last error message"
static inline void cudnn_describe_failure(char *buf, size_t size, cudnnStatus_t status,
                                          const char *call, const char *file, int line) {
    char detail[1024] = "";
    cudnnGetLastErrorString(detail, sizeof(detail));
    snprintf(buf, size, "%s failed at %s:%d: cuDNN status %d (%s)%s%s", call, file, line,
             (int)status, cudnnGetErrorString(status), detail[0] ? ": " : "", detail);
}

static inline void cudnn_check_(cudnnStatus_t status, const char *call, const char *file,
                                int line) {
    if (status != CUDNN_STATUS_SUCCESS) {
        char message[2048];
        cudnn_describe_failure(message, sizeof(message), status, call, file, line);
        fprintf(stderr, "error: %s\n", message);
        exit(EXIT_FAILURE);
    }
}

static inline cudnnStatus_t cudnn_try_(cudnnStatus_t status, const char *call, const char *file,
                                       int line, char *failure, size_t size) {
    if (status != CUDNN_STATUS_SUCCESS) cudnn_describe_failure(failure, size, status, call, file, line);
    return status;
}

// One tensor as a graph declares it: (b, h, s, d)-style dims and strides in elements.
typedef struct {
    int64_t dims[4], strides[4];
    cudnnDataType_t type;
} CudnnTensorLayout;

// The non-virtual tensors of both graphs. k_t and v_t are K^T and V^T
// (b, h, hs, T): the same memory as k and v with the last two dims swapped.
typedef struct {
    CudnnTensorLayout q, k_t, v, v_t, o, dout, stats, dq, dk, dv;
} CudnnAttentionLayout;

// The trainer's layout: q, k, v (and dq, dk, dv) in (B, T, 3C), out and dout (B, T, C), stats (B, NH, T).
static inline CudnnAttentionLayout cudnn_attention_layout(int B, int T, int NH, int hs) {
    const int64_t b = B, t = T, h = NH, d = hs, C = h * d, C3 = 3 * C;
    const cudnnDataType_t io = CUDNN_DATA_BFLOAT16;
    const CudnnTensorLayout qkv_rows = {{b, h, t, d}, {t * C3, d, C3, 1}, io};
    const CudnnTensorLayout qkv_cols = {{b, h, d, t}, {t * C3, d, 1, C3}, io};
    const CudnnTensorLayout out_rows = {{b, h, t, d}, {t * C, d, C, 1}, io};
    CudnnAttentionLayout L;
    L.q = L.v = L.dq = L.dk = L.dv = qkv_rows;
    L.k_t = L.v_t = qkv_cols;
    L.o = L.dout = out_rows;
    L.stats = CudnnTensorLayout{{b, h, t, 1}, {h * t, t, 1, 1}, CUDNN_DATA_FLOAT};
    return L;
}

#define CUDNN_ATTENTION_MAX_DESCRIPTORS 256
#define CUDNN_ATTENTION_MAX_OPS 32
#define CUDNN_ATTENTION_MAX_CONFIGS 16

// One graph's execution plan
typedef struct {
    cudnnBackendDescriptor_t plan;
    int64_t workspace_bytes;
    int64_t engine_index; // CUDNN_ATTR_ENGINE_GLOBAL_INDEX, for the logs
    bool deterministic;   // the engine carries no CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
} CudnnAttentionPlan;

typedef struct {
    int B, T, NH, hs;
    bool causal;
    float scale, neg_inf, one; // the by-value scalars the variant packs point at
    cudnnHandle_t handle;
    cudaStream_t stream;
    CudnnAttentionPlan fwd, bwd;
    void *workspace; // the plans' workspace (the larger), then softmax_sum
    size_t workspace_bytes;
    float *softmax_sum; // (B, NH, T): the backward's dO . O per row, inside workspace
    cudnnBackendDescriptor_t owned[CUDNN_ATTENTION_MAX_DESCRIPTORS]; // destroyed at free
    int owned_count;
} CudnnAttention;

// tensor uids of the variant packs; virtual tensors count up from CUDNN_UID_VIRTUAL
enum {
    CUDNN_UID_Q = 1, CUDNN_UID_K, CUDNN_UID_V, CUDNN_UID_O, CUDNN_UID_STATS, CUDNN_UID_SCALE,
    CUDNN_UID_NEG_INF, CUDNN_UID_ONE, CUDNN_UID_DO, CUDNN_UID_DQ, CUDNN_UID_DK, CUDNN_UID_DV,
    CUDNN_UID_SOFTMAX_SUM, CUDNN_UID_VIRTUAL = 100
};

// a graph under construction: its operations in dataflow order
typedef struct {
    CudnnAttention *a;
    cudnnBackendDescriptor_t ops[CUDNN_ATTENTION_MAX_OPS];
    int op_count;
    int64_t next_uid;
} CudnnGraph;

static inline cudnnBackendDescriptor_t cudnn_new(CudnnAttention *a, cudnnBackendDescriptorType_t type) {
    if (a->owned_count == CUDNN_ATTENTION_MAX_DESCRIPTORS) {
        fprintf(stderr, "error: cudnn_attention: more than %d backend descriptors\n",
                CUDNN_ATTENTION_MAX_DESCRIPTORS);
        exit(EXIT_FAILURE);
    }
    cudnnBackendDescriptor_t d;
    CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d));
    a->owned[a->owned_count++] = d;
    return d;
}

static inline void cudnn_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                             cudnnBackendAttributeType_t type, int64_t count, const void *values) {
    CUDNN_CHECK(cudnnBackendSetAttribute(d, name, type, count, values));
}
static inline void cudnn_set_desc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                                  cudnnBackendDescriptor_t value) {
    cudnn_set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
}

static inline cudnnBackendDescriptor_t cudnn_tensor(CudnnAttention *a, int64_t uid,
                                                    const CudnnTensorLayout &l, bool is_virtual,
                                                    bool by_value) {
    cudnnBackendDescriptor_t t = cudnn_new(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t alignment = 16; // the tensor-core engines' requirement
    cudnn_set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &l.type);
    cudnn_set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, l.dims);
    cudnn_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, l.strides);
    cudnn_set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    cudnn_set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    cudnn_set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    cudnn_set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    CUDNN_CHECK(cudnnBackendFinalize(t));
    return t;
}

// a by-value fp32 scalar (1, 1, 1, 1): its variant-pack pointer is host memory
static inline cudnnBackendDescriptor_t cudnn_scalar(CudnnAttention *a, int64_t uid) {
    const CudnnTensorLayout one = {{1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT};
    return cudnn_tensor(a, uid, one, false, true);
}

// a virtual (b, h, rows, cols) tensor, row-major; transposed: the strides of (b, h, cols, rows)
static inline cudnnBackendDescriptor_t cudnn_virtual(CudnnGraph *g, cudnnDataType_t type,
                                                     int64_t rows, int64_t cols, bool transposed) {
    const int64_t b = g->a->B, h = g->a->NH;
    CudnnTensorLayout l = {{b, h, rows, cols}, {h * rows * cols, rows * cols, cols, 1}, type};
    if (transposed) {
        l.strides[2] = 1;
        l.strides[3] = rows;
    }
    return cudnn_tensor(g->a, g->next_uid++, l, true, false);
}

static inline void cudnn_add_op(CudnnGraph *g, cudnnBackendDescriptor_t op) {
    if (g->op_count == CUDNN_ATTENTION_MAX_OPS) {
        fprintf(stderr, "error: cudnn_attention: a graph of more than %d operations\n",
                CUDNN_ATTENTION_MAX_OPS);
        exit(EXIT_FAILURE);
    }
    CUDNN_CHECK(cudnnBackendFinalize(op));
    g->ops[g->op_count++] = op;
}

// y = mode(x[, b[, t]]); math_prec the compute type; axis only for GEN_INDEX (else -1)
static inline void cudnn_pointwise(CudnnGraph *g, cudnnPointwiseMode_t mode,
                                   cudnnDataType_t math_prec, cudnnBackendDescriptor_t x,
                                   cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                                   cudnnBackendDescriptor_t y, int64_t axis) {
    cudnnBackendDescriptor_t pw = cudnn_new(g->a, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    cudnn_set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    cudnn_set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math_prec);
    if (axis >= 0) cudnn_set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    CUDNN_CHECK(cudnnBackendFinalize(pw));
    cudnnBackendDescriptor_t op = cudnn_new(g->a, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b != NULL) cudnn_set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t != NULL) cudnn_set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    cudnn_add_op(g, op);
}
// the common case: fp32 arithmetic into a new virtual fp32 tensor of the given rows and cols
static inline cudnnBackendDescriptor_t cudnn_fp32_op(CudnnGraph *g, cudnnPointwiseMode_t mode,
                                                     cudnnBackendDescriptor_t x,
                                                     cudnnBackendDescriptor_t b, int64_t rows,
                                                     int64_t cols) {
    cudnnBackendDescriptor_t y = cudnn_virtual(g, CUDNN_DATA_FLOAT, rows, cols, false);
    cudnn_pointwise(g, mode, CUDNN_DATA_FLOAT, x, b, NULL, y, -1);
    return y;
}

static inline void cudnn_matmul(CudnnGraph *g, cudnnBackendDescriptor_t a,
                                cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    cudnnBackendDescriptor_t mm = cudnn_new(g->a, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
    cudnn_set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fp32);
    CUDNN_CHECK(cudnnBackendFinalize(mm));
    cudnnBackendDescriptor_t op = cudnn_new(g->a, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    cudnn_add_op(g, op);
}

static inline void cudnn_reduction(CudnnGraph *g, cudnnReduceTensorOp_t mode,
                                   cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t red = cudnn_new(g->a, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t fp32 = CUDNN_DATA_FLOAT;
    cudnn_set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    cudnn_set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fp32);
    CUDNN_CHECK(cudnnBackendFinalize(red));
    cudnnBackendDescriptor_t op = cudnn_new(g->a, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
    cudnn_add_op(g, op);
}

// y: the same memory as x seen through other dims and strides (a transpose here)
static inline void cudnn_reshape(CudnnGraph *g, cudnnBackendDescriptor_t x,
                                 cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t op = cudnn_new(g->a, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    cudnn_set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    cudnn_add_op(g, op);
}

// s (b, h, T, T) with the keys after each query set to -inf: keep = row >= col
static inline cudnnBackendDescriptor_t cudnn_causal_mask(CudnnGraph *g,
                                                         cudnnBackendDescriptor_t s,
                                                         cudnnBackendDescriptor_t neg_inf) {
    const int64_t T = g->a->T;
    cudnnBackendDescriptor_t row = cudnn_virtual(g, CUDNN_DATA_INT32, T, T, false);
    cudnnBackendDescriptor_t col = cudnn_virtual(g, CUDNN_DATA_INT32, T, T, false);
    cudnnBackendDescriptor_t keep = cudnn_virtual(g, CUDNN_DATA_BOOLEAN, T, T, false);
    cudnnBackendDescriptor_t masked = cudnn_virtual(g, CUDNN_DATA_FLOAT, T, T, false);
    cudnn_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, row, 2);
    cudnn_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, NULL, NULL, col, 3);
    cudnn_pointwise(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, keep, -1);
    cudnn_pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, neg_inf, keep, masked, -1);
    return masked;
}

static inline void cudnn_forward_graph(CudnnGraph *g, const CudnnAttentionLayout &L) {
    CudnnAttention *a = g->a;
    const int64_t T = a->T;
    cudnnBackendDescriptor_t q = cudnn_tensor(a, CUDNN_UID_Q, L.q, false, false);
    cudnnBackendDescriptor_t k_t = cudnn_tensor(a, CUDNN_UID_K, L.k_t, false, false);
    cudnnBackendDescriptor_t v = cudnn_tensor(a, CUDNN_UID_V, L.v, false, false);
    cudnnBackendDescriptor_t o = cudnn_tensor(a, CUDNN_UID_O, L.o, false, false);
    cudnnBackendDescriptor_t stats = cudnn_tensor(a, CUDNN_UID_STATS, L.stats, false, false);
    cudnnBackendDescriptor_t scale = cudnn_scalar(a, CUDNN_UID_SCALE);
    cudnnBackendDescriptor_t s = cudnn_virtual(g, CUDNN_DATA_FLOAT, T, T, false);
    cudnn_matmul(g, q, k_t, s);
    s = cudnn_fp32_op(g, CUDNN_POINTWISE_MUL, s, scale, T, T);
    if (a->causal) s = cudnn_causal_mask(g, s, cudnn_scalar(a, CUDNN_UID_NEG_INF));
    cudnnBackendDescriptor_t m = cudnn_virtual(g, CUDNN_DATA_FLOAT, T, 1, false);
    cudnn_reduction(g, CUDNN_REDUCE_TENSOR_MAX, s, m);
    cudnnBackendDescriptor_t e = cudnn_fp32_op(g, CUDNN_POINTWISE_SUB, s, m, T, T);
    e = cudnn_fp32_op(g, CUDNN_POINTWISE_EXP, e, NULL, T, T);
    cudnnBackendDescriptor_t z = cudnn_virtual(g, CUDNN_DATA_FLOAT, T, 1, false);
    cudnn_reduction(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
    cudnnBackendDescriptor_t log_z = cudnn_fp32_op(g, CUDNN_POINTWISE_LOG, z, NULL, T, 1);
    cudnn_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, m, log_z, NULL, stats, -1);
    cudnnBackendDescriptor_t p = cudnn_virtual(g, L.q.type, T, T, false); // bf16 for the second product
    cudnn_pointwise(g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, z, NULL, p, -1);
    cudnn_matmul(g, p, v, o);
}

static inline void cudnn_backward_graph(CudnnGraph *g, const CudnnAttentionLayout &L) {
    CudnnAttention *a = g->a;
    const int64_t T = a->T, hs = a->hs;
    cudnnBackendDescriptor_t q = cudnn_tensor(a, CUDNN_UID_Q, L.q, false, false);
    cudnnBackendDescriptor_t k_t = cudnn_tensor(a, CUDNN_UID_K, L.k_t, false, false);
    cudnnBackendDescriptor_t v_t = cudnn_tensor(a, CUDNN_UID_V, L.v_t, false, false);
    cudnnBackendDescriptor_t o = cudnn_tensor(a, CUDNN_UID_O, L.o, false, false);
    cudnnBackendDescriptor_t dout = cudnn_tensor(a, CUDNN_UID_DO, L.dout, false, false);
    cudnnBackendDescriptor_t stats = cudnn_tensor(a, CUDNN_UID_STATS, L.stats, false, false);
    cudnnBackendDescriptor_t dq = cudnn_tensor(a, CUDNN_UID_DQ, L.dq, false, false);
    cudnnBackendDescriptor_t dk = cudnn_tensor(a, CUDNN_UID_DK, L.dk, false, false);
    cudnnBackendDescriptor_t dv = cudnn_tensor(a, CUDNN_UID_DV, L.dv, false, false);
    cudnnBackendDescriptor_t scale = cudnn_scalar(a, CUDNN_UID_SCALE);
    cudnnBackendDescriptor_t one = cudnn_scalar(a, CUDNN_UID_ONE);
    CudnnTensorLayout sum_layout = L.stats; // (b, h, T, 1) fp32, like the stats
    cudnnBackendDescriptor_t softmax_sum =
        cudnn_tensor(a, CUDNN_UID_SOFTMAX_SUM, sum_layout, false, false);
    // D = sum_d dO * O per row
    cudnnBackendDescriptor_t d_o = cudnn_fp32_op(g, CUDNN_POINTWISE_MUL, dout, o, T, hs);
    cudnnBackendDescriptor_t d_sum = cudnn_virtual(g, CUDNN_DATA_FLOAT, T, 1, false);
    cudnn_reduction(g, CUDNN_REDUCE_TENSOR_ADD, d_o, d_sum);
    cudnn_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, d_sum, one, NULL, softmax_sum, -1);
    // P recomputed from the stats
    cudnnBackendDescriptor_t s = cudnn_virtual(g, CUDNN_DATA_FLOAT, T, T, false);
    cudnn_matmul(g, q, k_t, s);
    s = cudnn_fp32_op(g, CUDNN_POINTWISE_MUL, s, scale, T, T);
    s = cudnn_fp32_op(g, CUDNN_POINTWISE_SUB, s, stats, T, T);
    if (a->causal) s = cudnn_causal_mask(g, s, cudnn_scalar(a, CUDNN_UID_NEG_INF));
    cudnnBackendDescriptor_t p = cudnn_fp32_op(g, CUDNN_POINTWISE_EXP, s, NULL, T, T);
    // dV = P^T dO
    cudnnBackendDescriptor_t p_t = cudnn_virtual(g, L.q.type, T, T, true);
    cudnn_reshape(g, p, p_t);
    cudnn_matmul(g, p_t, dout, dv);
    // dS = P (dO V^T - D) scale
    cudnnBackendDescriptor_t dp = cudnn_virtual(g, CUDNN_DATA_FLOAT, T, T, false);
    cudnn_matmul(g, dout, v_t, dp);
    cudnnBackendDescriptor_t ds = cudnn_fp32_op(g, CUDNN_POINTWISE_SUB, dp, softmax_sum, T, T);
    ds = cudnn_fp32_op(g, CUDNN_POINTWISE_MUL, ds, p, T, T);
    ds = cudnn_fp32_op(g, CUDNN_POINTWISE_MUL, ds, scale, T, T);
    // dK = dS^T Q, dQ = dS K
    cudnnBackendDescriptor_t ds_t = cudnn_virtual(g, L.q.type, T, T, true);
    cudnn_reshape(g, ds, ds_t);
    cudnn_matmul(g, ds_t, q, dk);
    CudnnTensorLayout k_layout = L.k_t; // K: K^T's memory with the last two dims swapped back
    k_layout.dims[2] = L.k_t.dims[3];
    k_layout.dims[3] = L.k_t.dims[2];
    k_layout.strides[2] = L.k_t.strides[3];
    k_layout.strides[3] = L.k_t.strides[2];
    cudnnBackendDescriptor_t k = cudnn_tensor(a, g->next_uid++, k_layout, true, false);
    cudnn_reshape(g, k_t, k);
    cudnn_matmul(g, ds, k, dq);
}

static inline bool cudnn_engine_deterministic(CudnnAttention *a, cudnnBackendDescriptor_t cfg,
                                              int64_t *engine_index) {
    cudnnBackendDescriptor_t engine = cudnn_new(a, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &engine));
    CUDNN_CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64,
                                         1, &count, engine_index));
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    CUDNN_CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                         CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                         &count, notes));
    for (int64_t i = 0; i < count; i++) {
        if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) return false;
    }
    return true;
}

// the operation graph, heuristics queried once, the first engine config
// whose plan finalizes (deterministic ones first); exits when none does
static inline CudnnAttentionPlan cudnn_build_plan(CudnnGraph *g, const char *what) {
    CudnnAttention *a = g->a;
    cudnnBackendDescriptor_t graph = cudnn_new(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnn_set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &a->handle);
    cudnn_set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->op_count, g->ops);
    CUDNN_CHECK(cudnnBackendFinalize(graph));
    cudnnBackendDescriptor_t heur = cudnn_new(a, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    cudnn_set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    cudnn_set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    CUDNN_CHECK(cudnnBackendFinalize(heur));
    int64_t count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
    if (count > CUDNN_ATTENTION_MAX_CONFIGS) count = CUDNN_ATTENTION_MAX_CONFIGS;
    cudnnBackendDescriptor_t cfgs[CUDNN_ATTENTION_MAX_CONFIGS];
    for (int64_t i = 0; i < count; i++) cfgs[i] = cudnn_new(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (count > 0) {
        CUDNN_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, cfgs));
    }
    char failure[2048] = ""; // the last declined plan, as CUDNN_CHECK words it
    if (count == 0) { // no plan to try: the heuristics' own message, if any
        char detail[1024] = "";
        cudnnGetLastErrorString(detail, sizeof(detail));
        snprintf(failure, sizeof(failure), "none tried%s%s", detail[0] ? ": " : "", detail);
    }
    for (int pass = 0; pass < 2; pass++) { // pass 0: deterministic engines only
        for (int64_t i = 0; i < count; i++) {
            CudnnAttentionPlan p = {NULL, 0, -1, false};
            p.deterministic = cudnn_engine_deterministic(a, cfgs[i], &p.engine_index);
            if (pass == 0 && !p.deterministic) continue;
            if (pass == 1 && p.deterministic) continue; // tried in pass 0
            p.plan = cudnn_new(a, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
            cudnn_set(p.plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &a->handle);
            cudnn_set_desc(p.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[i]);
            // an engine the heuristics list may still decline this graph: try the next
            if (CUDNN_TRY(cudnnBackendFinalize(p.plan), failure) != CUDNN_STATUS_SUCCESS) continue;
            int64_t n = 0;
            CUDNN_CHECK(cudnnBackendGetAttribute(p.plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                 CUDNN_TYPE_INT64, 1, &n, &p.workspace_bytes));
            return p;
        }
    }
    fprintf(stderr,
            "error: cuDNN found no engine for the attention %s graph (B=%d T=%d NH=%d hs=%d %s): "
            "%lld engine configs, the last plan: %s\n",
            what, a->B, a->T, a->NH, a->hs, a->causal ? "causal" : "bidirectional",
            (long long)count, failure);
    exit(EXIT_FAILURE);
}

// the forward and backward plans of one shape, on `layout` (cudnn_attention_layout
// for the trainer; another only for the emulator's checks)
static inline CudnnAttention *cudnn_attention_create_layout(int B, int T, int NH, int hs,
                                                            bool causal, cudaStream_t stream,
                                                            const CudnnAttentionLayout &layout) {
    if (B <= 0 || T <= 0 || NH <= 0 || hs <= 0 || hs % 8 != 0 || hs > 128) {
        fprintf(stderr, "error: cudnn attention needs a head size that is a multiple of 8 and at "
                        "most 128 (B=%d T=%d NH=%d hs=%d)\n", B, T, NH, hs);
        exit(EXIT_FAILURE);
    }
    CudnnAttention *a = (CudnnAttention *)calloc(1, sizeof(CudnnAttention));
    if (a == NULL) {
        fprintf(stderr, "error: out of host memory for cudnn attention\n");
        exit(EXIT_FAILURE);
    }
    a->B = B, a->T = T, a->NH = NH, a->hs = hs, a->causal = causal;
    a->scale = 1.0f / sqrtf((float)hs);
    a->neg_inf = -INFINITY;
    a->one = 1.0f;
    a->stream = stream;
    CUDNN_CHECK(cudnnCreate(&a->handle));
    CUDNN_CHECK(cudnnSetStream(a->handle, stream));
    CudnnGraph fwd = {a, {}, 0, CUDNN_UID_VIRTUAL};
    cudnn_forward_graph(&fwd, layout);
    a->fwd = cudnn_build_plan(&fwd, "forward");
    CudnnGraph bwd = {a, {}, 0, CUDNN_UID_VIRTUAL};
    cudnn_backward_graph(&bwd, layout);
    a->bwd = cudnn_build_plan(&bwd, "backward");
    // one workspace: the larger plan's, then softmax_sum (256-byte aligned)
    size_t plan_bytes = (size_t)(a->fwd.workspace_bytes > a->bwd.workspace_bytes
                                     ? a->fwd.workspace_bytes : a->bwd.workspace_bytes);
    plan_bytes = (plan_bytes + 255) / 256 * 256;
    a->workspace_bytes = plan_bytes + (size_t)B * NH * T * sizeof(float);
    CUDA_CHECK(cudaMalloc(&a->workspace, a->workspace_bytes));
    a->softmax_sum = (float *)((char *)a->workspace + plan_bytes);
    return a;
}

// B T NH hs causal on the trainer's layout (qkv (B, T, 3C), out (B, T, C), stats (B, NH, T))
static inline CudnnAttention *cudnn_attention_create(int B, int T, int NH, int hs, bool causal,
                                                     cudaStream_t stream) {
    return cudnn_attention_create_layout(B, T, NH, hs, causal, stream,
                                         cudnn_attention_layout(B, T, NH, hs));
}

// whether the backward's engine carries no nondeterminism note (bit-exact resume holds)
static inline bool cudnn_attention_deterministic(const CudnnAttention *a) {
    return a->bwd.deterministic;
}

// cuDNN reads 16-byte aligned tensors (the alignment the graphs declare)
static inline void cudnn_check_aligned(const void *p, const char *what) {
    if ((uintptr_t)p % 16 != 0) {
        fprintf(stderr, "error: cudnn attention: %s at %p is not 16-byte aligned (C %% 8 == 0 "
                        "and stats rows of 4 floats keep it so)\n", what, p);
        exit(EXIT_FAILURE);
    }
}

static inline void cudnn_execute(CudnnAttention *a, const CudnnAttentionPlan &p, int n,
                                 const int64_t *uids, void *const *pointers) {
    cudnnBackendDescriptor_t pack;
    CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
    cudnn_set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    cudnn_set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers);
    cudnn_set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &a->workspace);
    CUDNN_CHECK(cudnnBackendFinalize(pack));
    CUDNN_CHECK(cudnnBackendExecute(a->handle, p.plan, pack));
    CUDNN_CHECK(cudnnBackendDestroyDescriptor(pack));
}

// out (B, T, C) and stats (B, NH, T) from qkv (B, T, 3C)
static inline void cudnn_attention_forward(CudnnAttention *a, floatX *out, float *stats,
                                           const floatX *qkv) {
    const size_t C = (size_t)a->NH * a->hs;
    cudnn_check_aligned(out, "out");
    cudnn_check_aligned(stats, "stats");
    cudnn_check_aligned(qkv, "qkv");
    const int64_t uids[] = {CUDNN_UID_Q, CUDNN_UID_K, CUDNN_UID_V, CUDNN_UID_O, CUDNN_UID_STATS,
                            CUDNN_UID_SCALE, CUDNN_UID_NEG_INF};
    void *const pointers[] = {(void *)qkv, (void *)(qkv + C), (void *)(qkv + 2 * C), out, stats,
                              &a->scale, &a->neg_inf};
    cudnn_execute(a, a->fwd, a->causal ? 7 : 6, uids, pointers);
}

// dqkv (B, T, 3C), overwritten, from dout (B, T, C), the forward's out and stats, and qkv
static inline void cudnn_attention_backward(CudnnAttention *a, floatX *dqkv, const floatX *dout,
                                            const floatX *out, const float *stats,
                                            const floatX *qkv) {
    const size_t C = (size_t)a->NH * a->hs;
    cudnn_check_aligned(dqkv, "dqkv");
    cudnn_check_aligned(dout, "dout");
    cudnn_check_aligned(out, "out");
    cudnn_check_aligned(stats, "stats");
    cudnn_check_aligned(qkv, "qkv");
    const int64_t uids[] = {CUDNN_UID_Q, CUDNN_UID_K, CUDNN_UID_V, CUDNN_UID_O, CUDNN_UID_DO,
                            CUDNN_UID_STATS, CUDNN_UID_DQ, CUDNN_UID_DK, CUDNN_UID_DV,
                            CUDNN_UID_SOFTMAX_SUM, CUDNN_UID_SCALE, CUDNN_UID_ONE,
                            CUDNN_UID_NEG_INF};
    void *const pointers[] = {(void *)qkv, (void *)(qkv + C), (void *)(qkv + 2 * C), (void *)out,
                              (void *)dout, (void *)stats, dqkv, dqkv + C, dqkv + 2 * C,
                              a->softmax_sum, &a->scale, &a->one, &a->neg_inf};
    cudnn_execute(a, a->bwd, a->causal ? 13 : 12, uids, pointers);
}

static inline void cudnn_attention_free(CudnnAttention *a) {
    if (a == NULL) return;
    for (int i = a->owned_count - 1; i >= 0; i--) CUDNN_CHECK(cudnnBackendDestroyDescriptor(a->owned[i]));
    CUDA_CHECK(cudaFree(a->workspace));
    CUDNN_CHECK(cudnnDestroy(a->handle));
    free(a);
}

#else // no cuDNN attention in this build: the same API, refusing with the reason

typedef struct CudnnAttention CudnnAttention;

static inline CudnnAttention *cudnn_attention_create(int B, int T, int NH, int hs, bool causal,
                                                     cudaStream_t stream) {
    (void)B, (void)T, (void)NH, (void)hs, (void)causal, (void)stream;
    fprintf(stderr, "error: cudnn attention (-at cudnn): %s\n", cudnn_attention_unavailable());
    exit(EXIT_FAILURE);
}
static inline bool cudnn_attention_deterministic(const CudnnAttention *a) {
    (void)a;
    return false;
}
static inline void cudnn_attention_forward(CudnnAttention *a, floatX *out, float *stats,
                                           const floatX *qkv) {
    (void)a, (void)out, (void)stats, (void)qkv;
}
static inline void cudnn_attention_backward(CudnnAttention *a, floatX *dqkv, const floatX *dout,
                                            const floatX *out, const float *stats,
                                            const floatX *qkv) {
    (void)a, (void)dqkv, (void)dout, (void)out, (void)stats, (void)qkv;
}
static inline void cudnn_attention_free(CudnnAttention *a) { (void)a; }

#endif // FOLDNORM_CUDNN_ATTENTION

// The trainers' plans, one CudnnAttention per (B, T) met (training, eval and
// forward-only passes may differ), each built on its first use and kept:
// the graphs, heuristics and workspace of a shape are made once.
#define CUDNN_ATTENTION_MAX_SHAPES 8
typedef struct {
    int count;
    CudnnAttention *shapes[CUDNN_ATTENTION_MAX_SHAPES];
    int B[CUDNN_ATTENTION_MAX_SHAPES], T[CUDNN_ATTENTION_MAX_SHAPES];
} CudnnAttentionCache;

// the plans for (B, T), built when first asked for; says once per shape when
// the backward's engine is not deterministic (resume is then not bit-exact)
static inline CudnnAttention *cudnn_attention_cached(CudnnAttentionCache *c, int B, int T, int NH,
                                                     int hs, bool causal, cudaStream_t stream) {
    for (int i = 0; i < c->count; i++) {
        if (c->B[i] == B && c->T[i] == T) return c->shapes[i];
    }
    if (c->count == CUDNN_ATTENTION_MAX_SHAPES) {
        fprintf(stderr, "error: cudnn attention: more than %d shapes (B, T) in one run\n",
                CUDNN_ATTENTION_MAX_SHAPES);
        exit(EXIT_FAILURE);
    }
    CudnnAttention *a = cudnn_attention_create(B, T, NH, hs, causal, stream);
    if (!cudnn_attention_deterministic(a)) {
        fprintf(stderr, "warning: -at cudnn: cuDNN's backward engine for B=%d T=%d is not "
                        "deterministic on this GPU: resume is not bit-exact\n", B, T);
    }
    c->shapes[c->count] = a, c->B[c->count] = B, c->T[c->count] = T;
    c->count++;
    return a;
}

static inline void cudnn_attention_cache_free(CudnnAttentionCache *c) {
    for (int i = 0; i < c->count; i++) cudnn_attention_free(c->shapes[i]);
    c->count = 0;
}
#endif
