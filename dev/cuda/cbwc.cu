// CBWC kernels (llmc/cuda/cbwc.cuh) against the CPU kernels of llmc/kernels/cbwc.c and
// llmc/kernels/adamw.c on random
// weights whose columns have non-zero means: the projection V = P W, P b of
// a stacked (L, OC, IC) tensor, the AdamW step fused with it, and the centred
// output gradient P dy; then
// timed against the device-to-device copy bandwidth.
// usage: cbwc   (GPT-2 124M shapes: L=12, attn c_proj 768x768, mlp c_proj 768x3072,
//                dy (65536, 768), plus a small odd shape)
#include <string.h>

#include "cuda/cbwc.cuh"
#include "common.cuh"

extern "C" {
#include "kernels/adamw.h"
#include "kernels/cbwc.h"
}

static const double TOL = sizeof(floatX) == 4 ? 1e-5 : 1e-2;

static int check_projection(int L, int OC, int IC, double copy_gbs, DevRng *rng, bool timing) {
    const size_t n = (size_t)L * OC * IC;
    float *hw = (float *)host_alloc(n * 4), *hb = (float *)host_alloc((size_t)L * OC * 4);
    for (size_t i = 0; i < n; i++) hw[i] = 0.3f + dev_uniform(rng);
    for (size_t i = 0; i < (size_t)L * OC; i++) hb[i] = 0.5f + dev_uniform(rng);
    float *w = to_device(hw, n), *b = to_device(hb, (size_t)L * OC);
    floatX *v, *bc;
    CUDA_CHECK(cudaMalloc(&v, n * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&bc, (size_t)L * OC * sizeof(floatX)));
    cbwc_project_cuda(v, bc, w, b, L, OC, IC, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle: llmc/kernels/cbwc.c per layer
    double *rv = (double *)host_alloc(n * 8), *rb = (double *)host_alloc((size_t)L * OC * 8);
    float *fv = (float *)host_alloc(n * 4), *fbc = (float *)host_alloc((size_t)L * OC * 4);
    for (int l = 0; l < L; l++) {
        cbwc_project_weights(fv + (size_t)l * OC * IC, fbc + (size_t)l * OC,
                             hw + (size_t)l * OC * IC, hb + (size_t)l * OC, OC, IC);
    }
    for (size_t i = 0; i < n; i++) rv[i] = fv[i];
    for (size_t i = 0; i < (size_t)L * OC; i++) rb[i] = fbc[i];
    free(fv);
    free(fbc);
    float *got = (float *)host_alloc(n * 4);
    printf("cbwc projection L=%d OC=%d IC=%d (%s):\n", L, OC, IC, FLOATX_NAME);
    int ok = 1;
    floatx_to_host(got, v, n);
    ok &= check_tensor("V = P W", got, rv, n, TOL);
    floatx_to_host(got, bc, (size_t)L * OC);
    ok &= check_tensor("P b", got, rb, (size_t)L * OC, TOL);
    // the kernel's column sums must not leak: every column of V sums to ~0
    double worst = 0.0;
    floatx_to_host(got, v, n);
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < IC; i++) {
            double s = 0.0;
            for (int o = 0; o < OC; o++) s += got[(size_t)l * OC * IC + (size_t)o * IC + i];
            worst = fabs(s) / OC > worst ? fabs(s) / OC : worst;
        }
    }
    const int centred = worst < (sizeof(floatX) == 4 ? 1e-6 : 1e-2);
    printf("  %-16s max |column mean of V| %.2e %s\n", "1^T V = 0", worst, centred ? "ok" : "FAIL");
    ok &= centred;
    if (timing) {
        // W is read twice (its mean, then V), V written once
        const double bytes = 2.0 * n * sizeof(float) + n * sizeof(floatX);
        float ms = time_ms([&] { cbwc_project_cuda(v, bc, w, b, L, OC, IC, 0); }, 20);
        const double gbs = bytes / (ms * 1e-3) / 1e9;
        printf("RESULT cbwc_project %s L=%d OC=%d IC=%d %.3f ms %.0f GB/s %.0f%% of copy\n",
               FLOATX_NAME, L, OC, IC, ms, gbs, 100.0 * gbs / copy_gbs);
    }
    CUDA_CHECK(cudaFree(w));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(v));
    CUDA_CHECK(cudaFree(bc));
    free(hw);
    free(hb);
    free(rv);
    free(rb);
    free(got);
    return ok;
}

// AdamW of W (L, OC, IC) fused with V = P W of the updated weights
static int check_adamw_projection(int L, int OC, int IC, double copy_gbs, DevRng *rng, bool timing) {
    const size_t n = (size_t)L * OC * IC;
    float *hw = (float *)host_alloc(n * 4), *hg = (float *)host_alloc(n * 4);
    float *hm = (float *)host_alloc(n * 4), *hv = (float *)host_alloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        hw[i] = 0.3f + dev_uniform(rng);
        hg[i] = dev_uniform(rng);
        hm[i] = 0.1f * dev_uniform(rng);
        hv[i] = 0.01f * (1.0f + dev_uniform(rng));
    }
    float *w = to_device(hw, n), *g = to_device(hg, n), *m = to_device(hm, n), *v = to_device(hv, n);
    floatX *V, *wx;
    CUDA_CHECK(cudaMalloc(&V, n * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&wx, n * sizeof(floatX)));
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, clip = 0.7f;
    const int t = 3;
    const AdamWStep a = adamw_step_constants(lr, b1, b2, eps, wd, 1, t, clip);
    adamw_cbwc_project_cuda(V, w, sizeof(floatX) == 2 ? wx : NULL, g, m, v, a, L, OC, IC, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle: llmc/kernels/adamw.c's step (torch.optim.AdamW), then llmc/kernels/cbwc.c per layer
    double *rw = (double *)host_alloc(n * 8), *rv = (double *)host_alloc(n * 8);
    float *fw = (float *)host_alloc(n * 4), *fv = (float *)host_alloc(n * 4);
    float *fm = (float *)host_alloc(n * 4), *fvv = (float *)host_alloc(n * 4);
    memcpy(fw, hw, n * 4);
    memcpy(fm, hm, n * 4);
    memcpy(fvv, hv, n * 4);
    const AdamWConfig cfg = {lr, b1, b2, eps, wd};
    adamw_update(fw, hg, fm, fvv, n, &cfg, 1, t, clip);
    for (int l = 0; l < L; l++) {
        cbwc_project_weights(fv + (size_t)l * OC * IC, NULL, fw + (size_t)l * OC * IC, NULL, OC, IC);
    }
    for (size_t i = 0; i < n; i++) {
        rw[i] = fw[i];
        rv[i] = fv[i];
    }
    void *oracle[] = {fw, fv, fm, fvv};
    for (void *p : oracle) free(p);
    float *got = (float *)host_alloc(n * 4);
    printf("AdamW + cbwc projection L=%d OC=%d IC=%d (%s):\n", L, OC, IC, FLOATX_NAME);
    int ok = 1;
    float_to_host(got, w, n);
    ok &= check_tensor("updated W", got, rw, n, 1e-5);
    floatx_to_host(got, V, n);
    ok &= check_tensor("V = P W", got, rv, n, TOL);
    if (timing) {
        // reads W, g, m, v; writes W, m, v, V (and the bf16 copy of W)
        const double bytes = n * (7.0 * sizeof(float) + sizeof(floatX) * (sizeof(floatX) == 2 ? 2 : 1));
        float ms = time_ms([&] {
            adamw_cbwc_project_cuda(V, w, sizeof(floatX) == 2 ? wx : NULL, g, m, v, a, L, OC, IC, 0);
        }, 20);
        const double gbs = bytes / (ms * 1e-3) / 1e9;
        printf("RESULT adamw_cbwc_project %s L=%d OC=%d IC=%d %.3f ms %.0f GB/s %.0f%% of copy\n",
               FLOATX_NAME, L, OC, IC, ms, gbs, 100.0 * gbs / copy_gbs);
    }
    void *device[] = {w, g, m, v, V, wx};
    for (void *p : device) CUDA_CHECK(cudaFree(p));
    void *host[] = {hw, hg, hm, hv, rw, rv, got};
    for (void *p : host) free(p);
    return ok;
}

static int check_centre_rows(int N, int C, double copy_gbs, DevRng *rng, bool timing) {
    const size_t n = (size_t)N * C;
    floatX *hx = (floatX *)host_alloc(n * sizeof(floatX));
    float *fx = (float *)host_alloc(n * 4);
    fill_random(hx, fx, n, rng, 1.5f, 1.0f);
    floatX *x = to_device(hx, n), *out;
    CUDA_CHECK(cudaMalloc(&out, n * sizeof(floatX)));
    centre_rows_cuda(out, x, N, C, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    double *ref = (double *)host_alloc(n * 8);
    float *fout = (float *)host_alloc(n * 4);
    cbwc_centre_rows(fout, fx, N, C); // the oracle: llmc/kernels/cbwc.c
    for (size_t i = 0; i < n; i++) ref[i] = fout[i];
    free(fout);
    float *got = (float *)host_alloc(n * 4);
    floatx_to_host(got, out, n);
    printf("centre rows N=%d C=%d (%s):\n", N, C, FLOATX_NAME);
    int ok = check_tensor("P dy", got, ref, n, TOL);
    if (timing) {
        const double bytes = 2.0 * n * sizeof(floatX);
        float ms = time_ms([&] { centre_rows_cuda(out, x, N, C, 0); }, 20);
        const double gbs = bytes / (ms * 1e-3) / 1e9;
        printf("RESULT centre_rows %s N=%d C=%d %.3f ms %.0f GB/s %.0f%% of copy\n", FLOATX_NAME,
               N, C, ms, gbs, 100.0 * gbs / copy_gbs);
    }
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(out));
    free(hx);
    free(fx);
    free(ref);
    free(got);
    return ok;
}

int main(void) {
    if (!cuda_device_present("dev/cuda/cbwc")) return EXIT_SUCCESS;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    const bool full = !dev_check_only();
    const double copy_gbs = full ? copy_bandwidth_gbs() : 0.0;
    printf("%s: device-to-device copy %.0f GB/s\n", prop.name, copy_gbs);
    DevRng rng = {0xD1B54A32D192ED03ull};
    int ok = 1;
    ok &= check_projection(3, 40, 72, copy_gbs, &rng, false);
    if (full) ok &= check_projection(12, 768, 768, copy_gbs, &rng, true);
    if (full) ok &= check_projection(12, 768, 3072, copy_gbs, &rng, true);
    ok &= check_adamw_projection(2, 40, 72, copy_gbs, &rng, false);
    if (full) ok &= check_adamw_projection(12, 768, 3072, copy_gbs, &rng, true);
    ok &= check_centre_rows(1000, 96, copy_gbs, &rng, false);
    if (full) ok &= check_centre_rows(65536, 768, copy_gbs, &rng, true);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
