// The vectorized kernels of the vision models against double-precision
// references written as plainly as possible.
//
// test_kernels [stride]     (random shapes from FOLDNORM_TEST_SEED when set)
//   math: every stride-th float bit pattern (default 61: ~70M floats, a few
//   seconds; stride 1 is every float):
//     fast_expf: relative error <= 2e-7 on [-87, 88], NaN in -> NaN out, +-inf clamped;
//     the tanh the GELU implies (2 sigmoid(2u) - 1) vs libm tanhf: absolute error <= 2e-7;
//     gelu_forward vs the double formula: |error| <= 5e-7 * max(|gelu(x)|, |x| / 2, 1e-30)
//     (finite |x| < 1e18; beyond, x^3 overflows in fp32 as in every fp32 GELU);
//     gelu_backward vs the double derivative: |error| <= 5e-7 * max(|gelu'(x)|, 1), |x| < 1e6.
//   crossentropy (llmc/kernels/crossentropy.c, fast_expf in vectorized loops): rows of
//     V = 50257 (and short odd V) in Vp-padded rows, logits N(0, s) with s up
//     to 30 (most exponents underflow below FAST_EXP_MIN), masked targets:
//     losses within 2e-6 * max(1, |loss|) of a double logsumexp, dlogits
//     within 5e-6 * scale absolutely (probabilities <= 1 with fast_expf's
//     2e-7 and the fp32 row sum's error: blocks of 256 terms in a row when
//     not vectorised, as under SAN's -O1, worst 1.3e-6 over 20 seeds there,
//     1.1e-7 vectorised; a wrong formula is off by 1e-3 or more), masked rows
//     and padded columns exactly 0.
//   tile_gemm: random shapes (M, N, K, A or A^T, set or accumulate, alpha),
//     max |error| <= 1e-5 * max |reference|.
//   attention_bidir forward and backward: random groups with and without a
//     score bias and a token map, T from 1 to 70, head sizes 1 to 64;
//     out, att, dqkv and the score gradients summed over the groups within
//     1e-5 * max |reference| each.
//   data-parallel steps (classifier.c): a ViT and a Swin in cbwc, B = 32,
//     two training steps on 1 thread (one model) and on 3 threads (three
//     per-thread copies): logits, loss and every gradient within 1e-5 *
//     max |1-thread value|.
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/attention_bidir.h"
#include "vision/classifier.h"
#include "core/cli.h"
#include "kernels/crossentropy.h"
#include "kernels/fast_exp.h"
#include "kernels/gelu.h"
#include "core/rand.h"
#include "kernels/tile_gemm.h"
#include "core/utils.h"
#include "test_helpers.h"

enum { CHUNK = 1 << 16 };

static int failures = 0;

static void check(const char *what, double err, double tol) {
    failures += !report_within(what, 44, err, tol);
}

static float float_from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static double gelu_ref(double x) {
    double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + tanh(u));
}

static double gelu_grad_ref(double x) {
    double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    double th = tanh(u), du = sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
}

static void test_math(uint64_t stride) {
    static float x[CHUNK], y[CHUNK], dy[CHUNK], ones[CHUNK];
    for (int i = 0; i < CHUNK; i++) {
        ones[i] = 1.0f;
    }
    double exp_rel = 0.0, tanh_abs = 0.0, gelu_rel = 0.0, grad_rel = 0.0;
    int bad_special = 0;
    uint64_t checked = 0;
    for (uint64_t start = 0; start < (1ull << 32); start += (uint64_t)CHUNK * stride) {
        int n = 0;
        for (uint64_t b = start; b < (1ull << 32) && n < CHUNK; b += stride) {
            x[n++] = float_from_bits((uint32_t)b);
        }
        checked += (uint64_t)n;
        gelu_forward(y, x, (size_t)n);
        gelu_backward(dy, x, ones, (size_t)n);
        for (int i = 0; i < n; i++) {
            float v = x[i];
            if (isnan(v)) {
                bad_special += !isnan(fast_expf(v)) || !isnan(y[i]);
                continue;
            }
            if (v >= FAST_EXP_MIN && v <= FAST_EXP_MAX) {
                double e = exp((double)v);
                exp_rel = worst_of(exp_rel, fabs((double)fast_expf(v) - e) / e);
            }
            // the GELU's sigmoid at 2u: 2 sigmoid(2u) - 1 against tanhf(u)
            float s = 1.0f / (1.0f + fast_expf(-2.0f * v));
            tanh_abs = worst_of(tanh_abs, fabs((double)(2.0f * s - 1.0f) - (double)tanhf(v)));
            if (fabsf(v) < 1e18f) {
                double r = gelu_ref(v);
                double scale = fmax(fmax(fabs(r), fabs((double)v) / 2.0), 1e-30);
                gelu_rel = worst_of(gelu_rel, fabs((double)y[i] - r) / scale);
            }
            if (fabsf(v) < 1e6f) {
                double r = gelu_grad_ref(v);
                grad_rel = worst_of(grad_rel, fabs((double)dy[i] - r) / fmax(fabs(r), 1.0));
            }
        }
    }
    bad_special += fast_expf(INFINITY) != fast_expf(FAST_EXP_MAX) ||
                   fast_expf(-INFINITY) != fast_expf(FAST_EXP_MIN);
    printf("math: %llu floats (every %llu-th bit pattern)\n", (unsigned long long)checked,
           (unsigned long long)stride);
    check("fast_expf relative error", exp_rel, 2e-7);
    check("tanh via sigmoid, absolute error", tanh_abs, 2e-7);
    check("gelu_forward error / max(|gelu|, |x|/2)", gelu_rel, 5e-7);
    check("gelu_backward error / max(|gelu'|, 1)", grad_rel, 5e-7);
    check("NaN and infinities", bad_special, 0);
}

static int rand_int(Rng *rng, int lo, int hi) {
    return lo + (int)(rng_u32(rng) % (uint32_t)(hi - lo + 1));
}

static void test_crossentropy(Rng *rng) {
    const int shapes[3][2] = {{50257, 50304}, {301, 384}, {7, 7}}; // V, Vp
    const float stds[3] = {1.0f, 5.0f, 30.0f};
    const int N = 6;
    double loss_err = 0.0, grad_err = 0.0;
    int nonzero = 0;
    for (int s = 0; s < 3; s++) {
        const int V = shapes[s][0], Vp = shapes[s][1];
        for (int k = 0; k < 3; k++) {
            float *logits = malloc_check((size_t)N * Vp * sizeof(float), "logits");
            float losses[N], stats[2 * N];
            int targets[N];
            rng_normal_fill(rng, logits, (size_t)N * Vp, 0.5f, stds[k]);
            for (int n = 0; n < N; n++) {
                targets[n] = n == 2 ? -1 : rand_int(rng, 0, V - 1); // row 2 masked
            }
            const float scale = 1.0f / 5.0f;
            double ref_loss[N];
            double *ref_grad = malloc_check((size_t)N * V * sizeof(double), "reference dlogits");
            for (int n = 0; n < N; n++) {
                const float *x = logits + (size_t)n * Vp;
                double m = -INFINITY, sum = 0.0;
                for (int i = 0; i < V; i++) {
                    m = worst_of(m, x[i]);
                }
                for (int i = 0; i < V; i++) {
                    sum += exp((double)x[i] - m);
                }
                double l = m + log(sum);
                ref_loss[n] = targets[n] < 0 ? 0.0 : l - x[targets[n]];
                for (int i = 0; i < V; i++) {
                    double g = targets[n] < 0 ? 0.0 : scale * (exp((double)x[i] - l) - (i == targets[n]));
                    ref_grad[(size_t)n * V + i] = g;
                }
            }
            crossentropy_forward(losses, stats, logits, targets, N, V, Vp);
            crossentropy_backward_inplace(logits, stats, targets, scale, N, V, Vp);
            for (int n = 0; n < N; n++) {
                double e = fabs(losses[n] - ref_loss[n]) / fmax(1.0, fabs(ref_loss[n]));
                loss_err = worst_of(loss_err, e);
                for (int i = 0; i < Vp; i++) {
                    float got = logits[(size_t)n * Vp + i];
                    if (i >= V || targets[n] < 0) {
                        nonzero += got != 0.0f;
                        continue;
                    }
                    double g = fabs(got - ref_grad[(size_t)n * V + i]) / scale;
                    grad_err = g > grad_err || isnan(g) ? g : grad_err;
                }
            }
            free(ref_grad);
            free(logits);
        }
    }
    printf("crossentropy: V 50257, 301, 7; logit std 1, 5, 30; a masked row\n");
    check("crossentropy loss error / max(1, |loss|)", loss_err, 2e-6);
    check("crossentropy dlogits error / scale", grad_err, 5e-6);
    check("masked rows and padded columns nonzero", nonzero, 0);
}

static void test_tile_gemm(Rng *rng) {
    printf("tile_gemm: 300 random shapes\n");
    double worst = 0.0;
    for (int trial = 0; trial < 300; trial++) {
        int M = rand_int(rng, 1, 70), K = rand_int(rng, 1, 300), N = 16 * rand_int(rng, 1, 9);
        int a_t = rand_int(rng, 0, 1), accumulate = rand_int(rng, 0, 1);
        int lda = (a_t ? M : K) + rand_int(rng, 0, 3), ldb = N + 16 * rand_int(rng, 0, 1);
        int ldc = N + rand_int(rng, 0, 5);
        float alpha = trial % 3 == 0 ? 1.0f : 0.37f;
        size_t a_rows = a_t ? (size_t)K : (size_t)M;
        float *A = malloc_check(a_rows * lda * sizeof(float), "A");
        float *B = malloc_check((size_t)K * ldb * sizeof(float), "B");
        float *C = malloc_check((size_t)M * ldc * sizeof(float), "C");
        double *ref = malloc_check((size_t)M * N * sizeof(double), "ref");
        float *got = malloc_check((size_t)M * N * sizeof(float), "got");
        rng_normal_fill(rng, A, a_rows * lda, 0.0f, 1.0f);
        rng_normal_fill(rng, B, (size_t)K * ldb, 0.0f, 1.0f);
        rng_normal_fill(rng, C, (size_t)M * ldc, 0.0f, 1.0f);
        for (int m = 0; m < M; m++) {
            for (int n = 0; n < N; n++) {
                double sum = 0.0;
                for (int k = 0; k < K; k++) {
                    double a = a_t ? A[(size_t)k * lda + m] : A[(size_t)m * lda + k];
                    sum += a * B[(size_t)k * ldb + n];
                }
                ref[(size_t)m * N + n] =
                    alpha * sum + (accumulate ? C[(size_t)m * ldc + n] : 0.0);
            }
        }
        tile_gemm(C, ldc, A, lda, a_t, B, ldb, M, N, K, alpha, accumulate);
        for (int m = 0; m < M; m++) {
            memcpy(got + (size_t)m * N, C + (size_t)m * ldc, (size_t)N * sizeof(float));
        }
        double e = relative_error_vs_double(got, ref, (size_t)M * N);
        worst = worst_of(worst, e);
        if (!(e <= 1e-5)) {
            printf("  M %d N %d K %d a_t %d accumulate %d: %.3e\n", M, N, K, a_t, accumulate, e);
        }
        free(A);
        free(B);
        free(C);
        free(ref);
        free(got);
    }
    check("worst max|C - ref| / max|ref|", worst, 1e-5);
}

// The plain definition, in double: rows through the token map, softmax of
// q k^T / sqrt(hs) + bias, its backward with dscore = att * (datt - sum(att * datt)).
static void attention_ref(double *out, double *att, double *dqkv, double *dscores,
                          const float *qkv, const float *bias, int num_bias, const int *map,
                          int map_groups, const float *dout, int G, int T, int C, int NH) {
    const int hs = C / NH;
    const double scale = 1.0 / sqrt((double)hs);
    const size_t C3 = 3 * (size_t)C;
    double *datt = malloc_check((size_t)T * sizeof(double), "datt");
    for (int g = 0; g < G; g++) {
        for (int h = 0; h < NH; h++) {
            size_t row[256];
            for (int t = 0; t < T; t++) {
                row[t] = map == NULL ? (size_t)g * T + t
                                     : (size_t)(g / map_groups) * map_groups * T +
                                           map[(size_t)(g % map_groups) * T + t];
            }
            double *a = att + ((size_t)g * NH + h) * T * T;
            double *ds = dscores + ((size_t)g * NH + h) * T * T;
            for (int t = 0; t < T; t++) {
                double maxval = -INFINITY, sum = 0.0;
                for (int u = 0; u < T; u++) {
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) {
                        dot += (double)qkv[row[t] * C3 + h * hs + i] *
                               qkv[row[u] * C3 + C + h * hs + i];
                    }
                    double b = bias == NULL
                                   ? 0.0
                                   : bias[((size_t)(g % num_bias) * NH + h) * T * T + t * T + u];
                    a[t * T + u] = dot * scale + b;
                    maxval = worst_of(maxval, a[t * T + u]);
                }
                for (int u = 0; u < T; u++) {
                    a[t * T + u] = exp(a[t * T + u] - maxval);
                    sum += a[t * T + u];
                }
                for (int u = 0; u < T; u++) {
                    a[t * T + u] /= sum;
                }
                for (int i = 0; i < hs; i++) {
                    double o = 0.0;
                    for (int u = 0; u < T; u++) {
                        o += a[t * T + u] * qkv[row[u] * C3 + 2 * C + h * hs + i];
                    }
                    out[row[t] * C + h * hs + i] = o;
                }
            }
            for (int t = 0; t < T; t++) {
                double s = 0.0;
                for (int u = 0; u < T; u++) {
                    double d = 0.0;
                    for (int i = 0; i < hs; i++) {
                        d += (double)dout[row[t] * C + h * hs + i] *
                             qkv[row[u] * C3 + 2 * C + h * hs + i];
                    }
                    datt[u] = d;
                    s += a[t * T + u] * d;
                }
                for (int u = 0; u < T; u++) {
                    ds[t * T + u] = a[t * T + u] * (datt[u] - s);
                }
            }
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < hs; i++) {
                    double dq = 0.0, dk = 0.0, dv = 0.0;
                    for (int u = 0; u < T; u++) {
                        dq += ds[t * T + u] * qkv[row[u] * C3 + C + h * hs + i];
                        dk += ds[u * T + t] * qkv[row[u] * C3 + h * hs + i];
                        dv += a[u * T + t] * dout[row[u] * C + h * hs + i];
                    }
                    dqkv[row[t] * C3 + h * hs + i] = dq * scale;
                    dqkv[row[t] * C3 + C + h * hs + i] = dk * scale;
                    dqkv[row[t] * C3 + 2 * C + h * hs + i] = dv;
                }
            }
        }
    }
    free(datt);
}

static void test_attention(Rng *rng) {
    printf("attention_bidir: 60 random configurations\n");
    double worst[4] = {0.0, 0.0, 0.0, 0.0};
    for (int trial = 0; trial < 60; trial++) {
        int T = trial < 4 ? (int[]){1, 17, 49, 70}[trial] : rand_int(rng, 1, 70);
        int NH = rand_int(rng, 1, 4), hs = trial % 5 == 0 ? 64 : rand_int(rng, 1, 40);
        int C = NH * hs, images = rand_int(rng, 1, 3), map_groups = rand_int(rng, 1, 3);
        int use_map = trial % 2, use_bias = trial % 3 != 0;
        int G = use_map ? images * map_groups : rand_int(rng, 1, 4);
        int num_bias = use_bias ? (use_map ? map_groups : rand_int(rng, 1, G)) : 0;
        size_t rows = (size_t)G * T;
        int *map = NULL;
        if (use_map) { // a random permutation of each image's tokens
            int n = map_groups * T;
            map = malloc_check((size_t)n * sizeof(int), "map");
            for (int i = 0; i < n; i++) {
                map[i] = i;
            }
            for (int i = n - 1; i > 0; i--) {
                int j = rand_int(rng, 0, i), t = map[i];
                map[i] = map[j];
                map[j] = t;
            }
        }
        size_t n_att = (size_t)G * NH * T * T;
        float *qkv = malloc_check(rows * 3 * C * sizeof(float), "qkv");
        float *dout = malloc_check(rows * C * sizeof(float), "dout");
        float *bias = use_bias ? malloc_check((size_t)num_bias * NH * T * T * sizeof(float), "bias")
                               : NULL;
        float *out = malloc_check(rows * C * sizeof(float), "out");
        float *att = malloc_check(n_att * sizeof(float), "att");
        float *dqkv = malloc_check(rows * 3 * C * sizeof(float), "dqkv");
        float *dscore_sum = malloc_check((size_t)NH * T * T * sizeof(float), "dscore_sum");
        double *r_out = malloc_check(rows * C * sizeof(double), "ref");
        double *r_att = malloc_check(n_att * sizeof(double), "ref");
        double *r_dqkv = malloc_check(rows * 3 * C * sizeof(double), "ref");
        double *r_ds = malloc_check(n_att * sizeof(double), "ref");
        double *r_ds_sum = calloc_check((size_t)NH * T * T, sizeof(double), "ref");
        rng_normal_fill(rng, qkv, rows * 3 * C, 0.0f, 1.0f);
        rng_normal_fill(rng, dout, rows * C, 0.0f, 1.0f);
        if (use_bias) {
            rng_normal_fill(rng, bias, (size_t)num_bias * NH * T * T, 0.0f, 1.0f);
            for (size_t i = 0; i < (size_t)num_bias * NH * T * T; i += 7) {
                bias[i] = -100.0f; // like Swin's shifted-window mask
            }
        }
        rng_normal_fill(rng, dqkv, rows * 3 * C, 0.0f, 1.0f); // must be overwritten
        attention_ref(r_out, r_att, r_dqkv, r_ds, qkv, bias, num_bias, map, map_groups, dout, G, T,
                      C, NH);
        attention_bidir_forward(out, att, qkv, bias, num_bias, map, map_groups, G, T, C, NH);
        for (size_t i = 0; i < n_att; i++) { // sum over the groups
            r_ds_sum[i % ((size_t)NH * T * T)] += r_ds[i];
        }
        attention_bidir_backward(dqkv, trial % 4 == 3 ? NULL : dscore_sum, dout, qkv, att, map,
                                 map_groups, G, T, C, NH);
        double e[4] = {relative_error_vs_double(out, r_out, rows * C), relative_error_vs_double(att, r_att, n_att),
                       relative_error_vs_double(dqkv, r_dqkv, rows * 3 * C),
                       trial % 4 == 3 ? 0.0 : relative_error_vs_double(dscore_sum, r_ds_sum, (size_t)NH * T * T)};
        for (int i = 0; i < 4; i++) {
            if (e[i] > 1e-5) {
                printf("  G %d T %d C %d NH %d map %d bias %d: tensor %d error %.3e\n", G, T, C, NH,
                       use_map, use_bias, i, e[i]);
            }
            worst[i] = worst_of(worst[i], e[i]);
        }
        free(map);
        free(qkv);
        free(dout);
        free(bias);
        free(out);
        free(att);
        free(dqkv);
        free(dscore_sum);
        free(r_ds_sum);
        free(r_out);
        free(r_att);
        free(r_dqkv);
        free(r_ds);
    }
    check("out", worst[0], 1e-5);
    check("att", worst[1], 1e-5);
    check("dqkv", worst[2], 1e-5);
    check("dscores summed over groups", worst[3], 1e-5);
}

// Two steps (forward, backward, AdamW) of model on fixed random data; the
// logits, loss and gradients of each step into out (steps x (B K + 1 + P)).
static void run_steps(Classifier *model, int B, double *out) {
    const int S = classifier_image_size(model), Cin = classifier_image_channels(model);
    const int K = classifier_num_classes(model);
    const size_t P = classifier_num_parameters(model), n_img = (size_t)B * Cin * S * S;
    float *images = malloc_check(n_img * sizeof(float), "images");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    Rng rng;
    rng_seed(&rng, 7);
    AdamWConfig adamw = {.learning_rate = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                         .weight_decay = 0.05f};
    for (int step = 0; step < 2; step++) {
        rng_normal_fill(&rng, images, n_img, 0.0f, 1.0f);
        for (int b = 0; b < B; b++) {
            labels[b] = (int)(rng_u32(&rng) % (uint32_t)K);
        }
        classifier_forward(model, images, labels, 0.1f, B);
        const float *logits = classifier_logits(model);
        for (size_t i = 0; i < (size_t)B * K; i++) {
            *out++ = logits[i];
        }
        *out++ = classifier_mean_loss(model);
        classifier_zero_grad(model);
        classifier_backward(model, 1.0f / (float)B);
        const float *grads = classifier_grads(model);
        for (size_t i = 0; i < P; i++) {
            *out++ = grads[i];
        }
        classifier_update(model, &adamw, 1.0f);
    }
    free(images);
    free(labels);
}

static void test_data_parallel(void) {
#ifdef _OPENMP
    printf("data-parallel steps: 1 thread vs 3 per-thread model copies, B = 32\n");
    const int B = 32;
    ViTConfig vit = {.image_size = 12, .image_channels = 3, .patch_size = 3, .num_classes = 5,
                     .channels = 32, .num_layers = 2, .num_heads = 2, .mlp_ratio = 2};
    SwinConfig swin = {.image_size = 16, .image_channels = 2, .patch_size = 2, .num_classes = 5,
                       .embed_dim = 16, .num_stages = 2, .depths = {2, 2}, .heads = {2, 4},
                       .window = 4, .mlp_ratio = 2, .centre_ops = 1};
    const int saved_threads = omp_get_max_threads();
    for (int family = 0; family < 2; family++) {
        Classifier models[2];
        double *values[2];
        size_t count = 0;
        for (int m = 0; m < 2; m++) {
            if (family == 0) {
                classifier_init_vit(&models[m], &vit, MODE_CBWC, 99);
            } else {
                classifier_init_swin(&models[m], &swin, MODE_CBWC, 99);
            }
            count = 2 * ((size_t)B * 5 + 1 + classifier_num_parameters(&models[m]));
            values[m] = malloc_check(count * sizeof(double), "step values");
            omp_set_num_threads(m == 0 ? 1 : 3);
            run_steps(&models[m], B, values[m]);
        }
        omp_set_num_threads(saved_threads);
        int copies = models[1].replicas != NULL;
        // per step: logits (B K), loss (1), gradients (P); each against its own max
        const size_t P = classifier_num_parameters(&models[0]), sizes[3] = {(size_t)B * 5, 1, P};
        double worst[3] = {0.0, 0.0, 0.0};
        size_t at = 0;
        for (int step = 0; step < 2; step++) {
            for (int part = 0; part < 3; part++) {
                double diff = 0.0, scale = max_abs(values[0] + at, sizes[part]);
                for (size_t i = at; i < at + sizes[part]; i++) {
                    diff = worst_of(diff, fabs(values[1][i] - values[0][i]));
                }
                worst[part] = worst_of(worst[part], diff / scale);
                at += sizes[part];
            }
        }
        const char *names[3] = {"logits", "loss", "gradients"};
        for (int part = 0; part < 3; part++) {
            char what[64];
            snprintf(what, sizeof(what), "%s %s, 3 copies vs 1", family ? "Swin" : "ViT",
                     names[part]);
            check(what, worst[part], 1e-5);
        }
        check(family ? "Swin ran on copies" : "ViT ran on copies", copies ? 0.0 : 1.0, 0.0);
        for (int m = 0; m < 2; m++) {
            classifier_free(&models[m]);
            free(values[m]);
        }
    }
#endif
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_kernels", .synopsis = "[STRIDE=61]",
                    .about = "The vectorized kernels against double references; STRIDE thins the\n"
                             "exhaustive float sweep of the math functions (1 = every float).\n",
                    .max_positional = 1};
    const char *args[1];
    int n = cli_parse(&spec, argc, argv, args);
    uint64_t stride = n > 0 ? (uint64_t)cli_positional_int(&spec, "STRIDE", args[0], 1, LONG_MAX) : 61;
    const char *seed = getenv("FOLDNORM_TEST_SEED");
    Rng rng;
    rng_seed(&rng, seed != NULL ? strtoull(seed, NULL, 10) : 20261129ull);
    test_math(stride);
    test_crossentropy(&rng);
    test_tile_gemm(&rng);
    test_attention(&rng);
    test_data_parallel();
    printf("%s\n", failures == 0 ? "test_kernels: passed" : "test_kernels: FAILED");
    return failures == 0 ? 0 : 1;
}
