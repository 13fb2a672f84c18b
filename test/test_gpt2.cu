// GPU GPT-2 against an independent reference and against the CPU trainer:
//   1. logits, loss, every parameter gradient and the losses of N AdamW steps
//      against a debug state of dev/reference/gpt2.py (as test/test_gpt2.c);
//   2. --equivalence K: modes ln and cbwc from the same weights give the same
//      logits, gradients and K step losses on the GPU; rms's gradients must not (control);
//   3. --curve K: K AdamW steps on fresh random batches, the GPU model and the
//      CPU model of llmc/gpt2/gpt2.c side by side: the loss curves must agree;
//   4. --dropout P: residual dropout (-rd P) on the GPU against the CPU model:
//      the dropout kernel's output equals dropout_apply's bit for bit, and
//      with the same seed and draws the train-mode loss and every gradient
//      match the CPU's (so the masks are the same ones);
//   5. --recompute 1: -r 1 and 2 against -r 0, bit for bit with the epilogues
//      separate, -r 2 against -r 1 with them fused (check_recompute).
// Tolerances (max|ours - ref| / max|ref| per tensor; step losses and the
// curve: absolute loss differences): fp32 build 1e-4 (fp32 sums in other
// orders, ~1e-6, plus cuBLAS's blocked sums); bf16 build per check from
// BF16_TOLERANCES below; -r / -l set one tolerance for all instead.
// Without a CUDA device it prints "SKIP: no CUDA device (...)" and exits 0.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpt2_cuda.cuh"
#include "test_cuda_compare.h"

extern "C" {
#include "interop/debug_state.h" // the reader test/test_gpt2.c uses (llmc/interop/debug_state.c)
#include "core/rand.h"
#include "kernels/dropout.h"
}

// the equivalence's gradients at its last step (after its AdamW updates, all
// tensors as one vector, normwise ||a - b|| / ||b||): cbwc vs ln within this,
// rms vs ln beyond LAST_GRADS_CONTROL x this. Measured under emulation, 8
// steps on the state's batch, 3 seeds: bf16 cbwc vs ln 2.7e-2 .. 4.0e-2 (tol
// 8e-2: 2x), rms vs ln 0.19 .. 0.26 (>= 0.12: 1.57x the control's floor);
// fp32 cbwc vs ln ~1e-6. The step losses cannot be this control in bf16:
// rms vs ln there (2.5e-3 at one seed) is below the step-loss tolerance.
#define LAST_GRADS_TOL_BF16 8e-2
#define LAST_GRADS_TOL_FP32 1e-3
#define LAST_GRADS_CONTROL 1.5

// bf16: 2.5-4x the largest error measured under emulation (in brackets:
// fp32 accumulation, bf16 storage, libm exp/tanh) over 4 seeds x 3 modes x 2
// shapes (L=2 C=64 B=2 T=16; L=3 C=48 NH=6 V=301 T=24) and 2 seeds x 3
// modes at L=2 C=64 B=4 T=32 with the 20-step curve: headroom for the
// device's fast-math intrinsics and tensor-core sum orders, which the
// emulator does not reproduce. "cbwc X" (the equivalence) uses X's.
static const Bf16Tolerance BF16_TOLERANCES[] = {
    {"logits", 2e-2},              // 6.7e-3
    {"loss", 5e-4},                // 5.0e-5 (wider: the device's fast-math logf/expf)
    {"grad wte", 3e-2},            // 1.0e-2
    {"grad wpe", 3e-2},            // 1.2e-2
    {"grad ln1w", 3e-2},           // 9.6e-3
    {"grad ln1b", 2.5e-2},         // 9.0e-3
    {"grad qkvw", 3e-2},           // 1.1e-2
    {"grad qkvb", 3e-2},           // 1.1e-2
    {"grad attprojw", 2.5e-2},     // 8.8e-3
    {"grad attprojb", 2.5e-2},     // 9.3e-3
    {"grad ln2w", 4e-2},           // 1.4e-2 (1.56e-2 in issue 12's prototype run)
    {"grad ln2b", 3e-2},           // 1.1e-2
    {"grad fcw", 2.5e-2},          // 9.6e-3
    {"grad fcb", 2.5e-2},          // 8.4e-3
    {"grad fcprojw", 2.5e-2},      // 8.5e-3
    {"grad fcprojb", 2.5e-2},      // 8.0e-3
    {"grad lnfw", 2.5e-2},         // 8.2e-3
    {"grad lnfb", 1.5e-2},         // 4.7e-3
    // absolute: 2.3e-3; 5.8e-3 over 31 seeds at the shapes above; on dev/gpu/make_states.sh's
    // odd shape (L=3 C=96 NH=6, 5 steps at lr 3e-3) rms reaches 2.4e-2 (seed 104; 2.1e-2
    // over 30 seeds), as PyTorch with bf16-rounded matmuls and residual does (1.5e-2);
    // still separates lr x0.5 (1.1e-1) and x2 (4.2e-1); the fp32 build's 1e-4 finer errors
    {"AdamW step losses", 6e-2},
    {"step losses", 5e-3},         // cbwc vs ln: 6.5e-4 (absolute)
    {"curve gpu vs cpu", 5e-3},    // 6.1e-4 (absolute; wider: errors compound over 20 steps)
    {"last grads", LAST_GRADS_TOL_BF16}, // cbwc vs ln after the updates: see check_equivalence
};
// bf16_table off after -r or -l
static CheckTable checks = {BF16_TOLERANCES, sizeof(BF16_TOLERANCES) / sizeof(BF16_TOLERANCES[0]),
                            "test_gpt2cu", 22, false, sizeof(floatX) == 2};
static AttentionKind attention = attention_kind_default(false); // -at

static const char *param_name(const void *, int i) {
    return gpt2_param_name(i);
}

// the host model's parameter tensors, for check_grads
static ParamTensors param_tensors(const GPT2 *host) {
    return {GPT2_NUM_PARAM_TENSORS, host->param_sizes, param_name, host};
}

static int count_targets(const int *y, int n) {
    int c = 0;
    for (int i = 0; i < n; i++) c += y[i] >= 0;
    return c;
}

// 1. the reference state: logits, loss, gradients, N step losses
static int check_reference(const GPT2 *host, const GPT2DebugState *s, double rel_tol, double loss_tol) {
    const int V = host->config.vocab_size, Vp = host->config.padded_vocab_size;
    const size_t BT = (size_t)s->B * s->T;
    GPT2Cuda gpu;
    gpt2cuda_init(&gpu, host, s->B, s->T, 0, attention);
    int ok = 1;
    gpt2cuda_forward(&gpu, s->x, s->y, s->B, s->T, 0.0f);
    float *logits = (float *)malloc_check(BT * Vp * sizeof(float), "logits");
    gpt2cuda_logits_to_host(&gpu, logits);
    ok &= check(&checks, "logits", strided_relative_error(logits, s->logits, BT, V, Vp, V), rel_tol);
    ok &= check(&checks, "loss", fabs(gpt2cuda_mean_loss(&gpu) - s->loss) / fabs(s->loss), rel_tol);
    gpt2cuda_zero_grad(&gpu);
    gpt2cuda_backward(&gpu, 1.0f / (float)gpu.loss_tokens);
    float *grads = (float *)malloc_check(host->num_parameters * sizeof(float), "grads");
    gpt2cuda_grads_to_host(&gpu, grads);
    ok &= check_grads(&checks, param_tensors(host), grads, s->grads, rel_tol, "grad ");
    if (s->num_steps > 0) {
        double worst = 0.0;
        float last = 0.0f;
        for (int k = 0; k < s->num_steps; k++) {
            if (k > 0) gpt2cuda_update(&gpu, &s->adamw, s->grad_clip);
            gpt2cuda_zero_grad(&gpu);
            const float scale = 1.0f / (float)count_targets(s->y, (int)BT);
            gpt2cuda_forward(&gpu, s->x, s->y, s->B, s->T, scale);
            last = gpt2cuda_mean_loss(&gpu);
            gpt2cuda_backward(&gpu, scale);
            worst = worst_of(worst, fabs(last - s->losses[k]));
        }
        printf("  last step loss: gpu %.6f  reference %.6f\n", last, s->losses[s->num_steps - 1]);
        ok &= check(&checks, "AdamW step losses", worst, loss_tol);
    }
    free(logits);
    free(grads);
    gpt2cuda_free(&gpu);
    return ok;
}

static ModeRun run_mode(const GPT2 *host, NormMode mode, const GPT2DebugState *s, int steps) {
    GPT2 copy = *host;
    copy.mode = mode;
    GPT2Cuda gpu;
    gpt2cuda_init(&gpu, &copy, s->B, s->T, 0, attention);
    const size_t BT = (size_t)s->B * s->T;
    ModeRun r = {};
    r.logits = (float *)malloc_check(BT * host->config.padded_vocab_size * sizeof(float), "logits");
    r.grads = (float *)malloc_check(host->num_parameters * sizeof(float), "grads");
    r.losses = (float *)malloc_check((size_t)steps * sizeof(float), "losses");
    const float scale = 1.0f / (float)count_targets(s->y, (int)BT);
    for (int k = 0; k < steps; k++) {
        if (k > 0) gpt2cuda_update(&gpu, &s->adamw, s->grad_clip);
        gpt2cuda_zero_grad(&gpu);
        gpt2cuda_forward(&gpu, s->x, s->y, s->B, s->T, 0.0f);
        if (k == 0) gpt2cuda_logits_to_host(&gpu, r.logits);
        r.losses[k] = gpt2cuda_mean_loss(&gpu);
        gpt2cuda_backward(&gpu, scale);
        if (k == 0) gpt2cuda_grads_to_host(&gpu, r.grads);
        if (k > 0 && k == steps - 1) {
            r.last_grads = (float *)malloc_check(host->num_parameters * sizeof(float), "last grads");
            gpt2cuda_grads_to_host(&gpu, r.last_grads);
        }
    }
    gpt2cuda_free(&gpu);
    return r;
}

// 2. LN == CBWC+RMS from the same weights (docs/math.md section 2); rms differs
static int check_equivalence(const GPT2 *host, const GPT2DebugState *s, int steps, double rel_tol,
                             double loss_tol) {
    const size_t BT = (size_t)s->B * s->T, Vp = (size_t)host->config.padded_vocab_size;
    const int V = host->config.vocab_size;
    ModeRun ln = run_mode(host, MODE_LN, s, steps);
    ModeRun cbwc = run_mode(host, MODE_CBWC, s, steps);
    ModeRun rms = run_mode(host, MODE_RMS, s, steps);
    int ok = 1;
    printf("equivalence ln vs cbwc (%d AdamW steps on the state's batch):\n", steps);
    ok &= check(&checks, "cbwc logits", strided_relative_error(cbwc.logits, ln.logits, BT, V, Vp, Vp),
                rel_tol);
    ok &= check_grads(&checks, param_tensors(host), cbwc.grads, ln.grads, rel_tol, "cbwc grad ");
    ok &= check(&checks, "cbwc step losses", worst_loss_gap(cbwc.losses, ln.losses, steps),
                loss_tol);
    // the control: plain RMSNorm is another model, its gradients (all of them,
    // at step 0) must differ from ln's by far more than cbwc's do and by more
    // than rounding. Not the step losses: at this size they start near ln(V)
    // and drift apart too slowly to tell from bf16 noise in a few steps (seed
    // 760064511, -at cudnn: rms vs ln 2.5e-3 against cbwc vs ln 1.4e-3), so
    // they are printed only, as in test/test_vit.cu
    const double cbwc_gap = worst_loss_gap(cbwc.losses, ln.losses, steps);
    const double cbwc_grad_gap = relative_error(cbwc.grads, ln.grads, host->num_parameters);
    const double rms_grad_gap = relative_error(rms.grads, ln.grads, host->num_parameters);
    const double need = fmax(3.0 * cbwc_grad_gap, 1e-3);
    const int control = isfinite(rms_grad_gap) && rms_grad_gap > need;
    printf("  %-22s %.3e  (must exceed %.1e)  %s\n", "control: rms vs ln grads", rms_grad_gap, need,
           control ? "ok" : "FAIL");
    printf("  %-22s %.3e  (cbwc vs ln: %.3e)\n", "rms vs ln step losses",
           worst_loss_gap(rms.losses, ln.losses, steps), cbwc_gap);
    ok &= control;
    // a cbwc bug that shows only after an update: the gradients at the last
    // step (after steps - 1 AdamW updates), one vector of all tensors, cbwc vs
    // ln within "last grads" (bf16 LAST_GRADS_TOL_BF16, fp32 LAST_GRADS_TOL_FP32),
    // and the control rms vs ln beyond LAST_GRADS_CONTROL x that tolerance
    // (the measurements: at LAST_GRADS_TOL_BF16).
    if (steps > 1) {
        const double last_tol = check_tolerance(&checks, "last grads", LAST_GRADS_TOL_FP32);
        const double cbwc_last = normwise_relative_error(cbwc.last_grads, ln.last_grads, host->num_parameters);
        const double rms_last = normwise_relative_error(rms.last_grads, ln.last_grads, host->num_parameters);
        ok &= check(&checks, "cbwc last grads", cbwc_last, LAST_GRADS_TOL_FP32);
        const int last_control = rms_last >= LAST_GRADS_CONTROL * last_tol; // NaN fails
        printf("  %-22s %.3e  (must exceed %.1e)  %s\n", "control: rms last grads", rms_last,
               LAST_GRADS_CONTROL * last_tol, last_control ? "ok" : "FAIL");
        ok &= last_control;
    }
    mode_run_free(&ln);
    mode_run_free(&cbwc);
    mode_run_free(&rms);
    return ok;
}

// 3. loss curve over `steps` steps on fresh random batches: GPU vs llmc/gpt2/gpt2.c
static int check_curve(const GPT2 *host_in, const GPT2DebugState *s, int steps, unsigned long long seed,
                       double loss_tol) {
    GPT2 cpu;
    gpt2_init_random(&cpu, &host_in->config, host_in->mode, 0);
    memcpy(cpu.params_memory, host_in->params_memory, host_in->num_parameters * sizeof(float));
    GPT2Cuda gpu;
    gpt2cuda_init(&gpu, &cpu, s->B, s->T, 0, attention);
    const int BT = s->B * s->T, V = host_in->config.vocab_size;
    int *x = (int *)malloc_check((size_t)BT * sizeof(int), "x");
    int *y = (int *)malloc_check((size_t)BT * sizeof(int), "y");
    Rng rng;
    rng_seed(&rng, seed);
    double worst = 0.0;
    printf("loss curve, %d AdamW steps on random batches (seed %llu), %s:\n", steps, seed,
           norm_mode_name(cpu.mode));
    for (int k = 0; k < steps; k++) {
        for (int i = 0; i < BT; i++) {
            x[i] = (int)(rng_u32(&rng) % (uint32_t)V);
            y[i] = (int)(rng_u32(&rng) % (uint32_t)V);
        }
        gpt2_zero_grad(&cpu);
        gpt2_forward(&cpu, x, y, s->B, s->T);
        float cpu_loss = cpu.mean_loss;
        gpt2_backward(&cpu, 1.0f / (float)cpu.loss_tokens);
        gpt2_update(&cpu, &s->adamw, s->grad_clip);
        gpt2cuda_zero_grad(&gpu);
        const float scale = 1.0f / (float)BT;
        gpt2cuda_forward(&gpu, x, y, s->B, s->T, scale);
        float gpu_loss = gpt2cuda_mean_loss(&gpu);
        gpt2cuda_backward(&gpu, scale);
        gpt2cuda_update(&gpu, &s->adamw, s->grad_clip);
        double d = fabs((double)gpu_loss - cpu_loss);
        if (!(d <= worst)) worst = d;
        printf("  step %2d  cpu %.6f  gpu %.6f  |diff| %.2e\n", k + 1, cpu_loss, gpu_loss, d);
    }
    int ok = check(&checks, "curve gpu vs cpu", worst, loss_tol);
    free(x);
    free(y);
    gpt2cuda_free(&gpu);
    gpt2_free(&cpu);
    return ok;
}

// 4a. dropout_cuda vs dropout_apply on n values (of floatX, so the host sees
// the device's inputs) in a stream past 2^32 (the 64-bit products wrap):
// every output equal (fp32: the same single multiply by the same scale; bf16:
// the host's fp32 result rounded to bf16 as the kernel rounds its own), and the
// kept fraction within 5 sigma of 1 - p (the hash is not degenerate)
static int check_dropout_mask(float p, unsigned long long seed) {
    const size_t n = 3 * 4096 + 77; // several blocks and a partial one
    const uint64_t stream = dropout_branch_stream(1000003, 12, 11, 1); // ~2.4e7, and a wide one:
    const uint64_t streams[2] = {stream, 0xFFFFFFFFFFull};
    floatX *x_host = (floatX *)malloc_check(n * sizeof(floatX), "dropout input");
    floatX *y_host = (floatX *)malloc_check(n * sizeof(floatX), "dropout output");
    float *x = (float *)malloc_check(n * sizeof(float), "dropout input");
    float *expect = (float *)malloc_check(n * sizeof(float), "dropout expected");
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        x_host[i] = from_float<floatX>(2.0f * rng_uniform(&rng) - 1.0f);
        x[i] = to_float(x_host[i]);
    }
    floatX *x_dev = cuda_alloc<floatX>(n), *y_dev = cuda_alloc<floatX>(n);
    CUDA_CHECK(cudaMemcpy(x_dev, x_host, n * sizeof(floatX), cudaMemcpyHostToDevice));
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        dropout_cuda(y_dev, x_dev, n, p, seed, streams[k], 0);
        CUDA_CHECK(cudaMemcpy(y_host, y_dev, n * sizeof(floatX), cudaMemcpyDeviceToHost));
        dropout_apply(expect, x, n, p, seed, streams[k]);
        size_t differ = 0, kept = 0;
        for (size_t i = 0; i < n; i++) {
            const float want = to_float(from_float<floatX>(expect[i]));
            const float got = to_float(y_host[i]);
            differ += memcmp(&want, &got, sizeof(float)) != 0; // bits: also the sign of a zero
            kept += expect[i] != 0.0f || x[i] == 0.0f;
        }
        const double sigma = sqrt((double)n * p * (1.0 - p));
        const double off = fabs((double)kept - (1.0 - p) * (double)n);
        printf("  dropout kernel, stream %llu: %zu of %zu outputs differ from dropout_apply, "
               "%zu kept (expected %.0f)  %s\n", (unsigned long long)streams[k], differ, n, kept,
               (1.0 - p) * (double)n, differ == 0 && off <= 5.0 * sigma ? "ok" : "FAIL");
        ok &= differ == 0 && off <= 5.0 * sigma;
    }
    CUDA_CHECK(cudaFree(x_dev));
    CUDA_CHECK(cudaFree(y_dev));
    free(x_host);
    free(y_host);
    free(x);
    free(expect);
    return ok;
}

// 4b. the model with residual dropout p, GPU vs llmc/gpt2/gpt2.c from the same
// weights, seed and draws (0, and 7 for a second set of masks): the train-mode
// loss and every gradient. fp32 tolerance 1e-5 (max|diff| / max|ref| per
// tensor): both sides apply the same masks and scale, so what differs is only
// the fp32 sum orders (cuBLAS vs llmc/kernels/matmul.c, the reductions), a
// few ulps (~1e-7 relative) accumulated over the layers; a wrong mask element
// moves a gradient by O(1/(1-p)) of one entry, 1e-3 or more relative at these
// sizes, and a wrong stream changes every tensor by O(1). bf16: the reference
// check's tolerances (bf16 activations). Then eval mode (gpt2cuda_forward)
// must match the CPU's gpt2_forward (no dropout), and the dropout must have
// moved the gradients (the check is not vacuous): by more than 100 x tol.
static int check_dropout_model(const GPT2 *host_in, const GPT2DebugState *s, float p,
                               unsigned long long seed, double tol) {
    GPT2 cpu;
    gpt2_init_random(&cpu, &host_in->config, host_in->mode, 0);
    memcpy(cpu.params_memory, host_in->params_memory, host_in->num_parameters * sizeof(float));
    gpt2_set_resid_dropout(&cpu, p, seed);
    GPT2Cuda gpu;
    gpt2cuda_init(&gpu, &cpu, s->B, s->T, 0, attention);
    gpt2cuda_set_resid_dropout(&gpu, p, seed);
    const size_t P = cpu.num_parameters;
    float *grads = (float *)malloc_check(P * sizeof(float), "grads");
    float *dropped = (float *)malloc_check(P * sizeof(float), "grads with dropout");
    int ok = 1;
    const uint64_t draws[2] = {0, 7};
    for (int k = 0; k < 2; k++) {
        printf("residual dropout %g, draw %llu, %s (seed %llu):\n", (double)p,
               (unsigned long long)draws[k], norm_mode_name(cpu.mode), seed);
        gpt2_zero_grad(&cpu);
        gpt2_forward_train(&cpu, s->x, s->y, s->B, s->T, draws[k]);
        const float train_loss = cpu.mean_loss;
        gpt2_backward(&cpu, 1.0f / (float)cpu.loss_tokens);
        memcpy(dropped, cpu.grads_memory, P * sizeof(float));
        gpt2cuda_zero_grad(&gpu);
        gpt2cuda_forward_train(&gpu, s->x, s->y, s->B, s->T, 0.0f, draws[k]);
        const float gpu_train_loss = gpt2cuda_mean_loss(&gpu);
        printf("  train-mode loss: cpu %.6f  gpu %.6f\n", train_loss, gpu_train_loss);
        ok &= check(&checks, "loss", fabs(gpu_train_loss - train_loss) / fabs(train_loss), tol);
        gpt2cuda_backward(&gpu, 1.0f / (float)gpu.loss_tokens);
        gpt2cuda_grads_to_host(&gpu, grads);
        ok &= check_grads(&checks, param_tensors(&cpu), grads, cpu.grads_memory, tol, "grad ");
    }
    gpt2_zero_grad(&cpu);
    gpt2_forward(&cpu, s->x, s->y, s->B, s->T);
    gpt2cuda_forward(&gpu, s->x, s->y, s->B, s->T, 0.0f);
    const float gpu_eval_loss = gpt2cuda_mean_loss(&gpu);
    printf("  eval-mode loss (no dropout): cpu %.6f  gpu %.6f\n", cpu.mean_loss, gpu_eval_loss);
    ok &= check(&checks, "loss", fabs(gpu_eval_loss - cpu.mean_loss) / fabs(cpu.mean_loss), tol);
    gpt2_backward(&cpu, 1.0f / (float)cpu.loss_tokens);
    const double moved = relative_error(dropped, cpu.grads_memory, P);
    printf("  dropout moved the gradients by %.2e (relative; must exceed %.0e)  %s\n", moved,
           100 * tol, moved > 100 * tol ? "ok" : "FAIL");
    ok &= moved > 100 * tol;
    free(grads);
    free(dropped);
    gpt2cuda_free(&gpu);
    gpt2_free(&cpu);
    return ok;
}

// 5. -r 1 and 2 (activation recompute, transformer_block.cuh), in every mode,
// with the epilogues separate (-fe 0) and fused (-fe 1):
//   -fe 0: the loss and every gradient at -r 1 and 2 bit-identical to -r 0's
//      (the recomputed GELU and norms are the forward's own kernels on the
//      same inputs);
//   -fe 1: -r 2 bit-identical to -r 1 (the norms recomputed by their own
//      kernel); -r 1 against -r 0 within the run's gradient tolerance, not bit
//      for bit: the forward's GELU is the fc GEMM's epilogue (GELU of the fp32
//      pre-activation), -r 1's recompute the kernel's (GELU of the stored
//      floatX one), as llm.c's -r 1 with its GELU fusion;
// and the blocks' activation bytes as the formula below, written out here
// apart from the allocator: per row of B T, floatX ln1, qkv (3C), atty,
// residual2, ln2, fch (4C), fch_gelu (4C), residual3 over L layers, ln1 and
// ln2 over one layer at -r 2, fch_gelu over one at -r 1 and 2; fp32 mean and
// rstd of ln1 and ln2 over L layers. With L >= 2 a backward that read the
// one layer's buffer without recomputing it would use the last layer's values.
static size_t recompute_formula_bytes(const GPT2Config *c, size_t BT, int r) {
    const size_t L = (size_t)c->num_layers, C = (size_t)c->channels, H = 4 * C;
    const size_t norm_layers = r >= 2 ? 1 : L, gelu_layers = r >= 1 ? 1 : L;
    const size_t per_row_x = L * (3 * C + C + C + H + C) + norm_layers * 2 * C + gelu_layers * H;
    return BT * (per_row_x * sizeof(floatX) + 4 * L * sizeof(float));
}

// the largest |a - b| over all gradients, relative to the largest |b|
static double max_rel_diff(const float *a, const float *b, size_t n) {
    double d = 0.0, m = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= d)) d = e; // NaN propagates
        if (fabs((double)b[i]) > m) m = fabs((double)b[i]);
    }
    return m > 0.0 ? d / m : d;
}

static int check_recompute(const GPT2 *host, const GPT2DebugState *s, double rel_tol) {
    const size_t P = host->num_parameters, BT = (size_t)s->B * s->T;
    const float scale = 1.0f / (float)count_targets(s->y, (int)BT);
    float *grads[3];
    for (int r = 0; r < 3; r++) grads[r] = (float *)malloc_check(P * sizeof(float), "grads");
    int ok = 1;
    const NormMode modes[3] = {MODE_LN, MODE_RMS, MODE_CBWC};
    for (int k = 0; k < 3; k++) {
        for (int fe = 0; fe <= 1; fe++) {
            GPT2 copy = *host;
            copy.mode = modes[k];
            float loss[3];
            for (int r = 0; r <= 2; r++) {
                GPT2Cuda gpu;
                gpt2cuda_init(&gpu, &copy, s->B, s->T, 0, attention, r);
                gpu.mm.fuse_epilogues = fe;
                gpt2cuda_zero_grad(&gpu);
                gpt2cuda_forward(&gpu, s->x, s->y, s->B, s->T, 0.0f);
                loss[r] = gpt2cuda_mean_loss(&gpu);
                gpt2cuda_backward(&gpu, scale);
                gpt2cuda_grads_to_host(&gpu, grads[r]);
                const size_t want = recompute_formula_bytes(&copy.config, BT, r);
                const int bytes_ok = gpu.block_act_bytes == want;
                printf("recompute %s -fe %d -r %d: block activations %zu bytes (formula %zu)  %s\n",
                       norm_mode_name(copy.mode), fe, r, gpu.block_act_bytes, want,
                       bytes_ok ? "ok" : "FAIL");
                ok &= bytes_ok;
                gpt2cuda_free(&gpu);
            }
            // bit for bit: -fe 0: -r 1 and 2 against -r 0; -fe 1: -r 2 against -r 1
            for (int r = fe == 0 ? 1 : 2; r <= 2; r++) {
                const int base = fe == 0 ? 0 : 1;
                size_t differing = 0;
                for (size_t i = 0; i < P; i++) {
                    differing += memcmp(&grads[r][i], &grads[base][i], sizeof(float)) != 0;
                }
                const int same =
                    differing == 0 && memcmp(&loss[r], &loss[base], sizeof(float)) == 0;
                printf("recompute %s -fe %d -r %d: loss %.9g (-r %d: %.9g), %zu of %zu gradients "
                       "differ in their bits  %s\n",
                       norm_mode_name(copy.mode), fe, r, (double)loss[r], base, (double)loss[base],
                       differing, P, same ? "ok" : "FAIL");
                ok &= same;
            }
            if (fe == 1) { // the fused forward's GELU against -r 1's recomputed one
                const double d = max_rel_diff(grads[1], grads[0], P);
                const int close = d <= rel_tol && loss[1] == loss[0];
                printf("recompute %s -fe 1 -r 1: gradients within %.3g of -r 0's (tol %.3g), the "
                       "same loss  %s\n",
                       norm_mode_name(copy.mode), d, rel_tol, close ? "ok" : "FAIL");
                ok &= close;
            }
        }
    }
    for (int r = 0; r < 3; r++) free(grads[r]);
    return ok;
}

static void usage(void) {
    fprintf(stderr,
            "usage: test_gpt2cu MODEL.bin STATE.bin [-N ln|rms|cbwc] [-r rel_tol] [-l loss_tol]\n"
            "                   [--equivalence K] [--curve K] [--seed S] [-at tc|cublas|flash|cudnn]\n"
            "                   [--dropout P] [--recompute 1]\n"
            "  Checks the GPU model against a debug state of dev/reference/gpt2.py.\n"
            "  -at              the attention kernels (default: tc in bf16, flash in fp32; cudnn: bf16 with cuDNN)\n"
            "  --equivalence K  also: ln vs cbwc over K AdamW steps (MODEL must be ln)\n"
            "  --curve K        also: K steps on random batches, GPU vs the CPU model\n"
            "  --dropout P      also: residual dropout P, the kernel vs dropout_apply (bit for bit),\n"
            "                   the train-mode loss and gradients vs the CPU model (fp32: 1e-5)\n"
            "  --recompute 1    also: -r 1 and 2 vs -r 0 in ln, rms, cbwc: loss and gradients\n"
            "                   bit for bit at -fe 0 (-r 2 vs -r 1 at -fe 1), the blocks'\n"
            "                   activation bytes as the formula\n"
            "  defaults: %s (%s build)\n",
            sizeof(floatX) == 4 ? "-r 1e-4 -l 1e-4" : "per check, see the source", FLOATX_NAME);
    exit(EXIT_FAILURE);
}

int main(int argc, char **argv) {
    if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-') usage();
    const char *mode_name = NULL;
    double rel_tol = sizeof(floatX) == 4 ? 1e-4 : 2e-2;
    double loss_tol = rel_tol;
    int equivalence_steps = 0, curve_steps = 0;
    float dropout = 0.0f;
    int recompute = 0;
    unsigned long long seed = 1;
    for (int i = 3; i < argc; i += 2) {
        if (i + 1 >= argc) usage();
        const char *f = argv[i], *v = argv[i + 1];
        if (strcmp(f, "-N") == 0) mode_name = v;
        else if (strcmp(f, "-r") == 0) rel_tol = atof(v), checks.bf16_table = false;
        else if (strcmp(f, "-l") == 0) loss_tol = atof(v), checks.bf16_table = false;
        else if (strcmp(f, "--equivalence") == 0) equivalence_steps = (int)parse_count(f, v, 100000);
        else if (strcmp(f, "--curve") == 0) curve_steps = (int)parse_count(f, v, 100000);
        else if (strcmp(f, "--seed") == 0) seed = (unsigned long long)parse_count(f, v, 2147483647L);
        else if (strcmp(f, "-at") == 0) attention = attention_kind_from_flag(v, false);
        else if (strcmp(f, "--dropout") == 0) dropout = (float)atof(v);
        else if (strcmp(f, "--recompute") == 0) recompute = (int)parse_count(f, v, 1);
        else usage();
    }
    GPT2 host;
    gpt2_load(&host, argv[1]);
    if (mode_name != NULL && norm_mode_parse(mode_name, &host.mode) != 0) {
        fatal("-N: unknown norm mode '%s' (expected ln, rms or cbwc)", mode_name);
    }
    GPT2DebugState s;
    gpt2_debug_state_load(&s, argv[2], &host);
    if (!cuda_device_present(argv[0])) {
        gpt2_debug_state_free(&s);
        gpt2_free(&host);
        return EXIT_SUCCESS;
    }
    printf("test_gpt2cu (%s, attention %s): %s mode, L=%d C=%d V=%d B=%d T=%d, %d AdamW steps\n",
           FLOATX_NAME, attention_kind_name(attention), norm_mode_name(host.mode),
           host.config.num_layers, host.config.channels, host.config.vocab_size, s.B, s.T,
           s.num_steps);
    int ok = check_reference(&host, &s, rel_tol, loss_tol);
    if (equivalence_steps > 0) {
        if (host.mode != MODE_LN) fatal("--equivalence: %s must be an ln model", argv[1]);
        ok &= check_equivalence(&host, &s, equivalence_steps, rel_tol, loss_tol);
    }
    // the curve: 5x the step tolerance (fresh batches each step, more steps)
    if (curve_steps > 0) ok &= check_curve(&host, &s, curve_steps, seed, 5 * loss_tol);
    if (dropout != 0.0f) {
        if (!(dropout > 0.0f && dropout < 1.0f)) fatal("--dropout %g: must be in (0, 1)", (double)dropout);
        ok &= check_dropout_mask(dropout, seed);
        ok &= check_dropout_model(&host, &s, dropout, seed, 1e-5);
    }
    if (recompute) ok &= check_recompute(&host, &s, rel_tol);
    printf("%s\n", ok ? "OK" : "FAILED");
    gpt2_debug_state_free(&s);
    gpt2_free(&host);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
