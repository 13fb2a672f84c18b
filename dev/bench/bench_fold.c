// Inference benchmark, folded vs LN (docs/math.md sections 5 and 7): GPT-2
// forward only (logits for all positions, no loss) of one random-init ln
// model and its fold, side by side in one process: per (B, T) the two
// forwards alternate (order rotated every round) and the medians are
// compared. A second copy of the ln model runs in the same rotation: its
// ratio to the first (A/A) is the noise floor of the run. The norms' share is timed separately at the same shapes: the
// model's 2L+1 norm calls with the LN kernel and with the RMS kernel.
//
// usage: bench_fold [-e DESCRIPTOR] [-b "1 8"] [-t "64 256 1024"] [-r rounds] [-w warmup]
//                   [-tb seconds]: sizes whose rounds would take longer than about
//                   this many seconds run fewer rounds (at least 3)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "fold/gpt2_fold.h"
#include "kernels/norm.h"
#include "core/rand.h"
#include "core/utils.h"

static int compare_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double minimum(const double *x, int n) {
    double m = x[0];
    for (int i = 1; i < n; i++) {
        m = x[i] < m ? x[i] : m;
    }
    return m;
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof(double), compare_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static double process_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Wall ms of one forward; *cpu_ms gets the process CPU time it used (on a
// shared machine CPU time does not count the time other processes hold the core).
static double forward_ms(GPT2 *model, const int *tokens, int B, int T, double *cpu_ms) {
    double t0 = now_seconds(), c0 = process_cpu_seconds();
    gpt2_forward(model, tokens, NULL, B, T);
    *cpu_ms = (process_cpu_seconds() - c0) * 1e3;
    return (now_seconds() - t0) * 1e3;
}

// The model's 2L+1 norm calls at (B*T, C) with one kernel, in ms.
static double norms_ms(NormKind kind, int calls, float *out, float *mean, float *rstd,
                       const float *inp, const float *gain, const float *bias, int N, int C) {
    double t0 = now_seconds();
    for (int k = 0; k < calls; k++) {
        norm_forward(kind, out, mean, rstd, inp, gain, bias, N, C);
    }
    return (now_seconds() - t0) * 1e3;
}

int main(int argc, char **argv) {
    const char *descriptor = "d4c256h4v256t1024";
    CliList b_list = {2, {1, 8}}, t_list = {3, {64, 256, 1024}};
    int rounds = 7, warmup = 1;
    double budget_s = 30.0;
    CliFlag flags[] = {
        {"-e", CLI_STRING, &descriptor, 0, 0, "model descriptor (default d4c256h4v256t1024)",
         "descriptor", 0, 0},
        {"-b", CLI_LIST, &b_list, 1, 65536, "batch sizes (default \"1 8\")", NULL, 0, 0},
        {"-t", CLI_LIST, &t_list, 1, 1048576, "sequence lengths (default \"64 256 1024\")", NULL,
         0, 0},
        {"-r", CLI_INT, &rounds, 1, 1000, "timed rounds (default 7)", NULL, 0, 0},
        {"-w", CLI_INT, &warmup, 0, 100, "untimed warmup rounds (default 1)", NULL, 0, 0},
        {"-tb", CLI_DOUBLE, &budget_s, 0, 1e6,
         "time budget in seconds: sizes whose rounds would take longer run\n"
         "fewer rounds (at least 3) (default 30)", NULL, CLI_OPEN_LO, 0},
    };
    CliSpec spec = {.program = "bench_fold", .synopsis = "[options]",
                    .about = "Forward only, folded vs LN, side by side in one process.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    const int *batches = b_list.values, *lengths = t_list.values;
    const int num_b = b_list.count, num_t = t_list.count;
    GPT2Config cfg;
    if (gpt2_parse_descriptor(descriptor, &cfg) != 0 || gpt2_config_error(&cfg) != NULL) {
        fatal("-e: '%s' is not a model descriptor (e.g. d4c256h4v256t1024)", descriptor);
    }
    GPT2 ln, twin, folded;
    gpt2_init_random(&ln, &cfg, MODE_LN, 1337);
    gpt2_init_random(&twin, &cfg, MODE_LN, 1337);
    gpt2_init_random(&folded, &cfg, MODE_LN, 1337);
    gpt2_fold(&folded, "bench model");
    const int L = cfg.num_layers, C = cfg.channels;
    printf("model %s: L=%d C=%d NH=%d V=%d maxT=%d, %zu parameters, forward only (logits for all "
           "positions), %d rounds after %d warmup, median\n\n",
           descriptor, L, C, cfg.num_heads, cfg.vocab_size, cfg.max_seq_len, ln.num_parameters,
           rounds, warmup);
    printf("| B | T | rounds | LN ms | folded ms | LN tok/s | folded tok/s | folded/LN time | speedup | A/A: LN copy/LN | CPU time folded/LN (A/A) | fastest round folded/LN (A/A) | LN norms ms (share) | RMS norms ms (share) | gain from norms |\n");
    printf("|--:|--:|-------:|------:|----------:|---------:|-------------:|---------------:|--------:|----------------:|-------------------------:|------------------------------:|--------------------:|---------------------:|----------------:|\n");
    Rng rng;
    rng_seed(&rng, 42);
    double *t_ln = malloc_check((size_t)rounds * sizeof(double), "times");
    double *t_folded = malloc_check((size_t)rounds * sizeof(double), "times");
    double *t_twin = malloc_check((size_t)rounds * sizeof(double), "times");
    double *c_ln = malloc_check((size_t)rounds * sizeof(double), "times");
    double *c_folded = malloc_check((size_t)rounds * sizeof(double), "times");
    double *c_twin = malloc_check((size_t)rounds * sizeof(double), "times");
    double *t_nln = malloc_check((size_t)rounds * sizeof(double), "times");
    double *t_nrms = malloc_check((size_t)rounds * sizeof(double), "times");
    for (int ib = 0; ib < num_b; ib++) {
        for (int it = 0; it < num_t; it++) {
            int B = batches[ib], T = lengths[it];
            if (T > cfg.max_seq_len) {
                printf("| %d | %d | skipped: T > maxT %d |\n", B, T, cfg.max_seq_len);
                continue;
            }
            size_t BT = (size_t)B * T;
            int *tokens = malloc_check(BT * sizeof(int), "tokens");
            for (size_t i = 0; i < BT; i++) {
                tokens[i] = (int)(rng_u32(&rng) % (uint32_t)cfg.vocab_size);
            }
            // norm kernels alone at the model's shapes (inputs: the first layer's stream)
            float *x = malloc_check(BT * C * sizeof(float), "norm input");
            float *y = malloc_check(BT * C * sizeof(float), "norm output");
            float *stats = malloc_check(2 * BT * sizeof(float), "norm stats");
            rng_normal_fill(&rng, x, BT * C, 0.1f, 1.0f);
            double warm_ms = 0.0;
            for (int w = 0; w < warmup; w++) {
                double cpu;
                warm_ms = forward_ms(&ln, tokens, B, T, &cpu) + forward_ms(&folded, tokens, B, T, &cpu) +
                          forward_ms(&twin, tokens, B, T, &cpu);
            }
            norms_ms(NORM_LAYER, 1, y, stats, stats + BT, x, ln.params.lnfw, ln.params.lnfb, (int)BT, C);
            norms_ms(NORM_RMS, 1, y, stats, stats + BT, x, ln.params.lnfw, ln.params.lnfb, (int)BT, C);
            // large sizes: fewer rounds, about budget_s of timed forwards per size (at least 3)
            int size_rounds = rounds;
            if (warm_ms > 0.0 && warm_ms * rounds > budget_s * 1e3) {
                size_rounds = (int)(budget_s * 1e3 / warm_ms);
                size_rounds = size_rounds < 3 ? 3 : size_rounds;
            }
            for (int r = 0; r < size_rounds; r++) {
                GPT2 *models[3] = {&ln, &folded, &twin};
                double *times[3] = {t_ln, t_folded, t_twin};
                double *cpu_times[3] = {c_ln, c_folded, c_twin};
                for (int k = 0; k < 3; k++) {
                    int m = (k + r) % 3; // each model goes first, second, third in turn
                    times[m][r] = forward_ms(models[m], tokens, B, T, &cpu_times[m][r]);
                }
                int first_ln = r % 2 == 0;
                for (int k = 0; k < 2; k++) {
                    NormKind kind = (k == 0) == first_ln ? NORM_LAYER : NORM_RMS;
                    double ms = norms_ms(kind, 2 * L + 1, y, stats, stats + BT, x,
                                         ln.params.lnfw, ln.params.lnfb, (int)BT, C);
                    *(kind.centre ? &t_nln[r] : &t_nrms[r]) = ms;
                }
            }
            // fastest round: the least disturbed by other processes on a shared machine
            double fl = minimum(t_ln, size_rounds), ff = minimum(t_folded, size_rounds);
            double ft = minimum(t_twin, size_rounds);
            double ml = median(t_ln, size_rounds), mf = median(t_folded, size_rounds);
            double nl = median(t_nln, size_rounds), nr = median(t_nrms, size_rounds);
            double mt = median(t_twin, size_rounds);
            double cl = median(c_ln, size_rounds), cf = median(c_folded, size_rounds);
            double ct = median(c_twin, size_rounds);
            printf("| %d | %d | %d | %.2f | %.2f | %.0f | %.0f | %.3f | %+.1f%% | %.3f | %.3f (%.3f) | %.3f (%.3f) | %.2f (%.2f%%) | %.2f (%.2f%%) | %+.2f%% |\n",
                   B, T, size_rounds, ml, mf, BT / ml * 1e3, BT / mf * 1e3, mf / ml, (ml / mf - 1.0) * 100.0,
                   mt / ml, cf / cl, ct / cl, ff / fl, ft / fl, nl, 100.0 * nl / ml, nr, 100.0 * nr / mf, 100.0 * (nl - nr) / (ml - nl + nr));
            fflush(stdout);
            free(tokens);
            free(x);
            free(y);
            free(stats);
        }
    }
    printf("\nspeedup = LN time / folded time - 1 (throughput gain); A/A = an identical ln model in the same\n"
           "rotation (its distance from 1.000 is this run's noise); CPU time: process CPU time, which\n"
           "leaves out time other processes held the cores; norm shares are of each model's forward\n"
           "time; gain from norms = the speedup the norm kernels alone account for (LN - RMS norm time)\n");
    free(t_ln);
    free(t_folded);
    free(t_twin);
    free(c_ln);
    free(c_folded);
    free(c_twin);
    free(t_nln);
    free(t_nrms);
    gpt2_free(&ln);
    gpt2_free(&folded);
    gpt2_free(&twin);
    return EXIT_SUCCESS;
}
