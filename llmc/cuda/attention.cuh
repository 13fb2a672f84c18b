// Multi-head attention on the GPU through batched matmuls, causal (GPT-2,
// llmc/kernels/attention.c) or bidirectional (ViT, llmc/kernels/attention_bidir.c
// without bias): qkv (B, T, 3C) is split into q, k, v (B, NH, T, hs); preatt =
// q k^T (fp32), att = softmax(scale preatt) (kept for the backward),
// y = att v, unpermuted to (B, T, C). The backward: datt = dy v^T, dv =
// att^T dy, dpreatt = scale att (datt - sum(att datt)), dq = dpreatt k,
// dk = dpreatt^T q. Memory O(B NH T^2) (the flash-style kernels keep
// O(B NH T): flash_attention.cuh, flash_attention_tc.cuh).
#ifndef FOLDNORM_ATTENTION_CUH
#define FOLDNORM_ATTENTION_CUH

#include <math.h>

#include "cuda_common.cuh"
#include "matmul_cublaslt.cuh"

// qkv (B, T, 3, NH, hs) -> q, k, v (B, NH, T, hs)
__global__ void attention_split_kernel(floatX *q, floatX *k, floatX *v, const floatX *qkv, int B,
                                       int T, int NH, int hs) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t total = (size_t)B * NH * T * hs;
    if (i >= total) return;
    const int d = (int)(i % hs);
    const int t = (int)((i / hs) % T);
    const int h = (int)((i / ((size_t)hs * T)) % NH);
    const int b = (int)(i / ((size_t)hs * T * NH));
    const int C = NH * hs;
    const size_t src = ((size_t)b * T + t) * 3 * C + (size_t)h * hs + d;
    q[i] = qkv[src];
    k[i] = qkv[src + C];
    v[i] = qkv[src + 2 * (size_t)C];
}

// the backward of the split: dq, dk, dv (B, NH, T, hs) -> dqkv (B, T, 3C)
__global__ void attention_merge_grads_kernel(floatX *dqkv, const floatX *dq, const floatX *dk,
                                             const floatX *dv, int B, int T, int NH, int hs) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t total = (size_t)B * NH * T * hs;
    if (i >= total) return;
    const int d = (int)(i % hs);
    const int t = (int)((i / hs) % T);
    const int h = (int)((i / ((size_t)hs * T)) % NH);
    const int b = (int)(i / ((size_t)hs * T * NH));
    const int C = NH * hs;
    const size_t dst = ((size_t)b * T + t) * 3 * C + (size_t)h * hs + d;
    dqkv[dst] = dq[i];
    dqkv[dst + C] = dk[i];
    dqkv[dst + 2 * (size_t)C] = dv[i];
}

// heads_to_rows = 1: dst (B, T, C) gathers src (B, NH, T, hs); 0: the reverse
__global__ void attention_heads_kernel(floatX *dst, const floatX *src, int B, int T, int NH,
                                       int hs, int heads_to_rows) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t total = (size_t)B * NH * T * hs;
    if (i >= total) return;
    const int d = (int)(i % hs);
    const int t = (int)((i / hs) % T);
    const int h = (int)((i / ((size_t)hs * T)) % NH);
    const int b = (int)(i / ((size_t)hs * T * NH));
    const size_t o = ((size_t)b * T + t) * NH * hs + (size_t)h * hs + d;
    if (heads_to_rows) {
        dst[o] = src[i];
    } else {
        dst[i] = src[o];
    }
}

// att[row] = softmax(scale preatt[row, 0..t]), zero beyond t (causal; else t =
// T - 1); one warp per row of the (B NH T, T) matrix, the causal t = row % T
__global__ void attention_softmax_forward_kernel(floatX *att, const float *preatt, int rows,
                                                 int T, float scale, int causal) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    const int t = causal ? row % T : T - 1;
    const float *x = preatt + (size_t)row * T;
    floatX *y = att + (size_t)row * T;
    float m = -INFINITY;
    for (int j = lane; j <= t; j += 32) m = fmaxf(m, x[j] * scale);
    m = warp_max(m);
    float sum = 0.0f;
    for (int j = lane; j <= t; j += 32) sum += expf(x[j] * scale - m);
    const float inv = 1.0f / warp_sum(sum);
    for (int j = lane; j < T; j += 32) {
        y[j] = from_float<floatX>(j <= t ? expf(x[j] * scale - m) * inv : 0.0f);
    }
}

// dpreatt = scale att (datt - sum_j att_j datt_j), zero beyond t (as the forward)
__global__ void attention_softmax_backward_kernel(floatX *dpreatt, const float *datt,
                                                  const floatX *att, int rows, int T, float scale,
                                                  int causal) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    const int t = causal ? row % T : T - 1;
    const float *d = datt + (size_t)row * T;
    const floatX *a = att + (size_t)row * T;
    float dot = 0.0f;
    for (int j = lane; j <= t; j += 32) dot += to_float(a[j]) * d[j];
    dot = warp_sum(dot);
    for (int j = lane; j < T; j += 32) {
        float g = j <= t ? scale * to_float(a[j]) * (d[j] - dot) : 0.0f;
        dpreatt[(size_t)row * T + j] = from_float<floatX>(g);
    }
}

typedef struct {
    floatX *q, *k, *v;  // (B, NH, T, hs) each
    floatX *y;          // (B, NH, T, hs)
    float *scores;      // (B, NH, T, T) preatt in the forward, datt in the backward
    floatX *dpreatt;    // (B, NH, T, T)
    floatX *dq, *dk, *dv;
} AttentionScratch;

static inline int elementwise_blocks(size_t n) { return ceil_div((long long)n, 256); }

// out (B, T, C), att (B, NH, T, T) kept for the backward; causal: GPT-2's mask
static inline void attention_forward_cuda(const MatmulContext *ctx, const AttentionScratch *s,
                                          floatX *out, floatX *att, const floatX *qkv, int B,
                                          int T, int C, int NH, bool causal = true) {
    const int hs = C / NH;
    const size_t n = (size_t)B * T * C;
    const int batch = B * NH;
    attention_split_kernel<<<elementwise_blocks(n), 256, 0, ctx->stream>>>(s->q, s->k, s->v, qkv,
                                                                          B, T, NH, hs);
    CUDA_CHECK_LAUNCH();
    const long long head = (long long)T * hs, square = (long long)T * T;
    // preatt (T, T) = q k^T per (b, h)
    batched_matmul_rowmajor(ctx, s->scores, CUDA_R_32F, s->q, s->k, T, T, hs, false, true, head,
                            head, square, batch, 1.0f, 0.0f);
    const int rows = batch * T;
    attention_softmax_forward_kernel<<<ceil_div(rows, 8), 256, 0, ctx->stream>>>(
        att, s->scores, rows, T, 1.0f / sqrtf((float)hs), causal);
    CUDA_CHECK_LAUNCH();
    // y (T, hs) = att v
    batched_matmul_rowmajor(ctx, s->y, FLOATX_CUDA_TYPE, att, s->v, T, hs, T, false, false,
                            square, head, head, batch, 1.0f, 0.0f);
    attention_heads_kernel<<<elementwise_blocks(n), 256, 0, ctx->stream>>>(out, s->y, B, T, NH,
                                                                          hs, 1);
    CUDA_CHECK_LAUNCH();
}

// dqkv (B, T, 3C) = backward of dout (B, T, C), overwritten
static inline void attention_backward_cuda(const MatmulContext *ctx, const AttentionScratch *s,
                                           floatX *dqkv, const floatX *dout, const floatX *qkv,
                                           const floatX *att, int B, int T, int C, int NH,
                                           bool causal = true) {
    const int hs = C / NH;
    const size_t n = (size_t)B * T * C;
    const int batch = B * NH;
    const long long head = (long long)T * hs, square = (long long)T * T;
    attention_split_kernel<<<elementwise_blocks(n), 256, 0, ctx->stream>>>(s->q, s->k, s->v, qkv,
                                                                          B, T, NH, hs);
    CUDA_CHECK_LAUNCH();
    // dy (B, NH, T, hs) into s->y
    attention_heads_kernel<<<elementwise_blocks(n), 256, 0, ctx->stream>>>(s->y, dout, B, T, NH,
                                                                          hs, 0);
    CUDA_CHECK_LAUNCH();
    // datt (T, T) = dy v^T
    batched_matmul_rowmajor(ctx, s->scores, CUDA_R_32F, s->y, s->v, T, T, hs, false, true, head,
                            head, square, batch, 1.0f, 0.0f);
    // dv (T, hs) = att^T dy
    batched_matmul_rowmajor(ctx, s->dv, FLOATX_CUDA_TYPE, att, s->y, T, hs, T, true, false, square,
                            head, head, batch, 1.0f, 0.0f);
    const int rows = batch * T;
    attention_softmax_backward_kernel<<<ceil_div(rows, 8), 256, 0, ctx->stream>>>(
        s->dpreatt, s->scores, att, rows, T, 1.0f / sqrtf((float)hs), causal);
    CUDA_CHECK_LAUNCH();
    // dq (T, hs) = dpreatt k; dk (T, hs) = dpreatt^T q
    batched_matmul_rowmajor(ctx, s->dq, FLOATX_CUDA_TYPE, s->dpreatt, s->k, T, hs, T, false, false,
                            square, head, head, batch, 1.0f, 0.0f);
    batched_matmul_rowmajor(ctx, s->dk, FLOATX_CUDA_TYPE, s->dpreatt, s->q, T, hs, T, true, false,
                            square, head, head, batch, 1.0f, 0.0f);
    attention_merge_grads_kernel<<<elementwise_blocks(n), 256, 0, ctx->stream>>>(
        dqkv, s->dq, s->dk, s->dv, B, T, NH, hs);
    CUDA_CHECK_LAUNCH();
}

#endif
