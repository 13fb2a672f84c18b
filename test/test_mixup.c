// The batch-level augmentations and the mixed-target loss, dumped for the
// PyTorch references in test/suites/mixup_erasing.sh:
//   test_mixup ops FILE SEED B C S MIXUP CUTMIX REPROB
//     random normalised images and labels, then batch_augment_draw from an
//     Rng seeded with SEED (after the images), random_erasing_apply per image
//     and batch_augment_mix, exactly the trainers' calls; writes the images
//     before and after, the labels, the mixed targets and the Beta draw
//     (the one value the reference cannot derive from the Rng stream).
//   test_mixup loss FILE SEED N K SMOOTHING
//     random logits, labels, second labels and weights; writes them with
//     classifier_loss_forward's losses and classifier_loss_backward's
//     gradient of the mean loss.
//   test_mixup beta FILE SEED ALPHA N
//     N values of mixup_beta_draw(ALPHA) from an Rng seeded with SEED.
// Formats: little-endian int32 / float32 / float64 arrays in the order the
// suite reads them (see the suite).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"
#include "kernels/classifier_loss.h"
#include "vision/batch_augment.h"

static void write_all(FILE *f, const void *data, size_t size, size_t count, const char *path) {
    if (count > 0 && fwrite(data, size, count, f) != count)
        fatal("%s: write failed", path);
}

static FILE *open_out(const char *path) {
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        fatal("%s: cannot open for writing", path);
    return f;
}

static void close_out(FILE *f, const char *path) {
    if (fclose(f) != 0)
        fatal("%s: close failed", path);
}

static int dump_ops(const char *path, uint64_t seed, int B, int C, int S, float mixup, float cutmix,
                    float reprob) {
    const size_t image = (size_t)C * S * S, n = (size_t)B * image;
    float *before = malloc_check(n * sizeof(float), "images"),
          *after = malloc_check(n * sizeof(float), "images");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *labels2 = malloc_check((size_t)B * sizeof(int), "labels2");
    float *lam = malloc_check((size_t)B * sizeof(float), "lam");
    Rng data;
    rng_seed(&data, seed ^ 0xDA7AULL);
    rng_normal_fill(&data, before, n, 0.0f, 1.0f);
    for (int b = 0; b < B; b++)
        labels[b] = (int)(rng_u32(&data) % 10u);
    memcpy(after, before, n * sizeof(float));
    BatchAugment aug = {reprob, {mixup, cutmix}};
    BatchAugmentDraws d;
    batch_augment_draws_alloc(&d, B);
    Rng rng;
    rng_seed(&rng, seed);
    batch_augment_draw(&d, &aug, B, S, S, &rng);
    for (int b = 0; b < B; b++)
        random_erasing_apply(after + b * image, C, S, S, &d.erase[b]);
    MixTargets mix = batch_augment_mix(after, labels, labels2, lam, B, C, S, &d);
    const int32_t header[5] = {B, C, S, mix.labels2 != NULL, d.mix.use_cutmix};
    FILE *f = open_out(path);
    write_all(f, header, sizeof(int32_t), 5, path);
    write_all(f, &d.mix.lam, sizeof(double), 1, path);
    write_all(f, labels, sizeof(int), (size_t)B, path);
    write_all(f, before, sizeof(float), n, path);
    write_all(f, after, sizeof(float), n, path);
    if (mix.labels2 != NULL) {
        write_all(f, labels2, sizeof(int), (size_t)B, path);
        write_all(f, lam, sizeof(float), (size_t)B, path);
    }
    close_out(f, path);
    int erased = 0;
    for (int b = 0; b < B; b++)
        erased += d.erase[b].erased;
    printf("ops: B %d C %d S %d: %d image(s) erased, %s lam %.6f\n", B, C, S, erased,
           !d.mix.active ? "unmixed" : (d.mix.use_cutmix ? "cutmix" : "mixup"),
           mix.lam != NULL ? (double)mix.lam[0] : 1.0);
    batch_augment_draws_free(&d);
    free(before);
    free(after);
    free(labels);
    free(labels2);
    free(lam);
    return 0;
}

static int dump_loss(const char *path, uint64_t seed, int N, int K, float smoothing) {
    const size_t nk = (size_t)N * K;
    float *logits = malloc_check(nk * sizeof(float), "logits");
    float *dlogits = malloc_check(nk * sizeof(float), "dlogits");
    float *losses = malloc_check((size_t)N * sizeof(float), "losses");
    float *lam = malloc_check((size_t)N * sizeof(float), "lam");
    int *labels = malloc_check((size_t)N * sizeof(int), "labels");
    int *labels2 = malloc_check((size_t)N * sizeof(int), "labels2");
    Rng rng;
    rng_seed(&rng, seed);
    rng_normal_fill(&rng, logits, nk, 0.0f, 3.0f);
    for (int n = 0; n < N; n++) {
        labels[n] = (int)(rng_u32(&rng) % (uint32_t)K);
        // every fourth row the same label twice (the middle of an odd batch)
        labels2[n] = n % 4 == 3 ? labels[n] : (int)(rng_u32(&rng) % (uint32_t)K);
        lam[n] = rng_uniform(&rng);
    }
    MixTargets mix = {labels2, lam};
    classifier_loss_forward(losses, logits, labels, mix, smoothing, N, K);
    classifier_loss_backward(dlogits, logits, labels, mix, smoothing, 1.0f / (float)N, N, K);
    const int32_t header[2] = {N, K};
    FILE *f = open_out(path);
    write_all(f, header, sizeof(int32_t), 2, path);
    write_all(f, &smoothing, sizeof(float), 1, path);
    write_all(f, labels, sizeof(int), (size_t)N, path);
    write_all(f, labels2, sizeof(int), (size_t)N, path);
    write_all(f, lam, sizeof(float), (size_t)N, path);
    write_all(f, logits, sizeof(float), nk, path);
    write_all(f, losses, sizeof(float), (size_t)N, path);
    write_all(f, dlogits, sizeof(float), nk, path);
    close_out(f, path);
    free(logits);
    free(dlogits);
    free(losses);
    free(lam);
    free(labels);
    free(labels2);
    return 0;
}

static int dump_beta(const char *path, uint64_t seed, double alpha, int n) {
    double *x = malloc_check((size_t)n * sizeof(double), "beta draws");
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++)
        x[i] = mixup_beta_draw(alpha, &rng);
    FILE *f = open_out(path);
    write_all(f, x, sizeof(double), (size_t)n, path);
    close_out(f, path);
    free(x);
    return 0;
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_mixup",
                    .synopsis = "ops FILE SEED B C S MIXUP CUTMIX REPROB | loss FILE SEED N K "
                                "SMOOTHING | beta FILE SEED ALPHA N",
                    .about = "Dumps mixup / cutmix / random erasing and the mixed-target loss for\n"
                             "the PyTorch references (test/suites/mixup_erasing.sh).\n"};
    const char *arg[9];
    spec.min_positional = 5;
    spec.max_positional = 9;
    const int rest = cli_parse(&spec, argc, argv, arg);
    if (rest == 9 && strcmp(arg[0], "ops") == 0) {
        return dump_ops(arg[1], (uint64_t)cli_positional_int(&spec, "SEED", arg[2], 0, 1L << 40),
                        (int)cli_positional_int(&spec, "B", arg[3], 1, 4096),
                        (int)cli_positional_int(&spec, "C", arg[4], 1, 16),
                        (int)cli_positional_int(&spec, "S", arg[5], 2, 1024),
                        (float)cli_positional_double(&spec, "MIXUP", arg[6], 0, 100, 0),
                        (float)cli_positional_double(&spec, "CUTMIX", arg[7], 0, 100, 0),
                        (float)cli_positional_double(&spec, "REPROB", arg[8], 0, 1, 0));
    }
    if (rest == 6 && strcmp(arg[0], "loss") == 0) {
        return dump_loss(arg[1], (uint64_t)cli_positional_int(&spec, "SEED", arg[2], 0, 1L << 40),
                         (int)cli_positional_int(&spec, "N", arg[3], 1, 65536),
                         (int)cli_positional_int(&spec, "K", arg[4], 1, 100000),
                         (float)cli_positional_double(&spec, "SMOOTHING", arg[5], 0, 1, 0));
    }
    if (rest == 5 && strcmp(arg[0], "beta") == 0) {
        return dump_beta(arg[1], (uint64_t)cli_positional_int(&spec, "SEED", arg[2], 0, 1L << 40),
                         cli_positional_double(&spec, "ALPHA", arg[3], 0, 100, CLI_OPEN_LO),
                         (int)cli_positional_int(&spec, "N", arg[4], 1, 10000000));
    }
    cli_error(&spec, "expected %s", spec.synopsis);
    return 2;
}
