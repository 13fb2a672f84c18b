// What the GPU model tests (test/test_gpt2.cu, test/test_vit.cu,
// test/test_swin.cu) share to compare against a reference and report: the
// per-tensor relative error, the lookup in a test's bf16 tolerance table, the
// "name  error  (tol)  ok/FAIL" line, the per-tensor gradient check, the loss
// gaps, a mode run's buffers, the loading of a vision debug state and the
// flags' parsing.
// Each test keeps its own checks, tolerance table and tensor names.
#ifndef FOLDNORM_TEST_CUDA_COMPARE_H
#define FOLDNORM_TEST_CUDA_COMPARE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/attention_kind.cuh"
#include "test_helpers.h" // worst_of, strided_relative_error, relative_error

extern "C" {
#include "interop/debug_state.h"
#include "core/reader.h"
#include "core/utils.h"
}

// the largest |a[k] - b[k]| over n losses (NaN propagates: worst_of)
static inline double worst_loss_gap(const float *a, const float *b, int n) {
    return worst_abs_diff(a, b, n < 0 ? 0 : (size_t)n);
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

// How a test checks and reports: its bf16 tolerance table (read while
// bf16_table is on: the bf16 build, until -r or -l sets one tolerance for
// all), its program name (for a check the table lacks), the width of the
// printed name column, and whether a gradient is looked up by its kind
// (Swin: "grad s0.b1.rpb" by "rpb") instead of its whole name ("grad wte").
typedef struct {
    const Bf16Tolerance *table;
    size_t count;
    const char *program;
    int width;
    bool gradient_kind;
    bool bf16_table;
} CheckTable;

// the bf16 tolerance of a check ("cbwc X" as X), or tol
static inline double check_tolerance(const CheckTable *c, const char *what, double tol) {
    if (!c->bf16_table) return tol;
    if (strncmp(what, "cbwc ", 5) == 0) what += 5;
    if (c->gradient_kind && strncmp(what, "grad ", 5) == 0) {
        what += 5;
        const char *dot = strrchr(what, '.');
        if (dot != NULL) what = dot + 1;
    }
    return bf16_tolerance_find(c->table, c->count, what, c->program);
}

// reports one check (report_check) at its tolerance; 1 when it passes
static inline int check(const CheckTable *c, const char *what, double err, double tol) {
    return report_check(what, err, check_tolerance(c, what, tol), c->width);
}

// A model's parameter tensors as the gradient check walks them: count
// tensors of these sizes back to back, tensor i named name(model, i).
typedef struct {
    int count;
    const size_t *sizes;
    const char *(*name)(const void *model, int i);
    const void *model;
} ParamTensors;

// per-tensor gradient errors of ours vs ref (host copies), each checked as
// prefix + the tensor's name
static inline int check_grads(const CheckTable *c, ParamTensors tensors, const float *ours,
                              const float *ref, double tol, const char *prefix) {
    int ok = 1;
    size_t offset = 0;
    for (int i = 0; i < tensors.count; i++) {
        const size_t n = tensors.sizes[i];
        char name[96];
        snprintf(name, sizeof(name), "%s%s", prefix, tensors.name(tensors.model, i));
        ok &= check(c, name, relative_error(ours + offset, ref + offset, n), tol);
        offset += n;
    }
    return ok;
}

// host copies of a GPU run in one mode: first-step logits and gradients, the
// step losses, and (where a test keeps them, else NULL) the last step's gradients
typedef struct {
    float *logits, *grads, *losses, *last_grads;
} ModeRun;

static inline void mode_run_free(ModeRun *r) {
    free(r->logits);
    free(r->grads);
    free(r->losses);
    free(r->last_grads);
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

// a flag's non-negative integer up to max; dies naming the flag
static inline long parse_count(const char *flag, const char *v, long max) {
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < 0 || n > max) {
        fatal("%s: expected an integer in [0, %ld], got '%s'", flag, max, v);
    }
    return n;
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
