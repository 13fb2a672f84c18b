// Bidirectional flash attention (llmc/flash_attention.cuh, CAUSAL = false,
// ViT's attention) against the CPU attention (llmc/attention_bidir.c, the
// ViT trainer's oracle) on random q, k, v: the output and dqkv at head sizes
// 8 .. 128 and T not a multiple of the tiles (every query sees keys of
// several tiles); the backward run twice must agree bit for bit (no
// atomics). Then timed at ViT-B/16's shape at 224x224 (B=32, T=197, NH=12, hs=64).
#include <math.h>
#include <string.h>

#include "common.cuh"
#include "flash_attention.cuh"

extern "C" {
#include "attention_bidir.h"
}

static const double TOL = sizeof(floatX) == 4 ? 1e-4 : 3e-2;

static int check(int B, int T, int C, int NH, DevRng *rng) {
    printf("bidirectional attention B=%d T=%d C=%d NH=%d hs=%d (%s):\n", B, T, C, NH, C / NH,
           FLOATX_NAME);
    const size_t btc = (size_t)B * T * C, rows = (size_t)B * NH * T;
    floatX *h = (floatX *)host_alloc(3 * btc * sizeof(floatX));
    float *qkv = (float *)host_alloc(3 * btc * 4), *dout = (float *)host_alloc(btc * 4);
    fill_random(h, qkv, 3 * btc, rng, 0.0f, 1.0f);
    floatX *d_qkv = to_device(h, 3 * btc);
    fill_random(h, dout, btc, rng, 0.0f, 1.0f);
    floatX *d_dout = to_device(h, btc);
    floatX *d_out, *d_dqkv;
    float *d_lse, *d_D;
    CUDA_CHECK(cudaMalloc(&d_out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dqkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_lse, rows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_D, rows * sizeof(float)));
    flash_attention_forward_any<false>(d_out, d_lse, d_qkv, B, T, C, NH, 0);
    flash_attention_backward_any<false>(d_dqkv, d_D, d_dout, d_out, d_qkv, d_lse, B, T, C, NH, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle: the CPU trainer's attention on the same (rounded) inputs, one group per image
    float *out = (float *)host_alloc(btc * 4), *dqkv = (float *)host_alloc(3 * btc * 4);
    float *att = (float *)host_alloc((size_t)B * NH * T * T * 4);
    attention_bidir_forward(out, att, qkv, NULL, 0, NULL, 0, B, T, C, NH);
    attention_bidir_backward(dqkv, NULL, dout, qkv, att, NULL, 0, B, T, C, NH);
    double *ref = (double *)host_alloc(3 * btc * 8);
    float *got = (float *)host_alloc(3 * btc * 4), *again = (float *)host_alloc(3 * btc * 4);
    int ok = 1;
    for (size_t i = 0; i < btc; i++) ref[i] = out[i];
    floatx_to_host(got, d_out, btc);
    ok &= check_tensor("out", got, ref, btc, TOL);
    for (size_t i = 0; i < 3 * btc; i++) ref[i] = dqkv[i];
    floatx_to_host(got, d_dqkv, 3 * btc);
    ok &= check_tensor("dqkv", got, ref, 3 * btc, TOL);
    CUDA_CHECK(cudaMemset(d_dqkv, 0, 3 * btc * sizeof(floatX)));
    flash_attention_backward_any<false>(d_dqkv, d_D, d_dout, d_out, d_qkv, d_lse, B, T, C, NH, 0);
    floatx_to_host(again, d_dqkv, 3 * btc);
    const int same = memcmp(got, again, 3 * btc * 4) == 0;
    printf("  %-16s %s\n", "dqkv repeated", same ? "bit-identical ok" : "differs FAIL");
    ok &= same;
    void *dev[] = {d_qkv, d_dout, d_out, d_dqkv, d_lse, d_D};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {h, qkv, dout, out, dqkv, att, ref, got, again};
    for (void *p : host) free(p);
    return ok;
}

static void timing(int B, int T, int C, int NH) {
    const size_t btc = (size_t)B * T * C, rows = (size_t)B * NH * T;
    floatX *qkv, *out, *dout, *dqkv;
    float *lse, *D;
    CUDA_CHECK(cudaMalloc(&qkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dqkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dout, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&lse, rows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&D, rows * sizeof(float)));
    CUDA_CHECK(cudaMemset(qkv, 0, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dout, 0, btc * sizeof(floatX)));
    float fwd = time_ms([&] { flash_attention_forward_any<false>(out, lse, qkv, B, T, C, NH, 0); }, 5);
    float bwd = time_ms([&] {
        flash_attention_backward_any<false>(dqkv, D, dout, out, qkv, lse, B, T, C, NH, 0);
    }, 5);
    printf("RESULT attention_bidir %s B=%d T=%d C=%d NH=%d fwd %.3f ms | bwd %.3f ms\n",
           FLOATX_NAME, B, T, C, NH, fwd, bwd);
    void *dev[] = {qkv, dqkv, out, dout, lse, D};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
}

int main(void) {
    if (!cuda_device_present("dev/cuda/attention_bidir")) return EXIT_SUCCESS;
    DevRng rng = {0x5DEECE66Dull};
    int ok = 1;
    ok &= check(2, 50, 24, 3, &rng);   // hs 8: ViT on Fashion-MNIST (7x7 patches + cls), 2 tiles
    ok &= check(1, 17, 64, 4, &rng);   // hs 16, T below one block of rows
    ok &= check(2, 33, 96, 3, &rng);   // hs 32, the last tile has one key
    ok &= check(1, 70, 256, 2, &rng);  // hs 128: above 48 KiB of shared memory, three tiles
    if (!dev_check_only()) timing(32, 197, 768, 12);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
