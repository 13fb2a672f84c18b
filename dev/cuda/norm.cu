// LayerNorm and RMSNorm forward/backward fused with the residual add
// (llmc/norm.cuh): checked against a CPU reference in double on random
// inputs (rows with a mean offset, so the LN variance is not trivially
// centred), then timed against the device-to-device copy bandwidth.
// usage: norm [N C]...   (default: 4096 96, 65536 768, 16384 1600;
//        DEV_CUDA_CHECK_ONLY=1: no timings)
// Prints one "RESULT kind shape fwd/bwd GB/s %copy" line per timing.
#include "common.cuh"
#include "norm.cuh"

static const double TOL = sizeof(floatX) == 4 ? 1e-5 : 2e-2;

// residual = round(a + b); y = g xhat + bias; stats per row (double)
static void reference_forward(bool layer, double *residual, double *y, double *mean, double *rstd,
                              const float *a, const float *b, const float *g, const float *bias,
                              int N, int C) {
    for (int n = 0; n < N; n++) {
        const size_t base = (size_t)n * C;
        double sum = 0.0;
        for (int c = 0; c < C; c++) {
            // the kernel rounds the sum to floatX before the statistics
            residual[base + c] = to_float(from_float<floatX>(a[base + c] + b[base + c]));
            sum += residual[base + c];
        }
        const double mu = layer ? sum / C : 0.0;
        double sq = 0.0;
        for (int c = 0; c < C; c++) sq += (residual[base + c] - mu) * (residual[base + c] - mu);
        const double rs = 1.0 / sqrt(sq / C + 1e-5);
        for (int c = 0; c < C; c++) y[base + c] = g[c] * (residual[base + c] - mu) * rs + bias[c];
        mean[n] = mu;
        rstd[n] = rs;
    }
}

// dres = dres0 + dx; dg, db sums over rows
static void reference_backward(bool layer, double *dres, double *dg, double *db,
                               const float *dres0, const float *dy, const double *x,
                               const float *g, const double *mean, const double *rstd, int N,
                               int C) {
    for (int c = 0; c < C; c++) dg[c] = db[c] = 0.0;
    for (int n = 0; n < N; n++) {
        const size_t base = (size_t)n * C;
        double s1 = 0.0, s2 = 0.0;
        for (int c = 0; c < C; c++) {
            double xhat = (x[base + c] - mean[n]) * rstd[n];
            double dxhat = g[c] * dy[base + c];
            s1 += dxhat;
            s2 += dxhat * xhat;
        }
        const double m1 = layer ? s1 / C : 0.0, m2 = s2 / C;
        for (int c = 0; c < C; c++) {
            double xhat = (x[base + c] - mean[n]) * rstd[n];
            dres[base + c] = dres0[base + c] + rstd[n] * (g[c] * dy[base + c] - m1 - xhat * m2);
            dg[c] += xhat * dy[base + c];
            db[c] += dy[base + c];
        }
    }
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
        reference_forward(layer, r_res, r_y, r_mean, r_rstd, fa, fb, fg, fbias, N, C);
        reference_backward(layer, r_dres, r_dg, r_db, fdr, fdy, r_res, fg, r_mean, r_rstd, N, C);
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
