// Swin's (shifted-)window attention (llmc/cuda/swin_window_attention.cuh) against
// the CPU kernels the CPU Swin runs (llmc/kernels/attention_bidir.c with the window
// permutation, relative index, shift mask and score bias of
// llmc/kernels/swin_window.c) on random qkv, bias table and output gradient: out,
// att, dqkv and the bias table's gradient, over shifts 0 and > 0, windows
// 3, 4, 7 and 12, several windows per image and one, odd head counts, head
// sizes 8 to 128 (above 48 KiB of shared memory: hs 64 and 128, window 12) and few score
// chunks (several windows per backward block). A second backward must give
// the same dqkv bits and exactly twice the table gradient (it accumulates;
// x + x is exact). bf16 builds also check the tensor-core kernel
// (llmc/cuda/swin_window_attention_tc.cuh: out, dqkv, dtable, the repeat) on the
// same inputs. Then both are timed at Swin-T's first stage (224x224, B=64).
#include <math.h>
#include <string.h>

#include "common.cuh"
#include "cuda/swin_window_attention.cuh"
#include "cuda/swin_window_attention_tc.cuh"

extern "C" {
#include "kernels/attention_bidir.h"
#include "kernels/swin_window.h"
}

// fp32: sums of <= 64 products in another order than the CPU's tile GEMMs (max measured
// over 30 seeds under emulation: 7.6e-7). bf16: att is stored in bf16 and read back by the
// backward, out and dqkv are rounded (max measured: 6.0e-3, dqkv); 2e-2 leaves the headroom
// docs/cuda.md gives the device's fast-math exp
static const double TOL = sizeof(floatX) == 4 ? 1e-5 : 2e-2;
// tc (bf16 only): q, k, v, dy and the table as bf16, P and dS rounded to bf16 as mma
// operands, fp32 sums, no att stored (lse instead). Largest errors measured under
// emulation over seeds 1-30 (docs/cuda.md): out 4.5e-3, dq 5.9e-3, dk 6.5e-3, dv 6.0e-3,
// dtable 6.8e-3; the same 2e-2 as the FMA kernel's bf16 (~3x, for the device's sum
// order and expf).
static const double TC_TOL = 2e-2;

// the CPU Swin's attention of one block on the (rounded) inputs
static void cpu_reference(float *out, float *att, float *dqkv, float *dtable, const float *qkv,
                          const float *table, const float *dout, const SwinWindowShape *s) {
    const int N = s->res * s->res, W = s->W, T = W * W, nW = N / T, G = s->B * nW;
    const int nbias = s->shift > 0 ? nW : 1;
    int *perm = (int *)host_alloc((size_t)N * sizeof(int));
    int *rel = (int *)host_alloc((size_t)T * T * sizeof(int));
    float *mask = s->shift > 0 ? (float *)host_alloc((size_t)nW * T * T * 4) : NULL;
    float *bias = (float *)host_alloc((size_t)nbias * s->NH * T * T * 4);
    float *dscore_sum = (float *)host_alloc((size_t)s->NH * T * T * 4);
    swin_window_perm(perm, s->res, W, s->shift);
    swin_relative_index(rel, W);
    if (mask != NULL) swin_shift_mask(mask, s->res, W, s->shift);
    swin_score_bias(bias, table, rel, mask, nbias, s->NH, T);
    attention_bidir_forward(out, att, qkv, bias, nbias, perm, nW, G, T, s->C, s->NH);
    attention_bidir_backward(dqkv, dscore_sum, dout, qkv, att, perm, nW, G, T, s->C, s->NH);
    memset(dtable, 0, (size_t)(2 * W - 1) * (2 * W - 1) * s->NH * 4);
    swin_bias_table_backward(dtable, dscore_sum, rel, s->NH, T);
    void *p[] = {perm, rel, mask, bias, dscore_sum};
    for (void *x : p) free(x);
}

static double *to_double(const float *x, size_t n) {
    double *d = (double *)host_alloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static int check_against(const char *what, const float *got, const float *ref, size_t n) {
    double *r = to_double(ref, n);
    int ok = check_tensor(what, got, r, n, TOL);
    free(r);
    return ok;
}

// the tensor-core kernel on the inputs of check() against the CPU's out, dqkv, dtable
static int check_tc(const SwinWindowShape *s, const floatX *d_qkv, const floatX *d_table,
                    const floatX *d_dout, const float *out, const float *dqkv,
                    const float *dtable) {
    const size_t rows = (size_t)s->B * s->res * s->res, nqkv = rows * 3 * s->C;
    const size_t nout = rows * s->C, ntab = (size_t)(2 * s->W - 1) * (2 * s->W - 1) * s->NH;
    printf("  tc:\n");
    floatX *d_out, *d_dqkv;
    float *d_lse, *d_dtable, *d_scratch;
    CUDA_CHECK(cudaMalloc(&d_out, nout * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dqkv, nqkv * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_lse, swin_window_attention_tc_lse_floats(s) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_dtable, ntab * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_scratch, swin_window_attention_scratch_floats(s) * sizeof(float)));
    CUDA_CHECK(cudaMemset(d_dtable, 0, ntab * sizeof(float)));
    swin_window_attention_tc_forward_cuda(d_out, d_lse, d_qkv, d_table, s, 0);
    swin_window_attention_tc_backward_cuda(d_dqkv, d_dtable, d_scratch, d_dout, d_out, d_qkv,
                                           d_lse, d_table, s, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    float *got = (float *)host_alloc(nqkv * 4), *again = (float *)host_alloc(nqkv * 4);
    float *gtab = (float *)host_alloc(ntab * 4);
    int ok = 1;
    double *r = to_double(out, nout);
    floatx_to_host(got, d_out, nout);
    ok &= check_tensor("out", got, r, nout, TC_TOL);
    free(r);
    floatx_to_host(got, d_dqkv, nqkv);
    ok &= check_qkv_parts(got, dqkv, rows, s->C, TC_TOL);
    r = to_double(dtable, ntab);
    float_to_host(gtab, d_dtable, ntab);
    ok &= check_tensor("dtable", gtab, r, ntab, TC_TOL);
    free(r);
    CUDA_CHECK(cudaMemset(d_dqkv, 0, nqkv * sizeof(floatX)));
    swin_window_attention_tc_backward_cuda(d_dqkv, d_dtable, d_scratch, d_dout, d_out, d_qkv,
                                           d_lse, d_table, s, 0);
    floatx_to_host(again, d_dqkv, nqkv);
    int same = memcmp(got, again, nqkv * 4) == 0;
    float_to_host(again, d_dtable, ntab);
    for (size_t i = 0; i < ntab; i++) same &= again[i] == 2.0f * gtab[i];
    printf("  %-16s %s\n", "repeated", same ? "dqkv bit-identical, dtable doubled ok" : "FAIL");
    ok &= same;
    void *dev[] = {d_out, d_dqkv, d_lse, d_dtable, d_scratch};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {got, again, gtab};
    for (void *p : host) free(p);
    return ok;
}

static int check(SwinWindowShape s, DevRng *rng) {
    const int N = s.res * s.res, W = s.W, T = W * W, G = s.B * N / T;
    const size_t rows = (size_t)s.B * N, nqkv = rows * 3 * s.C, nout = rows * s.C;
    const size_t natt = (size_t)G * s.NH * T * T, ntab = (size_t)(2 * W - 1) * (2 * W - 1) * s.NH;
    printf("swin window attention B=%d res=%d W=%d shift=%d C=%d NH=%d hs=%d chunks=%d (%s):\n",
           s.B, s.res, W, s.shift, s.C, s.NH, s.C / s.NH, swin_score_chunks(&s), FLOATX_NAME);
    floatX *h = (floatX *)host_alloc(nqkv * sizeof(floatX));
    float *qkv = (float *)host_alloc(nqkv * 4), *table = (float *)host_alloc(ntab * 4);
    float *dout = (float *)host_alloc(nout * 4);
    fill_random(h, qkv, nqkv, rng, 0.0f, 1.0f);
    floatX *d_qkv = to_device(h, nqkv);
    fill_random(h, table, ntab, rng, 0.0f, 1.0f); // larger than a trained table: the bias matters
    floatX *d_table = to_device(h, ntab);
    fill_random(h, dout, nout, rng, 0.0f, 1.0f);
    floatX *d_dout = to_device(h, nout);
    floatX *d_out, *d_att, *d_dqkv;
    float *d_dtable, *d_scratch;
    CUDA_CHECK(cudaMalloc(&d_out, nout * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_att, natt * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dqkv, nqkv * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dtable, ntab * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_scratch, swin_window_attention_scratch_floats(&s) * sizeof(float)));
    CUDA_CHECK(cudaMemset(d_dtable, 0, ntab * sizeof(float)));
    swin_window_attention_forward_cuda(d_out, d_att, d_qkv, d_table, &s, 0);
    swin_window_attention_backward_cuda(d_dqkv, d_dtable, d_scratch, d_dout, d_qkv, d_att, &s, 0);
    CUDA_CHECK(cudaDeviceSynchronize());

    float *out = (float *)host_alloc(nout * 4), *att = (float *)host_alloc(natt * 4);
    float *dqkv = (float *)host_alloc(nqkv * 4), *dtable = (float *)host_alloc(ntab * 4);
    cpu_reference(out, att, dqkv, dtable, qkv, table, dout, &s);
    float *got = (float *)host_alloc((nqkv > natt ? nqkv : natt) * 4);
    float *again = (float *)host_alloc(nqkv * 4), *gtab = (float *)host_alloc(ntab * 4);
    int ok = 1;
    floatx_to_host(got, d_out, nout);
    ok &= check_against("out", got, out, nout);
    floatx_to_host(got, d_att, natt);
    ok &= check_against("att", got, att, natt);
    floatx_to_host(got, d_dqkv, nqkv);
    ok &= check_against("dqkv", got, dqkv, nqkv);
    float_to_host(gtab, d_dtable, ntab);
    ok &= check_against("dtable", gtab, dtable, ntab);
    // determinism and accumulation: a second backward's dqkv bits equal, dtable doubled
    CUDA_CHECK(cudaMemset(d_dqkv, 0, nqkv * sizeof(floatX)));
    swin_window_attention_backward_cuda(d_dqkv, d_dtable, d_scratch, d_dout, d_qkv, d_att, &s, 0);
    floatx_to_host(again, d_dqkv, nqkv);
    int same = memcmp(got, again, nqkv * 4) == 0;
    float_to_host(again, d_dtable, ntab);
    for (size_t i = 0; i < ntab; i++) same &= again[i] == 2.0f * gtab[i];
    printf("  %-16s %s\n", "repeated", same ? "dqkv bit-identical, dtable doubled ok" : "FAIL");
    ok &= same;
    if (sizeof(floatX) == 2) ok &= check_tc(&s, d_qkv, d_table, d_dout, out, dqkv, dtable);
    void *dev[] = {d_qkv, d_table, d_dout, d_out, d_att, d_dqkv, d_dtable, d_scratch};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {h, qkv, table, dout, out, att, dqkv, dtable, got, again, gtab};
    for (void *p : host) free(p);
    return ok;
}

static void timing(SwinWindowShape s) {
    const int N = s.res * s.res, T = s.W * s.W, G = s.B * N / T;
    const size_t rows = (size_t)s.B * N, natt = (size_t)G * s.NH * T * T;
    const size_t ntab = (size_t)(2 * s.W - 1) * (2 * s.W - 1) * s.NH;
    floatX *qkv, *dqkv, *out, *dout, *att, *table;
    float *dtable, *scratch;
    CUDA_CHECK(cudaMalloc(&qkv, rows * 3 * s.C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dqkv, rows * 3 * s.C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&out, rows * s.C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dout, rows * s.C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&att, natt * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&table, ntab * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dtable, ntab * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&scratch, swin_window_attention_scratch_floats(&s) * sizeof(float)));
    CUDA_CHECK(cudaMemset(qkv, 0, rows * 3 * s.C * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dout, 0, rows * s.C * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(table, 0, ntab * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dtable, 0, ntab * sizeof(float)));
    float fwd = time_ms([&] {
        swin_window_attention_forward_cuda(out, att, qkv, table, &s, 0);
    }, 5);
    float bwd = time_ms([&] {
        swin_window_attention_backward_cuda(dqkv, dtable, scratch, dout, qkv, att, &s, 0);
    }, 5);
    printf("RESULT swin_window_attention %s B=%d res=%d W=%d shift=%d C=%d NH=%d fwd %.3f ms | "
           "bwd %.3f ms\n",
           FLOATX_NAME, s.B, s.res, s.W, s.shift, s.C, s.NH, fwd, bwd);
    if (sizeof(floatX) == 2) { // the tensor-core kernel: lse instead of att, out read back
        float *lse;
        CUDA_CHECK(cudaMalloc(&lse, swin_window_attention_tc_lse_floats(&s) * sizeof(float)));
        const float tc_fwd = time_ms([&] {
            swin_window_attention_tc_forward_cuda(out, lse, qkv, table, &s, 0);
        }, 5);
        const float tc_bwd = time_ms([&] {
            swin_window_attention_tc_backward_cuda(dqkv, dtable, scratch, dout, out, qkv, lse,
                                                   table, &s, 0);
        }, 5);
        printf("RESULT swin_window_attention_tc %s B=%d res=%d W=%d shift=%d C=%d NH=%d fwd %.3f "
               "ms | bwd %.3f ms\n",
               FLOATX_NAME, s.B, s.res, s.W, s.shift, s.C, s.NH, tc_fwd, tc_bwd);
        CUDA_CHECK(cudaFree(lse));
    }
    void *dev[] = {qkv, dqkv, out, dout, att, table, dtable, scratch};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
}

int main(int argc, char **argv) {
    DevRng rng = dev_rng_from_args(argc, argv, 0xD1B54A32D192ED03ull); // [SEED]
    if (!cuda_device_present("dev/cuda/swin_window_attention")) return EXIT_SUCCESS;
    int ok = 1;
    // B, res, W, shift, C, NH, score_chunks (0: the default)
    ok &= check({2, 8, 4, 0, 48, 3, 0}, &rng);  // W-MSA, 4 windows an image, hs 16
    ok &= check({2, 8, 4, 2, 48, 3, 0}, &rng);  // SW-MSA: shift W/2, the mask
    ok &= check({3, 12, 4, 1, 32, 2, 5}, &rng); // 3x3 windows, shift 1; 27 windows in 5 chunks
    ok &= check({1, 14, 7, 3, 96, 3, 3}, &rng); // Swin-T's window and heads (hs 32); 3 chunks
    ok &= check({2, 6, 3, 1, 24, 3, 0}, &rng);  // odd window 3, shift 1, 3 heads of 8
    ok &= check({2, 7, 7, 0, 40, 5, 0}, &rng);  // one window an image, 5 heads of 8
    ok &= check({1, 7, 7, 0, 128, 2, 0}, &rng); // hs 64: the backward above 48 KiB of shared memory
    ok &= check({1, 12, 12, 0, 32, 1, 0}, &rng); // window 12 (Swin at 384): both above 48 KiB
    // hs 128, the tensor-core kernel's widest tile (D = 128), at Swin's window 7 (T = 49: 64 rows
    // of tiles, the last 15 zero): shared memory tc 52 KiB forward, 88 KiB backward, the FMA
    // kernel 83 KiB and 108 KiB, all above 48 KiB and within the 227 KiB opt-in limit
    ok &= check({1, 7, 7, 0, 128, 1, 0}, &rng);
    if (!dev_check_only()) timing({64, 56, 7, 3, 96, 3, 0});
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
