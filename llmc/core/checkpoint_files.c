// Checkpoint file names and the steps in a run folder (checkpoint_files.h).
#include "checkpoint_files.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader.h"
#include "utils.h"

enum { PATH_CAP = 4096 };

void checkpoint_paths(char *model_path, char *state_path, size_t cap, const char *dir, int step) {
    int a = snprintf(model_path, cap, "%s/model_%08d.bin", dir, step);
    int b = snprintf(state_path, cap, "%s/state_%08d.bin", dir, step);
    if (a < 0 || b < 0 || (size_t)a >= cap || (size_t)b >= cap) {
        fatal("-o: output directory path too long: %s", dir);
    }
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

static int descending(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

// The steps of the state files in dir, newest first (*count of them; none if
// dir cannot be read). The caller frees the list.
static int *checkpoint_steps(const char *dir, int *count) {
    int cap = 64;
    int *steps = malloc_check((size_t)cap * sizeof(int), "checkpoint list");
    *count = 0;
    DIR *d = opendir(dir);
    if (d == NULL) {
        return steps;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int step = state_file_step(e->d_name);
        if (step < 0) {
            continue;
        }
        if (*count == cap) {
            cap *= 2;
            int *grown = realloc(steps, (size_t)cap * sizeof(int));
            if (grown == NULL) {
                fatal("out of memory listing checkpoints in %s", dir);
            }
            steps = grown;
        }
        steps[(*count)++] = step;
    }
    closedir(d);
    qsort(steps, (size_t)*count, sizeof(int), descending);
    return steps;
}

int checkpoint_find_latest(const char *dir) {
    int count, best = -1;
    int *steps = checkpoint_steps(dir, &count);
    for (int i = 0; i < count && best < 0; i++) {
        char model_path[PATH_CAP], state_path[PATH_CAP];
        checkpoint_paths(model_path, state_path, PATH_CAP, dir, steps[i]);
        if (access(model_path, R_OK) == 0) {
            best = steps[i];
        }
    }
    free(steps);
    return best;
}

int checkpoint_resume_with(const char *dir, CheckpointTryLoad try_load, void *ctx) {
    int count;
    int *steps = checkpoint_steps(dir, &count);
    int loaded = -1, tried = 0;
    char err[PATH_CAP + READER_ERR_BYTES];
    for (int i = 0; i < count && loaded < 0; i++) {
        char model_path[PATH_CAP], state_path[PATH_CAP];
        checkpoint_paths(model_path, state_path, PATH_CAP, dir, steps[i]);
        if (access(model_path, F_OK) != 0) {
            continue; // a state file alone is not a checkpoint
        }
        tried++;
        if (try_load(ctx, dir, steps[i], err, sizeof(err)) == 0) {
            loaded = steps[i];
        } else {
            fprintf(stderr, "warning: skipping the checkpoint of step %d: %s\n", steps[i], err);
        }
    }
    free(steps);
    if (loaded >= 0 && tried > 1) {
        fprintf(stderr,
                "warning: resuming from step %d, the newest checkpoint in %s that verifies "
                "(%d newer skipped)\n",
                loaded, dir, tried - 1);
    }
    if (loaded < 0 && tried > 0) {
        fatal("-y 1: none of the %d checkpoints in %s verifies (the oldest: %s)", tried, dir,
              err);
    }
    return loaded;
}

void checkpoint_prune(const char *dir, int keep) {
    if (keep <= 0) {
        return;
    }
    int count;
    int *steps = checkpoint_steps(dir, &count);
    for (int i = keep; i < count; i++) {
        char model_path[PATH_CAP], state_path[PATH_CAP];
        checkpoint_paths(model_path, state_path, PATH_CAP, dir, steps[i]);
        remove(state_path); // state first: a model without state is not a checkpoint
        remove(model_path);
    }
    free(steps);
}
