// The narrow linear layers of the image models and the demo GPT-2, side by
// side through each implementation foldnorm can route them to: the tile
// kernels (llmc/kernels/tile_gemm.c), OpenBLAS, oneDNN fp32 and the portable
// loops, forward, dinp and dweight (llmc/kernels/matmul.h's layout), on one
// thread (as the per-thread model replicas of a 2-thread image step run them,
// inside a parallel region) and on all threads. Each round runs every route
// once per product in turn; the median of the rounds is reported with
// GFLOP/s. Results are checked against the portable loops (1e-5 relative:
// the same fp32 sums in another order). Not a test: it prints figures.
//   bin/bench_narrow_gemm [-r ROUNDS] [-w WARMUP] [-s vit|swin|demo|all]
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"
#include "kernels/matmul.h"

enum { ROUTE_TILES, ROUTE_BLAS, ROUTE_DNNL, ROUTE_PORTABLE, NUM_ROUTES };
static const char *ROUTE_NAMES[NUM_ROUTES] = {"tiles", "OpenBLAS", "oneDNN", "portable"};
enum { OP_FORWARD, OP_DINP, OP_DWEIGHT, NUM_OPS };
static const char *OP_NAMES[NUM_OPS] = {"fwd", "dinp", "dW"};

typedef struct {
    const char *model, *layer;
    int N, IC, OC; // rows (B x tokens of one replica's share), in and out channels
} Shape;

// ViT (C 64, 17 tokens, MLP 4) and Swin (E 32, 196 and 49 tokens, MLP 2) at
// B=128 split over 2 replicas (64 images each); the demo GPT-2 (d4c128, B=4
// T=64 and the LM head at V=256... 50304 padded) at one batch.
static const Shape SHAPES[] = {
    {"vit", "qkv", 64 * 17, 64, 192},      {"vit", "proj", 64 * 17, 64, 64},
    {"vit", "fc", 64 * 17, 64, 256},       {"vit", "fcproj", 64 * 17, 256, 64},
    {"swin", "s0 qkv", 64 * 196, 32, 96},  {"swin", "s0 fc", 64 * 196, 32, 64},
    {"swin", "s0 fcproj", 64 * 196, 64, 32}, {"swin", "s1 qkv", 64 * 49, 64, 192},
    {"swin", "s1 fc", 64 * 49, 64, 128},   {"swin", "s1 fcproj", 64 * 49, 128, 64},
    {"demo", "qkv", 256, 128, 384},        {"demo", "fc", 256, 128, 512},
    {"demo", "fcproj", 256, 512, 128},     {"demo", "proj", 256, 128, 128},
    // the demo's LM head at make demo's B=8 T=64 (wide: 50304 outputs, 128 in)
    {"demo", "lm head", 512, 128, 50304},
};

static double run_route(int route, int op, MatmulEngine *dnnl, float *out, const float *x,
                        const float *w, const float *g, int N, int IC, int OC) {
    matmul_force_route(route == ROUTE_TILES ? MATMUL_ROUTE_TILES
                       : route == ROUTE_BLAS ? MATMUL_ROUTE_BLAS
                                             : MATMUL_ROUTE_PORTABLE);
    double t0 = now_seconds();
    if (route == ROUTE_DNNL) {
        if (op == OP_FORWARD) {
            matmul_dnnl_fp32_forward(dnnl, out, NULL, x, w, NULL, N, IC, OC);
        } else if (op == OP_DINP) {
            matmul_dnnl_fp32_backward(dnnl, out, 0, NULL, NULL, g, x, w, N, IC, OC);
        } else {
            memset(out, 0, (size_t)OC * IC * sizeof(float));
            matmul_dnnl_fp32_backward(dnnl, NULL, 0, out, NULL, g, x, w, N, IC, OC);
        }
    } else if (op == OP_FORWARD) {
        matmul_forward(out, x, w, NULL, N, IC, OC);
    } else if (op == OP_DINP) {
        matmul_backward_set_dinp(out, NULL, NULL, g, x, w, N, IC, OC);
    } else {
        memset(out, 0, (size_t)OC * IC * sizeof(float));
        matmul_backward(NULL, out, NULL, g, x, w, N, IC, OC);
    }
    double dt = now_seconds() - t0;
    matmul_force_route(MATMUL_ROUTE_AUTO);
    return dt;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = 15, warmup = 3;
    const char *set = "all";
    CliFlag flags[] = {
        {"-r", CLI_INT, &rounds, 1, 100000, "timed rounds, the median reported (default 15)", NULL, 0, 0},
        {"-w", CLI_INT, &warmup, 0, 100000, "untimed rounds first (default 3)", NULL, 0, 0},
        {"-s", CLI_CHOICE, &set, 0, 0, "the model's shapes, or all (default all)", "vit|swin|demo|all",
         0, 0},
    };
    CliSpec spec = {.program = "bench_narrow_gemm", .synopsis = "[options]",
                    .about = "The narrow layers of ViT, Swin and the demo GPT-2 through the tile\n"
                             "kernels, OpenBLAS, oneDNN fp32 and the portable loops, on 1 thread\n"
                             "and on all (OMP_NUM_THREADS).\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    const int all_threads = omp_get_max_threads();
    MatmulEngine *dnnl = matmul_dnnl_available() ? matmul_engine_create(MATMUL_DNNL_FP32) : NULL;
    printf("bench_narrow_gemm: %d rounds after %d warmups, median; matmul %s, OpenBLAS core %s%s\n\n",
           rounds, warmup, matmul_backend_name(), matmul_blas_core(),
           dnnl != NULL ? "" : " (no oneDNN: its column is left out)");
    printf("| model | layer | N x IC x OC | op | threads |");
    for (int r = 0; r < NUM_ROUTES; r++) printf(" %s GFLOP/s |", ROUTE_NAMES[r]);
    printf(" best |\n|---|---|---|---|---:|");
    for (int r = 0; r < NUM_ROUTES; r++) printf("---:|");
    printf("---|\n");
    Rng rng;
    rng_seed(&rng, 7);
    int bad = 0;
    for (size_t s = 0; s < sizeof(SHAPES) / sizeof(SHAPES[0]); s++) {
        const Shape *sh = &SHAPES[s];
        if (strcmp(set, "all") != 0 && strcmp(set, sh->model) != 0) continue;
        const int N = sh->N, IC = sh->IC, OC = sh->OC;
        const size_t nx = (size_t)N * IC, nw = (size_t)OC * IC, ng = (size_t)N * OC;
        float *x = malloc_check(nx * sizeof(float), "x"), *w = malloc_check(nw * sizeof(float), "w");
        float *g = malloc_check(ng * sizeof(float), "g");
        rng_normal_fill(&rng, x, nx, 0.0f, 1.0f);
        rng_normal_fill(&rng, w, nw, 0.0f, 0.05f);
        rng_normal_fill(&rng, g, ng, 0.0f, 0.01f);
        size_t most = nx > nw ? nx : nw;
        most = most > ng ? most : ng;
        float *outs[NUM_ROUTES];
        for (int r = 0; r < NUM_ROUTES; r++) outs[r] = malloc_check(most * sizeof(float), "out");
        double *times = malloc_check((size_t)NUM_ROUTES * rounds * sizeof(double), "times");
        for (int threads = 1; threads <= all_threads; threads = threads == all_threads ? threads + 1 : all_threads) {
            omp_set_num_threads(threads);
            for (int op = 0; op < NUM_OPS; op++) {
                const size_t n_out = op == OP_FORWARD ? ng : op == OP_DINP ? nx : nw;
                for (int k = -warmup; k < rounds; k++) {
                    for (int r = 0; r < NUM_ROUTES; r++) {
                        if (r == ROUTE_DNNL && dnnl == NULL) continue;
                        double dt = run_route(r, op, dnnl, outs[r], x, w, g, N, IC, OC);
                        if (k >= 0) times[r * rounds + k] = dt;
                    }
                }
                const double flops = 2.0 * N * IC * OC;
                printf("| %s | %s | %d x %d x %d | %s | %d |", sh->model, sh->layer, N, IC, OC,
                       OP_NAMES[op], threads);
                int best = -1;
                double best_t = 0.0;
                for (int r = 0; r < NUM_ROUTES; r++) {
                    if (r == ROUTE_DNNL && dnnl == NULL) {
                        printf(" - |");
                        continue;
                    }
                    qsort(times + r * rounds, (size_t)rounds, sizeof(double), cmp_double);
                    const double med = times[r * rounds + rounds / 2];
                    double err = 0.0, ref = 0.0;
                    for (size_t i = 0; i < n_out; i++) {
                        err = fmax(err, fabs((double)outs[r][i] - outs[ROUTE_PORTABLE][i]));
                        ref = fmax(ref, fabs((double)outs[ROUTE_PORTABLE][i]));
                    }
                    const int wrong = err > 1e-5 * ref;
                    bad += wrong;
                    printf(" %.1f%s |", flops / med * 1e-9, wrong ? " WRONG" : "");
                    if (best < 0 || med < best_t) best = r, best_t = med;
                }
                printf(" %s |\n", ROUTE_NAMES[best]);
                fflush(stdout);
            }
        }
        omp_set_num_threads(all_threads);
        for (int r = 0; r < NUM_ROUTES; r++) free(outs[r]);
        free(times);
        free(x);
        free(w);
        free(g);
    }
    matmul_engine_free(dnnl);
    if (bad) fprintf(stderr, "bench_narrow_gemm: %d results differ from the portable loops by > 1e-5\n", bad);
    return bad ? 1 : 0;
}
