// llmc/core/outlier.c: the trainers skip when a value exceeds
// outlier_window_limit, standing for llm.c's "z-score above z_max"; on random
// windows (normal values, a drifting mean, repeated values) a value 1e-9
// (relative) above the limit must get a z-score above z_max from
// outlier_window_push and one 1e-9 below must not; the z-score itself must
// equal a direct two-pass computation over the window to 1e-12; and no limit
// while the window fills, at z_max = 0 or at z_max^2 >= 127 (z's bound).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"
#include "core/outlier.h"
#include "core/rand.h"

static int failures = 0;

static void check(int ok, const char *what, int trial, double a, double b) {
    if (!ok) {
        printf("FAIL trial %d: %s (%.17g vs %.17g)\n", trial, what, a, b);
        failures++;
    }
}

// the z-score of the window's newest value, from scratch
static double direct_z(const OutlierWindow *w, double newest) {
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < OUTLIER_WINDOW; i++) mean += w->values[i];
    mean /= OUTLIER_WINDOW;
    for (int i = 0; i < OUTLIER_WINDOW; i++) var += (w->values[i] - mean) * (w->values[i] - mean);
    var /= OUTLIER_WINDOW;
    return var == 0.0 ? 0.0 : (newest - mean) / sqrt(var);
}

int main(int argc, char **argv) {
    unsigned long long seed = 1;
    const int trials = 2000;
    CliFlag flags[] = {
        {"-sd", CLI_SEED, &seed, 0, 0, "seed (default 1)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "test_outlier", .synopsis = "[options]",
                    .about = "llm.c's outlier windows (llmc/core/outlier.c): limits vs z-scores\n"
                             "on 2000 random windows.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    printf("test_outlier: seed %llu\n", seed);
    Rng rng;
    rng_seed(&rng, seed);
    for (int trial = 0; trial < trials; trial++) {
        OutlierWindow w = {0};
        const int pushes = OUTLIER_WINDOW + (int)(rng_u32(&rng) % 300);
        const double drift = rng_uniform(&rng) - 0.5, scale = exp(8.0 * rng_uniform(&rng) - 4.0);
        const int repeated = trial % 7 == 0; // a constant window: variance 0
        for (int i = 0; i < pushes; i++) {
            float x;
            rng_normal_fill(&rng, &x, 1, 0.0f, 1.0f);
            const double v = repeated ? 3.0 : 5.0 + scale * x + drift * i / 100.0;
            const double z = outlier_window_push(&w, v);
            if (i < OUTLIER_WINDOW - 1) {
                check(isnan(z) && isinf(outlier_window_limit(&w, 3.0)), "filling: no z, no limit",
                      trial, z, i);
            } else if (i >= OUTLIER_WINDOW) {
                const double expected = direct_z(&w, v);
                check(fabs(z - expected) <= 1e-12 * (1.0 + fabs(expected)), "z vs direct", trial,
                      z, expected);
            }
        }
        const double z_max = 0.5 + 6.0 * rng_uniform(&rng);
        const double limit = outlier_window_limit(&w, z_max);
        check(isfinite(limit), "a full window has a limit", trial, limit, z_max);
        for (int side = -1; side <= 1; side += 2) {
            const double v = limit + side * 1e-9 * fabs(limit);
            OutlierWindow copy = w;
            const double z = outlier_window_push(&copy, v);
            check(side > 0 ? z > z_max : !(z > z_max), side > 0 ? "just above the limit: z > z_max"
                                                               : "just below: z <= z_max",
                  trial, z, z_max);
        }
        check(isinf(outlier_window_limit(&w, 0.0)) && isinf(outlier_window_limit(&w, 11.3)),
              "z_max 0 or 11.3 > sqrt(127): no limit", trial, 0, 0);
    }
    printf("%s: %d random windows, %d failures\n", failures ? "FAIL" : "ok  ", trials, failures);
    return failures ? 1 : 0;
}
