// cuDNN's fused attention (llmc/cuda/cudnn_attention.cuh) against the CPU
// attention (llmc/kernels/attention.c causal, attention_bidir.c
// bidirectional: the trainers' oracles) on random q, k, v: out, the stats
// (against the oracle's log-sum-exp and flash_attention.cuh's lse: the same
// definition, so either backward can take either forward's) and dqkv, at
// head sizes 32, 64 and 128 and T not a multiple of 64; the backward run
// twice must agree bit for bit where the engine is deterministic. Then a
// GPT-2-shaped pair of layers on the trainer's buffers (per-layer offsets
// into acts.qkv, atty, lse) against the flash kernels. On a device, timed
// beside the flash kernels at GPT-2 124M's shape (B=8, T=1024, NH=12, hs=64).
// bf16 only (cuDNN's SDPA takes fp16/bf16): an fp32 build or one without cuDNN
// prints "NOT APPLICABLE: <why>" (not SKIP, which the device check reads as
// "no device"), after what the trainers' -at cudnn says there.
#include <math.h>
#include <string.h>

#include "common.cuh"
#include "cuda/attention_kind.cuh"
#include "cuda/cudnn_attention.cuh"
#include "cuda/flash_attention.cuh"

extern "C" {
#include "kernels/attention.h"
#include "kernels/attention_bidir.h"
}

#ifdef FOLDNORM_CUDNN_ATTENTION

// bf16 tolerance, max|err| / max|ref| (flash_attention.cu's): the inputs are the
// same bf16 values on both sides; the error is cuDNN's own rounding (P, P^T and
// dS^T to bf16 before their products, the outputs to bf16: 2^-9 relative each,
// fp32 accumulation) plus, on a device, its exp2-based softmax. The stats stay
// fp32 end to end (bf16 only in the shared inputs): 1e-3.
static const double TOL = 3e-2, STATS_TOL = 1e-3;

// the log-sum-exp of each row's scaled scores, in double: (B, NH, T)
static void lse_reference(double *lse, const float *qkv, int B, int T, int C, int NH, bool causal) {
    const int hs = C / NH;
    const double scale = 1.0 / sqrt((double)hs);
    double *s = (double *)host_alloc((size_t)T * sizeof(double));
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * hs;
                const int keys = causal ? t + 1 : T;
                double m = -INFINITY, z = 0.0;
                for (int j = 0; j < keys; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + (size_t)h * hs;
                    double d = 0.0;
                    for (int i = 0; i < hs; i++) d += (double)q[i] * k[i];
                    s[j] = d * scale;
                    if (s[j] > m) m = s[j];
                }
                for (int j = 0; j < keys; j++) z += exp(s[j] - m);
                lse[((size_t)b * NH + h) * T + t] = m + log(z);
            }
        }
    }
    free(s);
}

static int check(int B, int T, int NH, int hs, bool causal, DevRng *rng) {
    const int C = NH * hs;
    printf("cudnn attention B=%d T=%d C=%d NH=%d hs=%d %s (%s):\n", B, T, C, NH, hs,
           causal ? "causal" : "bidirectional", FLOATX_NAME);
    const size_t btc = (size_t)B * T * C, rows = (size_t)B * NH * T;
    floatX *h = (floatX *)host_alloc(3 * btc * sizeof(floatX));
    float *qkv = (float *)host_alloc(3 * btc * 4), *dout = (float *)host_alloc(btc * 4);
    fill_random(h, qkv, 3 * btc, rng, 0.0f, 1.0f);
    floatX *d_qkv = to_device(h, 3 * btc);
    fill_random(h, dout, btc, rng, 0.0f, 1.0f);
    floatX *d_dout = to_device(h, btc);
    floatX *d_out, *d_dqkv, *d_flash_out;
    float *d_stats, *d_lse;
    CUDA_CHECK(cudaMalloc(&d_out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_flash_out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dqkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_stats, rows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_lse, rows * sizeof(float)));
    CudnnAttention *att = cudnn_attention_create(B, T, NH, hs, causal, 0);
    printf("  engines: forward %lld, backward %lld (%s), workspace %zu bytes\n",
           (long long)att->fwd.engine_index, (long long)att->bwd.engine_index,
           cudnn_attention_deterministic(att) ? "deterministic" : "NONDETERMINISTIC",
           att->workspace_bytes);
    cudnn_attention_forward(att, d_out, d_stats, d_qkv);
    cudnn_attention_backward(att, d_dqkv, d_dout, d_out, d_stats, d_qkv);
    if (causal) flash_attention_forward_cuda(d_flash_out, d_lse, d_qkv, B, T, C, NH, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle on the same (rounded) inputs
    float *out = (float *)host_alloc(btc * 4), *dqkv = (float *)host_alloc(3 * btc * 4);
    float *lse = (float *)host_alloc(rows * 4);
    double *ref = (double *)host_alloc(3 * btc * 8);
    if (causal) {
        attention_forward(out, lse, qkv, B, T, C, NH);
        memset(dqkv, 0, 3 * btc * 4);
        attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH);
    } else {
        float *p = (float *)host_alloc((size_t)B * NH * T * T * 4);
        attention_bidir_forward(out, p, qkv, NULL, 0, NULL, 0, B, T, C, NH);
        attention_bidir_backward(dqkv, NULL, dout, qkv, p, NULL, 0, B, T, C, NH);
        free(p);
    }
    float *got = (float *)host_alloc(3 * btc * 4), *again = (float *)host_alloc(3 * btc * 4);
    int ok = 1;
    for (size_t i = 0; i < btc; i++) ref[i] = out[i];
    floatx_to_host(got, d_out, btc);
    ok &= check_tensor("out", got, ref, btc, TOL);
    lse_reference(ref, qkv, B, T, C, NH, causal);
    float_to_host(got, d_stats, rows);
    ok &= check_tensor("stats", got, ref, rows, STATS_TOL);
    if (causal) { // flash's lse: interchangeable with the stats
        float_to_host(again, d_lse, rows);
        for (size_t i = 0; i < rows; i++) ref[i] = again[i];
        ok &= check_tensor("stats vs flash", got, ref, rows, STATS_TOL);
    }
    for (size_t i = 0; i < 3 * btc; i++) ref[i] = dqkv[i];
    floatx_to_host(got, d_dqkv, 3 * btc);
    ok &= check_tensor("dqkv", got, ref, 3 * btc, TOL);
    // a second backward: the same bits where the engine is deterministic
    CUDA_CHECK(cudaMemset(d_dqkv, 0, 3 * btc * sizeof(floatX)));
    cudnn_attention_backward(att, d_dqkv, d_dout, d_out, d_stats, d_qkv);
    floatx_to_host(again, d_dqkv, 3 * btc);
    const int same = memcmp(got, again, 3 * btc * 4) == 0;
    const bool required = cudnn_attention_deterministic(att);
    printf("  %-16s %s\n", "dqkv repeated",
           same ? "bit-identical ok" : required ? "differs FAIL" : "differs (nondeterministic engine)");
    ok &= same || !required;
    cudnn_attention_free(att);
    void *dev[] = {d_qkv, d_dout, d_out, d_dqkv, d_stats, d_lse, d_flash_out};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {h, qkv, dout, out, dqkv, lse, ref, got, again};
    for (void *p : host) free(p);
    return ok;
}

// two layers of GPT-2's attention on the trainer's buffers, per-layer offsets
// as gpt2_cuda.cuh takes them: qkv (L, B, T, 3C), atty (L, B, T, C), lse (L, B, NH, T);
// cuDNN against the flash kernels, forward and backward
static int check_layers(int L, int B, int T, int NH, int hs, DevRng *rng) {
    const int C = NH * hs;
    printf("cudnn attention vs flash, %d layers on the trainer's buffers B=%d T=%d C=%d NH=%d:\n", L,
           B, T, C, NH);
    const size_t btc = (size_t)B * T * C, rows = (size_t)B * NH * T;
    floatX *h = (floatX *)host_alloc(3 * L * btc * sizeof(floatX));
    float *tmp = (float *)host_alloc(3 * L * btc * 4);
    fill_random(h, tmp, 3 * L * btc, rng, 0.0f, 1.0f);
    floatX *qkv = to_device(h, 3 * L * btc);
    fill_random(h, tmp, btc, rng, 0.0f, 1.0f);
    floatX *datty = to_device(h, btc);
    floatX *atty[2], *dqkv[2];
    float *lse[2], *D;
    for (int k = 0; k < 2; k++) {
        CUDA_CHECK(cudaMalloc(&atty[k], L * btc * sizeof(floatX)));
        CUDA_CHECK(cudaMalloc(&lse[k], L * rows * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&dqkv[k], 3 * btc * sizeof(floatX)));
    }
    CUDA_CHECK(cudaMalloc(&D, rows * sizeof(float)));
    CudnnAttention *att = cudnn_attention_create(B, T, NH, hs, true, 0);
    float *a = (float *)host_alloc(3 * btc * 4), *b = (float *)host_alloc(3 * btc * 4);
    double *ref = (double *)host_alloc(3 * btc * 8);
    int ok = 1;
    for (int l = 0; l < L; l++) { // the forward, layer by layer
        const floatX *q = qkv + 3 * l * btc;
        cudnn_attention_forward(att, atty[0] + l * btc, lse[0] + l * rows, q);
        flash_attention_forward_cuda(atty[1] + l * btc, lse[1] + l * rows, q, B, T, C, NH, 0);
    }
    for (int l = L - 1; l >= 0; l--) { // the backward, last layer first, into one dqkv scratch
        const floatX *q = qkv + 3 * l * btc;
        cudnn_attention_backward(att, dqkv[0], datty, atty[0] + l * btc, lse[0] + l * rows, q);
        flash_attention_backward_cuda(dqkv[1], D, datty, atty[1] + l * btc, q, lse[1] + l * rows, B,
                                      T, C, NH, 0);
        char what[32];
        snprintf(what, sizeof(what), "layer %d out", l);
        floatx_to_host(a, atty[0] + l * btc, btc);
        floatx_to_host(b, atty[1] + l * btc, btc);
        for (size_t i = 0; i < btc; i++) ref[i] = b[i];
        ok &= check_tensor(what, a, ref, btc, TOL);
        snprintf(what, sizeof(what), "layer %d stats", l);
        float_to_host(a, lse[0] + l * rows, rows);
        float_to_host(b, lse[1] + l * rows, rows);
        for (size_t i = 0; i < rows; i++) ref[i] = b[i];
        ok &= check_tensor(what, a, ref, rows, STATS_TOL);
        snprintf(what, sizeof(what), "layer %d dqkv", l);
        floatx_to_host(a, dqkv[0], 3 * btc);
        floatx_to_host(b, dqkv[1], 3 * btc);
        for (size_t i = 0; i < 3 * btc; i++) ref[i] = b[i];
        ok &= check_tensor(what, a, ref, 3 * btc, TOL);
    }
    cudnn_attention_free(att);
    for (int k = 0; k < 2; k++) {
        CUDA_CHECK(cudaFree(atty[k]));
        CUDA_CHECK(cudaFree(lse[k]));
        CUDA_CHECK(cudaFree(dqkv[k]));
    }
    void *dev[] = {qkv, datty, D};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {h, tmp, a, b, ref};
    for (void *p : host) free(p);
    return ok;
}

static void timing(int B, int T, int NH, int hs) {
    const int C = NH * hs;
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
    CudnnAttention *att = cudnn_attention_create(B, T, NH, hs, true, 0);
    // causal: half the scores; the backward's five products against the forward's two
    const double fwd_flops = 4.0 * B * NH * (double)T * T * hs / 2, bwd_flops = 2.5 * fwd_flops;
    const float cf = time_ms([&] { cudnn_attention_forward(att, out, lse, qkv); }, 5);
    const float cb = time_ms([&] { cudnn_attention_backward(att, dqkv, dout, out, lse, qkv); }, 5);
    const float ff = time_ms([&] { flash_attention_forward_cuda(out, lse, qkv, B, T, C, NH, 0); }, 5);
    const float fb = time_ms([&] {
        flash_attention_backward_cuda(dqkv, D, dout, out, qkv, lse, B, T, C, NH, 0);
    }, 5);
    const char *names[2] = {"cudnn_attention", "flash_attention"};
    const float ms[2][2] = {{cf, cb}, {ff, fb}};
    for (int k = 0; k < 2; k++) {
        printf("RESULT %s %s B=%d T=%d C=%d NH=%d fwd %.3f ms (%.1f TFLOP/s) | bwd %.3f ms (%.1f TFLOP/s)\n",
               names[k], FLOATX_NAME, B, T, C, NH, ms[k][0], fwd_flops / (ms[k][0] * 1e9),
               ms[k][1], bwd_flops / (ms[k][1] * 1e9));
    }
    printf("RESULT cudnn_attention engines: forward %lld, backward %lld (%s), workspace %zu bytes\n",
           (long long)att->fwd.engine_index, (long long)att->bwd.engine_index,
           cudnn_attention_deterministic(att) ? "deterministic" : "NONDETERMINISTIC",
           att->workspace_bytes);
    cudnn_attention_free(att);
    void *dev[] = {qkv, dqkv, out, dout, lse, D};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
}

#endif

int main(void) {
    if (!cuda_device_present("dev/cuda/cudnn_attention")) return EXIT_SUCCESS;
    const char *why = cudnn_attention_unavailable();
    if (why != NULL) {
        printf("-at cudnn: %s\n", attention_kind_refusal(ATTENTION_CUDNN, false));
        printf("NOT APPLICABLE: dev/cuda/cudnn_attention: %s\n", why);
        return EXIT_SUCCESS;
    }
#ifdef FOLDNORM_CUDNN_ATTENTION
    DevRng rng = {0x2545F4914F6CDD1Dull};
    int ok = 1;
    ok &= check(2, 100, 2, 32, true, &rng);  // hs 32, T between two 64-row tiles
    ok &= check(1, 77, 3, 64, true, &rng);   // hs 64
    ok &= check(1, 70, 2, 128, true, &rng);  // hs 128
    ok &= check(2, 50, 2, 64, false, &rng);  // ViT's bidirectional attention
    ok &= check(1, 65, 4, 32, false, &rng);
    ok &= check_layers(2, 2, 40, 2, 64, &rng);
    if (!dev_check_only()) timing(8, 1024, 12, 64);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
#endif
}
