// CUDA emulation (a logic check, not a device run): cuBLAS and cuBLASLt as
// double-precision reference GEMMs in cuBLAS's column-major convention,
//   D (m, n) = alpha op(A) (m, k) op(B) (k, n) + beta C [+ epilogue],
// op(X) = X (stored rows x cols with leading dimension ld) or X^T. Every
// call checks the dimensions, leading dimensions, transposes, batch strides,
// data types, epilogue pointers and workspace, and that every byte a call
// may touch lies inside one cudaMalloc allocation: a wrong layout fails
// loudly instead of giving plausible numbers. C is not read when beta = 0
// (as cuBLAS), so NaN-poisoned outputs need no clearing.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "cublasLt.h"
#include "cuda_bf16.h"
#include "emu_internal.h"
#include "emu_race.h"
#include "emu_traffic.h"

struct emu_cublas {
    cudaStream_t stream;
    void *workspace;
    size_t workspace_bytes;
    cublasMath_t math;
};
struct emu_cublaslt {
    int magic;
};
struct emu_lt_desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    cublasOperation_t ta, tb;
    cublasLtEpilogue_t epilogue;
    const void *bias;
    bool bias_type_set;
    cudaDataType_t bias_type;
    long long bias_stride;
    void *aux;
    long long aux_ld, aux_stride;
    bool aux_type_set;
    cudaDataType_t aux_type;
};
struct emu_lt_layout {
    cudaDataType_t type;
    long long rows, cols, ld;
    int batch;
    long long stride;
};
struct emu_lt_pref {
    size_t max_workspace;
    unsigned align[4]; // A, B, C, D: what the caller promises
};

namespace {

// the heuristic's candidates: their id in algo word 2, from a base no zeroed
// algorithm has
const int EMU_LT_CANDIDATES = 4;
const int EMU_LT_ALGO_ID_WORD = 2;
const uint64_t EMU_LT_ALGO_ID_BASE = 0xa160;

const char *type_name(cudaDataType_t t) {
    switch (t) {
    case CUDA_R_32F: return "fp32";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_16F: return "fp16";
    case CUDA_R_64F: return "fp64";
    default: return "unsupported type";
    }
}

size_t type_bytes(cudaDataType_t t) {
    switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_16BF: case CUDA_R_16F: return 2;
    case CUDA_R_64F: return 8;
    default: return 0;
    }
}

double load(cudaDataType_t t, const void *p, long long i) {
    switch (t) {
    case CUDA_R_32F: return ((const float *)p)[i];
    case CUDA_R_16BF: return (float)((const __nv_bfloat16 *)p)[i];
    case CUDA_R_64F: return ((const double *)p)[i];
    default: emu::device_abort("cuBLAS: load of %s", type_name(t));
    }
}

// rounded as the device: the fp32 accumulator, then the output type
void store(cudaDataType_t t, void *p, long long i, double v) {
    switch (t) {
    case CUDA_R_32F: ((float *)p)[i] = (float)v; break;
    case CUDA_R_16BF: ((__nv_bfloat16 *)p)[i] = __nv_bfloat16((float)v); break;
    case CUDA_R_64F: ((double *)p)[i] = v; break;
    default: emu::device_abort("cuBLAS: store of %s", type_name(t));
    }
}

// fp32 inputs as TF32 tensor cores see them (10 mantissa bits, nearest even)
double round_tf32(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    memcpy(&f, &u, 4);
    return f;
}

cublasStatus_t refuse(cublasStatus_t s, const char *fmt, ...) {
    fprintf(stderr, "emulated cuBLAS: ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    return s;
}

// a stored matrix: rows x cols, leading dimension ld, `batch` of them `stride` elements apart
struct Matrix {
    const void *p;
    cudaDataType_t type;
    long long rows, cols, ld, stride;
    int batch;
};

// the bytes a matrix spans must lie in one allocation; outputs must not overlap across batches
void check_range(const Matrix &m, const char *what, bool written) {
    if (m.rows == 0 || m.cols == 0 || m.batch == 0) return;
    if (written && m.batch > 1 && m.stride < m.ld * m.cols) {
        emu::device_abort("%s: batch stride %lld < ld*cols = %lld: the batches' outputs overlap",
                          what, m.stride, m.ld * m.cols);
    }
    const long long last = (long long)(m.batch - 1) * m.stride + (m.cols - 1) * m.ld + m.rows;
    emu::check_device_range(m.p, (size_t)last * type_bytes(m.type), what);
}

bool check_ld(const char *what, long long ld, long long rows) {
    if (ld < (rows > 1 ? rows : 1)) {
        refuse(CUBLAS_STATUS_INVALID_VALUE, "%s: leading dimension %lld < rows %lld", what, ld, rows);
        return false;
    }
    return true;
}

float gelu_tanh(float x) {
    const float s = 0.7978845608028654f, c = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(s * (x + c * x * x * x)));
}
float gelu_tanh_grad(float x) {
    const float s = 0.7978845608028654f, c = 0.044715f;
    float th = tanhf(s * (x + c * x * x * x));
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * s * (1.0f + 3.0f * c * x * x);
}

struct Epilogue {
    cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
    void *bias = nullptr;
    cudaDataType_t bias_type = CUDA_R_32F;
    long long bias_stride = 0;
    void *aux = nullptr;
    cudaDataType_t aux_type = CUDA_R_32F;
    long long aux_ld = 0, aux_stride = 0;
};

// the call in the traffic table (emu_traffic.h): 2 m n k FLOPs a batch, each
// operand's elements read once (C where beta != 0, the bias and the GELU input
// where the epilogue takes them), D (and an aux output or bias gradient) written once
void count_gemm(const char *call, const Matrix &a, const Matrix &b, const Matrix &c,
                const Matrix &d, long long m, long long n, long long k, double beta,
                const Epilogue &ep) {
    if (!emu::traffic_counted()) return;
    const cublasLtEpilogue_t e = ep.kind;
    const bool bias_in = e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
                         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS;
    const bool aux_out = e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool aux_in = e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
    const bool bgrad = e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB ||
                       e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
    const unsigned long long mn = (unsigned long long)(m * n), batch = (unsigned long long)d.batch;
    unsigned long long r = (unsigned long long)(m * k) * type_bytes(a.type) +
                           (unsigned long long)(k * n) * type_bytes(b.type);
    unsigned long long w = mn * type_bytes(d.type);
    if (beta != 0.0) r += mn * type_bytes(c.type);
    if (bias_in) r += (unsigned long long)m * type_bytes(ep.bias_type);
    if (aux_in) r += mn * type_bytes(ep.aux_type);
    if (aux_out) w += mn * type_bytes(ep.aux_type);
    if (bgrad) w += (unsigned long long)(e == CUBLASLT_EPILOGUE_BGRADB ? n : m) * type_bytes(ep.bias_type);
    emu::traffic_add(call, batch * r, batch * w, 0, batch * 2ull * (unsigned long long)(m * n * k));
}

// the reference GEMM over all batches; a, b: stored matrices; c read only when
// beta != 0; call: the entry point (the traffic table's name)
// a matrix the running stream-0 operation wrote, column by column (emu_race.h)
void mark_written(const Matrix &x) {
    for (int bi = 0; bi < x.batch; bi++) {
        for (long long j = 0; j < x.cols; j++) {
            const size_t at = (size_t)(bi * x.stride + j * x.ld) * type_bytes(x.type);
            emu::race::legacy_wrote((const char *)x.p + at, (size_t)x.rows * type_bytes(x.type));
        }
    }
}

void gemm(const char *call, const Matrix &a, bool ta, const Matrix &b, bool tb, const Matrix &c,
          const Matrix &d, long long m, long long n, long long k, double alpha, double beta,
          bool tf32, const Epilogue &ep) {
    count_gemm(call, a, b, c, d, m, n, k, beta, ep);
    mark_written(d);
    std::vector<double> A((size_t)(m * k)), B((size_t)(n * k)), acc((size_t)(m * n));
    for (int bi = 0; bi < d.batch; bi++) {
        const long long oa = bi * a.stride, ob = bi * b.stride;
        for (long long i = 0; i < m; i++) {
            for (long long kk = 0; kk < k; kk++) {
                double v = load(a.type, a.p, oa + (ta ? kk + i * a.ld : i + kk * a.ld));
                A[(size_t)(i * k + kk)] = tf32 ? round_tf32(v) : v;
            }
        }
        for (long long j = 0; j < n; j++) {
            for (long long kk = 0; kk < k; kk++) {
                double v = load(b.type, b.p, ob + (tb ? j + kk * b.ld : kk + j * b.ld));
                B[(size_t)(j * k + kk)] = tf32 ? round_tf32(v) : v;
            }
        }
        for (long long j = 0; j < n; j++) {
            for (long long i = 0; i < m; i++) {
                const double *x = &A[(size_t)(i * k)], *y = &B[(size_t)(j * k)];
                double s = 0.0;
                for (long long kk = 0; kk < k; kk++) s += x[kk] * y[kk];
                double v = alpha * s;
                if (beta != 0.0) v += beta * load(c.type, c.p, bi * c.stride + i + j * c.ld);
                acc[(size_t)(j * m + i)] = v;
            }
        }
        const cublasLtEpilogue_t e = ep.kind;
        const bool add_bias = e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
                              e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS;
        const bool gelu = e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
                          e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        const bool relu = e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS;
        const bool write_aux = e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        const bool dgelu = e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
        std::vector<double> bgrad((size_t)(e == CUBLASLT_EPILOGUE_BGRADB ? n : m), 0.0);
        for (long long j = 0; j < n; j++) {
            for (long long i = 0; i < m; i++) {
                double v = acc[(size_t)(j * m + i)];
                if (add_bias) v += load(ep.bias_type, ep.bias, bi * ep.bias_stride + i);
                const long long ai = bi * ep.aux_stride + i + j * ep.aux_ld;
                if (write_aux) store(ep.aux_type, ep.aux, ai, v);
                if (gelu) v = gelu_tanh((float)v);
                if (relu) v = v > 0.0 ? v : 0.0;
                if (dgelu) v *= gelu_tanh_grad((float)load(ep.aux_type, ep.aux, ai));
                if (e == CUBLASLT_EPILOGUE_DGELU_BGRAD) bgrad[(size_t)i] += v;
                store(d.type, (void *)d.p, bi * d.stride + i + j * d.ld, v);
            }
        }
        if (e == CUBLASLT_EPILOGUE_BGRADA) { // sum of op(A) over k: length m
            for (long long i = 0; i < m; i++)
                for (long long kk = 0; kk < k; kk++) bgrad[(size_t)i] += A[(size_t)(i * k + kk)];
        }
        if (e == CUBLASLT_EPILOGUE_BGRADB) { // sum of op(B) over k: length n
            for (long long j = 0; j < n; j++)
                for (long long kk = 0; kk < k; kk++) bgrad[(size_t)j] += B[(size_t)(j * k + kk)];
        }
        if (e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB ||
            e == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
            for (size_t i = 0; i < bgrad.size(); i++) {
                store(ep.bias_type, ep.bias, bi * ep.bias_stride + (long long)i, bgrad[i]);
            }
        }
    }
}

bool supported_inputs(cudaDataType_t ab, cudaDataType_t out) {
    if (ab == CUDA_R_32F) return out == CUDA_R_32F;
    if (ab == CUDA_R_16BF) return out == CUDA_R_16BF || out == CUDA_R_32F;
    return false;
}

bool fp32_compute(cublasComputeType_t c) {
    return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC ||
           c == CUBLAS_COMPUTE_32F_FAST_TF32 || c == CUBLAS_COMPUTE_32F_FAST_16BF;
}

} // namespace

// ---------------------------------------------------------------- cuBLAS

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    *h = new emu_cublas{nullptr, nullptr, 0, CUBLAS_DEFAULT_MATH};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    emu::check_stream(s, "cublasSetStream");
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *workspace, size_t bytes) {
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes > 0) emu::check_device_range(workspace, bytes, "cublasSetWorkspace");
    h->workspace = workspace;
    h->workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_INTERNAL_ERROR";
    }
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType_t a_type, int lda, long long stride_a,
    const void *B, cudaDataType_t b_type, int ldb, long long stride_b, const void *beta, void *C,
    cudaDataType_t c_type, int ldc, long long stride_c, int batch, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
    (void)algo;
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    emu::check_stream(h->stream, "cublasGemm");
    emu::stream_op_now(h->stream, "cublasGemmStridedBatchedEx"); // in stream order (emu_streams.cpp)
    if (m < 0 || n < 0 || k < 0 || batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0) {
        return refuse(CUBLAS_STATUS_INVALID_VALUE, "gemm: negative size m=%d n=%d k=%d batch=%d", m,
                      n, k, batch);
    }
    if (ta == CUBLAS_OP_C || tb == CUBLAS_OP_C) {
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "gemm: conjugate transposes are not emulated");
    }
    if (a_type != b_type || !supported_inputs(a_type, c_type) || !fp32_compute(compute)) {
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "gemm: A %s, B %s, C %s, compute %d: not a "
                      "combination cublasGemmEx supports", type_name(a_type), type_name(b_type),
                      type_name(c_type), (int)compute);
    }
    const bool tA = ta == CUBLAS_OP_T, tB = tb == CUBLAS_OP_T;
    if (!check_ld("gemm A", lda, tA ? k : m) || !check_ld("gemm B", ldb, tB ? n : k) ||
        !check_ld("gemm C", ldc, m)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    const double al = *(const float *)alpha, be = *(const float *)beta;
    Matrix a{A, a_type, tA ? k : m, tA ? m : k, lda, stride_a, batch};
    Matrix b{B, b_type, tB ? n : k, tB ? k : n, ldb, stride_b, batch};
    Matrix c{C, c_type, m, n, ldc, stride_c, batch};
    if (k > 0) {
        check_range(a, "gemm A", false);
        check_range(b, "gemm B", false);
    }
    check_range(c, "gemm C", true);
    const bool tf32 = a_type == CUDA_R_32F && (compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                                               h->math == CUBLAS_TF32_TENSOR_OP_MATH);
    emu::stream_run(h->stream, "cublasGemmStridedBatchedEx", [=] { // recorded when capturing
        gemm("cublasGemmStridedBatchedEx", a, tA, b, tB, c, c, m, n, k, al, be, tf32, Epilogue());
    });
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType_t a_type,
                            int lda, const void *B, cudaDataType_t b_type, int ldb,
                            const void *beta, void *C, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, a_type, lda, 0, B, b_type,
                                      ldb, 0, beta, C, c_type, ldc, 0, 1, compute, algo);
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    return cublasGemmEx(h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta,
                        C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// ---------------------------------------------------------------- cuBLASLt

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = new emu_cublaslt{0x17};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
    if (h == nullptr || h->magic != 0x17) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    if (!fp32_compute(compute) || scale != CUDA_R_32F) {
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matmul desc: compute %d scale %s not emulated",
                      (int)compute, type_name(scale));
    }
    *d = new emu_lt_desc{compute, scale, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT,
                         nullptr, false, CUDA_R_32F, 0, nullptr, 0, 0, false, CUDA_R_32F};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    delete d;
    return CUBLAS_STATUS_SUCCESS;
}

template <typename T> static cublasStatus_t read_attr(T *out, const void *buf, size_t bytes,
                                                      const char *what) {
    if (bytes != sizeof(T)) {
        return refuse(CUBLAS_STATUS_INVALID_VALUE, "%s: %zu bytes, expected %zu", what, bytes,
                      sizeof(T));
    }
    memcpy(out, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t a, const void *buf,
                                              size_t bytes) {
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return read_attr(&d->ta, buf, bytes, "TRANSA");
    case CUBLASLT_MATMUL_DESC_TRANSB: return read_attr(&d->tb, buf, bytes, "TRANSB");
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return read_attr(&d->epilogue, buf, bytes, "EPILOGUE");
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return read_attr(&d->bias, buf, bytes, "BIAS_POINTER");
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
        return read_attr(&d->bias_stride, buf, bytes, "BIAS_BATCH_STRIDE");
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        d->bias_type_set = true;
        return read_attr(&d->bias_type, buf, bytes, "BIAS_DATA_TYPE");
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return read_attr(&d->aux, buf, bytes, "AUX_POINTER");
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return read_attr(&d->aux_ld, buf, bytes, "AUX_LD");
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
        return read_attr(&d->aux_stride, buf, bytes, "AUX_BATCH_STRIDE");
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
        d->aux_type_set = true;
        return read_attr(&d->aux_type, buf, bytes, "AUX_DATA_TYPE");
    default:
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matmul desc attribute %d is not emulated", (int)a);
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
    if (type_bytes(type) == 0) return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "layout of %s", type_name(type));
    if (!check_ld("layout", ld, (long long)rows)) return CUBLAS_STATUS_INVALID_VALUE;
    *l = new emu_lt_layout{type, (long long)rows, (long long)cols, (long long)ld, 1, 0};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    delete l;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t a, const void *buf,
                                                size_t bytes) {
    switch (a) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return read_attr(&l->batch, buf, bytes, "BATCH_COUNT");
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        return read_attr(&l->stride, buf, bytes, "STRIDED_BATCH_OFFSET");
    default:
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "layout attribute %d is not emulated", (int)a);
    }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = new emu_lt_pref{0, {256, 256, 256, 256}};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    delete p;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a,
                                                    const void *buf, size_t bytes) {
    switch (a) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        return read_attr(&p->max_workspace, buf, bytes, "MAX_WORKSPACE_BYTES");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return read_attr(&p->align[0], buf, bytes, "ALIGNMENT_A");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return read_attr(&p->align[1], buf, bytes, "ALIGNMENT_B");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return read_attr(&p->align[2], buf, bytes, "ALIGNMENT_C");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return read_attr(&p->align[3], buf, bytes, "ALIGNMENT_D");
    default: return CUBLAS_STATUS_SUCCESS; // search mode etc.: no effect on the result
    }
}

namespace {

// m, n, k of a descriptor and its four layouts, or a refusal as cuBLASLt's
cublasStatus_t lt_shape(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl, long long *m,
                        long long *n, long long *k) {
    if (d == nullptr || a == nullptr || b == nullptr || c == nullptr || dl == nullptr) {
        return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul: a NULL descriptor or layout");
    }
    const bool tA = d->ta == CUBLAS_OP_T, tB = d->tb == CUBLAS_OP_T;
    *m = dl->rows;
    *n = dl->cols;
    *k = tA ? a->rows : a->cols;
    const long long am = tA ? a->cols : a->rows;
    const long long bk = tB ? b->cols : b->rows, bn = tB ? b->rows : b->cols;
    if (am != *m || bk != *k || bn != *n || c->rows != *m || c->cols != *n) {
        return refuse(CUBLAS_STATUS_INVALID_VALUE,
                      "matmul: shapes do not chain: op(A) %lldx%lld (transA %d), op(B) %lldx%lld "
                      "(transB %d), C %lldx%lld, D %lldx%lld", am, *k, (int)tA, bk, bn, (int)tB,
                      c->rows, c->cols, *m, *n);
    }
    if (a->type != b->type || c->type != dl->type || !supported_inputs(a->type, dl->type)) {
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matmul: A %s B %s C %s D %s not supported",
                      type_name(a->type), type_name(b->type), type_name(c->type), type_name(dl->type));
    }
    if (a->batch != dl->batch || b->batch != dl->batch || c->batch != dl->batch) {
        return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul: batch counts differ (%d %d %d %d)",
                      a->batch, b->batch, c->batch, dl->batch);
    }
    switch (d->epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT: case CUBLASLT_EPILOGUE_RELU: case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS: case CUBLASLT_EPILOGUE_GELU: case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX: case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: case CUBLASLT_EPILOGUE_DGELU:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: case CUBLASLT_EPILOGUE_BGRADA: case CUBLASLT_EPILOGUE_BGRADB:
        break;
    default:
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "matmul: epilogue %d is not emulated", (int)d->epilogue);
    }
    return CUBLAS_STATUS_SUCCESS;
}

bool epilogue_has_bias(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
           e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA ||
           e == CUBLASLT_EPILOGUE_BGRADB;
}
bool epilogue_has_aux(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
           e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}

} // namespace

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                                              cublasLtMatmulPreference_t p, int requested,
                                              cublasLtMatmulHeuristicResult_t *results,
                                              int *returned) {
    if (h == nullptr || p == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    long long m, n, k;
    cublasStatus_t s = lt_shape(d, a, b, c, dl, &m, &n, &k);
    *returned = 0;
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    // EMU_LT_CANDIDATES algorithms (so -ga's choice has several to time), each
    // free to assume the promised alignments, told apart by an id; all compute
    // the same reference GEMM (which kernels exist on a device is not emulated)
    const int count = requested < EMU_LT_CANDIDATES ? requested : EMU_LT_CANDIDATES;
    for (int i = 0; i < count; i++) {
        memset(&results[i], 0, sizeof(results[i]));
        memcpy(results[i].algo.data, p->align, sizeof(p->align)); // words 0, 1
        results[i].algo.data[EMU_LT_ALGO_ID_WORD] = EMU_LT_ALGO_ID_BASE + (uint64_t)i;
        results[i].state = CUBLAS_STATUS_SUCCESS;
        results[i].wavesCount = 1.0f;
    }
    *returned = count;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t a_layout, const void *B,
                              cublasLtMatrixLayout_t b_layout, const void *beta, const void *C,
                              cublasLtMatrixLayout_t c_layout, void *D,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (h == nullptr || h->magic != 0x17) return CUBLAS_STATUS_NOT_INITIALIZED;
    emu::check_stream(stream, "cublasLtMatmul");
    emu::stream_op_now(stream, "cublasLtMatmul");
    long long m, n, k;
    cublasStatus_t s = lt_shape(d, a_layout, b_layout, c_layout, d_layout, &m, &n, &k);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (workspace_bytes > 0) emu::check_device_range(workspace, workspace_bytes, "cublasLtMatmul workspace");
    // an algorithm chosen for promised alignments (256 bytes unless the
    // preference said less) must not see less aligned pointers; a NULL algo
    // lets cuBLASLt choose for the pointers at hand
    if (algo != nullptr) {
        const uint64_t id = algo->data[EMU_LT_ALGO_ID_WORD];
        if (id < EMU_LT_ALGO_ID_BASE || id >= EMU_LT_ALGO_ID_BASE + EMU_LT_CANDIDATES) {
            return refuse(CUBLAS_STATUS_INVALID_VALUE,
                          "matmul: algorithm id %llx was never returned by the heuristic",
                          (unsigned long long)id);
        }
    }
    const void *ptrs[4] = {A, B, C, D};
    const char *names[4] = {"A", "B", "C", "D"};
    unsigned promised[4];
    if (algo != nullptr) memcpy(promised, algo->data, sizeof(promised));
    for (int i = 0; algo != nullptr && i < 4; i++) {
        if (i == 2 && (C == nullptr || *(const float *)beta == 0.0f)) continue; // C unread
        if (emu::pointer_alignment(ptrs[i]) < promised[i]) {
            emu::device_abort("cublasLtMatmul: %s at %p is %u-byte aligned, but the algorithm was "
                              "chosen for %u-byte alignment (heuristic preferences)", names[i],
                              ptrs[i], emu::pointer_alignment(ptrs[i]), promised[i]);
        }
    }
    const bool tA = d->ta == CUBLAS_OP_T, tB = d->tb == CUBLAS_OP_T;
    const cublasLtMatrixLayout_t al = a_layout, bl = b_layout, cl = c_layout, dl = d_layout;
    Matrix a{A, al->type, al->rows, al->cols, al->ld, al->stride, al->batch};
    Matrix b{B, bl->type, bl->rows, bl->cols, bl->ld, bl->stride, bl->batch};
    Matrix c{C, cl->type, cl->rows, cl->cols, cl->ld, cl->stride, cl->batch};
    Matrix dm{D, dl->type, dl->rows, dl->cols, dl->ld, dl->stride, dl->batch};
    const double alf = *(const float *)alpha, bet = *(const float *)beta;
    if (k > 0) {
        check_range(a, "cublasLtMatmul A", false);
        check_range(b, "cublasLtMatmul B", false);
    }
    if (bet != 0.0) check_range(c, "cublasLtMatmul C", false);
    check_range(dm, "cublasLtMatmul D", true);
    Epilogue ep;
    ep.kind = d->epilogue;
    if (epilogue_has_bias(d->epilogue)) {
        if (d->bias == nullptr) return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul: epilogue %d without a bias pointer", (int)d->epilogue);
        // default bias type: D's type (fp32 when D is fp32)
        ep.bias_type = d->bias_type_set ? d->bias_type : dl->type;
        ep.bias = (void *)d->bias;
        ep.bias_stride = d->bias_stride;
        const long long len = d->epilogue == CUBLASLT_EPILOGUE_BGRADB ? n : m;
        emu::check_device_range(d->bias, (size_t)((dl->batch - 1) * ep.bias_stride + len) *
                                             type_bytes(ep.bias_type), "cublasLtMatmul bias");
    } else if (d->bias != nullptr) {
        return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul: a bias pointer without a bias epilogue");
    }
    if (epilogue_has_aux(d->epilogue)) {
        // cuBLASLt's rules: ld >= rows of D and a multiple of 8, the pointer 16-byte aligned
        if (d->aux == nullptr) {
            return refuse(CUBLAS_STATUS_INVALID_VALUE, "matmul: GELU aux pointer NULL");
        }
        if (d->aux_ld < m || d->aux_ld % 8 != 0) {
            return refuse(CUBLAS_STATUS_INVALID_VALUE,
                          "matmul: GELU aux ld %lld: cuBLASLt needs >= m = %lld and a "
                          "multiple of 8", d->aux_ld, m);
        }
        if (emu::pointer_alignment(d->aux) < 16) {
            return refuse(CUBLAS_STATUS_INVALID_VALUE,
                          "matmul: GELU aux pointer %p is %u-byte aligned, cuBLASLt needs 16",
                          d->aux, emu::pointer_alignment(d->aux));
        }
        ep.aux = d->aux;
        ep.aux_type = d->aux_type_set ? d->aux_type : dl->type;
        ep.aux_ld = d->aux_ld;
        ep.aux_stride = d->aux_stride;
        Matrix x{d->aux, ep.aux_type, m, n, ep.aux_ld, ep.aux_stride, dl->batch};
        check_range(x, "cublasLtMatmul GELU aux", true);
    }
    const bool tf32 = a.type == CUDA_R_32F && d->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    // recorded when the stream captures a graph (emu_graph.cpp): the descriptors are read now
    emu::stream_run(stream, "cublasLtMatmul", [=] {
        gemm("cublasLtMatmul", a, tA, b, tB, c, dm, m, n, k, alf, bet, tf32, ep);
    });
    return CUBLAS_STATUS_SUCCESS;
}
