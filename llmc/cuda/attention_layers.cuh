// A model's multi-head attention over its layers with the kernels of one
// kind (attention_kind.cuh) and what that kind keeps between a layer's
// forward and its backward: the flash-style kernels (tc: flash_attention_tc.cuh,
// flash: flash_attention.cuh) and cuDNN's (cudnn_attention.cuh, its plans per
// shape) the per-row log-sum-exp (L, B, NH, T); the
// cuBLAS path (attention.cuh) the probabilities (L, B, NH, T, T) and its
// scratch. GPT-2 (causal) and ViT (bidirectional) run their attention
// through here; Swin's window attention is swin_cuda.cuh's.
#ifndef FOLDNORM_ATTENTION_LAYERS_CUH
#define FOLDNORM_ATTENTION_LAYERS_CUH

#include <string.h>

extern "C" {
#include "core/utils.h" // fatal
}

#include "attention.cuh"
#include "attention_kind.cuh"
#include "cuda_params.cuh"
#include "cudnn_attention.cuh"
#include "flash_attention.cuh"
#include "flash_attention_tc.cuh"

typedef struct {
    AttentionKind kind;
    bool causal;
    int slots;           // layers kept: L, or 1 for forward passes only (every layer reuses it)
    float *lse;          // tc, flash, cudnn: (slots, B, NH, T), each slot padded to 4 floats
    float *D;            // tc, flash: (B, NH, T) dy . y of the backward (cudnn: its workspace's)
    float *dq_partials;  // tc (training): the backward's dQ per key block (tc_dq_partial_floats)
    CudnnAttentionCache *cudnn; // cudnn: the plans of each (B, T) met
    floatX *att;         // cublas: (slots, B, NH, T, T)
    AttentionScratch s;  // cublas: q, k, v, y, dq, dk, dv (B, NH, T, hs), scores, dpreatt
} AttentionLayers;

// one layer's lse slot for `rows` = B NH T rows: padded to 4 floats, so that
// every slot starts 16-byte aligned (cuDNN's stats tensor declares it)
static inline size_t lse_slot_floats(size_t rows) { return (rows + 3) / 4 * 4; }

// for L layers of micro-batches up to (B, T); dies when kind is not one for
// GPT-2 / ViT in this build (attention_kind_refusal)
static inline void attention_layers_init(AttentionLayers *a, AttentionKind kind, bool causal,
                                         int L, int B, int T, int C, int NH, int inference) {
    memset(a, 0, sizeof(*a));
    const char *refusal = attention_kind_refusal(kind, false);
    if (refusal != NULL) fatal("attention %s: %s", attention_kind_name(kind), refusal);
    a->kind = kind;
    a->causal = causal;
    a->slots = inference ? 1 : L;
    const size_t rows = (size_t)B * NH * T, btc = (size_t)B * T * C;
    if (kind == ATTENTION_CUBLAS) {
        a->att = cuda_alloc<floatX>(a->slots * rows * T);
        floatX **x[] = {&a->s.q, &a->s.k, &a->s.v, &a->s.y, &a->s.dq, &a->s.dk, &a->s.dv};
        for (floatX **p : x) *p = cuda_alloc<floatX>(btc);
        a->s.scores = cuda_alloc<float>(rows * T);
        a->s.dpreatt = cuda_alloc<floatX>(rows * T);
    } else {
        a->lse = cuda_alloc<float>(a->slots * lse_slot_floats(rows));
        a->D = cuda_alloc<float>(rows);
        if (kind == ATTENTION_TC && !inference) {
            a->dq_partials = cuda_alloc<float>(tc_dq_partial_floats(B, T, C, NH, causal));
        }
    }
    if (kind == ATTENTION_CUDNN) {
        a->cudnn = (CudnnAttentionCache *)calloc(1, sizeof(CudnnAttentionCache));
        if (a->cudnn == NULL) fatal("out of host memory for the cudnn attention plans");
    }
}

// layer l's out (B, T, C) from its qkv (B, T, 3C)
static inline void attention_layers_forward(const AttentionLayers *a, const MatmulContext *mm,
                                            int l, floatX *out, const floatX *qkv, int B, int T,
                                            int C, int NH) {
    const size_t slot = (size_t)(l % a->slots), rows = (size_t)B * NH * T;
    const cudaStream_t st = mm->stream;
    float *lse = a->lse + slot * lse_slot_floats(rows);
    if (a->kind == ATTENTION_CUBLAS) {
        attention_forward_cuda(mm, &a->s, out, a->att + slot * rows * T, qkv, B, T, C, NH, a->causal);
    } else if (a->kind == ATTENTION_CUDNN) {
        CudnnAttention *c = cudnn_attention_cached(a->cudnn, B, T, NH, C / NH, a->causal, st);
        cudnn_attention_forward(c, out, lse, qkv);
    } else if (a->kind == ATTENTION_TC && a->causal) {
        flash_attention_tc_forward<true>(out, lse, qkv, B, T, C, NH, st);
    } else if (a->kind == ATTENTION_TC) {
        flash_attention_tc_forward<false>(out, lse, qkv, B, T, C, NH, st);
    } else if (a->causal) {
        flash_attention_forward_any<true>(out, lse, qkv, B, T, C, NH, st);
    } else {
        flash_attention_forward_any<false>(out, lse, qkv, B, T, C, NH, st);
    }
}

// layer l's dqkv (B, T, 3C), overwritten, from dout (B, T, C) and the forward's out, qkv
static inline void attention_layers_backward(const AttentionLayers *a, const MatmulContext *mm,
                                             int l, floatX *dqkv, const floatX *dout,
                                             const floatX *out, const floatX *qkv, int B, int T,
                                             int C, int NH) {
    const size_t slot = (size_t)(l % a->slots), rows = (size_t)B * NH * T;
    const cudaStream_t st = mm->stream;
    const float *lse = a->lse + slot * lse_slot_floats(rows);
    if (a->kind == ATTENTION_CUBLAS) {
        attention_backward_cuda(mm, &a->s, dqkv, dout, qkv, a->att + slot * rows * T, B, T, C, NH,
                                a->causal);
    } else if (a->kind == ATTENTION_CUDNN) {
        CudnnAttention *c = cudnn_attention_cached(a->cudnn, B, T, NH, C / NH, a->causal, st);
        cudnn_attention_backward(c, dqkv, dout, out, lse, qkv);
    } else if (a->kind == ATTENTION_TC && a->causal) {
        flash_attention_tc_backward<true>(dqkv, a->D, a->dq_partials, dout, out, qkv, lse, B, T, C, NH, st);
    } else if (a->kind == ATTENTION_TC) {
        flash_attention_tc_backward<false>(dqkv, a->D, a->dq_partials, dout, out, qkv, lse, B, T, C, NH, st);
    } else if (a->causal) {
        flash_attention_backward_any<true>(dqkv, a->D, dout, out, qkv, lse, B, T, C, NH, st);
    } else {
        flash_attention_backward_any<false>(dqkv, a->D, dout, out, qkv, lse, B, T, C, NH, st);
    }
}

static inline void attention_layers_free(AttentionLayers *a) {
    if (a->cudnn != NULL) {
        cudnn_attention_cache_free(a->cudnn);
        free(a->cudnn);
    }
    void *p[] = {a->lse, a->D, a->dq_partials, a->att, a->s.q, a->s.k, a->s.v, a->s.y, a->s.dq, a->s.dk,
                 a->s.dv, a->s.scores, a->s.dpreatt};
    for (void *x : p) {
        if (x != NULL) CUDA_CHECK(cudaFree(x));
    }
    memset(a, 0, sizeof(*a));
}

#endif
