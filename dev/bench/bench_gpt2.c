// Training-step time of the three norm modes measured side by side in one
// process: copies of the same model (ln, rms, cbwc, each in every matmul
// precision of -mp) take turns, one step each per round, so drift of the
// shared machine hits all alike. Prints median forward / backward / update /
// step ms per mode and precision and the ratios to the first (ln, first -mp).
// Usage: bench_gpt2 [-e d12] [-b 4] [-t 64] [-r 10] [-w 2] [-N ln,rms,cbwc] [-mp fp32,bf16]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "kernels/matmul.h"
#include "core/rand.h"
#include "core/utils.h"

enum { MAX_MODES = 3, MAX_PRECISIONS = 3, MAX_RUNS = MAX_MODES * MAX_PRECISIONS, NUM_PHASES = 4 };
static const char *const PHASES[NUM_PHASES] = {"forward", "backward", "update", "step"};

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof(double), compare_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// Parses a comma-separated list of names with parse (0 = known) into out;
// returns the count, or dies naming the flag.
static int parse_list(const char *flag, const char *list, int max, void *out, size_t size,
                      int (*parse)(const char *, void *)) {
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", list);
    int n = 0;
    for (char *save = NULL, *word = strtok_r(buf, ",", &save); word != NULL;
         word = strtok_r(NULL, ",", &save)) {
        if (n == max || parse(word, (char *)out + (size_t)n * size) != 0) {
            fatal("%s: '%s' is not a list of at most %d known names", flag, list, max);
        }
        n++;
    }
    if (n == 0) {
        fatal("%s: empty list", flag);
    }
    return n;
}

static int parse_mode(const char *name, void *out) { return norm_mode_parse(name, out); }
static int parse_precision(const char *name, void *out) {
    return matmul_precision_parse(name, out);
}

int main(int argc, char **argv) {
    const char *descriptor = "d12";
    int B = 4, T = 64, rounds = 10, warmup = 2;
    const char *mode_list = "ln,rms,cbwc", *precision_list = "fp32";
    CliFlag flags[] = {
        {"-e", CLI_STRING, &descriptor, 0, 0, "model descriptor (default d12)", "descriptor", 0, 0},
        {"-b", CLI_INT, &B, 1, 65536, "batch size (default 4)", NULL, 0, 0},
        {"-t", CLI_INT, &T, 1, 1048576, "sequence length, <= maxT (default 64)", NULL, 0, 0},
        {"-r", CLI_INT, &rounds, 1, 100000, "timed rounds (default 10)", NULL, 0, 0},
        {"-w", CLI_INT, &warmup, 0, 100000, "untimed warmup rounds (default 2)", NULL, 0, 0},
        {"-N", CLI_STRING, &mode_list, 0, 0, "norm modes, comma-separated (default ln,rms,cbwc)",
         "modes", 0, 0},
        {"-mp", CLI_STRING, &precision_list, 0, 0,
         "matmul precisions, comma-separated: fp32, bf16, dnnl-fp32 (default fp32)",
         "precisions", 0, 0},
    };
    CliSpec spec = {.program = "bench_gpt2", .synopsis = "[options]",
                    .about = "One training step of each norm mode per round, side by side.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    GPT2Config cfg;
    if (gpt2_parse_descriptor(descriptor, &cfg) != 0) {
        fatal("-e: '%s' is not a model descriptor (e.g. d12)", descriptor);
    }
    if (B < 1 || T < 1 || T > cfg.max_seq_len || rounds < 1 || warmup < 0) {
        fatal("bad sizes: B=%d T=%d (maxT %d) rounds=%d warmup=%d", B, T, cfg.max_seq_len, rounds,
              warmup);
    }
    NormMode modes[MAX_MODES];
    MatmulPrecision precisions[MAX_PRECISIONS];
    const int num_modes = parse_list("-N", mode_list, MAX_MODES, modes, sizeof(modes[0]), parse_mode);
    const int num_precisions = parse_list("-mp", precision_list, MAX_PRECISIONS, precisions,
                                          sizeof(precisions[0]), parse_precision);
    const int NUM_MODES = num_modes * num_precisions; // one model per mode and precision
    GPT2 models[MAX_RUNS];
    for (int m = 0; m < NUM_MODES; m++) {
        gpt2_init_random(&models[m], &cfg, modes[m / num_precisions], 1337);
        gpt2_set_matmul_precision(&models[m], precisions[m % num_precisions]);
    }
    int *tokens = malloc_check((size_t)B * T * 2 * sizeof(int), "tokens");
    Rng rng;
    rng_seed(&rng, 42);
    double *times = calloc_check((size_t)NUM_MODES * NUM_PHASES * rounds, sizeof(double), "times");
    AdamWConfig adamw = {.learning_rate = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f};
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    printf("bench_gpt2: %s (%.1fM parameters), B=%d T=%d, %d threads, matmul %s, %d rounds after %d warmup\n",
           descriptor, (double)models[0].num_parameters / 1e6, B, T, threads,
           matmul_backend_name(), rounds, warmup);
    for (int p = 0; p < num_precisions; p++) {
        if (models[p].matmul_engine != NULL) {
            printf("  -mp %s: %s\n", matmul_precision_name(precisions[p]),
                   matmul_engine_describe(models[p].matmul_engine));
        }
    }
    for (int r = -warmup; r < rounds; r++) {
        for (size_t i = 0; i < (size_t)B * T * 2; i++) {
            tokens[i] = (int)(rng_u32(&rng) % (unsigned)cfg.vocab_size);
        }
        for (int m = 0; m < NUM_MODES; m++) {
            GPT2 *model = &models[m];
            double t0 = now_seconds();
            gpt2_forward(model, tokens, tokens + (size_t)B * T, B, T);
            double t1 = now_seconds();
            gpt2_zero_grad(model);
            gpt2_backward(model, 1.0f / (float)(B * T));
            double t2 = now_seconds();
            gpt2_update(model, &adamw, 1.0f);
            double t3 = now_seconds();
            if (r >= 0) {
                double *t = times + ((size_t)m * NUM_PHASES) * rounds + r;
                t[0 * rounds] = (t1 - t0) * 1e3;
                t[1 * rounds] = (t2 - t1) * 1e3;
                t[2 * rounds] = (t3 - t2) * 1e3;
                t[3 * rounds] = (t3 - t0) * 1e3;
            }
        }
    }
    double med[MAX_RUNS][NUM_PHASES];
    for (int m = 0; m < NUM_MODES; m++) {
        for (int p = 0; p < NUM_PHASES; p++) {
            med[m][p] = median(times + ((size_t)m * NUM_PHASES + p) * rounds, rounds);
        }
    }
    // the matmul column last: scripts/study.sh reads the step time as column 5
    printf("\n| mode | forward ms | backward ms | update ms | step ms | step vs %s %s | matmul |\n",
           norm_mode_name(modes[0]), matmul_precision_name(precisions[0]));
    printf("|------|-----------:|------------:|----------:|--------:|-----------:|--------|\n");
    for (int m = 0; m < NUM_MODES; m++) {
        const MatmulEngine *engine = models[m].matmul_engine;
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %.3f | %s%s%s |\n",
               norm_mode_name(modes[m / num_precisions]), med[m][0], med[m][1], med[m][2],
               med[m][3], med[m][3] / med[0][3], matmul_precision_name(precisions[m % num_precisions]),
               engine != NULL ? " " : "", engine != NULL ? matmul_engine_kind(engine) : "");
    }
    printf("\n(phases: %s, %s (incl. zeroing grads), %s (grad norm + AdamW), %s)\n", PHASES[0],
           PHASES[1], PHASES[2], PHASES[3]);
    for (int m = 0; m < NUM_MODES; m++) {
        gpt2_free(&models[m]);
    }
    free(tokens);
    free(times);
    return EXIT_SUCCESS;
}
