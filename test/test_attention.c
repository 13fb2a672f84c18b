// The blocked causal attention (llmc/kernels/attention.c) against a naive
// double-precision attention that keeps the full T x T probabilities:
// out, lse and the accumulated dqkv, at T = 1, below, at, just past and
// several blocks past ATTENTION_BLOCK (T not a multiple of the block), head
// sizes 1 .. 64, and inputs scaled up so that the running max of a row grows
// from block to block (the online rescaling is exercised).
// Tolerance (max |err| / max |ref| per tensor): 1e-5, the house's fp32
// tolerance, for out, lse and dqkv. fp32 dot products of length hs <= 64 and
// sums of <= 200 terms round at ~1e-7 relative, fast_expf adds <= 8.4e-8
// (fast_exp.h), and a score s enters exp with an absolute error ~|s| 6e-8
// (|s| reaches ~16 at input std 2); dqkv sums p (dp - D) terms that cancel.
// Measured over seeds 1-6: out <= 1.7e-6, lse <= 4.9e-7, dqkv <= 2.2e-6.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "core/cli.h"
#include "core/rand.h"
#include "test_helpers.h"
#include "core/utils.h"

typedef struct {
    int B, T, NH, hs;
    float input_std;
} Shape;

// Naive attention in double: out, lse and dqkv += the gradient for dout.
static void attention_reference(double *out, double *lse, double *dqkv, const float *qkv,
                                const float *dout, int B, int T, int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const double scale = 1.0 / sqrt((double)hs);
    double *p = malloc_check((size_t)T * sizeof(double), "reference p");
    double *dp = malloc_check((size_t)T * sizeof(double), "reference dp");
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const size_t head = (size_t)b * T * C3 + (size_t)h * hs;
            for (int t = 0; t < T; t++) {
                const float *q = qkv + head + (size_t)t * C3;
                double mx = -INFINITY;
                for (int u = 0; u <= t; u++) {
                    const float *k = qkv + head + (size_t)u * C3 + C;
                    double s = 0.0;
                    for (int d = 0; d < hs; d++) {
                        s += (double)q[d] * k[d];
                    }
                    p[u] = s * scale;
                    mx = fmax(mx, p[u]);
                }
                double sum = 0.0;
                for (int u = 0; u <= t; u++) {
                    p[u] = exp(p[u] - mx);
                    sum += p[u];
                }
                lse[((size_t)b * NH + h) * T + t] = mx + log(sum);
                const float *dy = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
                double *y = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                for (int d = 0; d < hs; d++) {
                    y[d] = 0.0;
                }
                double p_dp = 0.0;
                for (int u = 0; u <= t; u++) {
                    p[u] /= sum;
                    const float *v = qkv + head + (size_t)u * C3 + 2 * (size_t)C;
                    dp[u] = 0.0;
                    for (int d = 0; d < hs; d++) {
                        y[d] += p[u] * v[d];
                        dp[u] += (double)dy[d] * v[d];
                        dqkv[head + (size_t)u * C3 + 2 * (size_t)C + d] += p[u] * dy[d];
                    }
                    p_dp += p[u] * dp[u];
                }
                for (int u = 0; u <= t; u++) {
                    const double ds = p[u] * (dp[u] - p_dp) * scale;
                    const float *k = qkv + head + (size_t)u * C3 + C;
                    for (int d = 0; d < hs; d++) {
                        dqkv[head + (size_t)t * C3 + d] += ds * k[d];
                        dqkv[head + (size_t)u * C3 + C + d] += ds * q[d];
                    }
                }
            }
        }
    }
    free(p);
    free(dp);
}

static void check_shape(const Shape *sh, Rng *rng, double worst[3]) {
    const int B = sh->B, T = sh->T, NH = sh->NH, C = NH * sh->hs;
    const size_t rows = (size_t)B * T, n_qkv = rows * 3 * C, n_out = rows * C;
    const size_t n_lse = (size_t)B * NH * T;
    float *qkv = malloc_check(n_qkv * sizeof(float), "qkv");
    float *dout = malloc_check(n_out * sizeof(float), "dout");
    float *out = malloc_check(n_out * sizeof(float), "out");
    float *lse = malloc_check(n_lse * sizeof(float), "lse");
    float *dqkv = malloc_check(n_qkv * sizeof(float), "dqkv");
    float *dqkv_start = malloc_check(n_qkv * sizeof(float), "dqkv start");
    double *r_out = malloc_check(n_out * sizeof(double), "reference out");
    double *r_lse = malloc_check(n_lse * sizeof(double), "reference lse");
    double *r_dqkv = calloc_check(n_qkv, sizeof(double), "reference dqkv");
    rng_normal_fill(rng, qkv, n_qkv, 0.0f, sh->input_std);
    rng_normal_fill(rng, dout, n_out, 0.0f, 1.0f);
    rng_normal_fill(rng, dqkv_start, n_qkv, 0.0f, 1.0f); // the backward accumulates onto this
    memcpy(dqkv, dqkv_start, n_qkv * sizeof(float));
    attention_reference(r_out, r_lse, r_dqkv, qkv, dout, B, T, C, NH);
    attention_forward(out, lse, qkv, B, T, C, NH);
    attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH);
    // the gradient alone: what the backward added to the starting values
    double max_diff = 0.0;
    for (size_t i = 0; i < n_qkv; i++) {
        max_diff = worst_of(max_diff, fabs((double)dqkv[i] - dqkv_start[i] - r_dqkv[i]));
    }
    const double e[3] = {relative_error_vs_double(out, r_out, n_out),
                         relative_error_vs_double(lse, r_lse, n_lse),
                         max_diff / max_abs(r_dqkv, n_qkv)};
    printf("  B %d T %3d NH %d hs %2d std %.0f: out %.2e lse %.2e dqkv %.2e\n", B, T, NH, sh->hs,
           sh->input_std, e[0], e[1], e[2]);
    for (int i = 0; i < 3; i++) {
        worst[i] = worst_of(worst[i], e[i]); // a NaN in any shape stays: the checks fail on it
    }
    free(qkv);
    free(dout);
    free(out);
    free(lse);
    free(dqkv);
    free(dqkv_start);
    free(r_out);
    free(r_lse);
    free(r_dqkv);
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_attention", .synopsis = "",
                    .about = "The blocked causal attention against a naive double-precision one.\n"};
    cli_parse(&spec, argc, argv, NULL);
    const char *seed = getenv("FOLDNORM_TEST_SEED");
    Rng rng;
    rng_seed(&rng, seed != NULL ? strtoull(seed, NULL, 10) : 20261130ull);
    const int blk = ATTENTION_BLOCK;
    const Shape shapes[] = {
        {1, 1, 1, 64, 1.0f},           {2, 1, 3, 8, 1.0f},        {2, 5, 3, 8, 1.0f},
        {1, blk - 1, 2, 64, 1.0f},     {2, blk, 2, 16, 1.0f},     {1, blk + 1, 2, 64, 1.0f},
        {1, 2 * blk + 5, 2, 24, 1.0f}, {1, 3 * blk + 7, 1, 1, 1.0f}, {1, 3 * blk + 7, 2, 64, 2.0f},
    };
    printf("attention (block %d) vs naive double attention:\n", blk);
    double worst[3] = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        check_shape(&shapes[i], &rng, worst);
    }
    int ok = check_error("out", worst[0], 1e-5);
    ok &= check_error("lse", worst[1], 1e-5);
    ok &= check_error("dqkv", worst[2], 1e-5);
    printf("%s\n", ok ? "test_attention: passed" : "test_attention: FAILED");
    return ok ? 0 : 1;
}
