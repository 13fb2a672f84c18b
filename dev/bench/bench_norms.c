// LayerNorm vs RMSNorm kernels (llmc/kernels/norm.c), forward and
// backward, timed side by side with a plain memory copy of the same size so
// that each kernel is reported as bytes moved, GB/s and a fraction of copy
// bandwidth. Prints a markdown table for docs/performance.md.
//
//   bin/bench_norms                 shapes (4096, 768) and (1024, 1600)
//   bin/bench_norms -nr 2048 -C 1024 one custom shape
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "kernels/norm.h"
#include "core/rand.h"
#include "core/utils.h"

enum { DEFAULT_REPEATS = 50, DEFAULT_WARMUPS = 5 };
// larger than the last-level cache of the test VMs, for -f
#define FLUSH_BYTES ((size_t)256 << 20)

enum { OP_COPY_1T, OP_COPY_OMP, OP_LN_FWD, OP_LN_BWD, OP_RMS_FWD, OP_RMS_BWD, OP_COUNT };
// the order inside each repeat: each copy follows a backward and each forward
// a copy, so that no op finds its buffers cached by a twin just before it
static const int RUN_ORDER[OP_COUNT] = {OP_COPY_1T,  OP_LN_FWD,  OP_LN_BWD,
                                        OP_COPY_OMP, OP_RMS_FWD, OP_RMS_BWD};

typedef struct {
    int N, C;
    float *x, *dy, *y, *y_copy, *dx;
    float *gain, *bias, *dgain, *dbias;
    float *mean, *rstd;
} Buffers;

typedef struct {
    int repeats, warmups, flush;
} Options;

// ----------------------------------------------------------------------------
// bytes moved: the minimal traffic, each array read or written once, 4 bytes
// a float; the backward kernels accumulate, so dinp, dgain and dbias count
// twice (read + write).

// memcpy: read src N*C, write dst N*C
static double copy_bytes(int N, int C) { return 4.0 * (2.0 * N * C); }
// LN fwd: read x N*C, gain C, bias C; write y N*C, mean N, rstd N
static double ln_fwd_bytes(int N, int C) { return 4.0 * (2.0 * N * C + 2.0 * C + 2.0 * N); }
// RMS fwd: read x N*C, gain C, bias C; write y N*C, rstd N
static double rms_fwd_bytes(int N, int C) { return 4.0 * (2.0 * N * C + 2.0 * C + 1.0 * N); }
// LN bwd: read x, dy N*C each, gain C, mean N, rstd N; read+write dinp N*C,
// dgain C, dbias C
static double ln_bwd_bytes(int N, int C) { return 4.0 * (4.0 * N * C + 5.0 * C + 2.0 * N); }
// RMS bwd: as LN bwd without mean
static double rms_bwd_bytes(int N, int C) { return 4.0 * (4.0 * N * C + 5.0 * C + 1.0 * N); }

// ----------------------------------------------------------------------------
// inputs and the copies

static void fill_uniform(Rng *rng, float *p, size_t n, float centre, float half_width) {
    for (size_t i = 0; i < n; i++) {
        p[i] = centre + half_width * (2.0f * rng_uniform(rng) - 1.0f);
    }
}

static Buffers buffers_create(int N, int C, uint64_t seed) {
    size_t nc = mul_size_check((size_t)N, (size_t)C, "N*C");
    size_t nc_bytes = mul_size_check(nc, sizeof(float), "N*C bytes");
    Buffers b = {.N = N, .C = C};
    b.x = malloc_check(nc_bytes, "x");
    b.dy = malloc_check(nc_bytes, "dy");
    b.y = malloc_check(nc_bytes, "y");
    b.y_copy = malloc_check(nc_bytes, "y_copy");
    b.dx = calloc_check(nc, sizeof(float), "dx");
    b.gain = malloc_check((size_t)C * sizeof(float), "gain");
    b.bias = malloc_check((size_t)C * sizeof(float), "bias");
    b.dgain = calloc_check((size_t)C, sizeof(float), "dgain");
    b.dbias = calloc_check((size_t)C, sizeof(float), "dbias");
    b.mean = malloc_check((size_t)N * sizeof(float), "mean");
    b.rstd = malloc_check((size_t)N * sizeof(float), "rstd");
    Rng rng;
    rng_seed(&rng, seed);
    // x off-centre so that LN's mean subtraction is not a no-op
    fill_uniform(&rng, b.x, nc, 0.1f, 1.0f);
    fill_uniform(&rng, b.dy, nc, 0.0f, 1.0f);
    fill_uniform(&rng, b.gain, (size_t)C, 1.0f, 0.1f);
    fill_uniform(&rng, b.bias, (size_t)C, 0.0f, 0.1f);
    memset(b.y, 0, nc_bytes);
    memset(b.y_copy, 0, nc_bytes);
    return b;
}

static void buffers_free(Buffers *b) {
    free(b->x);
    free(b->dy);
    free(b->y);
    free(b->y_copy);
    free(b->dx);
    free(b->gain);
    free(b->bias);
    free(b->dgain);
    free(b->dbias);
    free(b->mean);
    free(b->rstd);
}

// each thread copies one contiguous slice, as the kernels split rows
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

static void run_op(int op, Buffers *b) {
    size_t nc = (size_t)b->N * (size_t)b->C;
    switch (op) {
    case OP_COPY_1T:
        memcpy(b->y_copy, b->x, nc * sizeof(float));
        break;
    case OP_COPY_OMP:
        copy_omp(b->y_copy, b->x, nc);
        break;
    case OP_LN_FWD:
        norm_forward(NORM_LAYER, b->y, b->mean, b->rstd, b->x, b->gain, b->bias, b->N, b->C);
        break;
    case OP_LN_BWD:
        norm_backward(NORM_LAYER, b->dx, b->dgain, b->dbias, b->dy, b->x, b->gain, b->mean, b->rstd,
                      b->N, b->C);
        break;
    case OP_RMS_FWD:
        norm_forward(NORM_RMS, b->y, NULL, b->rstd, b->x, b->gain, b->bias, b->N, b->C);
        break;
    case OP_RMS_BWD:
        norm_backward(NORM_RMS, b->dx, b->dgain, b->dbias, b->dy, b->x, b->gain, NULL, b->rstd, b->N,
                      b->C);
        break;
    default:
        fatal("unknown op %d", op);
    }
}

// writes every line of a buffer larger than the cache (outside the timing)
static void flush_cache(unsigned char *scratch) {
    static unsigned char flush_round;
    flush_round++;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < FLUSH_BYTES; i += 64) {
        scratch[i] = (unsigned char)(scratch[i] + flush_round);
    }
}

// ----------------------------------------------------------------------------
// correctness: a double-precision reference on the same inputs, so that a
// broken kernel cannot produce a nice-looking number

static int all_finite(const float *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(p[i])) {
            return 0;
        }
    }
    return 1;
}

typedef struct {
    double max_err;
    const char *where;
} CheckState;

static void check_close(CheckState *s, double got, double ref, const char *where) {
    double err = fabs(got - ref) / (1.0 + fabs(ref));
    if (!(err <= s->max_err)) { // also catches NaN
        s->max_err = isnan(err) ? INFINITY : err;
        s->where = where;
    }
}

// Runs forward then backward (dx, dgain, dbias zeroed first) for one kind and
// compares with the reference; returns the largest relative error.
static double check_kind(NormKind kind, Buffers *b) {
    int N = b->N, C = b->C;
    size_t nc = (size_t)N * (size_t)C;
    memset(b->dx, 0, nc * sizeof(float));
    memset(b->dgain, 0, (size_t)C * sizeof(float));
    memset(b->dbias, 0, (size_t)C * sizeof(float));
    norm_forward(kind, b->y, b->mean, b->rstd, b->x, b->gain, b->bias, N, C);
    norm_backward(kind, b->dx, b->dgain, b->dbias, b->dy, b->x, b->gain, b->mean, b->rstd, N, C);
    const char *name = kind.centre ? "layernorm" : "rmsnorm";
    if (!all_finite(b->y, nc) || !all_finite(b->dx, nc) || !all_finite(b->rstd, (size_t)N) ||
        !all_finite(b->dgain, (size_t)C) || !all_finite(b->dbias, (size_t)C)) {
        fatal("%s: non-finite output on random inputs (N=%d, C=%d)", name, N, C);
    }
    double *dgain_ref = calloc_check((size_t)C, sizeof(double), "dgain_ref");
    double *dbias_ref = calloc_check((size_t)C, sizeof(double), "dbias_ref");
    CheckState s = {0.0, "none"};
    for (int n = 0; n < N; n++) {
        size_t row = (size_t)n * (size_t)C;
        const float *x = b->x + row;
        const float *dy = b->dy + row;
        double mu = 0.0, var = 0.0;
        if (kind.centre) {
            for (int c = 0; c < C; c++) {
                mu += x[c];
            }
            mu /= C;
        }
        for (int c = 0; c < C; c++) {
            var += (x[c] - mu) * (x[c] - mu);
        }
        double rs = 1.0 / sqrt(var / C + (double)NORM_EPS);
        check_close(&s, b->rstd[n], rs, "rstd");
        if (kind.centre) {
            check_close(&s, b->mean[n], mu, "mean");
        }
        // docs/math.md section 1: dx = rs (dxhat - [mean(dxhat)] - xhat mean(dxhat xhat))
        double m1 = 0.0, m2 = 0.0;
        for (int c = 0; c < C; c++) {
            double xhat = (x[c] - mu) * rs;
            double dxhat = (double)b->gain[c] * dy[c];
            check_close(&s, b->y[row + (size_t)c], b->gain[c] * xhat + b->bias[c], "y");
            m1 += dxhat;
            m2 += dxhat * xhat;
            dgain_ref[c] += xhat * dy[c];
            dbias_ref[c] += dy[c];
        }
        m1 = kind.centre ? m1 / C : 0.0;
        m2 /= C;
        for (int c = 0; c < C; c++) {
            double xhat = (x[c] - mu) * rs;
            double dxhat = (double)b->gain[c] * dy[c];
            check_close(&s, b->dx[row + (size_t)c], rs * (dxhat - m1 - xhat * m2), "dinp");
        }
    }
    for (int c = 0; c < C; c++) {
        check_close(&s, b->dgain[c], dgain_ref[c], "dgain");
        check_close(&s, b->dbias[c], dbias_ref[c], "dbias");
    }
    free(dgain_ref);
    free(dbias_ref);
    if (s.max_err > 1e-3) {
        fatal("%s: %s differs from the double reference by %.3g (relative, N=%d, C=%d)", name,
              s.where, s.max_err, N, C);
    }
    return s.max_err;
}

// ----------------------------------------------------------------------------
// timing

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), compare_double);
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    double op_s[OP_COUNT];          // median seconds of each op
    double ln_total_s, rms_total_s; // median over repeats of fwd + bwd
} Timings;

// The ops run interleaved inside each repeat, so that drift of the shared VM
// hits all of them alike and the ratios are measured side by side.
static Timings time_shape(Buffers *b, const Options *opt, unsigned char *scratch) {
    int R = opt->repeats;
    size_t nr = (size_t)R;
    double *samples = malloc_check((size_t)(OP_COUNT + 2) * (size_t)R * sizeof(double), "samples");
    double *ln_total = samples + (size_t)OP_COUNT * nr;
    double *rms_total = ln_total + R;
    for (int r = -opt->warmups; r < R; r++) {
        double t[OP_COUNT];
        for (int k = 0; k < OP_COUNT; k++) {
            int op = RUN_ORDER[k];
            if (scratch != NULL) {
                flush_cache(scratch);
            }
            double t0 = now_seconds();
            run_op(op, b);
            t[op] = now_seconds() - t0;
        }
        if (r >= 0) {
            for (int op = 0; op < OP_COUNT; op++) {
                samples[(size_t)op * nr + (size_t)r] = t[op];
            }
            ln_total[r] = t[OP_LN_FWD] + t[OP_LN_BWD];
            rms_total[r] = t[OP_RMS_FWD] + t[OP_RMS_BWD];
        }
    }
    // the backward passes accumulated into dx/dgain/dbias all along
    size_t nc = (size_t)b->N * (size_t)b->C;
    if (!all_finite(b->y_copy, nc) || !all_finite(b->dx, nc) ||
        !all_finite(b->dgain, (size_t)b->C)) {
        fatal("non-finite values after the timing loop (N=%d, C=%d)", b->N, b->C);
    }
    Timings tm;
    for (int op = 0; op < OP_COUNT; op++) {
        tm.op_s[op] = median(samples + (size_t)op * nr, R);
    }
    tm.ln_total_s = median(ln_total, R);
    tm.rms_total_s = median(rms_total, R);
    free(samples);
    return tm;
}

// ----------------------------------------------------------------------------
// output

static void print_row(int N, int C, const char *kernel, double seconds, double bytes,
                      double copy_gbps) {
    double gbps = bytes / seconds * 1e-9;
    printf("| %d x %d | %s | %.1f | %.0f | %.1f | %.0f%% |\n", N, C, kernel, seconds * 1e6, bytes,
           gbps, 100.0 * gbps / copy_gbps);
}

static void print_machine(const Options *opt) {
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f != NULL) {
        char line[512];
        while (fgets(line, sizeof line, f) != NULL) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
                snprintf(model, sizeof model, "%s", colon + 2);
                model[strcspn(model, "\n")] = '\0';
                break;
            }
        }
        fclose(f);
    }
    const char *env = getenv("OMP_NUM_THREADS");
    printf("bench_norms: %s, %d processors, %d OpenMP threads (OMP_NUM_THREADS=%s), "
           "%d repeats after %d warmups, caches %s\n\n",
           model, omp_get_num_procs(), omp_get_max_threads(), env != NULL ? env : "unset",
           opt->repeats, opt->warmups, opt->flush ? "flushed before each op" : "warm");
}

// ----------------------------------------------------------------------------

int main(int argc, char **argv) {
    Options opt = {DEFAULT_REPEATS, DEFAULT_WARMUPS, 0};
    int custom_N = 0, custom_C = 0;
    CliFlag flags[] = {
        {"-nr", CLI_INT, &custom_N, 1, 1 << 30,
         "rows N of one custom shape, with -C (default: 4096 x 768 and 1024 x 1600)", NULL, 0, 0},
        {"-C", CLI_INT, &custom_C, 1, 1 << 20, "channels C of the custom shape, with -nr", NULL, 0,
         0},
        {"-r", CLI_INT, &opt.repeats, 1, 100000, "timed repeats per op, median reported (default 50)",
         NULL, 0, 0},
        {"-w", CLI_INT, &opt.warmups, 0, 100000, "untimed repeats first (default 5)", NULL, 0, 0},
        {"--flush", CLI_SWITCH, &opt.flush, 0, 0, "flush the caches (write 256 MiB) before each timed op", NULL,
         0, 0},
    };
    CliSpec spec = {.program = "bench_norms", .synopsis = "[options]",
                    .about = "LayerNorm vs RMSNorm forward/backward timing against a memory copy.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .footer = "Threads: OMP_NUM_THREADS. Output: a markdown table.\n"};
    cli_parse(&spec, argc, argv, NULL);
    if ((custom_N == 0) != (custom_C == 0)) {
        cli_error(&spec, "-nr and -C go together");
    }

    int shapes[2][2] = {{4096, 768}, {1024, 1600}};
    int num_shapes = 2;
    if (custom_N != 0) {
        shapes[0][0] = custom_N;
        shapes[0][1] = custom_C;
        num_shapes = 1;
    }
    unsigned char *scratch = NULL;
    if (opt.flush) {
        scratch = calloc_check(FLUSH_BYTES, 1, "flush scratch");
    }

    Timings tm[2];
    double max_err[2][2];
    for (int s = 0; s < num_shapes; s++) {
        Buffers b = buffers_create(shapes[s][0], shapes[s][1], 1337u + (uint64_t)s);
        max_err[s][0] = check_kind(NORM_LAYER, &b);
        max_err[s][1] = check_kind(NORM_RMS, &b);
        tm[s] = time_shape(&b, &opt, scratch);
        buffers_free(&b);
    }

    print_machine(&opt);
    printf("| N x C | kernel | median us | bytes | GB/s | %% of copy |\n");
    printf("|---|---|---:|---:|---:|---:|\n");
    for (int s = 0; s < num_shapes; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        const double *t = tm[s].op_s;
        double copy_gbps = copy_bytes(N, C) / t[OP_COPY_OMP] * 1e-9;
        print_row(N, C, "memcpy (1 thread)", t[OP_COPY_1T], copy_bytes(N, C), copy_gbps);
        print_row(N, C, "copy (OpenMP)", t[OP_COPY_OMP], copy_bytes(N, C), copy_gbps);
        print_row(N, C, "LN fwd", t[OP_LN_FWD], ln_fwd_bytes(N, C), copy_gbps);
        print_row(N, C, "LN bwd", t[OP_LN_BWD], ln_bwd_bytes(N, C), copy_gbps);
        print_row(N, C, "LN fwd+bwd", tm[s].ln_total_s, ln_fwd_bytes(N, C) + ln_bwd_bytes(N, C),
                  copy_gbps);
        print_row(N, C, "RMS fwd", t[OP_RMS_FWD], rms_fwd_bytes(N, C), copy_gbps);
        print_row(N, C, "RMS bwd", t[OP_RMS_BWD], rms_bwd_bytes(N, C), copy_gbps);
        print_row(N, C, "RMS fwd+bwd", tm[s].rms_total_s, rms_fwd_bytes(N, C) + rms_bwd_bytes(N, C),
                  copy_gbps);
        // a descheduled vCPU stalls every OpenMP op at its barrier
        if (omp_get_max_threads() > 1 && t[OP_COPY_OMP] > 1.5 * t[OP_COPY_1T]) {
            fprintf(stderr,
                    "warning: %d x %d: the OpenMP copy is %.1fx slower than the 1-thread "
                    "memcpy; the machine was busy, rerun\n",
                    N, C, t[OP_COPY_OMP] / t[OP_COPY_1T]);
        }
    }
    printf("\nbytes: minimal traffic (each array once; accumulated gradients read + written); "
           "%% of copy: against the OpenMP copy of N*C floats in the same run.\n\n");
    for (int s = 0; s < num_shapes; s++) {
        const double *t = tm[s].op_s;
        printf("%d x %d rms vs ln: fwd %.2fx, bwd %.2fx, total %.2fx "
               "(checked against a double reference: max rel err ln %.1e, rms %.1e)\n",
               shapes[s][0], shapes[s][1], t[OP_LN_FWD] / t[OP_RMS_FWD],
               t[OP_LN_BWD] / t[OP_RMS_BWD], tm[s].ln_total_s / tm[s].rms_total_s, max_err[s][0],
               max_err[s][1]);
    }
    free(scratch);
    return 0;
}
