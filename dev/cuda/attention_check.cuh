// What the checks of the attention kinds share (dev/cuda/attention_variants.cu:
// GPT-2's causal attention; dev/cuda/attention_bidir.cu: ViT's
// bidirectional one): random q, k, v and dy on the host and the device, the
// CPU trainer's attention on them as the oracle, and each kind run as the
// models run it (llmc/cuda/attention_layers.cuh, one layer) against it: out,
// lse where the oracle has it (causal), dq, dk and dv, and a second backward
// that must give the same bits (no atomics); and a kind's timing. Each
// program keeps its tolerances, shapes and timing rows.
#ifndef FOLDNORM_DEV_CUDA_ATTENTION_CHECK_CUH
#define FOLDNORM_DEV_CUDA_ATTENTION_CHECK_CUH

#include <math.h>
#include <string.h>

#include "common.cuh"
#include "cuda/attention_layers.cuh"

extern "C" {
#include "kernels/attention.h"
#include "kernels/attention_bidir.h"
}

// One shape's inputs and the oracle's answers.
typedef struct {
    floatX *h;              // staging for the uploads
    float *qkv, *dout;      // (B, T, 3C), (B, T, C): the rounded values the device reads
    floatX *d_qkv, *d_dout; // on the device
    float *out, *dqkv;      // the oracle's output and input gradient
    float *lse;             // causal: the oracle's logsumexp per (b, h, t) row; else NULL
    float *att;             // bidirectional: the oracle's probabilities; else NULL
} AttentionCase;

// random q, k, v, then dy (rng in this order), and the CPU attention on them
static inline void attention_case_init(AttentionCase *c, bool causal, int B, int T, int C, int NH,
                                       DevRng *rng) {
    const size_t btc = (size_t)B * T * C, rows = (size_t)B * NH * T;
    c->h = (floatX *)host_alloc(3 * btc * sizeof(floatX));
    c->qkv = (float *)host_alloc(3 * btc * 4);
    c->dout = (float *)host_alloc(btc * 4);
    fill_random(c->h, c->qkv, 3 * btc, rng, 0.0f, 1.0f);
    c->d_qkv = to_device(c->h, 3 * btc);
    fill_random(c->h, c->dout, btc, rng, 0.0f, 1.0f);
    c->d_dout = to_device(c->h, btc);
    c->out = (float *)host_alloc(btc * 4);
    c->dqkv = (float *)host_alloc(3 * btc * 4);
    c->lse = NULL;
    c->att = NULL;
    if (causal) {
        c->lse = (float *)host_alloc(rows * 4);
        attention_forward(c->out, c->lse, c->qkv, B, T, C, NH);
        memset(c->dqkv, 0, 3 * btc * 4); // attention_backward accumulates
        attention_backward(c->dqkv, c->dout, c->qkv, c->out, c->lse, B, T, C, NH);
    } else { // one group per image
        c->att = (float *)host_alloc((size_t)B * NH * T * T * 4);
        attention_bidir_forward(c->out, c->att, c->qkv, NULL, 0, NULL, 0, B, T, C, NH);
        attention_bidir_backward(c->dqkv, NULL, c->dout, c->qkv, c->att, NULL, 0, B, T, C, NH);
    }
}

static inline void attention_case_free(AttentionCase *c) {
    CUDA_CHECK(cudaFree(c->d_qkv));
    CUDA_CHECK(cudaFree(c->d_dout));
    void *host[] = {c->h, c->qkv, c->dout, c->out, c->dqkv, c->lse, c->att};
    for (void *p : host) free(p);
}

// One kind against the oracle at tolerance tol (lse: absolute, lse_tol)
static inline int attention_check_kind(const AttentionCase *c, AttentionKind kind, bool causal,
                                       const MatmulContext *mm, int B, int T, int C, int NH,
                                       double tol, double lse_tol) {
    const size_t btc = (size_t)B * T * C, rows = (size_t)B * NH * T;
    printf(" %s:\n", attention_kind_name(kind));
    AttentionLayers a;
    attention_layers_init(&a, kind, causal, 1, B, T, C, NH, 0);
    floatX *d_out, *d_dqkv;
    CUDA_CHECK(cudaMalloc(&d_out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dqkv, 3 * btc * sizeof(floatX)));
    attention_layers_forward(&a, mm, 0, d_out, c->d_qkv, B, T, C, NH);
    attention_layers_backward(&a, mm, 0, d_dqkv, c->d_dout, d_out, c->d_qkv, B, T, C, NH);
    CUDA_CHECK(cudaDeviceSynchronize());
    float *got = (float *)host_alloc(3 * btc * 4), *again = (float *)host_alloc(3 * btc * 4);
    double *ref = (double *)host_alloc(btc * 8);
    int ok = 1;
    for (size_t i = 0; i < btc; i++) ref[i] = c->out[i];
    floatx_to_host(got, d_out, btc);
    ok &= check_tensor("out", got, ref, btc, tol);
    if (c->lse != NULL && a.lse != NULL) { // the flash-style kinds keep it
        float_to_host(got, a.lse, rows);
        double worst = 0.0;
        for (size_t i = 0; i < rows; i++) {
            const double d = fabs((double)got[i] - c->lse[i]);
            if (!(d <= worst)) worst = d;
        }
        const int lse_ok = worst <= lse_tol;
        printf("  %-16s abs err %.3e (tol %.0e) %s\n", "lse", worst, lse_tol, lse_ok ? "ok" : "FAIL");
        ok &= lse_ok;
    }
    floatx_to_host(got, d_dqkv, 3 * btc);
    ok &= check_qkv_parts(got, c->dqkv, (size_t)B * T, C, tol);
    // determinism: a second backward writes the same bits
    CUDA_CHECK(cudaMemset(d_dqkv, 0, 3 * btc * sizeof(floatX)));
    attention_layers_backward(&a, mm, 0, d_dqkv, c->d_dout, d_out, c->d_qkv, B, T, C, NH);
    floatx_to_host(again, d_dqkv, 3 * btc);
    const int same = memcmp(got, again, 3 * btc * 4) == 0;
    printf("  %-16s %s\n", "dqkv repeated", same ? "bit-identical ok" : "differs FAIL");
    ok &= same;
    attention_layers_free(&a);
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_dqkv));
    void *host[] = {got, again, ref};
    for (void *p : host) free(p);
    return ok;
}

// Every kind of kinds (count) on one random shape, each at tolerance(kind);
// the kinds this build refuses are skipped with the reason.
static inline int attention_check_kinds(const AttentionKind *kinds, size_t count, bool causal,
                                        const MatmulContext *mm, int B, int T, int C, int NH,
                                        DevRng *rng, double (*tolerance)(AttentionKind),
                                        double lse_tol) {
    AttentionCase c;
    attention_case_init(&c, causal, B, T, C, NH, rng);
    int ok = 1;
    for (size_t i = 0; i < count; i++) {
        const char *refusal = attention_kind_refusal(kinds[i], false);
        if (refusal != NULL) {
            printf(" %s: skipped (%s)\n", attention_kind_name(kinds[i]), refusal);
            continue;
        }
        ok &= attention_check_kind(&c, kinds[i], causal, mm, B, T, C, NH, tolerance(kinds[i]),
                                   lse_tol);
    }
    attention_case_free(&c);
    return ok;
}

// Milliseconds per forward and per backward of one kind at (B, T, C, NH) on
// the given device buffers (time_ms: repeats calls after a warmup)
static inline void attention_time_kind(AttentionKind kind, bool causal, const MatmulContext *mm,
                                       floatX *out, floatX *dqkv, const floatX *qkv,
                                       const floatX *dout, int B, int T, int C, int NH,
                                       int repeats, float *fwd_ms, float *bwd_ms) {
    AttentionLayers a;
    attention_layers_init(&a, kind, causal, 1, B, T, C, NH, 0);
    *fwd_ms = time_ms([&] { attention_layers_forward(&a, mm, 0, out, qkv, B, T, C, NH); }, repeats);
    *bwd_ms = time_ms([&] {
        attention_layers_backward(&a, mm, 0, dqkv, dout, out, qkv, B, T, C, NH);
    }, repeats);
    attention_layers_free(&a);
}

#endif
