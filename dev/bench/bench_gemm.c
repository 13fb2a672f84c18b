// The matmul libraries Debian ships, side by side at GPT-2's shapes: OpenBLAS
// (what foldnorm links), BLIS and oneDNN in fp32, and oneDNN's bf16 matmul
// (bf16 inputs, fp32 accumulation and output: the CPU's vdpbf16ps path, which
// OpenBLAS 0.3.21 does not expose). Each round runs every library once per
// shape in turn, so a busy machine slows all of them alike; the median of
// the rounds is reported with GFLOP/s and the ratio to OpenBLAS. The three
// products of a linear layer (llmc/kernels/matmul.c's layout, weight W is OC x C):
//   fwd:   out (M x OC) = inp (M x C) W^T
//   dinp:  dinp (M x C) = dout (M x OC) W
//   dW:    dW (OC x C) = dout^T inp          (M = B*T rows)
// Results are checked against OpenBLAS (fp32 to 1e-4 relative; bf16 to 2e-2:
// inputs rounded to 8 mantissa bits, |err| ~ sqrt(K) * 2^-8 * |a||b| / |c|).
//
//   dev/bench/bench_gemm                    d12 at B=4 T=64 (M = 256)
//   dev/bench/bench_gemm -m 1024 -r 20
//
// Needs libblis-openmp-dev and libdnnl-dev (scripts/deps/bench.txt); built
// by `make bench_gemm`, not by `make all`.
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <blis.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include "core/cli.h"

enum { LIB_OPENBLAS, LIB_BLIS, LIB_DNNL, LIB_DNNL_BF16, NUM_LIBS };
static const char *LIB_NAMES[NUM_LIBS] = {"OpenBLAS fp32", "BLIS fp32", "oneDNN fp32", "oneDNN bf16"};
enum { OP_FWD, OP_DINP, OP_DW, NUM_OPS };
static const char *OP_NAMES[NUM_OPS] = {"fwd", "dinp", "dW"};

static void fail(const char *what) {
    fprintf(stderr, "bench_gemm: %s\n", what);
    exit(1);
}

#define DNNL_CHECK(call)                                                                        \
    do {                                                                                        \
        dnnl_status_t status_ = (call);                                                         \
        if (status_ != dnnl_success) {                                                          \
            fprintf(stderr, "bench_gemm: %s failed: oneDNN status %d\n", #call, (int)status_); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint16_t to_bf16(float f) { // round to nearest even
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

// One product C (rows x cols) = A (rows x inner) op B, with the operands' row-major
// layouts given as transposes, as cblas takes them.
typedef struct {
    int rows, cols, inner;
    int trans_a, trans_b; // A stored (inner x rows) / B stored (cols x inner)
    const float *a, *b;
    const uint16_t *a16, *b16;
    float *c;
} Gemm;

typedef struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_t src, weights, dst;
} DnnlBf16;

// 0 where oneDNN has no bf16 matmul on this CPU (status "unimplemented": no
// AVX-512), 1 when the primitive is ready.
static int dnnl_bf16_init(DnnlBf16 *d, dnnl_engine_t engine, dnnl_stream_t stream, const Gemm *g) {
    d->engine = engine;
    d->stream = stream;
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_dims_t a_dims = {g->rows, g->inner}, b_dims = {g->inner, g->cols}, c_dims = {g->rows, g->cols};
    // "ba": the logical (inner x cols) matrix stored transposed, i.e. (cols x inner) row-major
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&a_md, 2, a_dims, dnnl_bf16, g->trans_a ? dnnl_ba : dnnl_ab));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, dnnl_bf16, g->trans_b ? dnnl_ba : dnnl_ab));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    DNNL_CHECK(dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md));
    dnnl_primitive_desc_t pd;
    dnnl_status_t status = dnnl_primitive_desc_create(&pd, &desc, NULL, engine, NULL);
    if (status == dnnl_unimplemented) {
        return 0;
    }
    DNNL_CHECK(status);
    DNNL_CHECK(dnnl_primitive_create(&d->prim, pd));
    DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
    DNNL_CHECK(dnnl_memory_create(&d->src, &a_md, engine, (void *)g->a16));
    DNNL_CHECK(dnnl_memory_create(&d->weights, &b_md, engine, (void *)g->b16));
    DNNL_CHECK(dnnl_memory_create(&d->dst, &c_md, engine, g->c));
    return 1;
}

static void dnnl_bf16_free(DnnlBf16 *d) {
    DNNL_CHECK(dnnl_memory_destroy(d->src));
    DNNL_CHECK(dnnl_memory_destroy(d->weights));
    DNNL_CHECK(dnnl_memory_destroy(d->dst));
    DNNL_CHECK(dnnl_primitive_destroy(d->prim));
}

static void run(int lib, const Gemm *g, DnnlBf16 *bf16) {
    int lda = g->trans_a ? g->rows : g->inner, ldb = g->trans_b ? g->inner : g->cols;
    switch (lib) {
    case LIB_OPENBLAS:
        cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans,
                    g->rows, g->cols, g->inner, 1.0f, g->a, lda, g->b, ldb, 0.0f, g->c, g->cols);
        break;
    case LIB_BLIS: {
        float one = 1.0f, zero = 0.0f;
        // row-major: element (i, j) of A at i * lda + j, so row stride lda, column stride 1
        bli_sgemm(g->trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, g->trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                  g->rows, g->cols, g->inner, &one, (float *)g->a, lda, 1, (float *)g->b, ldb, 1, &zero, g->c,
                  g->cols, 1);
        break;
    }
    case LIB_DNNL:
        DNNL_CHECK(dnnl_sgemm(g->trans_a ? 'T' : 'N', g->trans_b ? 'T' : 'N', g->rows, g->cols, g->inner, 1.0f, g->a,
                              lda, g->b, ldb, 0.0f, g->c, g->cols));
        break;
    case LIB_DNNL_BF16: {
        dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_SRC, bf16->src}, {DNNL_ARG_WEIGHTS, bf16->weights}, {DNNL_ARG_DST, bf16->dst}};
        DNNL_CHECK(dnnl_primitive_execute(bf16->prim, bf16->stream, 3, args));
        DNNL_CHECK(dnnl_stream_wait(bf16->stream));
        break;
    }
    }
}

// oneDNN's effective ISA (ONEDNN_MAX_CPU_ISA caps it)
static const char *dnnl_isa(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *random_floats(size_t n, unsigned *state) {
    float *p = malloc(n * sizeof(float));
    if (p == NULL) fail("out of memory");
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        p[i] = (float)((*state >> 8) & 0xFFFF) / 65536.0f - 0.5f;
    }
    return p;
}

static uint16_t *to_bf16_array(const float *x, size_t n) {
    uint16_t *p = malloc(n * sizeof(uint16_t));
    if (p == NULL) fail("out of memory");
    for (size_t i = 0; i < n; i++) p[i] = to_bf16(x[i]);
    return p;
}

// max |c - ref| / max |ref|
static double rel_err(const float *c, const float *ref, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)c[i] - ref[i]));
        m = fmax(m, fabs((double)ref[i]));
    }
    return d / (m > 0 ? m : 1);
}

int main(int argc, char **argv) {
    int M = 256, rounds = 9, warmup = 2;
    CliFlag flags[] = {
        {"-m", CLI_INT, &M, 1, 1 << 20, "rows M = B*T of every product (default 256: d12 at B=4 T=64)",
         NULL, 0, 0},
        {"-r", CLI_INT, &rounds, 1, 10000, "timed rounds, the median reported (default 9)", NULL, 0, 0},
        {"-w", CLI_INT, &warmup, 0, 10000, "untimed rounds first (default 2)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "bench_gemm", .synopsis = "[options]",
                    .about = "OpenBLAS, BLIS and oneDNN fp32 and oneDNN bf16 at GPT-2 d12's linear\n"
                             "layers. Threads: OMP_NUM_THREADS (all three libraries use OpenMP).\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    int threads = omp_get_max_threads();
    bli_thread_set_num_threads(threads);
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    DNNL_CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL_CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));

    // d12's linear layers: qkv, attn proj, fc, fc proj, LM head (C = 768, V padded 50304)
    const int shapes[][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}, {768, 50304}}; // C, OC
    const char *layer[] = {"qkv", "attproj", "fc", "fcproj", "lm head"};
    const int num_shapes = 5;
    printf("bench_gemm: M = B*T = %d, %d threads, BLIS arch %s, oneDNN ISA %s, %d rounds after %d "
           "warmups, median\n", M, threads, bli_arch_string(bli_arch_query_id()), dnnl_isa(), rounds,
           warmup);
    int have_bf16 = 1; // oneDNN's bf16 matmul on this CPU: probed at the first shape
    printf("\n");
    printf("| layer | C x OC | op | library | ms | GFLOP/s | vs OpenBLAS | rel err |\n");
    printf("|---|---|---|---|---:|---:|---:|---:|\n");
    double total[NUM_LIBS] = {0};
    unsigned state = 12345;
    for (int s = 0; s < num_shapes; s++) {
        int C = shapes[s][0], OC = shapes[s][1];
        float *inp = random_floats((size_t)M * C, &state), *w = random_floats((size_t)OC * C, &state);
        float *dout = random_floats((size_t)M * OC, &state);
        uint16_t *inp16 = to_bf16_array(inp, (size_t)M * C), *w16 = to_bf16_array(w, (size_t)OC * C);
        uint16_t *dout16 = to_bf16_array(dout, (size_t)M * OC);
        for (int op = 0; op < NUM_OPS; op++) {
            Gemm g;
            if (op == OP_FWD) g = (Gemm){M, OC, C, 0, 1, inp, w, inp16, w16, NULL};
            else if (op == OP_DINP) g = (Gemm){M, C, OC, 0, 0, dout, w, dout16, w16, NULL};
            else g = (Gemm){OC, C, M, 1, 0, dout, inp, dout16, inp16, NULL};
            size_t n_out = (size_t)g.rows * g.cols;
            float *outs[NUM_LIBS];
            for (int l = 0; l < NUM_LIBS; l++) {
                outs[l] = calloc(n_out, sizeof(float));
                if (outs[l] == NULL) fail("out of memory");
            }
            DnnlBf16 bf16;
            Gemm g16 = g;
            g16.c = outs[LIB_DNNL_BF16];
            if (have_bf16 && !dnnl_bf16_init(&bf16, engine, stream, &g16)) {
                have_bf16 = 0;
                printf("| (oneDNN bf16: SKIP, oneDNN has no bf16 matmul on this CPU: its ISA is %s, "
                       "it needs AVX-512; foldnorm's -mp bf16 runs sgemm on bf16-rounded inputs "
                       "here, the OpenBLAS rows) | | | | | | | |\n", dnnl_isa());
            }
            const int num_libs = have_bf16 ? NUM_LIBS : LIB_DNNL_BF16;
            double *times = malloc(sizeof(double) * NUM_LIBS * (size_t)rounds);
            if (times == NULL) fail("out of memory");
            for (int r = -warmup; r < rounds; r++) {
                for (int l = 0; l < num_libs; l++) {
                    g.c = outs[l];
                    double t0 = now_s();
                    run(l, &g, &bf16);
                    double dt = now_s() - t0;
                    if (r >= 0) times[l * rounds + r] = dt;
                }
            }
            double flops = 2.0 * g.rows * g.cols * (double)g.inner, base = 0;
            for (int l = 0; l < num_libs; l++) {
                qsort(times + l * rounds, (size_t)rounds, sizeof(double), cmp_double);
                double med = times[l * rounds + rounds / 2];
                if (l == LIB_OPENBLAS) base = med;
                total[l] += med;
                double err = l == LIB_OPENBLAS ? 0 : rel_err(outs[l], outs[LIB_OPENBLAS], n_out);
                double tol = l == LIB_DNNL_BF16 ? 2e-2 : 1e-4;
                printf("| %s | %d x %d | %s | %s | %.3f | %.1f | %.2fx | %.1e%s |\n", layer[s], C, OC, OP_NAMES[op],
                       LIB_NAMES[l], 1e3 * med, flops / med * 1e-9, base / med, err, err > tol ? " FAIL" : "");
                if (err > tol) fprintf(stderr, "bench_gemm: %s %s %s: rel err %.2e > %.0e\n", layer[s],
                                       OP_NAMES[op], LIB_NAMES[l], err, tol);
            }
            if (have_bf16) {
                dnnl_bf16_free(&bf16);
            }
            free(times);
            for (int l = 0; l < NUM_LIBS; l++) free(outs[l]);
        }
        free(inp), free(w), free(dout), free(inp16), free(w16), free(dout16);
    }
    printf("\nsum over the 15 products (one d12 layer's four linears + the LM head, fwd + bwd):\n");
    for (int l = 0; l < (have_bf16 ? NUM_LIBS : LIB_DNNL_BF16); l++) {
        printf("  %-14s %8.2f ms  %.2fx OpenBLAS\n", LIB_NAMES[l], 1e3 * total[l], total[LIB_OPENBLAS] / total[l]);
    }
    if (have_bf16) {
        printf("(bf16 times leave out the fp32 -> bf16 conversion of the operands)\n");
    } else {
        printf("(oneDNN bf16: skipped, no bf16 matmul in oneDNN on this CPU, ISA %s)\n", dnnl_isa());
    }
    DNNL_CHECK(dnnl_stream_destroy(stream));
    DNNL_CHECK(dnnl_engine_destroy(engine));
    return 0;
}
