// LayerNorm and RMSNorm forward/backward fused with the residual add
// (llmc/cuda/norm.cuh): checked against the CPU kernels of llmc/kernels/norm.c on random
// inputs (rows with a mean offset, so the LN variance is not trivially
// centred), then timed against the device-to-device copy bandwidth.
// usage: norm [N C]...   (default: 4096 96, 65536 768, 16384 1600;
//        DEV_CUDA_CHECK_ONLY=1: no timings)
// Prints one "RESULT kind shape fwd/bwd GB/s %copy" line per timing.
#include <string.h>

#include "common.cuh"
#include "cuda/norm.cuh"

extern "C" {
#include "kernels/norm.h"
}

static const double TOL = sizeof(floatX) == 4 ? 1e-5 : 2e-2;

// The oracle: llmc/kernels/norm.c (the tested CPU kernels) on the kernel's inputs:
// residual = a + b rounded to floatX as the kernel stores it; y, mean, rstd;
// dres = dres0 + dx and dg, db accumulated from zero.
static void reference(bool layer, double *r_res, double *r_y, double *r_mean, double *r_rstd,
                      double *r_dres, double *r_dg, double *r_db, const float *a, const float *b,
                      const float *g, const float *bias, const float *dres0, const float *dy,
                      int N, int C) {
    const size_t n = (size_t)N * C;
    const NormKind kind = layer ? NORM_LAYER : NORM_RMS;
    float *res = (float *)host_alloc(n * 4), *y = (float *)host_alloc(n * 4);
    float *dres = (float *)host_alloc(n * 4), *mean = (float *)host_alloc((size_t)N * 4);
    float *rstd = (float *)host_alloc((size_t)N * 4), *dg = (float *)host_alloc((size_t)C * 4);
    float *db = (float *)host_alloc((size_t)C * 4);
    for (size_t i = 0; i < n; i++) res[i] = to_float(from_float<floatX>(a[i] + b[i]));
    memcpy(dres, dres0, n * 4);
    memset(dg, 0, (size_t)C * 4);
    memset(db, 0, (size_t)C * 4);
    for (int i = 0; i < N; i++) mean[i] = 0.0f; // RMS leaves it alone
    norm_forward(kind, y, mean, rstd, res, g, bias, N, C);
    norm_backward(kind, dres, dg, db, dy, res, g, mean, rstd, N, C);
    for (size_t i = 0; i < n; i++) {
        r_res[i] = res[i];
        r_y[i] = y[i];
        r_dres[i] = dres[i];
    }
    for (int i = 0; i < N; i++) {
        r_mean[i] = mean[i];
        r_rstd[i] = rstd[i];
    }
    for (int c = 0; c < C; c++) {
        r_dg[c] = dg[c];
        r_db[c] = db[c];
    }
    void *tmp[] = {res, y, dres, mean, rstd, dg, db};
    for (void *p : tmp) free(p);
}

static int run_shape(int N, int C, double copy_gbs, int num_sms, DevRng *rng, bool timing) {
    const size_t n = (size_t)N * C;
    floatX *ha = (floatX *)host_alloc(n * sizeof(floatX)), *hb = (floatX *)host_alloc(n * sizeof(floatX));
    floatX *hdy = (floatX *)host_alloc(n * sizeof(floatX)), *hdr = (floatX *)host_alloc(n * sizeof(floatX));
    floatX *hg = (floatX *)host_alloc(C * sizeof(floatX)), *hbias = (floatX *)host_alloc(C * sizeof(floatX));
    float *fa = (float *)host_alloc(n * 4), *fb = (float *)host_alloc(n * 4);
    float *fdy = (float *)host_alloc(n * 4), *fdr = (float *)host_alloc(n * 4);
    float *fg = (float *)host_alloc(C * 4), *fbias = (float *)host_alloc(C * 4);
    fill_random(ha, fa, n, rng, 2.0f, 1.0f); // offset 2: a mean far from 0
    fill_random(hb, fb, n, rng, 0.0f, 0.5f);
    fill_random(hdy, fdy, n, rng, 0.0f, 1.0f);
    fill_random(hdr, fdr, n, rng, 0.0f, 1.0f);
    fill_random(hg, fg, C, rng, 1.0f, 0.2f);
    fill_random(hbias, fbias, C, rng, 0.0f, 0.2f);
    floatX *a = to_device(ha, n), *b = to_device(hb, n), *dy = to_device(hdy, n);
    floatX *dres = to_device(hdr, n), *g = to_device(hg, C), *bias = to_device(hbias, C);
    floatX *residual, *out;
    float *mean, *rstd, *dgain, *dbias, *scratch;
    CUDA_CHECK(cudaMalloc(&residual, n * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&out, n * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&mean, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&rstd, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dgain, C * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dbias, C * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&scratch, norm_backward_scratch_floats(N, C, num_sms) * sizeof(float)));
    double *r_res = (double *)host_alloc(n * 8), *r_y = (double *)host_alloc(n * 8);
    double *r_dres = (double *)host_alloc(n * 8), *r_mean = (double *)host_alloc(N * 8);
    double *r_rstd = (double *)host_alloc(N * 8), *r_dg = (double *)host_alloc(C * 8);
    double *r_db = (double *)host_alloc(C * 8);
    float *got = (float *)host_alloc(n * 4);
    int ok = 1;
    for (int kind = 0; kind < 2; kind++) {
        const bool layer = kind == 0;
        const char *name = layer ? "layernorm" : "rmsnorm";
        printf("%s N=%d C=%d (%s):\n", name, N, C, FLOATX_NAME);
        residual_norm_forward(layer, residual, out, mean, rstd, a, b, g, bias, N, C, 0);
        CUDA_CHECK(cudaMemcpy(dres, hdr, n * sizeof(floatX), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dgain, 0, C * sizeof(float)));
        CUDA_CHECK(cudaMemset(dbias, 0, C * sizeof(float)));
        norm_backward(layer, dres, dgain, dbias, scratch, dy, residual, g, mean, rstd, N, C,
                      num_sms, 0);
        CUDA_CHECK(cudaDeviceSynchronize());
        reference(layer, r_res, r_y, r_mean, r_rstd, r_dres, r_dg, r_db, fa, fb, fg, fbias, fdr, fdy,
                  N, C);
        floatx_to_host(got, residual, n);
        ok &= check_tensor("residual", got, r_res, n, TOL);
        floatx_to_host(got, out, n);
        ok &= check_tensor("out", got, r_y, n, TOL);
        if (layer) {
            float_to_host(got, mean, N);
            ok &= check_tensor("mean", got, r_mean, N, TOL);
        }
        float_to_host(got, rstd, N);
        ok &= check_tensor("rstd", got, r_rstd, N, TOL);
        floatx_to_host(got, dres, n);
        ok &= check_tensor("dresidual", got, r_dres, n, TOL);
        float_to_host(got, dgain, C);
        ok &= check_tensor("dgain", got, r_dg, C, TOL);
        float_to_host(got, dbias, C);
        ok &= check_tensor("dbias", got, r_db, C, TOL);
        if (!timing) continue;
        // bytes that must move: fwd reads a, b, writes residual, out; bwd reads
        // dout, x, dresidual, writes dresidual (the statistics are N floats)
        const double bytes = 4.0 * (double)n * sizeof(floatX);
        float fwd_ms = time_ms([&] {
            residual_norm_forward(layer, residual, out, mean, rstd, a, b, g, bias, N, C, 0);
        }, 20);
        float bwd_ms = time_ms([&] {
            norm_backward(layer, dres, dgain, dbias, scratch, dy, residual, g, mean, rstd, N, C,
                          num_sms, 0);
        }, 20);
        const double fwd_gbs = bytes / (fwd_ms * 1e-3) / 1e9, bwd_gbs = bytes / (bwd_ms * 1e-3) / 1e9;
        printf("RESULT %s %s N=%d C=%d fwd %.3f ms %.0f GB/s %.0f%% | bwd %.3f ms %.0f GB/s %.0f%% "
               "(of copy %.0f GB/s)\n",
               name, FLOATX_NAME, N, C, fwd_ms, fwd_gbs, 100.0 * fwd_gbs / copy_gbs, bwd_ms,
               bwd_gbs, 100.0 * bwd_gbs / copy_gbs, copy_gbs);
    }
    void *device[] = {a, b, dy, dres, g, bias, residual, out, mean, rstd, dgain, dbias, scratch};
    for (void *p : device) CUDA_CHECK(cudaFree(p));
    void *host[] = {ha, hb, hdy, hdr, hg, hbias, fa, fb, fdy, fdr, fg, fbias, r_res, r_y, r_dres,
                    r_mean, r_rstd, r_dg, r_db, got};
    for (void *p : host) free(p);
    return ok;
}

int main(int argc, char **argv) {
    if (!cuda_device_present("dev/cuda/norm")) return EXIT_SUCCESS;
    int shapes[16][2] = {{4096, 96}, {65536, 768}, {16384, 1600}};
    int count = 3;
    if (argc > 1) {
        count = 0;
        for (int i = 1; i + 1 < argc && count < 16; i += 2, count++) {
            shapes[count][0] = atoi(argv[i]);
            shapes[count][1] = atoi(argv[i + 1]);
            if (shapes[count][0] <= 0 || shapes[count][1] <= 0) {
                fprintf(stderr, "error: shape %d: N and C must be positive integers\n", count);
                return EXIT_FAILURE;
            }
        }
    }
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    const bool timing = !dev_check_only();
    const double copy_gbs = timing ? copy_bandwidth_gbs() : 0.0;
    printf("%s: device-to-device copy %.0f GB/s\n", prop.name, copy_gbs);
    DevRng rng = {0x9E3779B97F4A7C15ull};
    int ok = 1;
    for (int i = 0; i < count; i++) {
        ok &= run_shape(shapes[i][0], shapes[i][1], copy_gbs, prop.multiProcessorCount, &rng, timing);
    }
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
