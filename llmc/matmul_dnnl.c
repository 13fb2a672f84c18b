// The matmuls through oneDNN's matmul primitive (matmul.h, "oneDNN"):
// bf16 inputs with fp32 accumulation and fp32 outputs, or fp32 throughout.
// Every product is dst (M, N) [+]= src (M, K) wei (K, N) in row-major
// memory, the transposes given as oneDNN's "ba" layout:
//   forward  out (N, OC)  [+]= inp (N, IC)        W^T (IC, OC)   [W stored (OC, IC): ba]
//   dinp     dinp (N, IC) [+]= dout (N, OC)       W (OC, IC)
//   dweight  dW (OC, IC)   += dout^T (OC, N)      inp (N, IC)    [dout stored (N, OC): ba]
// "+=" is a sum post-op. A primitive is created once per product, shape,
// type and accumulation, and kept; each call only sets the data pointers.
// The primitives' scratchpads are one buffer of the context (oneDNN's own
// mode mapped and unmapped a scratchpad per call: ~10 % of a d12 bf16 step
// in the kernel's page handling).
#include "matmul.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "utils.h"

#ifdef FOLDNORM_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

void matmul_to_bf16(uint16_t *dst, const float *src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= ((size_t)1 << 16))
    for (size_t i = 0; i < n; i++) {
        dst[i] = bf16_from_float(src[i]);
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

#ifdef FOLDNORM_DNNL

int matmul_dnnl_available(void) { return 1; }

#define DNNL_CHECK(call)                                                                       \
    do {                                                                                       \
        dnnl_status_t status_ = (call);                                                        \
        if (status_ != dnnl_success) {                                                         \
            fatal("oneDNN: %s failed with status %d (%s:%d)", #call, (int)status_, __FILE__,   \
                  __LINE__);                                                                   \
        }                                                                                      \
    } while (0)

enum Product { PRODUCT_FORWARD, PRODUCT_DINP, PRODUCT_DWEIGHT };

typedef struct {
    enum Product product;
    int M, K, N, accumulate;
    dnnl_primitive_t primitive;
    dnnl_memory_t src, weights, dst, scratchpad;
    size_t scratchpad_bytes;
} CachedProduct;

struct MatmulDnnl {
    MatmulPrecision precision;
    dnnl_data_type_t input_type;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    CachedProduct *cache;
    int cached, cache_capacity;
    // bf16 copies of the activations of one call (grown as needed)
    uint16_t *inp16, *dout16;
    size_t inp16_count, dout16_count;
    void *scratchpad; // shared by the primitives, one runs at a time
    size_t scratchpad_bytes;
};

MatmulDnnl *matmul_dnnl_create(MatmulPrecision precision) {
    if (precision != MATMUL_BF16 && precision != MATMUL_DNNL_FP32) {
        fatal("matmul_dnnl_create: precision %s does not use oneDNN",
              matmul_precision_name(precision));
    }
    MatmulDnnl *mm = calloc_check(1, sizeof(*mm), "oneDNN matmul context");
    mm->precision = precision;
    mm->input_type = precision == MATMUL_BF16 ? dnnl_bf16 : dnnl_f32;
    DNNL_CHECK(dnnl_engine_create(&mm->engine, dnnl_cpu, 0));
    DNNL_CHECK(dnnl_stream_create(&mm->stream, mm->engine, dnnl_stream_default_flags));
    return mm;
}

void matmul_dnnl_free(MatmulDnnl *mm) {
    if (mm == NULL) {
        return;
    }
    for (int i = 0; i < mm->cached; i++) {
        CachedProduct *c = &mm->cache[i];
        DNNL_CHECK(dnnl_memory_destroy(c->src));
        DNNL_CHECK(dnnl_memory_destroy(c->weights));
        DNNL_CHECK(dnnl_memory_destroy(c->dst));
        DNNL_CHECK(dnnl_memory_destroy(c->scratchpad));
        DNNL_CHECK(dnnl_primitive_destroy(c->primitive));
    }
    free(mm->cache);
    free(mm->inp16);
    free(mm->dout16);
    free(mm->scratchpad);
    DNNL_CHECK(dnnl_stream_destroy(mm->stream));
    DNNL_CHECK(dnnl_engine_destroy(mm->engine));
    free(mm);
}

MatmulPrecision matmul_dnnl_precision(const MatmulDnnl *mm) { return mm->precision; }

static void create_product(MatmulDnnl *mm, CachedProduct *c) {
    const dnnl_dims_t src_dims = {c->M, c->K}, wei_dims = {c->K, c->N}, dst_dims = {c->M, c->N};
    const dnnl_format_tag_t src_tag = c->product == PRODUCT_DWEIGHT ? dnnl_ba : dnnl_ab;
    const dnnl_format_tag_t wei_tag = c->product == PRODUCT_FORWARD ? dnnl_ba : dnnl_ab;
    dnnl_memory_desc_t src_md, wei_md, dst_md;
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&src_md, 2, src_dims, mm->input_type, src_tag));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wei_md, 2, wei_dims, mm->input_type, wei_tag));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dst_md, 2, dst_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    DNNL_CHECK(dnnl_matmul_desc_init(&desc, &src_md, &wei_md, NULL, &dst_md));
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (c->accumulate) {
        dnnl_post_ops_t post_ops;
        DNNL_CHECK(dnnl_post_ops_create(&post_ops));
        DNNL_CHECK(dnnl_post_ops_append_sum(post_ops, 1.0f));
        DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, post_ops));
        DNNL_CHECK(dnnl_post_ops_destroy(post_ops));
    }
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, mm->engine, NULL));
    DNNL_CHECK(dnnl_primitive_create(&c->primitive, pd));
    const dnnl_memory_desc_t *queried = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (queried == NULL) {
        fatal("oneDNN: no scratchpad descriptor for a matmul primitive");
    }
    const dnnl_memory_desc_t scratch_md = *queried;
    c->scratchpad_bytes = dnnl_memory_desc_get_size(&scratch_md);
    DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
    DNNL_CHECK(dnnl_memory_create(&c->scratchpad, &scratch_md, mm->engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
    DNNL_CHECK(dnnl_memory_create(&c->src, &src_md, mm->engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&c->weights, &wei_md, mm->engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&c->dst, &dst_md, mm->engine, DNNL_MEMORY_NONE));
}

static CachedProduct *find_product(MatmulDnnl *mm, enum Product product, int M, int K, int N,
                                   int accumulate) {
    for (int i = 0; i < mm->cached; i++) {
        CachedProduct *c = &mm->cache[i];
        if (c->product == product && c->M == M && c->K == K && c->N == N &&
            c->accumulate == accumulate) {
            return c;
        }
    }
    if (mm->cached == mm->cache_capacity) {
        mm->cache_capacity = mm->cache_capacity == 0 ? 16 : 2 * mm->cache_capacity;
        CachedProduct *grown = realloc(mm->cache, (size_t)mm->cache_capacity * sizeof(*grown));
        if (grown == NULL) {
            fatal("out of memory for %d oneDNN matmul primitives", mm->cache_capacity);
        }
        mm->cache = grown;
    }
    CachedProduct *c = &mm->cache[mm->cached];
    *c = (CachedProduct){.product = product, .M = M, .K = K, .N = N, .accumulate = accumulate};
    create_product(mm, c);
    mm->cached++;
    return c;
}

static void run_product(MatmulDnnl *mm, enum Product product, int M, int K, int N, int accumulate,
                        const void *src, const void *weights, float *dst) {
    if (M == 0 || N == 0) {
        return;
    }
    if (K == 0) { // an empty sum: oneDNN would not touch dst
        if (!accumulate) {
            memset(dst, 0, (size_t)M * N * sizeof(float));
        }
        return;
    }
    CachedProduct *c = find_product(mm, product, M, K, N, accumulate);
    DNNL_CHECK(dnnl_memory_set_data_handle(c->src, (void *)src));
    DNNL_CHECK(dnnl_memory_set_data_handle(c->weights, (void *)weights));
    DNNL_CHECK(dnnl_memory_set_data_handle(c->dst, dst));
    if (c->scratchpad_bytes > mm->scratchpad_bytes) {
        free(mm->scratchpad);
        const size_t bytes = (c->scratchpad_bytes + 63) / 64 * 64; // aligned_alloc's rule
        mm->scratchpad = aligned_alloc(64, bytes);
        if (mm->scratchpad == NULL) {
            fatal("out of memory for a oneDNN scratchpad of %zu bytes", bytes);
        }
        mm->scratchpad_bytes = c->scratchpad_bytes;
    }
    DNNL_CHECK(dnnl_memory_set_data_handle(c->scratchpad, mm->scratchpad));
    const dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, c->src},
                                     {DNNL_ARG_WEIGHTS, c->weights},
                                     {DNNL_ARG_DST, c->dst},
                                     {DNNL_ARG_SCRATCHPAD, c->scratchpad}};
    DNNL_CHECK(dnnl_primitive_execute(c->primitive, mm->stream, c->scratchpad_bytes > 0 ? 4 : 3,
                                      args));
    DNNL_CHECK(dnnl_stream_wait(mm->stream));
}

// The bf16 copy of n activations in one of the context's buffers.
static const uint16_t *to_bf16_scratch(uint16_t **buffer, size_t *count, const float *x,
                                       size_t n) {
    if (*count < n) {
        free(*buffer);
        *buffer = malloc_check(n * sizeof(uint16_t), "bf16 activations");
        *count = n;
    }
    matmul_to_bf16(*buffer, x, n);
    return *buffer;
}

// out = residual + bias (either may be NULL), the rows a product then adds to.
static void fill_rows(float *out, const float *residual, const float *bias, int N, int OC) {
#pragma omp parallel for schedule(static) if ((long)N * OC >= 1 << 15)
    for (int n = 0; n < N; n++) {
        float *row = out + (size_t)n * OC;
        const float *res = residual == NULL ? NULL : residual + (size_t)n * OC;
        for (int o = 0; o < OC; o++) {
            row[o] = (res != NULL ? res[o] : 0.0f) + (bias != NULL ? bias[o] : 0.0f);
        }
    }
}

static void check_bf16(const MatmulDnnl *mm, const char *fn) {
    if (mm->precision != MATMUL_BF16) {
        fatal("%s: the context's precision is %s, not bf16", fn,
              matmul_precision_name(mm->precision));
    }
}

static void check_fp32(const MatmulDnnl *mm, const char *fn) {
    if (mm->precision != MATMUL_DNNL_FP32) {
        fatal("%s: the context's precision is %s, not dnnl-fp32", fn,
              matmul_precision_name(mm->precision));
    }
}

static void forward(MatmulDnnl *mm, float *out, const float *residual, const void *inp,
                    const void *weight, const float *bias, int N, int IC, int OC) {
    const int accumulate = residual != NULL || bias != NULL;
    if (accumulate) {
        fill_rows(out, residual, bias, N, OC);
    }
    run_product(mm, PRODUCT_FORWARD, N, IC, OC, accumulate, inp, weight, out);
}

void matmul_bf16_forward(MatmulDnnl *mm, float *out, const float *residual, const float *inp,
                         const uint16_t *weight, const float *bias, int N, int IC, int OC) {
    check_bf16(mm, "matmul_bf16_forward");
    const uint16_t *inp16 = to_bf16_scratch(&mm->inp16, &mm->inp16_count, inp, (size_t)N * IC);
    forward(mm, out, residual, inp16, weight, bias, N, IC, OC);
}

void matmul_dnnl_fp32_forward(MatmulDnnl *mm, float *out, const float *residual,
                              const float *inp, const float *weight, const float *bias, int N,
                              int IC, int OC) {
    check_fp32(mm, "matmul_dnnl_fp32_forward");
    forward(mm, out, residual, inp, weight, bias, N, IC, OC);
}

void matmul_bf16_backward(MatmulDnnl *mm, float *dinp, int accumulate_dinp, float *dweight,
                          float *dbias, const float *dout, const float *inp,
                          const uint16_t *weight, int N, int IC, int OC) {
    check_bf16(mm, "matmul_bf16_backward");
    if (dinp != NULL || dweight != NULL) {
        const uint16_t *dout16 =
            to_bf16_scratch(&mm->dout16, &mm->dout16_count, dout, (size_t)N * OC);
        if (dinp != NULL) {
            run_product(mm, PRODUCT_DINP, N, OC, IC, accumulate_dinp, dout16, weight, dinp);
        }
        if (dweight != NULL) {
            const uint16_t *inp16 =
                to_bf16_scratch(&mm->inp16, &mm->inp16_count, inp, (size_t)N * IC);
            run_product(mm, PRODUCT_DWEIGHT, OC, N, IC, 1, dout16, inp16, dweight);
        }
    }
    if (dbias != NULL) { // fp32 from the fp32 gradient, as matmul.c sums it
        matmul_backward(NULL, NULL, dbias, dout, NULL, NULL, N, IC, OC);
    }
}

void matmul_dnnl_fp32_backward(MatmulDnnl *mm, float *dinp, int accumulate_dinp, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, int N, int IC, int OC) {
    check_fp32(mm, "matmul_dnnl_fp32_backward");
    if (dinp != NULL) {
        run_product(mm, PRODUCT_DINP, N, OC, IC, accumulate_dinp, dout, weight, dinp);
    }
    if (dweight != NULL) {
        run_product(mm, PRODUCT_DWEIGHT, OC, N, IC, 1, dout, inp, dweight);
    }
    if (dbias != NULL) {
        matmul_backward(NULL, NULL, dbias, dout, NULL, NULL, N, IC, OC);
    }
}

#else // built without oneDNN: the mode is refused when a context is created

int matmul_dnnl_available(void) { return 0; }

MatmulDnnl *matmul_dnnl_create(MatmulPrecision precision) {
    fatal("matmul precision %s needs oneDNN, and this build has none: install libdnnl-dev "
          "(make deps) and rebuild without NO_DNNL=1",
          matmul_precision_name(precision));
}

void matmul_dnnl_free(MatmulDnnl *mm) { (void)mm; }

MatmulPrecision matmul_dnnl_precision(const MatmulDnnl *mm) {
    (void)mm;
    return MATMUL_FP32;
}

static void no_dnnl(const char *fn) { fatal("%s: this build has no oneDNN", fn); }

void matmul_bf16_forward(MatmulDnnl *mm, float *out, const float *residual, const float *inp,
                         const uint16_t *weight, const float *bias, int N, int IC, int OC) {
    (void)mm, (void)out, (void)residual, (void)inp, (void)weight, (void)bias, (void)N, (void)IC,
        (void)OC;
    no_dnnl("matmul_bf16_forward");
}

void matmul_dnnl_fp32_forward(MatmulDnnl *mm, float *out, const float *residual,
                              const float *inp, const float *weight, const float *bias, int N,
                              int IC, int OC) {
    (void)mm, (void)out, (void)residual, (void)inp, (void)weight, (void)bias, (void)N, (void)IC,
        (void)OC;
    no_dnnl("matmul_dnnl_fp32_forward");
}

void matmul_bf16_backward(MatmulDnnl *mm, float *dinp, int accumulate_dinp, float *dweight,
                          float *dbias, const float *dout, const float *inp,
                          const uint16_t *weight, int N, int IC, int OC) {
    (void)mm, (void)dinp, (void)accumulate_dinp, (void)dweight, (void)dbias, (void)dout,
        (void)inp, (void)weight, (void)N, (void)IC, (void)OC;
    no_dnnl("matmul_bf16_backward");
}

void matmul_dnnl_fp32_backward(MatmulDnnl *mm, float *dinp, int accumulate_dinp, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, int N, int IC, int OC) {
    (void)mm, (void)dinp, (void)accumulate_dinp, (void)dweight, (void)dbias, (void)dout,
        (void)inp, (void)weight, (void)N, (void)IC, (void)OC;
    no_dnnl("matmul_dnnl_fp32_backward");
}

#endif
