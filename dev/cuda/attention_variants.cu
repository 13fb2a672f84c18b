// GPT-2's causal attentions side by side, run as the trainer runs them
// (llmc/cuda/attention_layers.cuh, one layer): tc (tensor cores,
// flash_attention_tc.cuh; bf16 builds only), cublas (batched cuBLAS +
// softmax, attention.cuh), flash (fp32 FMAs, flash_attention.cuh) and cudnn
// (cuDNN's fused attention, cudnn_attention.cuh; bf16 builds with cuDNN). Each
// is checked against the CPU trainer's attention (llmc/kernels/attention.c)
// on random q, k, v, dy: out, lse (the flash-style kinds), dq, dk and dv at
// head sizes 8 to 128 (8, 48: tc pads to 16, 64) and T not a multiple of the
// tiles; a second backward must give the same bits (no atomics). Then each
// is timed at GPT-2 124M's shape (B=16, T=1024, NH=12, hs=64), forward and
// backward, one row per kind. Optional argument: a decimal seed;
// DEV_CUDA_CHECK_ONLY=1: the checks only.
#include "attention_check.cuh"

// max |gpu - cpu| / max |cpu| per tensor. fp32: sums of <= T products in other
// orders. bf16: q, k, v, dy are bf16 (the CPU reads the same rounded values),
// the products accumulate in fp32 and the outputs are rounded to bf16 (2^-9
// of the largest value); tc also rounds P and dS to bf16 as mma operands
// (2^-9 relative each, averaging out over the T terms of a sum) and cublas
// stores att and dpreatt in bf16. Largest errors measured under emulation
// (seeds 1-10, docs/cuda.md): tc out 3.0e-3, dq 5.4e-3, dk 6.9e-3, dv 3.6e-3
// (cublas 3.8e-3, 5.8e-3, 6.7e-3, 3.6e-3; flash 2.0e-3, 3.8e-3, 4.0e-3, 3.6e-3);
// the device sums the mma products in another order and its fast-math expf
// differs, hence ~3x for tc: 2e-2. flash and cublas keep the 3e-2 of their own
// dev checks (dev/cuda/flash_attention.cu, dev/cuda/attention.cu), cudnn that
// of dev/cuda/cudnn_attention.cu (the same reasoning: bf16 P and dS operands).
static double tolerance(AttentionKind k) {
    if (sizeof(floatX) == 4) return k == ATTENTION_CUBLAS ? 1e-5 : 1e-4;
    return k == ATTENTION_TC ? 2e-2 : 3e-2;
}
// lse (absolute, it is O(log T)): the scores are fp32 sums of exact bf16
// products in both, so only the order of the sums and expf/logf differ
// (measured: 9.5e-7 for tc and flash)
static const double LSE_TOL = 1e-4;

static const AttentionKind KINDS[] = {ATTENTION_TC, ATTENTION_CUBLAS, ATTENTION_FLASH, ATTENTION_CUDNN};

static int check(const MatmulContext *mm, int B, int T, int C, int NH, DevRng *rng) {
    printf("causal attention B=%d T=%d C=%d NH=%d hs=%d (%s):\n", B, T, C, NH, C / NH, FLOATX_NAME);
    return attention_check_kinds(KINDS, sizeof(KINDS) / sizeof(KINDS[0]), true, mm, B, T, C, NH,
                                 rng, tolerance, LSE_TOL);
}

// forward and backward of each kind at (B, T, C, NH): ms and the TFLOP/s of the
// useful causal flops (S = Q K^T and O = P V forward, 4 B NH T^2 hs / 2; the
// backward's five products, 10 B NH T^2 hs / 2): docs/cuda.md counts what each
// kind executes
static void timing(const MatmulContext *mm, int B, int T, int C, int NH) {
    const size_t btc = (size_t)B * T * C;
    const double work = (double)B * NH * T * T * (C / NH) / 2.0;
    floatX *qkv, *out, *dout, *dqkv;
    CUDA_CHECK(cudaMalloc(&qkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dqkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dout, btc * sizeof(floatX)));
    // small random values: every exp finite, no denormal shortcuts
    floatX *h = (floatX *)host_alloc(3 * btc * sizeof(floatX));
    float *unused = (float *)host_alloc(3 * btc * 4);
    DevRng rng = {0x243F6A8885A308D3ull};
    fill_random(h, unused, 3 * btc, &rng, 0.0f, 0.5f);
    CUDA_CHECK(cudaMemcpy(qkv, h, 3 * btc * sizeof(floatX), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dout, h, btc * sizeof(floatX), cudaMemcpyHostToDevice));
    printf("timing: causal attention %s B=%d T=%d C=%d NH=%d hs=%d, one layer; TFLOP/s of "
           "4 (fwd), 10 (bwd) x B NH T^2 hs / 2\n",
           FLOATX_NAME, B, T, C, NH, C / NH);
    for (AttentionKind k : KINDS) {
        if (attention_kind_refusal(k, false) != NULL) continue;
        float fwd, bwd;
        attention_time_kind(k, true, mm, out, dqkv, qkv, dout, B, T, C, NH, 10, &fwd, &bwd);
        printf("RESULT attention_variants %-6s %s B=%d T=%d C=%d NH=%d | fwd %8.3f ms %7.1f TFLOP/s "
               "| bwd %8.3f ms %7.1f TFLOP/s\n",
               attention_kind_name(k), FLOATX_NAME, B, T, C, NH, fwd, 4.0 * work / (fwd * 1e9),
               bwd, 10.0 * work / (bwd * 1e9));
    }
    void *dev[] = {qkv, dqkv, out, dout};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    free(h);
    free(unused);
}

int main(int argc, char **argv) {
    DevRng rng = dev_rng_from_args(argc, argv, 0xB7E151628AED2A6Bull); // [SEED]
    if (!cuda_device_present("dev/cuda/attention_variants")) return EXIT_SUCCESS;
    MatmulContext mm;
    matmul_context_create(&mm);
    int ok = 1;
    ok &= check(&mm, 2, 24, 48, 6, &rng);  // hs 8 (the emulated GPT-2 tests' odd shape): tc pads to 16
    ok &= check(&mm, 2, 40, 48, 3, &rng);  // hs 16, T < one 64-row tile
    ok &= check(&mm, 2, 33, 96, 3, &rng);  // hs 32, the last 16-key chunk has one key
    ok &= check(&mm, 1, 130, 64, 2, &rng); // hs 32, three 64-row tiles, the last of 2 rows
    ok &= check(&mm, 1, 37, 96, 2, &rng);  // hs 48: tc pads to 64
    ok &= check(&mm, 1, 100, 128, 2, &rng); // hs 64 (GPT-2's), two tiles, the second of 36 rows
    ok &= check(&mm, 1, 70, 256, 2, &rng); // hs 128: above 48 KiB of shared memory; 32-key tiles in the backward
    if (!dev_check_only()) timing(&mm, 16, 1024, 768, 12); // d12: one layer's attention at B=16
    matmul_context_destroy(&mm);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
