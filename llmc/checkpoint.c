#include "checkpoint.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utils.h"

enum { PATH_CAP = 4096 };

void checkpoint_paths(char *model_path, char *state_path, size_t cap, const char *dir, int step) {
    int a = snprintf(model_path, cap, "%s/model_%08d.bin", dir, step);
    int b = snprintf(state_path, cap, "%s/state_%08d.bin", dir, step);
    if (a < 0 || b < 0 || (size_t)a >= cap || (size_t)b >= cap) {
        fatal("-o: output directory path too long: %s", dir);
    }
}

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
    fwrite_check(h, sizeof(int32_t), 256, f, path);
    if (m->m_memory != NULL) {
        fwrite_check(m->m_memory, sizeof(float), m->num_parameters, f, path);
        fwrite_check(m->v_memory, sizeof(float), m->num_parameters, f, path);
    }
}

void checkpoint_save(const GPT2 *model, const TrainProgress *progress, const char *dir) {
    char model_path[PATH_CAP], state_path[PATH_CAP];
    checkpoint_paths(model_path, state_path, PATH_CAP, dir, progress->step);
    gpt2_save(model, model_path);
    StateWriteContext ctx = {model, progress};
    write_file_atomic(state_path, write_state, &ctx);
}

// Step number of "state_%08d.bin", or -1.
static int state_file_step(const char *name) {
    int step;
    char tail;
    if (strlen(name) != 18 || sscanf(name, "state_%8d.bi%c", &step, &tail) != 2 || tail != 'n') {
        return -1;
    }
    return step;
}

int checkpoint_find_latest(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) {
        return -1;
    }
    int best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int step = state_file_step(e->d_name);
        if (step > best) {
            char model_path[PATH_CAP], state_path[PATH_CAP];
            checkpoint_paths(model_path, state_path, PATH_CAP, dir, step);
            if (access(model_path, R_OK) == 0) {
                best = step;
            }
        }
    }
    closedir(d);
    return best;
}

void checkpoint_load(GPT2 *model, TrainProgress *progress, const char *dir, int step) {
    char model_path[PATH_CAP], state_path[PATH_CAP];
    checkpoint_paths(model_path, state_path, PATH_CAP, dir, step);
    gpt2_load(model, model_path);
    FILE *f = fopen_check(state_path, "rb");
    long bytes = file_size_bytes(f, state_path);
    int32_t h[256];
    fread_check(h, sizeof(int32_t), 256, f, state_path, "the training state header");
    if (h[0] != TRAIN_STATE_MAGIC || h[1] != TRAIN_STATE_VERSION) {
        fatal("%s: not a training state file (magic %d version %d, expected %d version %d)",
              state_path, h[0], h[1], TRAIN_STATE_MAGIC, TRAIN_STATE_VERSION);
    }
    uint64_t n;
    memcpy(&n, &h[9], sizeof(uint64_t));
    int has_moments = h[11];
    if (n != model->num_parameters || h[2] != step || h[3] < 0 || h[4] < 0 ||
        (has_moments != 0 && has_moments != 1)) {
        fatal("%s: header does not match %s (parameters %llu vs %zu, step %d vs %d)", state_path,
              model_path, (unsigned long long)n, model->num_parameters, h[2], step);
    }
    size_t expected = 1024 + (has_moments ? 2 * model->num_parameters * sizeof(float) : 0);
    if ((size_t)bytes != expected) {
        fatal("%s: file is %ld bytes, expected %zu", state_path, bytes, expected);
    }
    progress->step = h[2];
    progress->shard_index = h[4];
    memcpy(&progress->position, &h[5], sizeof(uint64_t));
    memcpy(&progress->rng_state, &h[7], sizeof(uint64_t));
    if (h[12] < 0) {
        fatal("%s: negative data epoch %d in the header", state_path, h[12]);
    }
    progress->epoch = h[12];
    model->adamw_step = h[3];
    if (has_moments) {
        model->m_memory = malloc_check(model->num_parameters * sizeof(float), "AdamW m");
        model->v_memory = malloc_check(model->num_parameters * sizeof(float), "AdamW v");
        fread_check(model->m_memory, sizeof(float), model->num_parameters, f, state_path, "m");
        fread_check(model->v_memory, sizeof(float), model->num_parameters, f, state_path, "v");
    }
    fclose(f);
}

void checkpoint_prune(const char *dir, int keep) {
    if (keep <= 0) {
        return;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    int cap = 64, count = 0;
    int *steps = malloc_check((size_t)cap * sizeof(int), "checkpoint list");
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int step = state_file_step(e->d_name);
        if (step >= 0) {
            if (count == cap) {
                cap *= 2;
                int *grown = realloc(steps, (size_t)cap * sizeof(int));
                if (grown == NULL) {
                    fatal("out of memory listing checkpoints in %s", dir);
                }
                steps = grown;
            }
            steps[count++] = step;
        }
    }
    closedir(d);
    for (int i = 0; i < count; i++) {
        int newer = 0;
        for (int j = 0; j < count; j++) {
            newer += steps[j] > steps[i];
        }
        if (newer >= keep) {
            char model_path[PATH_CAP], state_path[PATH_CAP];
            checkpoint_paths(model_path, state_path, PATH_CAP, dir, steps[i]);
            remove(state_path); // state first: a model without state is not a checkpoint
            remove(model_path);
        }
    }
    free(steps);
}
