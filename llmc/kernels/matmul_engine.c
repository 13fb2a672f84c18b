// The bf16 and dnnl-fp32 matmul precisions (matmul.h, "MatmulEngine"): the
// engine is chosen once, when the context is made, and every call goes to it.
// bf16 through oneDNN where it has a bf16 matmul on this CPU; elsewhere the
// fallback runs the same arithmetic through matmul.c's fp32 products: the
// inputs rounded to bf16 and widened back to fp32 (exactly), fp32 products
// (exact for bf16 factors: 8 + 8 significant bits fit fp32's 24) and fp32
// accumulation, so the two engines differ only in the order of the sums.
#include "matmul.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "matmul_dnnl.h"
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

struct MatmulEngine {
    MatmulPrecision precision;
    DnnlMatmul *dnnl; // NULL: the sgemm fallback (bf16 only)
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
    char why[256] = "";
    if (precision == MATMUL_DNNL_FP32) {
        mm->dnnl = dnnl_matmul_create(0, why, sizeof(why));
        if (mm->dnnl == NULL) {
            fatal("matmul precision dnnl-fp32: %s", why);
        }
        snprintf(mm->description, sizeof(mm->description), "oneDNN fp32 (ISA %s)", dnnl_isa_name());
        return mm;
    }
    enum EngineChoice choice = engine_choice();
    if (choice != CHOICE_SGEMM) {
        mm->dnnl = dnnl_matmul_create(1, why, sizeof(why));
    }
    if (mm->dnnl != NULL) {
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
    dnnl_matmul_free(mm->dnnl);
    free(mm->inp.data);
    free(mm->dout.data);
    free(mm->weight.data);
    free(mm);
}

MatmulPrecision matmul_engine_precision(const MatmulEngine *mm) { return mm->precision; }

const char *matmul_engine_kind(const MatmulEngine *mm) {
    return mm->dnnl != NULL ? "onednn" : "sgemm";
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

// out = residual + bias (either may be NULL), the rows a oneDNN product then adds to.
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

static void dnnl_forward(MatmulEngine *mm, float *out, const float *residual, const void *inp,
                         const void *weight, const float *bias, int N, int IC, int OC) {
    const int accumulate = residual != NULL || bias != NULL;
    if (accumulate) {
        fill_rows(out, residual, bias, N, OC);
    }
    dnnl_matmul_forward(mm->dnnl, out, accumulate, inp, weight, N, IC, OC);
}

void matmul_bf16_forward(MatmulEngine *mm, float *out, const float *residual, const float *inp,
                         const uint16_t *weight, const float *bias, int N, int IC, int OC) {
    check_precision(mm, MATMUL_BF16, "matmul_bf16_forward");
    if (mm->dnnl != NULL) {
        const uint16_t *inp16 = bf16_copy(&mm->inp, inp, (size_t)N * IC);
        dnnl_forward(mm, out, residual, inp16, weight, bias, N, IC, OC);
        return;
    }
    const float *x = rounded_copy(&mm->inp, inp, (size_t)N * IC);
    const float *w = widened_copy(&mm->weight, weight, (size_t)OC * IC);
    if (residual == NULL) {
        matmul_forward(out, x, w, bias, N, IC, OC);
    } else {
        matmul_forward_residual(out, residual, x, w, bias, N, IC, OC);
    }
}

void matmul_dnnl_fp32_forward(MatmulEngine *mm, float *out, const float *residual,
                              const float *inp, const float *weight, const float *bias, int N,
                              int IC, int OC) {
    check_precision(mm, MATMUL_DNNL_FP32, "matmul_dnnl_fp32_forward");
    dnnl_forward(mm, out, residual, inp, weight, bias, N, IC, OC);
}

void matmul_bf16_backward(MatmulEngine *mm, float *dinp, int accumulate_dinp, float *dweight,
                          float *dbias, const float *dout, const float *inp,
                          const uint16_t *weight, int N, int IC, int OC) {
    check_precision(mm, MATMUL_BF16, "matmul_bf16_backward");
    if (dinp != NULL || dweight != NULL) {
        if (mm->dnnl != NULL) {
            const uint16_t *dout16 = bf16_copy(&mm->dout, dout, (size_t)N * OC);
            if (dinp != NULL) {
                dnnl_matmul_dinp(mm->dnnl, dinp, accumulate_dinp, dout16, weight, N, IC, OC);
            }
            if (dweight != NULL) {
                const uint16_t *inp16 = bf16_copy(&mm->inp, inp, (size_t)N * IC);
                dnnl_matmul_dweight(mm->dnnl, dweight, dout16, inp16, N, IC, OC);
            }
        } else {
            const float *g = rounded_copy(&mm->dout, dout, (size_t)N * OC);
            if (dinp != NULL) {
                const float *w = widened_copy(&mm->weight, weight, (size_t)OC * IC);
                if (accumulate_dinp) {
                    matmul_backward(dinp, NULL, NULL, g, NULL, w, N, IC, OC);
                } else {
                    matmul_backward_set_dinp(dinp, NULL, NULL, g, NULL, w, N, IC, OC);
                }
            }
            if (dweight != NULL) {
                const float *x = rounded_copy(&mm->inp, inp, (size_t)N * IC);
                matmul_backward(NULL, dweight, NULL, g, x, NULL, N, IC, OC);
            }
        }
    }
    if (dbias != NULL) { // fp32 from the fp32 gradient, as matmul.c sums it
        matmul_backward(NULL, NULL, dbias, dout, NULL, NULL, N, IC, OC);
    }
}

void matmul_dnnl_fp32_backward(MatmulEngine *mm, float *dinp, int accumulate_dinp, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, int N, int IC, int OC) {
    check_precision(mm, MATMUL_DNNL_FP32, "matmul_dnnl_fp32_backward");
    if (dinp != NULL) {
        dnnl_matmul_dinp(mm->dnnl, dinp, accumulate_dinp, dout, weight, N, IC, OC);
    }
    if (dweight != NULL) {
        dnnl_matmul_dweight(mm->dnnl, dweight, dout, inp, N, IC, OC);
    }
    if (dbias != NULL) {
        matmul_backward(NULL, NULL, dbias, dout, NULL, NULL, N, IC, OC);
    }
}
