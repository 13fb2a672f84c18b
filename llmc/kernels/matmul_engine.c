// The one matmul router (matmul.h): every product's route is chosen here, per
// call shape and ISA, among matmul.c's fp32 kernels (the portable loops,
// OpenBLAS, the tile kernels) and oneDNN's matmul (matmul_dnnl.c), fp32 or
// bf16, whose contexts come from one per-thread pool. The bf16 and dnnl-fp32
// precisions ("MatmulEngine") choose their engine once, when made: bf16
// through oneDNN where it has a bf16 matmul on this CPU; elsewhere the sgemm
// fallback runs the same arithmetic through the fp32 routes: the inputs
// rounded to bf16 and widened back to fp32 (exactly), fp32 products (exact
// for bf16 factors: 8 + 8 significant bits fit fp32's 24) and fp32
// accumulation, so the two engines differ only in the order of the sums.
#include "matmul.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "matmul_dnnl.h"
#include "matmul_kernels.h"
#include "core/utils.h"

void matmul_to_bf16(uint16_t *dst, const float *src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= ((size_t)1 << 16))
    for (size_t i = 0; i < n; i++) {
        dst[i] = bf16_from_float(src[i]);
    }
}

// dst = src rounded to bf16, kept in fp32
static void round_to_bf16_in_fp32(float *dst, const float *src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= ((size_t)1 << 16))
    for (size_t i = 0; i < n; i++) {
        dst[i] = bf16_to_float(bf16_from_float(src[i]));
    }
}

static void widen_bf16(float *dst, const uint16_t *src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= ((size_t)1 << 16))
    for (size_t i = 0; i < n; i++) {
        dst[i] = bf16_to_float(src[i]);
    }
}

const char *matmul_precision_name(MatmulPrecision p) {
    switch (p) {
    case MATMUL_FP32: return "fp32";
    case MATMUL_BF16: return "bf16";
    case MATMUL_DNNL_FP32: return "dnnl-fp32";
    }
    return "?";
}

int matmul_precision_parse(const char *name, MatmulPrecision *p) {
    static const MatmulPrecision all[] = {MATMUL_FP32, MATMUL_BF16, MATMUL_DNNL_FP32};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(name, matmul_precision_name(all[i])) == 0) {
            *p = all[i];
            return 0;
        }
    }
    return -1;
}

int matmul_dnnl_available(void) { return strcmp(dnnl_isa_name(), "none") != 0; }

// A buffer of a call's operands, grown as needed.
typedef struct {
    void *data;
    size_t bytes;
} Scratch;

static void *scratch_get(Scratch *s, size_t bytes, const char *what) {
    if (s->bytes < bytes) {
        free(s->data);
        s->data = malloc_check(bytes, what);
        s->bytes = bytes;
    }
    return s->data;
}

// One pool of oneDNN contexts, fp32 and bf16: each thread has its own (a
// context runs one primitive at a time, with one scratchpad, and the
// per-thread model replicas call at once), made on first use, freed at exit.
typedef struct {
    DnnlMatmul *context; // NULL: none here, why says why
    int tried;
    char why[256];
} PoolSlot;
static _Thread_local PoolSlot pool_slots[2]; // [0] fp32, [1] bf16
static DnnlMatmul **pool_contexts;
static int pool_count, pool_capacity;

static void pool_free_all(void) {
    for (int i = 0; i < pool_count; i++) {
        dnnl_matmul_free(pool_contexts[i]);
    }
    free(pool_contexts);
    pool_contexts = NULL;
    pool_count = pool_capacity = 0;
}

// The calling thread's context for bf16 (bf16 != 0) or fp32 inputs, or NULL
// (this build or CPU has none); *why, when not NULL, then says why.
static DnnlMatmul *pool_context(int bf16, const char **why) {
    PoolSlot *slot = &pool_slots[bf16 != 0];
    if (!slot->tried) {
        slot->tried = 1;
#pragma omp critical(matmul_engine_pool)
        {
            slot->context = dnnl_matmul_create(bf16, slot->why, sizeof(slot->why));
            if (slot->context != NULL) {
                if (pool_count == pool_capacity) {
                    pool_capacity = pool_capacity == 0 ? 16 : 2 * pool_capacity;
                pool_contexts = realloc(pool_contexts, (size_t)pool_capacity * sizeof(*pool_contexts));
                if (pool_contexts == NULL) {
                    fatal("matmul: out of memory for the oneDNN context pool");
                }
                }
                if (pool_count == 0) {
                    atexit(pool_free_all);
                }
                pool_contexts[pool_count++] = slot->context;
            }
        }
    }
    if (why != NULL) {
        *why = slot->why;
    }
    return slot->context;
}

// The fp32 routes. A route names the kernel of each of a layer's three
// products (forward, dinp, dweight).
typedef enum { KERNEL_PORTABLE, KERNEL_BLAS, KERNEL_TILES, KERNEL_ONEDNN } Kernel;
typedef struct {
    Kernel forward, dinp, dweight;
} Fp32Route;

static const char *kernel_name(Kernel k) {
    switch (k) {
    case KERNEL_PORTABLE: return "portable";
    case KERNEL_BLAS: return "openblas";
    case KERNEL_TILES: return "tiles";
    case KERNEL_ONEDNN: return "onednn-fp32";
    }
    return "?";
}

static MatmulRoute forced_route = MATMUL_ROUTE_AUTO;

void matmul_force_route(MatmulRoute route) { forced_route = route; }

// Narrow layers (both sides multiples of 16, at most MATMUL_TILE_MAX) go
// through tile_gemm's register-blocked kernels where the target has
// AVX-512: their weights fit in L1/L2, and OpenBLAS's packing and its AVX2
// kernel (what it picks on this EPYC) cost more than the arithmetic there
// (docs/performance.md, the ViT/Swin section, has the measured crossover).
#ifndef MATMUL_TILE_MAX
#define MATMUL_TILE_MAX 256
#endif
// Without AVX-512 the narrow layers (both sides at most MATMUL_DNNL_MAX, and,
// inside a parallel region, where OpenBLAS's OpenMP build cannot be called,
// every layer) go through oneDNN's fp32 matmul: its AVX2 kernels measured
// 1.2-3x OpenBLAS and the tile kernels, and 3-5x the portable loops, at the
// ViT, Swin and demo GPT-2 shapes on one thread and two
// (dev/bench/bench_narrow_gemm.c, docs/performance.md). Wide layers with one
// side narrow and the other not (the demo GPT-2's LM head, 128 in, 50304
// out), outside parallel regions: oneDNN wins the forward and dinp (1.2-1.8x
// OpenBLAS at 512 x 128 x 50304 on AVX2, 1 and 2 threads) and OpenBLAS the
// weight gradient (1.1-1.25x oneDNN: bin/bench_narrow_gemm -s demo), so only
// those two go. With AVX-512 the tile kernels stay (measured faster than
// OpenBLAS there); without oneDNN nothing changes.
#ifndef MATMUL_DNNL_MAX
#define MATMUL_DNNL_MAX 512
#endif

// The route of a layer (IC, OC) called inside a parallel region or not, where
// oneDNN's fp32 matmul is usable (onednn) or not. OpenBLAS runs outside
// parallel regions only: its OpenMP build makes concurrent callers spin-wait
// for each other, while the portable loops just run on the calling thread.
static Fp32Route fp32_route(int IC, int OC, int parallel, int onednn) {
    const int tiles_shape = IC % 16 == 0 && OC % 16 == 0;
    if (forced_route != MATMUL_ROUTE_AUTO) {
        const Kernel k = forced_route == MATMUL_ROUTE_TILES && tiles_shape ? KERNEL_TILES
                         : forced_route == MATMUL_ROUTE_BLAS && matmul_blas_built()
                             ? KERNEL_BLAS
                             : KERNEL_PORTABLE;
        return (Fp32Route){k, k, k};
    }
    const Kernel gemm = matmul_blas_built() && !parallel ? KERNEL_BLAS : KERNEL_PORTABLE;
#ifdef __AVX512F__
    (void)onednn;
    if (tiles_shape && IC <= MATMUL_TILE_MAX && OC <= MATMUL_TILE_MAX) {
        return (Fp32Route){KERNEL_TILES, KERNEL_TILES, KERNEL_TILES};
    }
#else
    const int ic_narrow = IC <= MATMUL_DNNL_MAX, oc_narrow = OC <= MATMUL_DNNL_MAX;
    if (onednn && (parallel || (ic_narrow && oc_narrow))) {
        return (Fp32Route){KERNEL_ONEDNN, KERNEL_ONEDNN, KERNEL_ONEDNN};
    }
    if (onednn && ic_narrow != oc_narrow) {
        return (Fp32Route){KERNEL_ONEDNN, KERNEL_ONEDNN, gemm};
    }
#endif
    return (Fp32Route){gemm, gemm, gemm};
}

// FOLDNORM_FP32_ONEDNN=0 keeps every fp32 product off oneDNN: the routes of
// a build without it, so the two builds' fp32 results can be compared bit
// for bit (test/suites/cpu_bf16.sh), or a slow oneDNN ruled out
static int fp32_onednn_allowed(void) {
    const char *env = getenv("FOLDNORM_FP32_ONEDNN");
    return env == NULL || strcmp(env, "0") != 0;
}

static int in_parallel(void) {
#ifdef _OPENMP
    return omp_in_parallel();
#else
    return 0;
#endif
}

// This call's route; *context is the thread's fp32 oneDNN context where the
// route uses it (made on the first call that wants it; where there is none,
// the route without oneDNN).
static Fp32Route route_for_call(int IC, int OC, DnnlMatmul **context) {
    const int parallel = in_parallel();
    Fp32Route route = fp32_route(IC, OC, parallel, 1);
    *context = NULL;
    if (route.forward == KERNEL_ONEDNN) {
        *context = fp32_onednn_allowed() ? pool_context(0, NULL) : NULL;
        if (*context == NULL) {
            route = fp32_route(IC, OC, parallel, 0);
        }
    }
    return route;
}

// out = residual + bias (the fill, when fill or either is given), then the
// product added: the bias and the residual cost no pass of their own.
static void dnnl_forward(DnnlMatmul *context, float *out, const float *residual, const void *inp,
                         const void *weight, const float *bias, int N, int IC, int OC) {
    const int accumulate = residual != NULL || bias != NULL;
    if (accumulate) {
        matmul_fill_rows(out, residual, bias, N, OC);
    }
    dnnl_matmul_forward(context, out, accumulate, inp, weight, N, IC, OC);
}

// A few rows (generation with a KV cache runs one): the work is one read of
// the weights, which OpenBLAS's packing and the tiles' transpose would first
// copy whole; the portable dot-product loops read them in place.
enum { FEW_ROWS = 4 };

// out = [residual +] inp W^T [+ bias]; a residual call (matmul_forward_residual)
// always fills the rows first, a plain one only with a bias.
static void fp32_forward(float *out, int residual_call, const float *residual, const float *inp,
                         const float *weight, const float *bias, int N, int IC, int OC) {
    if (N <= FEW_ROWS) {
        matmul_fill_rows(out, residual, bias, N, OC);
        matmul_portable_forward(out, inp, weight, N, IC, OC, 1.0f);
        return;
    }
    DnnlMatmul *context;
    const Kernel kernel = route_for_call(IC, OC, &context).forward;
    const int fill = residual_call || bias != NULL;
    switch (kernel) {
    case KERNEL_ONEDNN: dnnl_forward(context, out, residual, inp, weight, bias, N, IC, OC); return;
    case KERNEL_TILES:
        matmul_tiles_forward(out, residual, bias, fill, inp, weight, N, IC, OC);
        return;
    case KERNEL_BLAS:
    case KERNEL_PORTABLE:
        if (fill) {
            matmul_fill_rows(out, residual, bias, N, OC);
        }
        if (kernel == KERNEL_BLAS) {
            matmul_blas_forward(out, inp, weight, N, IC, OC, fill ? 1.0f : 0.0f);
        } else {
            matmul_portable_forward(out, inp, weight, N, IC, OC, fill ? 1.0f : 0.0f);
        }
        return;
    }
}

static void fp32_backward(float *dinp, float dinp_beta, float *dweight, float *dbias,
                          const float *dout, const float *inp, const float *weight, int N, int IC,
                          int OC) {
    DnnlMatmul *context;
    const Fp32Route route = route_for_call(IC, OC, &context);
    if (dinp != NULL) {
        switch (route.dinp) {
        case KERNEL_ONEDNN:
            dnnl_matmul_dinp(context, dinp, dinp_beta != 0.0f, dout, weight, N, IC, OC);
            break;
        case KERNEL_TILES:
            matmul_tiles_dinp(dinp, dinp_beta != 0.0f, dout, weight, N, IC, OC);
            break;
        case KERNEL_BLAS: matmul_blas_dinp(dinp, dout, weight, N, IC, OC, dinp_beta); break;
        case KERNEL_PORTABLE: matmul_portable_dinp(dinp, dout, weight, N, IC, OC, dinp_beta); break;
        }
    }
    if (dweight != NULL) {
        switch (route.dweight) {
        case KERNEL_ONEDNN: dnnl_matmul_dweight(context, dweight, dout, inp, N, IC, OC); break;
        case KERNEL_TILES: matmul_tiles_dweight(dweight, dout, inp, N, IC, OC); break;
        case KERNEL_BLAS: matmul_blas_dweight(dweight, dout, inp, N, IC, OC); break;
        case KERNEL_PORTABLE: matmul_portable_dweight(dweight, dout, inp, N, IC, OC); break;
        }
    }
    if (dbias != NULL) {
        matmul_bias_grad(dbias, dout, N, OC);
    }
}

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                    int IC, int OC) {
    fp32_forward(out, 0, NULL, inp, weight, bias, N, IC, OC);
}

void matmul_forward_residual(float *out, const float *residual, const float *inp,
                             const float *weight, const float *bias, int N, int IC, int OC) {
    fp32_forward(out, 1, residual, inp, weight, bias, N, IC, OC);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int IC, int OC) {
    fp32_backward(dinp, 1.0f, dweight, dbias, dout, inp, weight, N, IC, OC);
}

void matmul_backward_set_dinp(float *dinp, float *dweight, float *dbias, const float *dout,
                              const float *inp, const float *weight, int N, int IC, int OC) {
    fp32_backward(dinp, 0.0f, dweight, dbias, dout, inp, weight, N, IC, OC);
}

void matmul_print_routes(FILE *f) {
    static const struct {
        const char *layer;
        int IC, OC;
    } shapes[] = {
        {"ViT/Swin qkv (64 -> 192)", 64, 192},   {"ViT/Swin mlp (64 -> 256)", 64, 256},
        {"Swin stage 3 mlp (256 -> 1024)", 256, 1024}, {"GPT-2 demo head (128 -> 50304)", 128, 50304},
        {"GPT-2 d12 qkv (768 -> 2304)", 768, 2304},  {"GPT-2 d12 head (768 -> 50304)", 768, 50304},
    };
    const char *why = "FOLDNORM_FP32_ONEDNN=0";
    const int onednn = fp32_onednn_allowed() && pool_context(0, &why) != NULL;
    fprintf(f, "matmul routes, fp32 (forward/dinp/dweight), at a few layer shapes:\n");
#ifdef __AVX512F__
    fprintf(f, "  AVX-512 build: tiles where IC and OC are multiples of 16 up to %d, else OpenBLAS\n"
               "  (the portable loops inside a parallel region or without OpenBLAS)\n",
            MATMUL_TILE_MAX);
#else
    fprintf(f, "  no AVX-512: oneDNN fp32 where IC and OC are up to %d or inside a parallel region,\n"
               "  forward and dinp only where one of them is; else OpenBLAS (the portable loops\n"
               "  inside a parallel region or without OpenBLAS); oneDNN fp32 here: %s\n",
            MATMUL_DNNL_MAX, onednn ? "yes" : why);
#endif
    fprintf(f, "  %-32s %s\n", "any layer, N <= 4 rows", "forward portable");
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const Fp32Route out = fp32_route(shapes[i].IC, shapes[i].OC, 0, onednn);
        const Fp32Route in = fp32_route(shapes[i].IC, shapes[i].OC, 1, onednn);
        fprintf(f, "  %-32s %s/%s/%s | in a parallel region %s/%s/%s\n", shapes[i].layer,
                kernel_name(out.forward), kernel_name(out.dinp), kernel_name(out.dweight),
                kernel_name(in.forward), kernel_name(in.dinp), kernel_name(in.dweight));
    }
    const char *bf16_why = NULL;
    const int bf16 = pool_context(1, &bf16_why) != NULL;
    fprintf(f, "  -mp bf16: %s\n", bf16 ? "oneDNN bf16 (FOLDNORM_BF16_MATMUL=sgemm: the fp32 routes "
                                         "above on bf16-rounded inputs)"
                                       : "the fp32 routes above on bf16-rounded inputs");
    const char *fp32_why = NULL;
    fprintf(f, "  -mp dnnl-fp32: %s\n", pool_context(0, &fp32_why) != NULL ? "oneDNN fp32" : fp32_why);
}

struct MatmulEngine {
    MatmulPrecision precision;
    int onednn; // 0: the sgemm fallback (bf16 only)
    char description[512];
    // oneDNN bf16: the bf16 copies of a call's activations; the fallback:
    // the bf16-rounded activations and the widened weight, in fp32
    Scratch inp, dout, weight;
};

enum EngineChoice { CHOICE_AUTO, CHOICE_ONEDNN, CHOICE_SGEMM };

static enum EngineChoice engine_choice(void) {
    const char *v = getenv("FOLDNORM_BF16_MATMUL");
    if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0) {
        return CHOICE_AUTO;
    }
    if (strcmp(v, "onednn") == 0) {
        return CHOICE_ONEDNN;
    }
    if (strcmp(v, "sgemm") == 0) {
        return CHOICE_SGEMM;
    }
    fatal("FOLDNORM_BF16_MATMUL=%s: expected auto, onednn or sgemm", v);
}

MatmulEngine *matmul_engine_create(MatmulPrecision precision) {
    if (precision != MATMUL_BF16 && precision != MATMUL_DNNL_FP32) {
        fatal("matmul_engine_create: precision %s needs no engine", matmul_precision_name(precision));
    }
    MatmulEngine *mm = calloc_check(1, sizeof(*mm), "matmul engine");
    mm->precision = precision;
    const char *why = "";
    if (precision == MATMUL_DNNL_FP32) {
        mm->onednn = pool_context(0, &why) != NULL;
        if (!mm->onednn) {
            fatal("matmul precision dnnl-fp32: %s", why);
        }
        snprintf(mm->description, sizeof(mm->description), "oneDNN fp32 (ISA %s)", dnnl_isa_name());
        return mm;
    }
    enum EngineChoice choice = engine_choice();
    if (choice != CHOICE_SGEMM) {
        mm->onednn = pool_context(1, &why) != NULL;
    }
    if (mm->onednn) {
        snprintf(mm->description, sizeof(mm->description), "oneDNN bf16 (ISA %s)%s",
                 dnnl_isa_name(), choice == CHOICE_ONEDNN ? ", FOLDNORM_BF16_MATMUL=onednn" : "");
    } else if (choice == CHOICE_ONEDNN) {
        fatal("FOLDNORM_BF16_MATMUL=onednn: %s. Unset FOLDNORM_BF16_MATMUL (or set it to sgemm) "
              "for the sgemm fallback (the same arithmetic), or use -mp fp32", why);
    } else {
        snprintf(mm->description, sizeof(mm->description),
                 "sgemm (%s) on bf16-rounded inputs: %s", matmul_backend_name(),
                 choice == CHOICE_SGEMM ? "FOLDNORM_BF16_MATMUL=sgemm" : why);
    }
    return mm;
}

void matmul_engine_free(MatmulEngine *mm) {
    if (mm == NULL) {
        return;
    }
    free(mm->inp.data);
    free(mm->dout.data);
    free(mm->weight.data);
    free(mm);
}

MatmulPrecision matmul_engine_precision(const MatmulEngine *mm) { return mm->precision; }

const char *matmul_engine_kind(const MatmulEngine *mm) {
    return mm->onednn ? "onednn" : "sgemm";
}

const char *matmul_engine_describe(const MatmulEngine *mm) { return mm->description; }

static void check_precision(const MatmulEngine *mm, MatmulPrecision want, const char *fn) {
    if (mm->precision != want) {
        fatal("%s: the engine's precision is %s, not %s", fn, matmul_precision_name(mm->precision),
              matmul_precision_name(want));
    }
}

// The bf16 copy of n activations, in one of the engine's buffers.
static const uint16_t *bf16_copy(Scratch *s, const float *x, size_t n) {
    uint16_t *dst = scratch_get(s, n * sizeof(uint16_t), "bf16 activations");
    matmul_to_bf16(dst, x, n);
    return dst;
}

// The fallback's operands: x rounded to bf16 in fp32, a bf16 weight widened.
static const float *rounded_copy(Scratch *s, const float *x, size_t n) {
    float *dst = scratch_get(s, n * sizeof(float), "bf16-rounded activations");
    round_to_bf16_in_fp32(dst, x, n);
    return dst;
}

static const float *widened_copy(Scratch *s, const uint16_t *w, size_t n) {
    float *dst = scratch_get(s, n * sizeof(float), "widened bf16 weights");
    widen_bf16(dst, w, n);
    return dst;
}

// The calling thread's context of the engine's oneDNN precision.
static DnnlMatmul *engine_context(const MatmulEngine *mm) {
    const char *why = NULL;
    DnnlMatmul *context = pool_context(mm->precision == MATMUL_BF16, &why);
    if (context == NULL) {
        fatal("matmul engine %s: oneDNN on this thread: %s", mm->description, why);
    }
    return context;
}

void matmul_bf16_forward(MatmulEngine *mm, float *out, const float *residual, const float *inp,
                         const uint16_t *weight, const float *bias, int N, int IC, int OC) {
    check_precision(mm, MATMUL_BF16, "matmul_bf16_forward");
    if (mm->onednn) {
        const uint16_t *inp16 = bf16_copy(&mm->inp, inp, (size_t)N * IC);
        dnnl_forward(engine_context(mm), out, residual, inp16, weight, bias, N, IC, OC);
        return;
    }
    const float *x = rounded_copy(&mm->inp, inp, (size_t)N * IC);
    const float *w = widened_copy(&mm->weight, weight, (size_t)OC * IC);
    fp32_forward(out, residual != NULL, residual, x, w, bias, N, IC, OC);
}

void matmul_dnnl_fp32_forward(MatmulEngine *mm, float *out, const float *residual,
                              const float *inp, const float *weight, const float *bias, int N,
                              int IC, int OC) {
    check_precision(mm, MATMUL_DNNL_FP32, "matmul_dnnl_fp32_forward");
    dnnl_forward(engine_context(mm), out, residual, inp, weight, bias, N, IC, OC);
}

void matmul_bf16_backward(MatmulEngine *mm, float *dinp, int accumulate_dinp, float *dweight,
                          float *dbias, const float *dout, const float *inp,
                          const uint16_t *weight, int N, int IC, int OC) {
    check_precision(mm, MATMUL_BF16, "matmul_bf16_backward");
    if (dinp != NULL || dweight != NULL) {
        if (mm->onednn) {
            DnnlMatmul *context = engine_context(mm);
            const uint16_t *dout16 = bf16_copy(&mm->dout, dout, (size_t)N * OC);
            if (dinp != NULL) {
                dnnl_matmul_dinp(context, dinp, accumulate_dinp, dout16, weight, N, IC, OC);
            }
            if (dweight != NULL) {
                const uint16_t *inp16 = bf16_copy(&mm->inp, inp, (size_t)N * IC);
                dnnl_matmul_dweight(context, dweight, dout16, inp16, N, IC, OC);
            }
        } else {
            const float *g = rounded_copy(&mm->dout, dout, (size_t)N * OC);
            if (dinp != NULL) {
                const float *w = widened_copy(&mm->weight, weight, (size_t)OC * IC);
                fp32_backward(dinp, accumulate_dinp ? 1.0f : 0.0f, NULL, NULL, g, NULL, w, N, IC,
                              OC);
            }
            if (dweight != NULL) {
                const float *x = rounded_copy(&mm->inp, inp, (size_t)N * IC);
                fp32_backward(NULL, 0.0f, dweight, NULL, g, x, NULL, N, IC, OC);
            }
        }
    }
    if (dbias != NULL) { // fp32 from the fp32 gradient, as matmul.c sums it
        matmul_bias_grad(dbias, dout, N, OC);
    }
}

void matmul_dnnl_fp32_backward(MatmulEngine *mm, float *dinp, int accumulate_dinp, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, int N, int IC, int OC) {
    check_precision(mm, MATMUL_DNNL_FP32, "matmul_dnnl_fp32_backward");
    DnnlMatmul *context = engine_context(mm);
    if (dinp != NULL) {
        dnnl_matmul_dinp(context, dinp, accumulate_dinp, dout, weight, N, IC, OC);
    }
    if (dweight != NULL) {
        dnnl_matmul_dweight(context, dweight, dout, inp, N, IC, OC);
    }
    if (dbias != NULL) {
        matmul_bias_grad(dbias, dout, N, OC);
    }
}
