// oneDNN's matmul primitive (matmul_dnnl.h). The transposes are oneDNN's
// "ba" layout:
//   forward  out (N, OC)  [+]= inp (N, IC)        W^T (IC, OC)   [W stored (OC, IC): ba]
//   dinp     dinp (N, IC) [+]= dout (N, OC)       W (OC, IC)
//   dweight  dW (OC, IC)   += dout^T (OC, N)      inp (N, IC)    [dout stored (N, OC): ba]
// A primitive is created once per product, shape and accumulation, and kept;
// each call only sets the data pointers. The primitives' scratchpads are one
// buffer of the context (oneDNN's own mode mapped and unmapped a scratchpad
// per call: ~10 % of a d12 bf16 step in the kernel's page handling).
#include "matmul_dnnl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

#ifdef FOLDNORM_DNNL
#include <oneapi/dnnl/dnnl.h>

#define DNNL_CHECK(call)                                                                       \
    do {                                                                                       \
        dnnl_status_t status_ = (call);                                                        \
        if (status_ != dnnl_success) {                                                         \
            fatal("oneDNN: %s failed with status %d (%s:%d)", #call, (int)status_, __FILE__,   \
                  __LINE__);                                                                   \
        }                                                                                      \
    } while (0)

const char *dnnl_isa_name(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_all: return "all";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
    }
}

enum Product { PRODUCT_FORWARD, PRODUCT_DINP, PRODUCT_DWEIGHT };

typedef struct {
    enum Product product;
    int M, K, N, accumulate;
    dnnl_primitive_t primitive;
    dnnl_memory_t src, weights, dst, scratchpad;
    size_t scratchpad_bytes;
} CachedProduct;

struct DnnlMatmul {
    dnnl_data_type_t input_type;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    CachedProduct *cache;
    int cached, cache_capacity;
    void *scratchpad; // shared by the primitives, one runs at a time
    size_t scratchpad_bytes;
};

// The product's memory descriptors and its primitive descriptor; returns
// oneDNN's status (dnnl_unimplemented where this CPU has no such kernel).
static dnnl_status_t describe_product(const DnnlMatmul *mm, enum Product product, int M, int K,
                                      int N, int accumulate, dnnl_memory_desc_t *src_md,
                                      dnnl_memory_desc_t *wei_md, dnnl_memory_desc_t *dst_md,
                                      dnnl_primitive_desc_t *pd) {
    const dnnl_dims_t src_dims = {M, K}, wei_dims = {K, N}, dst_dims = {M, N};
    const dnnl_format_tag_t src_tag = product == PRODUCT_DWEIGHT ? dnnl_ba : dnnl_ab;
    const dnnl_format_tag_t wei_tag = product == PRODUCT_FORWARD ? dnnl_ba : dnnl_ab;
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(src_md, 2, src_dims, mm->input_type, src_tag));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(wei_md, 2, wei_dims, mm->input_type, wei_tag));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(dst_md, 2, dst_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    DNNL_CHECK(dnnl_matmul_desc_init(&desc, src_md, wei_md, NULL, dst_md));
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (accumulate) {
        dnnl_post_ops_t post_ops;
        DNNL_CHECK(dnnl_post_ops_create(&post_ops));
        DNNL_CHECK(dnnl_post_ops_append_sum(post_ops, 1.0f));
        DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, post_ops));
        DNNL_CHECK(dnnl_post_ops_destroy(post_ops));
    }
    dnnl_status_t status = dnnl_primitive_desc_create(pd, &desc, attr, mm->engine, NULL);
    DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
    return status;
}

static void create_product(DnnlMatmul *mm, CachedProduct *c) {
    dnnl_memory_desc_t src_md, wei_md, dst_md;
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(describe_product(mm, c->product, c->M, c->K, c->N, c->accumulate, &src_md, &wei_md,
                                &dst_md, &pd));
    DNNL_CHECK(dnnl_primitive_create(&c->primitive, pd));
    const dnnl_memory_desc_t *queried = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (queried == NULL) {
        fatal("oneDNN: no scratchpad descriptor for a matmul primitive");
    }
    const dnnl_memory_desc_t scratch_md = *queried;
    c->scratchpad_bytes = dnnl_memory_desc_get_size(&scratch_md);
    DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
    DNNL_CHECK(dnnl_memory_create(&c->scratchpad, &scratch_md, mm->engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&c->src, &src_md, mm->engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&c->weights, &wei_md, mm->engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&c->dst, &dst_md, mm->engine, DNNL_MEMORY_NONE));
}

// 1 when oneDNN implements all three products (plain and accumulating) of the
// context's type on this CPU; probed on a small shape once, at creation.
static int products_implemented(const DnnlMatmul *mm) {
    for (int product = PRODUCT_FORWARD; product <= PRODUCT_DWEIGHT; product++) {
        for (int accumulate = 0; accumulate <= 1; accumulate++) {
            dnnl_memory_desc_t src_md, wei_md, dst_md;
            dnnl_primitive_desc_t pd;
            dnnl_status_t status =
                describe_product(mm, product, 16, 16, 16, accumulate, &src_md, &wei_md, &dst_md, &pd);
            if (status == dnnl_unimplemented) {
                return 0;
            }
            DNNL_CHECK(status);
            DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
        }
    }
    return 1;
}

DnnlMatmul *dnnl_matmul_create(int bf16, char *why, size_t why_size) {
    DnnlMatmul *mm = calloc_check(1, sizeof(*mm), "oneDNN matmul context");
    mm->input_type = bf16 ? dnnl_bf16 : dnnl_f32;
    DNNL_CHECK(dnnl_engine_create(&mm->engine, dnnl_cpu, 0));
    DNNL_CHECK(dnnl_stream_create(&mm->stream, mm->engine, dnnl_stream_default_flags));
    if (!products_implemented(mm)) {
        const dnnl_version_t *v = dnnl_version();
        snprintf(why, why_size,
                 "oneDNN %d.%d has no %s matmul on this CPU (its ISA: %s%s)", v->major,
                 v->minor, bf16 ? "bf16" : "fp32", dnnl_isa_name(),
                 bf16 ? "; it needs AVX-512, avx512_core, which this CPU lacks" : "");
        dnnl_matmul_free(mm);
        return NULL;
    }
    return mm;
}

void dnnl_matmul_free(DnnlMatmul *mm) {
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
    free(mm->scratchpad);
    DNNL_CHECK(dnnl_stream_destroy(mm->stream));
    DNNL_CHECK(dnnl_engine_destroy(mm->engine));
    free(mm);
}

static CachedProduct *find_product(DnnlMatmul *mm, enum Product product, int M, int K, int N,
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

static void run_product(DnnlMatmul *mm, enum Product product, int M, int K, int N, int accumulate,
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

void dnnl_matmul_forward(DnnlMatmul *mm, float *out, int accumulate, const void *inp,
                         const void *weight, int N, int IC, int OC) {
    run_product(mm, PRODUCT_FORWARD, N, IC, OC, accumulate, inp, weight, out);
}

void dnnl_matmul_dinp(DnnlMatmul *mm, float *dinp, int accumulate, const void *dout,
                      const void *weight, int N, int IC, int OC) {
    run_product(mm, PRODUCT_DINP, N, OC, IC, accumulate, dout, weight, dinp);
}

void dnnl_matmul_dweight(DnnlMatmul *mm, float *dweight, const void *dout, const void *inp, int N,
                         int IC, int OC) {
    run_product(mm, PRODUCT_DWEIGHT, OC, N, IC, 1, dout, inp, dweight);
}

#else // built without oneDNN: no context can be made (matmul_engine.c falls back or refuses)

const char *dnnl_isa_name(void) { return "none"; }

DnnlMatmul *dnnl_matmul_create(int bf16, char *why, size_t why_size) {
    snprintf(why, why_size, "this build has no oneDNN (libdnnl-dev, make deps; NO_DNNL=1 leaves "
             "it out) for a %s matmul", bf16 ? "bf16" : "fp32");
    return NULL;
}

void dnnl_matmul_free(DnnlMatmul *mm) { (void)mm; }

static void no_dnnl(const char *fn) { fatal("%s: this build has no oneDNN (a bug: no context)", fn); }

void dnnl_matmul_forward(DnnlMatmul *mm, float *out, int accumulate, const void *inp,
                         const void *weight, int N, int IC, int OC) {
    (void)mm, (void)out, (void)accumulate, (void)inp, (void)weight, (void)N, (void)IC, (void)OC;
    no_dnnl("dnnl_matmul_forward");
}

void dnnl_matmul_dinp(DnnlMatmul *mm, float *dinp, int accumulate, const void *dout,
                      const void *weight, int N, int IC, int OC) {
    (void)mm, (void)dinp, (void)accumulate, (void)dout, (void)weight, (void)N, (void)IC, (void)OC;
    no_dnnl("dnnl_matmul_dinp");
}

void dnnl_matmul_dweight(DnnlMatmul *mm, float *dweight, const void *dout, const void *inp, int N,
                         int IC, int OC) {
    (void)mm, (void)dweight, (void)dout, (void)inp, (void)N, (void)IC, (void)OC;
    no_dnnl("dnnl_matmul_dweight");
}

#endif
