// Causal attention (llmc/cuda/attention.cuh) against the CPU kernels of
// llmc/kernels/attention.c on random q, k, v: the output, the attention matrix (from
// the CPU's per-row logsumexp: exp(q.k / sqrt(hs) - lse)) and dqkv; then timed at
// GPT-2 124M's shape (B=8, T=1024, NH=12, hs=64).
#include <math.h>
#include <string.h>

#include "cuda/attention.cuh"
#include "common.cuh"

extern "C" {
#include "kernels/attention.h"
}

static const double TOL = sizeof(floatX) == 4 ? 1e-5 : 3e-2;

typedef struct {
    AttentionScratch s;
    floatX *qkv, *out, *att, *dout, *dqkv;
} AttentionBuffers;

// att (B, NH, T, T) of the CPU kernel: the blocked kernel keeps only lse (B, NH, T).
static void probabilities_from_lse(double *att, const float *qkv, const float *lse, int B, int T,
                                   int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const double scale = 1.0 / sqrt((double)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                double *row = att + (((size_t)b * NH + h) * T + t) * T;
                for (int u = 0; u < T; u++) {
                    const float *k = qkv + ((size_t)b * T + u) * C3 + C + (size_t)h * hs;
                    double s = 0.0;
                    for (int d = 0; d < hs; d++) s += (double)q[d] * k[d];
                    row[u] = u <= t ? exp(s * scale - lse[((size_t)b * NH + h) * T + t]) : 0.0;
                }
            }
        }
    }
}

static AttentionBuffers alloc_buffers(int B, int T, int C, int NH) {
    AttentionBuffers a;
    const size_t btc = (size_t)B * T * C, sq = (size_t)B * NH * T * T;
    floatX **x[] = {&a.s.q, &a.s.k, &a.s.v, &a.s.y, &a.s.dq, &a.s.dk, &a.s.dv, &a.out, &a.dout};
    for (floatX **p : x) CUDA_CHECK(cudaMalloc(p, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&a.qkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&a.dqkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&a.att, sq * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&a.s.dpreatt, sq * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&a.s.scores, sq * sizeof(float)));
    return a;
}

static void free_buffers(AttentionBuffers *a) {
    void *p[] = {a->s.q, a->s.k, a->s.v, a->s.y, a->s.dq, a->s.dk, a->s.dv, a->out, a->dout,
                 a->qkv, a->dqkv, a->att, a->s.dpreatt, a->s.scores};
    for (void *x : p) CUDA_CHECK(cudaFree(x));
}

static int check(const MatmulContext *ctx, int B, int T, int C, int NH, DevRng *rng) {
    printf("attention B=%d T=%d C=%d NH=%d (%s):\n", B, T, C, NH, FLOATX_NAME);
    const size_t btc = (size_t)B * T * C, sq = (size_t)B * NH * T * T;
    AttentionBuffers a = alloc_buffers(B, T, C, NH);
    floatX *h = (floatX *)host_alloc(3 * btc * sizeof(floatX));
    float *qkv = (float *)host_alloc(3 * btc * 4), *dout = (float *)host_alloc(btc * 4);
    fill_random(h, qkv, 3 * btc, rng, 0.0f, 1.0f);
    CUDA_CHECK(cudaMemcpy(a.qkv, h, 3 * btc * sizeof(floatX), cudaMemcpyHostToDevice));
    fill_random(h, dout, btc, rng, 0.0f, 1.0f);
    CUDA_CHECK(cudaMemcpy(a.dout, h, btc * sizeof(floatX), cudaMemcpyHostToDevice));
    attention_forward_cuda(ctx, &a.s, a.out, a.att, a.qkv, B, T, C, NH);
    attention_backward_cuda(ctx, &a.s, a.dqkv, a.dout, a.qkv, a.att, B, T, C, NH);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle: llmc/kernels/attention.c (the tested CPU kernels) on the same inputs
    float *fout = (float *)host_alloc(btc * 4), *flse = (float *)host_alloc((size_t)B * NH * T * 4);
    float *fdqkv = (float *)host_alloc(3 * btc * 4);
    memset(fdqkv, 0, 3 * btc * 4); // attention_backward accumulates
    attention_forward(fout, flse, qkv, B, T, C, NH);
    attention_backward(fdqkv, dout, qkv, fout, flse, B, T, C, NH);
    double *rout = (double *)host_alloc(btc * 8), *ratt = (double *)host_alloc(sq * 8);
    double *rdqkv = (double *)host_alloc(3 * btc * 8);
    for (size_t i = 0; i < btc; i++) rout[i] = fout[i];
    probabilities_from_lse(ratt, qkv, flse, B, T, C, NH);
    for (size_t i = 0; i < 3 * btc; i++) rdqkv[i] = fdqkv[i];
    float *got = (float *)host_alloc(3 * btc * 4 > sq * 4 ? 3 * btc * 4 : sq * 4);
    int ok = 1;
    floatx_to_host(got, a.out, btc);
    ok &= check_tensor("out", got, rout, btc, TOL);
    floatx_to_host(got, a.att, sq);
    ok &= check_tensor("att", got, ratt, sq, TOL);
    floatx_to_host(got, a.dqkv, 3 * btc);
    ok &= check_tensor("dqkv", got, rdqkv, 3 * btc, TOL);
    free_buffers(&a);
    void *host[] = {h, qkv, dout, rout, ratt, rdqkv, fout, flse, fdqkv, got};
    for (void *p : host) free(p);
    return ok;
}

static void timing(const MatmulContext *ctx, int B, int T, int C, int NH) {
    AttentionBuffers a = alloc_buffers(B, T, C, NH);
    const size_t btc = (size_t)B * T * C;
    CUDA_CHECK(cudaMemset(a.qkv, 0, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(a.dout, 0, btc * sizeof(floatX)));
    float fwd = time_ms([&] { attention_forward_cuda(ctx, &a.s, a.out, a.att, a.qkv, B, T, C, NH); }, 5);
    float bwd = time_ms([&] {
        attention_backward_cuda(ctx, &a.s, a.dqkv, a.dout, a.qkv, a.att, B, T, C, NH);
    }, 5);
    printf("RESULT attention %s B=%d T=%d C=%d NH=%d fwd %.3f ms | bwd %.3f ms\n", FLOATX_NAME, B, T,
           C, NH, fwd, bwd);
    free_buffers(&a);
}

int main(void) {
    if (!cuda_device_present("dev/cuda/attention")) return EXIT_SUCCESS;
    MatmulContext ctx;
    matmul_context_create(&ctx);
    DevRng rng = {0x853C49E6748FEA9Bull};
    int ok = 1;
    ok &= check(&ctx, 2, 40, 48, 3, &rng);
    ok &= check(&ctx, 1, 17, 64, 4, &rng);
    if (!dev_check_only()) timing(&ctx, 8, 1024, 768, 12);
    matmul_context_destroy(&ctx);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
