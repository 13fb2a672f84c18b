// ViT's bidirectional attention, run as the model runs it
// (llmc/cuda/attention_layers.cuh with causal = false, one layer), in each
// kind: tc (tensor cores, flash_attention_tc.cuh; bf16 builds only), cublas
// (batched cuBLAS + softmax, attention.cuh) and flash (fp32 FMAs,
// flash_attention.cuh), against the CPU attention (llmc/kernels/attention_bidir.c,
// the ViT trainer's oracle) on random q, k, v: the output and dq, dk, dv at
// head sizes 8 .. 128 and T not a multiple of the tiles (every query sees
// keys of several tiles); the backward run twice must agree bit for bit (no
// atomics). Then timed at ViT-B/16's shape at 224x224 (B=32, T=197, NH=12, hs=64).
// Optional argument: a decimal seed.
#include "attention_check.cuh"

// max |gpu - cpu| / max |cpu|: fp32 1e-4 (sums in other orders); bf16 3e-2 (flash,
// cublas: bf16 inputs and outputs, cublas's att in bf16), 2e-2 for tc (also P and
// dS rounded to bf16 as mma operands; the largest measured under emulation over
// seeds 1-10: out 4.8e-3, dq, dk, dv 4.2e-3; ~4x for the device's sum order and expf)
static double tolerance(AttentionKind k) {
    if (sizeof(floatX) == 4) return 1e-4;
    return k == ATTENTION_TC ? 2e-2 : 3e-2;
}

static const AttentionKind KINDS[] = {ATTENTION_TC, ATTENTION_CUBLAS, ATTENTION_FLASH};

static int check(const MatmulContext *mm, int B, int T, int C, int NH, DevRng *rng) {
    printf("bidirectional attention B=%d T=%d C=%d NH=%d hs=%d (%s):\n", B, T, C, NH, C / NH,
           FLOATX_NAME);
    // the oracle: the CPU trainer's attention (attention_bidir.c), one group per image
    return attention_check_kinds(KINDS, sizeof(KINDS) / sizeof(KINDS[0]), false, mm, B, T, C, NH,
                                 rng, tolerance, 0.0); // no lse to check
}

static void timing(const MatmulContext *mm, int B, int T, int C, int NH) {
    const size_t btc = (size_t)B * T * C;
    floatX *qkv, *out, *dout, *dqkv;
    CUDA_CHECK(cudaMalloc(&qkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dqkv, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dout, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(qkv, 0, 3 * btc * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dout, 0, btc * sizeof(floatX)));
    for (AttentionKind k : KINDS) {
        if (attention_kind_refusal(k, false) != NULL) continue;
        float fwd, bwd;
        attention_time_kind(k, false, mm, out, dqkv, qkv, dout, B, T, C, NH, 5, &fwd, &bwd);
        printf("RESULT attention_bidir %s %s B=%d T=%d C=%d NH=%d fwd %.3f ms | bwd %.3f ms\n",
               attention_kind_name(k), FLOATX_NAME, B, T, C, NH, fwd, bwd);
    }
    void *dev[] = {qkv, dqkv, out, dout};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
}

int main(int argc, char **argv) {
    DevRng rng = dev_rng_from_args(argc, argv, 0x5DEECE66Dull); // [SEED]
    if (!cuda_device_present("dev/cuda/attention_bidir")) return EXIT_SUCCESS;
    MatmulContext mm;
    matmul_context_create(&mm);
    int ok = 1;
    ok &= check(&mm, 2, 50, 24, 3, &rng);  // hs 8: ViT on Fashion-MNIST (7x7 patches + cls); tc pads to 16
    ok &= check(&mm, 1, 17, 64, 4, &rng);  // hs 16, T below one block of rows
    ok &= check(&mm, 2, 33, 96, 3, &rng);  // hs 32, the last tile has one key
    ok &= check(&mm, 1, 97, 128, 2, &rng); // hs 64: two 64-row tiles, the second of 33
    ok &= check(&mm, 1, 70, 256, 2, &rng); // hs 128: above 48 KiB of shared memory, three tiles
    ok &= check(&mm, 1, 150, 64, 2, &rng); // hs 32: two 128-row forward blocks, two 128-key backward blocks
    if (!dev_check_only()) timing(&mm, 32, 197, 768, 12);
    matmul_context_destroy(&mm);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
