// AdamW (llmc/kernels/adamw.c) over a GPT-2 124M-sized parameter vector, timed side
// by side with a memory copy in the same run, so that the update is reported
// as bytes moved, GB/s and a fraction of copy bandwidth. Also times the
// gradient-norm pass (sum_of_squares) that clipping adds before the update.
//
//   bin/bench_adamw                  124,475,904 parameters (d12, Vp = 50304)
//   bin/bench_adamw -n 1000000 -r 20
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adamw.h"
#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"

enum { OP_COPY_1T, OP_COPY_OMP, OP_COPY_LOOP, OP_ADAMW, OP_SUMSQ, OP_COUNT };
// enough values for the correctness check, few enough for a double loop
enum { CHECK_COUNT = 1 << 20 };

typedef struct {
    size_t n;
    float *params, *grads, *m, *v, *copy;
} Buffers;

// each thread copies one contiguous slice, as the kernels split the vector
static void copy_omp(float *dst, const float *src, size_t n) {
#pragma omp parallel
    {
        size_t nt = (size_t)omp_get_num_threads();
        size_t t = (size_t)omp_get_thread_num();
        size_t lo = n * t / nt;
        size_t hi = n * (t + 1) / nt;
        memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
    }
}

// the copy as a vectorized loop with ordinary stores (memcpy may use others)
static void copy_loop(float *dst, const float *src, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        dst[i] = src[i];
    }
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), compare_double);
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const AdamWConfig CONFIG = {3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};

// One AdamW step on CHECK_COUNT values against the formula in double
// (torch.optim.AdamW, llmc/kernels/adamw.h); returns the largest of max |error| /
// max |reference| over p, m and v.
static double check_adamw(Rng *rng) {
    size_t n = CHECK_COUNT;
    float *p = malloc_check(4 * n * sizeof(float), "check buffers");
    float *g = p + n, *m = g + n, *v = m + n;
    rng_normal_fill(rng, p, n, 0.0f, 0.02f);
    rng_normal_fill(rng, g, n, 0.0f, 0.01f);
    rng_normal_fill(rng, m, n, 0.0f, 0.001f);
    for (size_t i = 0; i < n; i++) {
        v[i] = m[i] * m[i] * 2.0f; // v >= 0, as a second moment
    }
    double *ref = malloc_check(3 * n * sizeof(double), "check reference");
    const int t = 7;
    const float scale = 0.5f;
    const double lr = CONFIG.learning_rate, b1 = CONFIG.beta1, b2 = CONFIG.beta2;
    for (size_t i = 0; i < n; i++) {
        double gi = (double)g[i] * scale;
        double mi = b1 * m[i] + (1.0 - b1) * gi;
        double vi = b2 * v[i] + (1.0 - b2) * gi * gi;
        double denom = sqrt(vi) / sqrt(1.0 - pow(b2, t)) + CONFIG.eps;
        ref[3 * i] = p[i] * (1.0 - lr * CONFIG.weight_decay) - lr / (1.0 - pow(b1, t)) * mi / denom;
        ref[3 * i + 1] = mi;
        ref[3 * i + 2] = vi;
    }
    adamw_update(p, g, m, v, n, &CONFIG, 1, t, scale);
    // per array: max |error| / max |reference| (m and v cancel near zero, so
    // an element-wise relative error would measure fp32 cancellation)
    double max_err[3] = {0.0, 0.0, 0.0}, max_ref[3] = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        const float got[3] = {p[i], m[i], v[i]};
        for (int k = 0; k < 3; k++) {
            double r = ref[3 * i + (size_t)k];
            double err = fabs(got[k] - r);
            max_err[k] = err > max_err[k] || isnan(err) ? err : max_err[k];
            max_ref[k] = fmax(max_ref[k], fabs(r));
        }
    }
    double worst = 0.0;
    for (int k = 0; k < 3; k++) {
        double rel = max_err[k] / max_ref[k];
        worst = rel > worst || isnan(rel) ? rel : worst;
    }
    free(p);
    free(ref);
    if (!(worst <= 1e-6)) { // fp32 rounding: ~1e-7
        fatal("adamw_update differs from the double reference by %.3g (relative)", worst);
    }
    return worst;
}

int main(int argc, char **argv) {
    int n_arg = 124475904;
    int repeats = 10, warmups = 2;
    CliFlag flags[] = {
        {"-n", CLI_INT, &n_arg, 1, 1 << 30,
         "parameters (default 124475904, GPT-2 124M with Vp = 50304)", NULL, 0, 0},
        {"-r", CLI_INT, &repeats, 1, 100000, "timed repeats per op, median reported (default 10)",
         NULL, 0, 0},
        {"-w", CLI_INT, &warmups, 0, 100000, "untimed repeats first (default 2)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "bench_adamw", .synopsis = "[options]",
                    .about = "AdamW update and gradient norm timing against a memory copy.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .footer = "Threads: OMP_NUM_THREADS. Output: a markdown table.\n"};
    cli_parse(&spec, argc, argv, NULL);

    Rng rng;
    rng_seed(&rng, 1337u);
    double check_err = check_adamw(&rng);

    Buffers b = {.n = (size_t)n_arg};
    size_t bytes = mul_size_check(b.n, sizeof(float), "parameter bytes");
    b.params = malloc_check(bytes, "params");
    b.grads = malloc_check(bytes, "grads");
    b.m = calloc_check(b.n, sizeof(float), "m");
    b.v = calloc_check(b.n, sizeof(float), "v");
    b.copy = calloc_check(b.n, sizeof(float), "copy");
    rng_normal_fill(&rng, b.params, b.n, 0.0f, 0.02f);
    rng_normal_fill(&rng, b.grads, b.n, 0.0f, 0.01f);

    double *samples = malloc_check((size_t)OP_COUNT * (size_t)repeats * sizeof(double), "samples");
    volatile double sink = 0.0;
    for (int r = -warmups; r < repeats; r++) {
        for (int op = 0; op < OP_COUNT; op++) {
            double t0 = now_seconds();
            switch (op) {
            case OP_COPY_1T:
                memcpy(b.copy, b.params, bytes);
                break;
            case OP_COPY_OMP:
                copy_omp(b.copy, b.grads, b.n);
                break;
            case OP_COPY_LOOP:
                copy_loop(b.copy, b.m, b.n);
                break;
            case OP_ADAMW:
                adamw_update(b.params, b.grads, b.m, b.v, b.n, &CONFIG, 1, r + warmups + 1, 1.0f);
                break;
            default:
                sink += sum_of_squares(b.grads, b.n);
                break;
            }
            if (r >= 0) {
                samples[(size_t)op * (size_t)repeats + (size_t)r] = now_seconds() - t0;
            }
        }
    }
    for (size_t i = 0; i < b.n; i += 4096) {
        if (!isfinite(b.params[i]) || !isfinite(b.v[i])) {
            fatal("non-finite parameter after the timing loop (index %zu)", i);
        }
    }

    // minimal traffic: copy reads and writes n floats; AdamW reads p, g, m, v
    // and writes p, m, v; the norm reads g
    const double op_bytes[OP_COUNT] = {2.0 * bytes, 2.0 * bytes, 2.0 * bytes, 7.0 * bytes,
                                       1.0 * bytes};
    const char *const names[OP_COUNT] = {"memcpy (1 thread)", "memcpy (OpenMP slices)",
                                         "copy loop (OpenMP simd)",
                                         "AdamW update (adamw_update)",
                                         "gradient norm (sum_of_squares)"};
    double med[OP_COUNT];
    for (int op = 0; op < OP_COUNT; op++) {
        med[op] = median(samples + (size_t)op * (size_t)repeats, repeats);
    }
    // copy bandwidth: the fastest of the three copies
    double copy_gbps = 0.0;
    for (int op = OP_COPY_1T; op <= OP_COPY_LOOP; op++) {
        copy_gbps = fmax(copy_gbps, op_bytes[op] / med[op] * 1e-9);
    }
    const char *env = getenv("OMP_NUM_THREADS");
    printf("bench_adamw: %zu parameters, %d OpenMP threads (OMP_NUM_THREADS=%s), median of %d "
           "after %d warmups\n\n",
           b.n, omp_get_max_threads(), env != NULL ? env : "unset", repeats, warmups);
    printf("| op | median ms | bytes | GB/s | %% of copy |\n|---|---:|---:|---:|---:|\n");
    for (int op = 0; op < OP_COUNT; op++) {
        double gbps = op_bytes[op] / med[op] * 1e-9;
        printf("| %s | %.1f | %.0f | %.1f | %.0f%% |\n", names[op], med[op] * 1e3, op_bytes[op],
               gbps, 100.0 * gbps / copy_gbps);
    }
    printf("\n%% of copy: against the fastest copy in the same run; AdamW checked against a double "
           "reference: max rel err %.1e\n",
           check_err);
    free(samples);
    free(b.params);
    free(b.grads);
    free(b.m);
    free(b.v);
    free(b.copy);
    return 0;
}
