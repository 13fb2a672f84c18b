#include "vision_checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/checkpoint_files.h"
#include "core/checksum.h"
#include "core/utils.h"

enum { PATH_CAP = 4096, HEADER_INTS = 256 };

typedef struct {
    const Classifier *model;
    const VisionProgress *progress;
    const int *order;
    int count;
    const WeightEma *ema;
} StateWriteContext;

static void write_state(FILE *f, const char *path, const void *ctx_ptr) {
    const StateWriteContext *ctx = ctx_ptr;
    // the accessor takes a mutable model; saving only reads the moments
    ClassifierAdamW adamw = classifier_adamw((Classifier *)ctx->model);
    uint64_t n = classifier_num_parameters(ctx->model);
    int32_t h[HEADER_INTS] = {0};
    h[0] = VISION_TRAIN_STATE_MAGIC;
    h[1] = VISION_TRAIN_STATE_VERSION;
    h[2] = ctx->progress->step;
    h[3] = *adamw.step;
    h[4] = ctx->progress->epoch;
    h[5] = ctx->progress->next_batch;
    memcpy(&h[6], &ctx->progress->rng_state, sizeof(uint64_t)); // slots 6-7
    memcpy(&h[8], &n, sizeof(uint64_t));                        // slots 8-9
    h[10] = *adamw.m != NULL;
    h[11] = ctx->count;
    h[12] = ctx->ema->values != NULL;
    memcpy(&h[13], &ctx->ema->decay, sizeof(float));
    fwrite_check(h, sizeof(int32_t), HEADER_INTS, f, path);
    if (*adamw.m != NULL) {
        fwrite_check(*adamw.m, sizeof(float), (size_t)n, f, path);
        fwrite_check(*adamw.v, sizeof(float), (size_t)n, f, path);
    }
    fwrite_check(ctx->order, sizeof(int), (size_t)ctx->count, f, path);
    if (ctx->ema->values != NULL) {
        fwrite_check(ctx->ema->values, sizeof(float), (size_t)n, f, path);
    }
}

void vision_checkpoint_save(const Classifier *model, const VisionProgress *progress,
                            const int *order, int count, const WeightEma *ema, const char *dir) {
    char model_path[PATH_CAP], state_path[PATH_CAP];
    checkpoint_paths(model_path, state_path, PATH_CAP, dir, progress->step);
    classifier_save(model, model_path);
    StateWriteContext ctx = {model, progress, order, count, ema};
    write_file_atomic_checksummed(state_path, write_state, &ctx);
}

// The moments (m, v: n floats each, already read) are finite, v >= 0.
static int check_moments(const float *m, const float *v, size_t n, char *err, size_t err_bytes) {
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(m[i]) || !isfinite(v[i]) || v[i] < 0.0f) {
            return input_error(err, err_bytes,
                               "AdamW moments of parameter %zu are not valid (m %g, v %g)", i,
                               (double)m[i], (double)v[i]);
        }
    }
    return 0;
}

// The EMA's decay in (0, 1) and its n values finite.
static int check_ema(float decay, const float *values, size_t n, char *err, size_t err_bytes) {
    if (!(decay > 0.0f && decay < 1.0f)) {
        return input_error(err, err_bytes, "the EMA's decay %g is not in (0, 1)", (double)decay);
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(values[i])) {
            return input_error(err, err_bytes, "the EMA of parameter %zu is not finite (%g)", i,
                               (double)values[i]);
        }
    }
    return 0;
}

// order (count values) is a permutation of 0..count-1.
static int check_order(const int *order, int count, char *err, size_t err_bytes) {
    unsigned char *seen = calloc((size_t)count + 1, 1);
    if (seen == NULL) {
        return input_error(err, err_bytes, "out of memory checking the train order");
    }
    for (int i = 0; i < count; i++) {
        if (order[i] < 0 || order[i] >= count || seen[order[i]]) {
            free(seen);
            return input_error(err, err_bytes,
                               "the train order is not a permutation of 0..%d (entry %d is %d)",
                               count - 1, i, order[i]);
        }
        seen[order[i]] = 1;
    }
    free(seen);
    return 0;
}

int vision_state_read(Reader *r, int step, Classifier *model, int count, VisionProgress *progress,
                      int *order, WeightEma *ema, char *err, size_t err_bytes) {
    int32_t h[HEADER_INTS];
    if (reader_read(r, h, sizeof(h), "the vision state header", err, err_bytes) != 0) {
        return -1;
    }
    if (h[0] != VISION_TRAIN_STATE_MAGIC || h[1] < 1 || h[1] > VISION_TRAIN_STATE_VERSION) {
        return input_error(err, err_bytes,
                           "not a vision training state (magic %d version %d, expected %d "
                           "version 1 to %d)",
                           h[0], h[1], VISION_TRAIN_STATE_MAGIC, VISION_TRAIN_STATE_VERSION);
    }
    const int has_ema = h[1] >= 2 ? h[12] : 0; // version 1: slots 12-13 unused, no EMA
    float decay = 0.0f;
    memcpy(&decay, &h[13], sizeof(float));
    uint64_t n;
    memcpy(&n, &h[8], sizeof(uint64_t));
    size_t params = classifier_num_parameters(model);
    if (n != params || h[2] != step || h[11] != count) {
        return input_error(err, err_bytes,
                           "header does not match this run (parameters %llu vs %zu, step %d vs "
                           "%d, train images %d vs %d)",
                           (unsigned long long)n, params, h[2], step, h[11], count);
    }
    if (h[3] < 0 || h[4] < 0 || h[5] < 0 || (h[10] != 0 && h[10] != 1) ||
        (has_ema != 0 && has_ema != 1)) {
        return input_error(err, err_bytes,
                           "bad header: AdamW step %d, epoch %d, batch %d, moments flag %d, EMA "
                           "flag %d",
                           h[3], h[4], h[5], h[10], has_ema);
    }
    size_t moment_bytes = 0, order_bytes = 0, ema_bytes = 0, expected = 0;
    if ((h[10] && size_mul(2 * sizeof(float), params, &moment_bytes) != 0) ||
        size_mul(sizeof(int), (size_t)count, &order_bytes) != 0 ||
        (has_ema && size_mul(sizeof(float), params, &ema_bytes) != 0) ||
        size_add(sizeof(h) + moment_bytes, order_bytes, &expected) != 0 ||
        size_add(expected, ema_bytes, &expected) != 0) {
        return input_error(err, err_bytes, "size overflow");
    }
    if (r->size != expected) {
        return input_error(err, err_bytes, "file is %zu bytes, expected %zu%s", r->size, expected,
                           r->size < expected ? ": truncated" : ": trailing data");
    }
    if (checksum_verify(r, h, err, err_bytes) != 0) {
        return -1;
    }
    float *m = NULL, *v = NULL;
    if (h[10]) {
        m = malloc(moment_bytes / 2 + 1);
        v = malloc(moment_bytes / 2 + 1);
        if (m == NULL || v == NULL ||
            reader_read(r, m, moment_bytes / 2, "the AdamW m", err, err_bytes) != 0 ||
            reader_read(r, v, moment_bytes / 2, "the AdamW v", err, err_bytes) != 0 ||
            check_moments(m, v, params, err, err_bytes) != 0) {
            if (m == NULL || v == NULL) {
                input_error(err, err_bytes, "out of memory for the AdamW moments");
            }
            free(m);
            free(v);
            return -1;
        }
    }
    float *ema_values = NULL;
    if (reader_read(r, order, order_bytes, "the train order", err, err_bytes) != 0 ||
        check_order(order, count, err, err_bytes) != 0) {
        free(m);
        free(v);
        return -1;
    }
    if (has_ema) {
        ema_values = malloc(ema_bytes + 1);
        if (ema_values == NULL ||
            reader_read(r, ema_values, ema_bytes, "the EMA", err, err_bytes) != 0 ||
            check_ema(decay, ema_values, params, err, err_bytes) != 0) {
            if (ema_values == NULL) {
                input_error(err, err_bytes, "out of memory for the EMA");
            }
            free(ema_values);
            free(m);
            free(v);
            return -1;
        }
    }
    ClassifierAdamW adamw = classifier_adamw(model);
    free(*adamw.m);
    free(*adamw.v);
    *adamw.m = m;
    *adamw.v = v;
    *adamw.step = h[3];
    progress->step = h[2];
    progress->epoch = h[4];
    progress->next_batch = h[5];
    memcpy(&progress->rng_state, &h[6], sizeof(uint64_t));
    free(ema->values);
    *ema = (WeightEma){.values = ema_values, .decay = has_ema ? decay : 0.0f};
    return 0;
}

// Loads checkpoint step of dir; 0, or -1 with "PATH: reason" in err and the
// model freed. Never exits.
static int vision_checkpoint_try_load(Classifier *model, VisionProgress *progress, int *order,
                                      int count, WeightEma *ema, const char *dir, int step,
                                      char *err, size_t err_bytes) {
    char model_path[PATH_CAP], state_path[PATH_CAP];
    checkpoint_paths(model_path, state_path, PATH_CAP, dir, step);
    if (classifier_try_load(model, model_path, -1, err, err_bytes) != 0) {
        return -1;
    }
    char why[READER_ERR_BYTES];
    FILE *f = fopen(state_path, "rb");
    Reader r;
    int rc = -1;
    if (f == NULL) {
        input_error(why, sizeof(why), "cannot open: %s", strerror(errno));
    } else if (reader_init_file(&r, f, why, sizeof(why)) == 0) {
        rc = vision_state_read(&r, step, model, count, progress, order, ema, why, sizeof(why));
    }
    if (f != NULL) {
        fclose(f);
    }
    if (rc != 0) {
        classifier_free(model);
        return input_error(err, err_bytes, "%s: %s", state_path, why);
    }
    return 0;
}

typedef struct {
    Classifier *model;
    VisionProgress *progress;
    int *order;
    int count;
    WeightEma *ema;
} VisionLoadTarget;

static int vision_try_load(void *ctx, const char *dir, int step, char *err, size_t err_bytes) {
    VisionLoadTarget *t = ctx;
    return vision_checkpoint_try_load(t->model, t->progress, t->order, t->count, t->ema, dir,
                                      step, err, err_bytes);
}

int vision_checkpoint_resume(Classifier *model, VisionProgress *progress, int *order, int count,
                             WeightEma *ema, const char *dir) {
    VisionLoadTarget target = {model, progress, order, count, ema};
    return checkpoint_resume_with(dir, vision_try_load, &target);
}
