#include "checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/checkpoint_files.h"
#include "core/checksum.h"
#include "core/reader.h"
#include "core/utils.h"

enum { PATH_CAP = 4096 };

typedef struct {
    const GPT2 *model;
    const TrainProgress *progress;
} StateWriteContext;

static void write_state(FILE *f, const char *path, const void *ctx_ptr) {
    const StateWriteContext *ctx = ctx_ptr;
    const GPT2 *m = ctx->model;
    int32_t h[256] = {0};
    h[0] = TRAIN_STATE_MAGIC;
    h[1] = TRAIN_STATE_VERSION;
    h[2] = ctx->progress->step;
    h[3] = m->adamw_step;
    h[4] = ctx->progress->shard_index;
    memcpy(&h[5], &ctx->progress->position, sizeof(uint64_t));   // slots 5-6
    memcpy(&h[7], &ctx->progress->rng_state, sizeof(uint64_t));  // slots 7-8
    uint64_t n = m->num_parameters;
    memcpy(&h[9], &n, sizeof(uint64_t));                        // slots 9-10
    h[11] = m->m_memory != NULL;
    h[12] = ctx->progress->epoch;
    h[13] = ctx->progress->batch_samples;
    const StepOutliers *outliers = &ctx->progress->outliers;
    h[14] = outliers->loss.count;
    h[15] = outliers->loss.next;
    h[16] = outliers->skipped;
    fwrite_check(h, sizeof(int32_t), 256, f, path);
    if (m->m_memory != NULL) {
        fwrite_check(m->m_memory, sizeof(float), m->num_parameters, f, path);
        fwrite_check(m->v_memory, sizeof(float), m->num_parameters, f, path);
    }
    fwrite_check(outliers->loss.values, sizeof(double), (size_t)outliers->loss.count, f, path);
    fwrite_check(outliers->grad_norm.values, sizeof(double), (size_t)outliers->grad_norm.count, f,
                 path);
}

// the outlier windows after the moments: slot 14 values each, finite
static int read_outliers(Reader *r, const int32_t *h, StepOutliers *out, char *err,
                         size_t err_bytes) {
    memset(out, 0, sizeof(*out));
    OutlierWindow *windows[2] = {&out->loss, &out->grad_norm};
    const char *names[2] = {"loss", "gradient norm"};
    for (int w = 0; w < 2; w++) {
        windows[w]->count = h[14];
        windows[w]->next = h[15];
        if (reader_read(r, windows[w]->values, (size_t)h[14] * sizeof(double),
                        "the outlier windows", err, err_bytes) != 0) {
            return -1;
        }
        for (int i = 0; i < h[14]; i++) {
            if (!isfinite(windows[w]->values[i])) {
                return input_error(err, err_bytes, "outlier window value %d of the %s is %g", i,
                                   names[w], windows[w]->values[i]);
            }
        }
    }
    out->skipped = h[16];
    return 0;
}

void checkpoint_save(const GPT2 *model, const TrainProgress *progress, const char *dir) {
    char model_path[PATH_CAP], state_path[PATH_CAP];
    checkpoint_paths(model_path, state_path, PATH_CAP, dir, progress->step);
    gpt2_save(model, model_path);
    StateWriteContext ctx = {model, progress};
    write_file_atomic_checksummed(state_path, write_state, &ctx);
}


static int train_state_read_body(Reader *r, int step, GPT2 *model, TrainProgress *progress,
                                 char *err, size_t err_bytes) {
    int32_t h[256];
    if (reader_read(r, h, sizeof(h), "the training state header", err, err_bytes) != 0) {
        return -1;
    }
    if (h[0] != TRAIN_STATE_MAGIC || h[1] != TRAIN_STATE_VERSION) {
        return input_error(err, err_bytes,
                           "not a training state file (magic %d version %d, expected %d version "
                           "%d)",
                           h[0], h[1], TRAIN_STATE_MAGIC, TRAIN_STATE_VERSION);
    }
    uint64_t n;
    memcpy(&n, &h[9], sizeof(uint64_t));
    int has_moments = h[11];
    if (n != model->num_parameters || h[2] != step) {
        return input_error(err, err_bytes,
                           "header does not match the model file (parameters %llu vs %zu, step "
                           "%d vs %d)",
                           (unsigned long long)n, model->num_parameters, h[2], step);
    }
    if (h[3] < 0 || h[4] < 0 || h[12] < 0 || h[13] < 0 ||
        (has_moments != 0 && has_moments != 1)) {
        return input_error(err, err_bytes,
                           "bad header: AdamW step %d, shard %d, epoch %d, batch samples %d, "
                           "moments flag %d",
                           h[3], h[4], h[12], h[13], has_moments);
    }
    // a window fills before it wraps: next is 0 until it holds OUTLIER_WINDOW values
    if (h[14] < 0 || h[14] > OUTLIER_WINDOW || h[15] < 0 || h[15] >= OUTLIER_WINDOW ||
        (h[14] < OUTLIER_WINDOW && h[15] != 0) || h[16] < 0 || h[16] > h[2]) {
        return input_error(err, err_bytes,
                           "bad header: outlier window of %d values (at most %d), next %d, "
                           "%d updates skipped in %d steps",
                           h[14], OUTLIER_WINDOW, h[15], h[16], h[2]);
    }
    const size_t window_bytes = 2 * sizeof(double) * (size_t)h[14];
    size_t moment_bytes = 0;
    if (has_moments && size_mul(2 * sizeof(float), model->num_parameters, &moment_bytes) != 0) {
        return input_error(err, err_bytes, "size overflow");
    }
    size_t expected = 1024 + moment_bytes + window_bytes;
    if (r->size != expected) {
        return input_error(err, err_bytes, "file is %zu bytes, expected %zu%s", r->size, expected,
                           r->size < expected ? ": truncated" : ": trailing data");
    }
    if (checksum_verify(r, h, err, err_bytes) != 0) {
        return -1;
    }
    progress->step = h[2];
    progress->shard_index = h[4];
    memcpy(&progress->position, &h[5], sizeof(uint64_t));
    memcpy(&progress->rng_state, &h[7], sizeof(uint64_t));
    progress->epoch = h[12];
    progress->batch_samples = h[13];
    model->adamw_step = h[3];
    if (has_moments) {
        size_t bytes = moment_bytes / 2;
        model->m_memory = malloc(bytes == 0 ? 1 : bytes);
        model->v_memory = malloc(bytes == 0 ? 1 : bytes);
        if (model->m_memory == NULL || model->v_memory == NULL) {
            return input_error(err, err_bytes, "out of memory for the AdamW moments");
        }
        if (reader_read(r, model->m_memory, bytes, "the AdamW m", err, err_bytes) != 0 ||
            reader_read(r, model->v_memory, bytes, "the AdamW v", err, err_bytes) != 0) {
            return -1;
        }
        for (size_t i = 0; i < model->num_parameters; i++) {
            // v is a mean of squares: finite and >= 0, or the next update is NaN
            if (!isfinite(model->m_memory[i]) || !isfinite(model->v_memory[i]) ||
                model->v_memory[i] < 0.0f) {
                return input_error(err, err_bytes,
                                   "AdamW moments of parameter %zu are not valid (m %g, v %g)", i,
                                   (double)model->m_memory[i], (double)model->v_memory[i]);
            }
        }
    }
    return read_outliers(r, h, &progress->outliers, err, err_bytes);
}

int train_state_read(Reader *r, int step, GPT2 *model, TrainProgress *progress, char *err,
                     size_t err_bytes) {
    if (train_state_read_body(r, step, model, progress, err, err_bytes) != 0) {
        free(model->m_memory);
        free(model->v_memory);
        model->m_memory = model->v_memory = NULL;
        model->adamw_step = 0;
        return -1;
    }
    return 0;
}

// Loads checkpoint step of dir into model and progress; 0, or -1 with the
// failing file and the reason in err (model left empty). Never exits.
static int checkpoint_try_load(GPT2 *model, TrainProgress *progress, const char *dir, int step,
                               char *err, size_t err_bytes) {
    char model_path[PATH_CAP], state_path[PATH_CAP];
    checkpoint_paths(model_path, state_path, PATH_CAP, dir, step);
    char why[READER_ERR_BYTES];
    const char *paths[2] = {model_path, state_path};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "rb");
        Reader r;
        int rc = -1;
        if (f == NULL) {
            input_error(why, sizeof(why), "cannot open: %s", strerror(errno));
        } else if (reader_init_file(&r, f, why, sizeof(why)) == 0) {
            rc = i == 0 ? gpt2_read(model, &r, why, sizeof(why))
                        : train_state_read(&r, step, model, progress, why, sizeof(why));
        }
        if (f != NULL) {
            fclose(f);
        }
        if (rc != 0) {
            if (i == 1) {
                gpt2_free(model);
            }
            return input_error(err, err_bytes, "%s: %s", paths[i], why);
        }
    }
    return 0;
}

void checkpoint_load(GPT2 *model, TrainProgress *progress, const char *dir, int step) {
    char err[PATH_CAP + READER_ERR_BYTES];
    if (checkpoint_try_load(model, progress, dir, step, err, sizeof(err)) != 0) {
        fatal("%s", err);
    }
}

typedef struct {
    GPT2 *model;
    TrainProgress *progress;
} Gpt2LoadTarget;

static int gpt2_try_load(void *ctx, const char *dir, int step, char *err, size_t err_bytes) {
    Gpt2LoadTarget *t = ctx;
    return checkpoint_try_load(t->model, t->progress, dir, step, err, err_bytes);
}

int checkpoint_resume(GPT2 *model, TrainProgress *progress, const char *dir) {
    Gpt2LoadTarget target = {model, progress};
    return checkpoint_resume_with(dir, gpt2_try_load, &target);
}

uint64_t train_progress_cursor(const TrainProgress *progress, int batch_samples) {
    const uint64_t saved = (uint64_t)progress->batch_samples;
    if (saved == 0 || saved == (uint64_t)batch_samples) {
        return progress->position; // the same layout (or an older file: assumed the same)
    }
    const uint64_t samples = progress->position * saved; // into the shard's sample order
    if (samples % (uint64_t)batch_samples != 0) {
        fatal("cannot resume: the checkpoint of step %d was saved %llu samples into its shard by "
              "a run of ranks x B = %llu, which is not a whole number of batches of this run's "
              "ranks x B = %d",
              progress->step, (unsigned long long)samples, (unsigned long long)saved,
              batch_samples);
    }
    return samples / (uint64_t)batch_samples;
}
