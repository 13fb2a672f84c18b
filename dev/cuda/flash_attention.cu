// Flash attention (llmc/cuda/flash_attention.cuh) against the CPU attention
// (llmc/kernels/attention.c, the trainer's oracle) on random q, k, v: the output and
// dqkv, at head sizes 16 .. 128 and T not a multiple of the tiles; the
// backward run twice must agree bit for bit (no atomics). Then timed at
// GPT-2 124M's shape (B=8, T=1024, NH=12, hs=64).
#include <math.h>
#include <string.h>

#include "common.cuh"
#include "cuda/flash_attention.cuh"

extern "C" {
#include "kernels/attention.h"
}

static const double TOL = sizeof(floatX) == 4 ? 1e-4 : 3e-2;

static int check(int B, int T, int C, int NH, DevRng *rng) {
    printf("flash attention B=%d T=%d C=%d NH=%d hs=%d (%s):\n", B, T, C, NH, C / NH, FLOATX_NAME);
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
    flash_attention_forward_cuda(d_out, d_lse, d_qkv, B, T, C, NH, 0);
    flash_attention_backward_cuda(d_dqkv, d_D, d_dout, d_out, d_qkv, d_lse, B, T, C, NH, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle: the CPU trainer's attention on the same (rounded) inputs
    float *out = (float *)host_alloc(btc * 4), *dqkv = (float *)host_alloc(3 * btc * 4);
    float *lse = (float *)host_alloc(rows * 4);
    attention_forward(out, lse, qkv, B, T, C, NH);
    memset(dqkv, 0, 3 * btc * 4);
    attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH);
    double *ref = (double *)host_alloc(3 * btc * 8);
    float *got = (float *)host_alloc(3 * btc * 4), *again = (float *)host_alloc(3 * btc * 4);
    int ok = 1;
    for (size_t i = 0; i < btc; i++) ref[i] = out[i];
    floatx_to_host(got, d_out, btc);
    ok &= check_tensor("out", got, ref, btc, TOL);
    for (size_t i = 0; i < 3 * btc; i++) ref[i] = dqkv[i];
    floatx_to_host(got, d_dqkv, 3 * btc);
    ok &= check_tensor("dqkv", got, ref, 3 * btc, TOL);
    // determinism: a second backward writes the same bits
    CUDA_CHECK(cudaMemset(d_dqkv, 0, 3 * btc * sizeof(floatX)));
    flash_attention_backward_cuda(d_dqkv, d_D, d_dout, d_out, d_qkv, d_lse, B, T, C, NH, 0);
    floatx_to_host(again, d_dqkv, 3 * btc);
    const int same = memcmp(got, again, 3 * btc * 4) == 0;
    printf("  %-16s %s\n", "dqkv repeated", same ? "bit-identical ok" : "differs FAIL");
    ok &= same;
    void *dev[] = {d_qkv, d_dout, d_out, d_dqkv, d_lse, d_D};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {h, qkv, dout, out, dqkv, lse, ref, got, again};
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
    float fwd = time_ms([&] { flash_attention_forward_cuda(out, lse, qkv, B, T, C, NH, 0); }, 5);
    float bwd = time_ms([&] {
        flash_attention_backward_cuda(dqkv, D, dout, out, qkv, lse, B, T, C, NH, 0);
    }, 5);
    printf("RESULT flash_attention %s B=%d T=%d C=%d NH=%d fwd %.3f ms | bwd %.3f ms\n",
           FLOATX_NAME, B, T, C, NH, fwd, bwd);
    void *dev[] = {qkv, dqkv, out, dout, lse, D};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
}

int main(void) {
    if (!cuda_device_present("dev/cuda/flash_attention")) return EXIT_SUCCESS;
    DevRng rng = {0x9E3779B97F4A7C15ull};
    int ok = 1;
    ok &= check(2, 40, 48, 3, &rng);   // hs 16, T spans two tiles
    ok &= check(1, 17, 64, 4, &rng);   // hs 16, T below one block of rows
    ok &= check(2, 33, 96, 3, &rng);   // hs 32
    ok &= check(1, 70, 256, 2, &rng);  // hs 128: above 48 KiB of shared memory, three tiles
    if (!dev_check_only()) timing(8, 1024, 768, 12);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
