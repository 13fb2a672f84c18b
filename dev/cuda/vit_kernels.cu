// ViT's own kernels against the llmc/ CPU kernels the ViT trainer uses, on
// random data: the patch embedding (llmc/cuda/patch_embed.cuh: im2col + cuBLASLt
// vs patches_from_images + matmul_forward / matmul_backward), the class
// token + position embedding with and without the cbwc centring
// (llmc/cuda/vit_tokens.cuh vs llmc/vision/vit.c's loop, cbwc_centre_rows) and the
// label-smoothed cross-entropy, with and without mixed (mixup / cutmix)
// targets (llmc/cuda/classifier_loss.cuh vs classifier_loss_forward /
// _backward), and the EMA of the weights' update (llmc/cuda/ema.cuh vs
// llmc/core/ema.c's ema_update). Then timed at ViT-B/16's 224x224 shape (the
// EMA over Swin-T's 28M parameters).
#include <math.h>
#include <string.h>

#include "common.cuh"
#include "cuda/classifier_loss.cuh"
#include "cuda/ema.cuh"
#include "cuda/patch_embed.cuh"
#include "cuda/vit_tokens.cuh"

extern "C" {
#include "core/ema.h"
#include "kernels/cbwc.h"
#include "kernels/classifier_loss.h"
#include "kernels/matmul.h"
#include "kernels/patch_embed.h"
}

static const double TOL = sizeof(floatX) == 4 ? 1e-5 : 2e-2;

static void to_double(double *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = x[i];
}

// out (N, OC) = patches W^T + b; dW, db from a random dout
static int check_patch_embed(int B, int Cin, int S, int P, int C, DevRng *rng) {
    printf("patch embedding B=%d Cin=%d S=%d P=%d C=%d (%s):\n", B, Cin, S, P, C, FLOATX_NAME);
    const int Np = (S / P) * (S / P), PD = Cin * P * P, N = B * Np;
    const size_t n_img = (size_t)B * Cin * S * S;
    float *images = (float *)host_alloc(n_img * 4);
    for (size_t i = 0; i < n_img; i++) images[i] = to_float(from_float<floatX>(dev_uniform(rng)));
    floatX *hx = (floatX *)host_alloc((size_t)N * (PD > C ? PD : C) * sizeof(floatX));
    float *w = (float *)host_alloc((size_t)C * PD * 4), *b = (float *)host_alloc((size_t)C * 4);
    float *dout = (float *)host_alloc((size_t)N * C * 4);
    fill_random(hx, w, (size_t)C * PD, rng, 0.0f, 0.5f);
    floatX *d_w = to_device(hx, (size_t)C * PD);
    fill_random(hx, b, C, rng, 0.0f, 0.5f);
    floatX *d_b = to_device(hx, C);
    fill_random(hx, dout, (size_t)N * C, rng, 0.0f, 1.0f);
    floatX *d_dout = to_device(hx, (size_t)N * C);
    float *d_images = to_device(images, n_img);
    floatX *d_patches, *d_out;
    float *d_dw, *d_db, *d_scratch;
    CUDA_CHECK(cudaMalloc(&d_patches, (size_t)N * PD * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_out, (size_t)N * C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dw, (size_t)C * PD * 4));
    CUDA_CHECK(cudaMalloc(&d_db, (size_t)C * 4));
    CUDA_CHECK(cudaMalloc(&d_scratch, (size_t)column_sum_chunks(N) * C * 4));
    CUDA_CHECK(cudaMemset(d_dw, 0, (size_t)C * PD * 4));
    CUDA_CHECK(cudaMemset(d_db, 0, (size_t)C * 4));
    MatmulContext mm;
    matmul_context_create(&mm);
    patch_embed_forward_cuda(&mm, d_out, d_patches, d_images, d_w, d_b, B, Cin, S, P, C);
    patch_embed_backward_cuda(&mm, d_dw, d_db, d_scratch, d_dout, d_patches, N, PD, C);
    CUDA_CHECK(cudaDeviceSynchronize());
    float *patches = (float *)host_alloc((size_t)N * PD * 4), *out = (float *)host_alloc((size_t)N * C * 4);
    float *dw = (float *)calloc((size_t)C * PD, 4), *db = (float *)calloc(C, 4);
    float *dinp = (float *)calloc((size_t)N * PD, 4);
    patches_from_images(patches, images, B, Cin, S, P);
    matmul_forward(out, patches, w, b, N, PD, C);
    matmul_backward(dinp, dw, db, dout, patches, w, N, PD, C);
    size_t most = (size_t)N * (PD > C ? PD : C);
    double *ref = (double *)host_alloc(most * 8);
    float *got = (float *)host_alloc(most * 4);
    int ok = 1;
    to_double(ref, patches, (size_t)N * PD);
    floatx_to_host(got, d_patches, (size_t)N * PD);
    ok &= check_tensor("patches", got, ref, (size_t)N * PD, 0.0); // a copy: exact
    to_double(ref, out, (size_t)N * C);
    floatx_to_host(got, d_out, (size_t)N * C);
    ok &= check_tensor("out", got, ref, (size_t)N * C, TOL);
    to_double(ref, dw, (size_t)C * PD);
    float_to_host(got, d_dw, (size_t)C * PD);
    ok &= check_tensor("dweight", got, ref, (size_t)C * PD, 1e-5); // fp32 sums of floatX products
    to_double(ref, db, C);
    float_to_host(got, d_db, C);
    ok &= check_tensor("dbias", got, ref, C, 1e-5);
    matmul_context_destroy(&mm);
    void *dev[] = {d_w, d_b, d_dout, d_images, d_patches, d_out, d_dw, d_db, d_scratch};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {images, hx, w, b, dout, patches, out, dw, db, dinp, ref, got};
    for (void *p : host) free(p);
    return ok;
}

// stream = [cls, patch rows] + pos (centred in cbwc); dcls, dpos, dpatch
static int check_tokens(int B, int T, int C, int centred, DevRng *rng) {
    printf("class token + position embedding B=%d T=%d C=%d%s (%s):\n", B, T, C,
           centred ? " cbwc" : "", FLOATX_NAME);
    const size_t btc = (size_t)B * T * C, bpc = (size_t)B * (T - 1) * C, tc = (size_t)T * C;
    floatX *hx = (floatX *)host_alloc(btc * sizeof(floatX));
    float *patch = (float *)host_alloc(bpc * 4), *cls = (float *)host_alloc((size_t)C * 4);
    float *pos = (float *)host_alloc(tc * 4), *d = (float *)host_alloc(btc * 4);
    fill_random(hx, patch, bpc, rng, 0.0f, 1.0f);
    floatX *d_patch = to_device(hx, bpc);
    fill_random(hx, cls, C, rng, 0.3f, 1.0f); // offsets: the centring has something to remove
    floatX *d_cls = to_device(hx, C);
    fill_random(hx, pos, tc, rng, -0.2f, 1.0f);
    floatX *d_pos = to_device(hx, tc);
    fill_random(hx, d, btc, rng, 0.0f, 1.0f);
    floatX *d_d = to_device(hx, btc);
    floatX *d_stream, *d_dpatch;
    float *d_dcls, *d_dpos;
    CUDA_CHECK(cudaMalloc(&d_stream, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dpatch, bpc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dcls, (size_t)C * 4));
    CUDA_CHECK(cudaMalloc(&d_dpos, tc * 4));
    CUDA_CHECK(cudaMemset(d_dcls, 0, (size_t)C * 4));
    CUDA_CHECK(cudaMemset(d_dpos, 0, tc * 4));
    vit_tokens_forward_cuda(d_stream, d_patch, d_cls, d_pos, B, T, C, centred, 0);
    vit_tokens_backward_cuda(d_dcls, d_dpos, d_dpatch, d_d, B, T, C, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    // llmc/vision/vit.c: cbwc centres cls and every pos row (cbwc_centre_rows); its
    // patch rows come centred from V, so the test centres them here too
    float *e_cls = (float *)host_alloc((size_t)C * 4), *e_pos = (float *)host_alloc(tc * 4);
    float *e_patch = (float *)host_alloc(bpc * 4);
    memcpy(e_cls, cls, (size_t)C * 4);
    memcpy(e_pos, pos, tc * 4);
    memcpy(e_patch, patch, bpc * 4);
    if (centred) {
        cbwc_centre_rows(e_cls, cls, 1, C);
        cbwc_centre_rows(e_pos, pos, T, C);
        cbwc_centre_rows(e_patch, patch, B * (T - 1), C);
    }
    double *ref = (double *)host_alloc(btc * 8);
    float *got = (float *)host_alloc(btc * 4);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *src = t == 0 ? e_cls : e_patch + ((size_t)b * (T - 1) + t - 1) * C;
            for (int i = 0; i < C; i++) {
                ref[((size_t)b * T + t) * C + i] = (double)src[i] + e_pos[(size_t)t * C + i];
            }
        }
    }
    int ok = 1;
    floatx_to_host(got, d_stream, btc);
    ok &= check_tensor("stream", got, ref, btc, TOL);
    for (size_t i = 0; i < tc; i++) {
        double s = 0.0;
        for (int b = 0; b < B; b++) s += d[(size_t)b * tc + i];
        ref[i] = s;
    }
    float_to_host(got, d_dpos, tc);
    ok &= check_tensor("dpos", got, ref, tc, 1e-5);
    float_to_host(got, d_dcls, C);
    ok &= check_tensor("dcls", got, ref, C, 1e-5);
    for (int b = 0; b < B; b++) {
        for (size_t i = 0; i < (size_t)(T - 1) * C; i++) {
            ref[(size_t)b * (T - 1) * C + i] = d[(size_t)b * tc + C + i];
        }
    }
    floatx_to_host(got, d_dpatch, bpc);
    ok &= check_tensor("dpatch", got, ref, bpc, 0.0); // a copy: exact
    void *dev[] = {d_patch, d_cls, d_pos, d_d, d_stream, d_dpatch, d_dcls, d_dpos};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {hx, patch, cls, pos, d, e_cls, e_pos, e_patch, ref, got};
    for (void *p : host) free(p);
    return ok;
}

// mixed: mixup / cutmix targets, a second label and a weight per row
static int check_loss(int N, int K, float smoothing, int mixed, DevRng *rng) {
    printf("label-smoothed cross-entropy N=%d K=%d s=%.2f%s (%s):\n", N, K, smoothing,
           mixed ? " mixed targets" : "", FLOATX_NAME);
    const size_t nk = (size_t)N * K;
    floatX *hx = (floatX *)host_alloc(nk * sizeof(floatX));
    float *logits = (float *)host_alloc(nk * 4);
    fill_random(hx, logits, nk, rng, 0.0f, 4.0f);
    floatX *d_logits = to_device(hx, nk);
    int *labels = (int *)host_alloc((size_t)N * sizeof(int));
    for (int n = 0; n < N; n++) labels[n] = (int)((dev_uniform(rng) + 1.0f) * 0.5f * K) % K;
    int *d_labels = to_device(labels, N);
    int *labels2 = (int *)host_alloc((size_t)N * sizeof(int));
    float *lam = (float *)host_alloc((size_t)N * 4);
    for (int n = 0; n < N; n++) {
        labels2[n] = (int)((dev_uniform(rng) + 1.0f) * 0.5f * K) % K;
        lam[n] = (dev_uniform(rng) + 1.0f) * 0.5f;
    }
    MixTargets mix = {NULL, NULL};
    if (mixed) mix = MixTargets{labels2, lam};
    MixTargetsCuda d_mix;
    classifier_mix_alloc(&d_mix, N);
    classifier_mix_upload(&d_mix, mix, N, 0);
    float *d_losses;
    floatX *d_dlogits;
    CUDA_CHECK(cudaMalloc(&d_losses, (size_t)N * 4));
    CUDA_CHECK(cudaMalloc(&d_dlogits, nk * sizeof(floatX)));
    const float scale = 1.0f / (float)N;
    classifier_loss_cuda(d_losses, d_dlogits, d_logits, d_labels, &d_mix, smoothing, scale, N, K, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    float *losses = (float *)host_alloc((size_t)N * 4), *dlogits = (float *)host_alloc(nk * 4);
    classifier_loss_forward(losses, logits, labels, mix, smoothing, N, K);
    classifier_loss_backward(dlogits, logits, labels, mix, smoothing, scale, N, K);
    double *ref = (double *)host_alloc(nk * 8);
    float *got = (float *)host_alloc(nk * 4);
    int ok = 1;
    to_double(ref, losses, N);
    float_to_host(got, d_losses, N);
    ok &= check_tensor("losses", got, ref, N, 1e-5); // fp32 throughout
    to_double(ref, dlogits, nk);
    floatx_to_host(got, d_dlogits, nk);
    ok &= check_tensor("dlogits", got, ref, nk, TOL);
    void *dev[] = {d_logits, d_labels, d_losses, d_dlogits, d_mix.labels2, d_mix.lam};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {hx, logits, labels, labels2, lam, losses, dlogits, ref, got};
    for (void *p : host) free(p);
    return ok;
}

// fp32 in both (the master weights): the GPU's fused multiply-add rounds once
// where the CPU rounds twice, ~1 ulp of the larger term
static int check_ema(size_t n, float decay, DevRng *rng) {
    printf("EMA of the weights n=%zu decay %g:\n", n, (double)decay);
    float *ema = (float *)host_alloc(n * 4), *w = (float *)host_alloc(n * 4);
    float *other = (float *)host_alloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        ema[i] = dev_uniform(rng);
        w[i] = dev_uniform(rng);
    }
    float *d_ema = to_device(ema, n), *d_w = to_device(w, n);
    ema_update_cuda(d_ema, d_w, n, decay, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    memcpy(other, ema, n * 4);
    ema_update(ema, w, n, decay);
    ema_update(other, w, n, decay - 1e-4f); // the negative control: another decay
    double *ref = (double *)host_alloc(n * 8);
    to_double(ref, ema, n);
    float_to_host(w, d_ema, n);
    int ok = check_tensor("ema", w, ref, n, 1e-6);
    double max_diff = 0.0, max_ref = 0.0; // ~2e-4 apart: 200x the check's 1e-6
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)w[i] - other[i]);
        if (!(d <= max_diff)) max_diff = d;
        if (fabs(other[i]) > max_ref) max_ref = fabs(other[i]);
    }
    const int apart = max_diff / max_ref > 1e-4;
    printf("  control: decay %g, rel err %.3e (must be > 1e-4) %s\n", (double)(decay - 1e-4f),
           max_diff / max_ref, apart ? "ok" : "FAIL: the check cannot tell the decays apart");
    ok &= apart;
    CUDA_CHECK(cudaFree(d_ema));
    CUDA_CHECK(cudaFree(d_w));
    void *host[] = {ema, w, other, ref};
    for (void *p : host) free(p);
    return ok;
}

static void timing(int B, int S, int P, int C) {
    const int Np = (S / P) * (S / P), T = Np + 1, PD = 3 * P * P;
    float *images;
    floatX *patches, *out, *w, *stream, *pos;
    CUDA_CHECK(cudaMalloc(&images, (size_t)B * 3 * S * S * 4));
    CUDA_CHECK(cudaMalloc(&patches, (size_t)B * Np * PD * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&out, (size_t)B * Np * C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&w, (size_t)C * PD * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&stream, (size_t)B * T * C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&pos, (size_t)T * C * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(images, 0, (size_t)B * 3 * S * S * 4));
    CUDA_CHECK(cudaMemset(w, 0, (size_t)C * PD * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(pos, 0, (size_t)T * C * sizeof(floatX)));
    MatmulContext mm;
    matmul_context_create(&mm);
    float embed = time_ms([&] {
        patch_embed_forward_cuda(&mm, out, patches, images, w, NULL, B, 3, S, P, C);
    }, 5);
    float tokens = time_ms([&] { vit_tokens_forward_cuda(stream, out, pos, pos, B, T, C, 1, 0); }, 5);
    const size_t swin_t = 28288354; // Swin-T's parameters (ImageNet-1k head)
    float *ema, *weights;
    CUDA_CHECK(cudaMalloc(&ema, swin_t * 4));
    CUDA_CHECK(cudaMalloc(&weights, swin_t * 4));
    CUDA_CHECK(cudaMemset(ema, 0, swin_t * 4));
    CUDA_CHECK(cudaMemset(weights, 0, swin_t * 4));
    float ema_ms = time_ms([&] { ema_update_cuda(ema, weights, swin_t, 0.9998f, 0); }, 5);
    CUDA_CHECK(cudaFree(ema));
    CUDA_CHECK(cudaFree(weights));
    printf("RESULT vit_kernels %s B=%d S=%d P=%d C=%d patch embed %.3f ms | tokens (cbwc) %.3f ms "
           "| EMA of %zu weights %.3f ms (%.0f GB/s)\n",
           FLOATX_NAME, B, S, P, C, embed, tokens, swin_t, ema_ms,
           3.0 * 4 * swin_t / (ema_ms * 1e6));
    matmul_context_destroy(&mm);
    void *dev[] = {images, patches, out, w, stream, pos};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
}

int main(void) {
    if (!cuda_device_present("dev/cuda/vit_kernels")) return EXIT_SUCCESS;
    DevRng rng = {0x2545F4914F6CDD1Dull};
    int ok = 1;
    ok &= check_patch_embed(2, 1, 28, 4, 24, &rng); // Fashion-MNIST, patch 4
    ok &= check_patch_embed(3, 3, 12, 3, 32, &rng); // RGB, PD = 27
    ok &= check_tokens(3, 50, 24, 0, &rng);
    ok &= check_tokens(3, 50, 24, 1, &rng);
    ok &= check_tokens(2, 17, 40, 1, &rng);         // C above one warp's 32 lanes
    ok &= check_loss(5, 10, 0.1f, 0, &rng);
    ok &= check_loss(3, 100, 0.0f, 0, &rng);        // K above one warp
    ok &= check_loss(6, 10, 0.1f, 1, &rng);         // mixup / cutmix targets
    ok &= check_loss(3, 100, 0.1f, 1, &rng);
    ok &= check_ema(70001, 0.9998f, &rng);          // 274 blocks, the last one ragged
    if (!dev_check_only()) timing(32, 224, 16, 768);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
