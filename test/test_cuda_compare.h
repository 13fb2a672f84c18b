// What the GPU model tests (test/test_gpt2.cu, test/test_vit.cu,
// test/test_swin.cu) share to compare against a reference and report: the
// per-tensor relative error, the lookup in a test's bf16 tolerance table, the
// "name  error  (tol)  ok/FAIL" line, the loss gaps, a mode run's buffers and
// the loading of a vision debug state.
// Each test keeps its own checks, tolerances and names.
#ifndef FOLDNORM_TEST_CUDA_COMPARE_H
#define FOLDNORM_TEST_CUDA_COMPARE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/attention_kind.cuh"

extern "C" {
#include "interop/debug_state.h"
#include "core/reader.h"
#include "core/utils.h"
}

// max|a - b| / max|b| over rows of len values (row strides stride_a,
// stride_b); max|a - b| where b is all zero; NaN propagates
static inline double relative_error_rows(const float *a, const float *b, size_t rows, size_t len,
                                         size_t stride_a, size_t stride_b) {
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < len; i++) {
            double d = fabs((double)a[r * stride_a + i] - (double)b[r * stride_b + i]);
            double m = fabs((double)b[r * stride_b + i]);
            if (!(d <= max_diff)) max_diff = d;
            max_ref = m > max_ref ? m : max_ref;
        }
    }
    return max_ref == 0.0 ? max_diff : max_diff / max_ref;
}

// the same over n contiguous values
static inline double relative_error(const float *a, const float *b, size_t n) {
    return relative_error_rows(a, b, 1, n, n, n);
}

// the largest |a[k] - b[k]| over n losses (NaN propagates)
static inline double worst_loss_gap(const float *a, const float *b, int n) {
    double worst = 0.0;
    for (int k = 0; k < n; k++) {
        double d = fabs((double)a[k] - (double)b[k]);
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

// one row of a test's bf16 tolerance table
typedef struct {
    const char *name;
    double tol;
} Bf16Tolerance;

// the tolerance named what in table (count rows); dies naming program when it has none
static inline double bf16_tolerance_find(const Bf16Tolerance *table, size_t count,
                                         const char *what, const char *program) {
    for (size_t i = 0; i < count; i++) {
        if (strcmp(what, table[i].name) == 0) return table[i].tol;
    }
    fatal("%s: no bf16 tolerance for '%s'", program, what);
}

// prints "  what  err  (tol t)  ok|FAIL" (what padded to width); 1 when err is finite and <= tol
static inline int report_check(const char *what, double err, double tol, int width) {
    int ok = isfinite(err) && err <= tol;
    printf("  %-*s %.3e  (tol %.1e)  %s\n", width, what, err, tol, ok ? "ok" : "FAIL");
    return ok;
}

// host copies of a GPU run in one mode: first-step logits and gradients, the step losses
typedef struct {
    float *logits, *grads, *losses;
} ModeRun;

static inline void mode_run_free(ModeRun *r) {
    free(r->logits);
    free(r->grads);
    free(r->losses);
}

// The vision debug state at path for a model of this family and shape; dies naming the file.
static inline void vision_state_load(VisionDebugState *s, const char *path, int family,
                                     int image_size, int image_channels, int num_classes,
                                     size_t num_parameters) {
    FILE *f = fopen_check(path, "rb");
    Reader r;
    char err[READER_ERR_BYTES];
    if (reader_init_file(&r, f, err, sizeof(err)) != 0 ||
        vision_debug_state_parse(s, &r, family, image_size, image_channels, num_classes,
                                 num_parameters, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    fclose(f);
}

// -at NAME: the attention kernels a test's GPU model runs (windowed: Swin's);
// dies when the name is unknown or the kind does not run in this build or family
static inline AttentionKind attention_kind_from_flag(const char *name, bool windowed) {
    AttentionKind k;
    if (attention_kind_parse(name, &k) != 0) {
        fatal("-at: unknown attention '%s' (tc, cublas, flash, window, cudnn)", name);
    }
    const char *refusal = attention_kind_refusal(k, windowed);
    if (refusal != NULL) fatal("-at %s: %s", name, refusal);
    return k;
}

#endif
