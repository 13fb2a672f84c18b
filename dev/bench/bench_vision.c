// Training-step time of the demo ViT / Swin (train_vit's defaults, random
// 28x28 grey images), as train_vit and dev/reference/vision_throughput.py
// time it: forward, zero_grad, backward, grad norm, AdamW. Prints the median
// wall time and the median process CPU time per step; on a shared machine
// the CPU time (at 1 thread) moves less with other jobs than the wall time,
// which makes it the figure for A/B comparisons of kernels.
// With -fd 1: inference instead, the forward (no labels) of the ln model and
// of its fold (bin/fold's vision_fold) interleaved step by step, medians side by side.
// Usage: bench_vision [-e vit|swin] [-N ln|rms|cbwc] [-b 128] [-r 10] [-w 2] [-fd 1]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vision/classifier.h"
#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"
#include "fold/vision_fold.h"

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof(double), compare_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Forward-only time of the ln model and its fold, alternating which goes first.
static void bench_fold_ab(Classifier *ln, const float *images, int B, int rounds, int warmup,
                          const char *family) {
    VisionConfig config = classifier_config(ln);
    const size_t n = classifier_num_parameters(ln);
    float *params = malloc_check(n * sizeof(float), "folded parameters");
    memcpy(params, classifier_params(ln), n * sizeof(float));
    VisionFoldReport report;
    vision_fold(&config, params, "the benchmark model", &report);
    Classifier folded;
    classifier_init(&folded, &config, 1337);
    memcpy(classifier_params(&folded), params, n * sizeof(float));
    free(params);
    Classifier *models[2] = {ln, &folded};
    double *wall[2], *cpu[2];
    for (int m = 0; m < 2; m++) {
        wall[m] = malloc_check((size_t)rounds * sizeof(double), "times");
        cpu[m] = malloc_check((size_t)rounds * sizeof(double), "times");
    }
    double max_diff = 0.0, max_ref = 0.0;
    const int K = classifier_num_classes(ln);
    for (int step = 0; step < warmup + rounds; step++) {
        for (int k = 0; k < 2; k++) {
            const int m = (step + k) % 2;
            double w0 = now_seconds(), c0 = cpu_seconds();
            classifier_forward(models[m], images, NULL, 0.0f, B);
            if (step >= warmup) {
                wall[m][step - warmup] = now_seconds() - w0;
                cpu[m][step - warmup] = cpu_seconds() - c0;
            }
        }
        const float *a = classifier_logits(ln), *f = classifier_logits(&folded);
        for (size_t i = 0; i < (size_t)B * K; i++) {
            max_diff = fmax(max_diff, fabs((double)a[i] - f[i]));
            max_ref = fmax(max_ref, fabs((double)a[i]));
        }
    }
    double w[2], c[2];
    for (int m = 0; m < 2; m++) {
        w[m] = 1e3 * median(wall[m], rounds);
        c[m] = 1e3 * median(cpu[m], rounds);
        free(wall[m]);
        free(cpu[m]);
    }
    printf("bench_vision: %s forward B %d, %d/%d norms folded | ln wall %.2f ms cpu %.2f ms | "
           "folded wall %.2f ms cpu %.2f ms | folded/ln wall %.3f cpu %.3f | logits max rel diff "
           "%.1e\n",
           family, B, report.folded_norms, report.num_norms, w[0], c[0], w[1], c[1], w[1] / w[0],
           c[1] / c[0], max_diff / (max_ref > 0 ? max_ref : 1.0));
    classifier_free(&folded);
}

int main(int argc, char **argv) {
    const char *family = "vit", *mode_name = "ln";
    int B = 128, rounds = 10, warmup = 2, fold_ab = 0;
    CliFlag flags[] = {
        {"-e", CLI_CHOICE, &family, 0, 0, "model: the demo ViT or Swin (default vit)", "vit|swin",
         0, 0},
        {"-N", CLI_CHOICE, &mode_name, 0, 0, "norm mode (default ln)", NORM_MODE_FLAG_WORDS, 0, 0},
        {"-b", CLI_INT, &B, 1, 65536, "batch size (default 128)", NULL, 0, 0},
        {"-r", CLI_INT, &rounds, 1, 100000, "timed steps (default 10)", NULL, 0, 0},
        {"-w", CLI_INT, &warmup, 0, 100000, "untimed warmup steps (default 2)", NULL, 0, 0},
        {"-fd", CLI_INT, &fold_ab, 0, 1,
         "1: forward-only, the ln model vs its fold, interleaved (-N ignored; default 0)", NULL, 0,
         0},
    };
    CliSpec spec = {.program = "bench_vision", .synopsis = "[options]",
                    .about = "Training-step time of the demo ViT / Swin, wall and CPU.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    NormMode mode;
    norm_mode_parse(mode_name, &mode);
    mode = fold_ab ? MODE_LN : mode;
    Classifier model;
    if (strcmp(family, "vit") == 0) {
        ViTConfig c = {.image_size = 28, .image_channels = 1, .patch_size = 7, .num_classes = 10,
                       .channels = 64, .num_layers = 4, .num_heads = 4, .mlp_ratio = 4};
        classifier_init_vit(&model, &c, mode, 1337);
    } else if (strcmp(family, "swin") == 0) {
        SwinConfig c = {.image_size = 28, .image_channels = 1, .patch_size = 2, .num_classes = 10,
                        .embed_dim = 32, .num_stages = 2, .depths = {2, 2}, .heads = {2, 4},
                        .window = 7, .mlp_ratio = 2};
        classifier_init_swin(&model, &c, mode, 1337);
    } else {
        fatal("-e: unknown family '%s' (expected vit or swin)", family);
    }
    float *images = malloc_check((size_t)B * 28 * 28 * sizeof(float), "images");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    Rng rng;
    rng_seed(&rng, 42);
    rng_normal_fill(&rng, images, (size_t)B * 28 * 28, 0.0f, 1.0f);
    for (int b = 0; b < B; b++) {
        labels[b] = (int)(rng_u32(&rng) % 10);
    }
    if (fold_ab) {
        bench_fold_ab(&model, images, B, rounds, warmup, family);
        free(images);
        free(labels);
        classifier_free(&model);
        return 0;
    }
    AdamWConfig adamw = {.learning_rate = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                         .weight_decay = 0.05f};
    double *wall = malloc_check((size_t)rounds * sizeof(double), "times");
    double *cpu = malloc_check((size_t)rounds * sizeof(double), "times");
    for (int step = 0; step < warmup + rounds; step++) {
        double w0 = now_seconds(), c0 = cpu_seconds();
        classifier_forward(&model, images, labels, 0.1f, B);
        classifier_zero_grad(&model);
        classifier_backward(&model, 1.0f / (float)B);
        (void)classifier_grad_norm(&model);
        classifier_update(&model, &adamw, 1.0f);
        if (step >= warmup) {
            wall[step - warmup] = now_seconds() - w0;
            cpu[step - warmup] = cpu_seconds() - c0;
        }
    }
    double wall_ms = 1e3 * median(wall, rounds), cpu_ms = 1e3 * median(cpu, rounds);
    printf("bench_vision: %s %s B %d | wall %.2f ms (%.1f images/s) | cpu %.2f ms (%.1f images/s "
           "per core)\n",
           family, mode_name, B, wall_ms, 1e3 * B / wall_ms, cpu_ms, 1e3 * B / cpu_ms);
    free(wall);
    free(cpu);
    free(images);
    free(labels);
    classifier_free(&model);
    return 0;
}
