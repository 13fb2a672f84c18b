#include "run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_write.h"
#include "checkpoint_files.h"
#include "logger.h"
#include "stop_signal.h"
#include "utils.h"

enum { PATH_CAP = 4096, LINE_CAP = 2048 };

void run_dir_check_start(const char *dir, int resume, int newest_step) {
    if (!resume && newest_step >= 0) {
        fatal("-o %s holds the checkpoints of an earlier run (newest: step %d); resume it with "
              "-y 1, or give a new folder (a run folder holds one run)",
              dir, newest_step);
    }
    if (resume && newest_step < 0) {
        fatal("-y 1: no checkpoint (model_STEP.bin + state_STEP.bin) in %s to resume from; "
              "to start a new run there, leave out -y 1",
              dir);
    }
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int run_dir_remove_stale_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) {
        return 0;
    }
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, ".tmp")) {
            continue;
        }
        char path[PATH_CAP];
        int n = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof(path)) {
            fatal("-o: output directory path too long: %s", dir);
        }
        if (remove(path) != 0) {
            fatal("%s: cannot remove a stale temporary file: %s", path, strerror(errno));
        }
        printf("removed %s, left by an interrupted write\n", path);
        removed++;
    }
    closedir(d);
    return removed;
}

typedef struct {
    const RunSetting *settings;
    int n;
} SettingsFile;

static void write_settings(FILE *f, const char *path, const void *ctx_ptr) {
    const SettingsFile *ctx = ctx_ptr;
    if (fprintf(f, "# foldnorm run settings: a resume (-y 1) must give the same values\n") < 0) {
        fatal("%s: write failed: %s", path, strerror(errno));
    }
    for (int i = 0; i < ctx->n; i++) {
        if (fprintf(f, "%s %s\n", ctx->settings[i].flag, ctx->settings[i].value) < 0) {
            fatal("%s: write failed: %s", path, strerror(errno));
        }
    }
}

// The recorded value of flag in the open run.txt into value, 0; or -1.
static int find_setting(FILE *f, const char *path, const char *flag, char *value, size_t cap) {
    char line[LINE_CAP];
    size_t k = strlen(flag);
    rewind(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            fatal("%s: a line longer than %d bytes", path, LINE_CAP - 2);
        }
        if (len > 0 && line[len - 1] == '\n') {
            line[--len] = '\0';
        }
        if (strncmp(line, flag, k) == 0 && line[k] == ' ') {
            snprintf(value, cap, "%s", line + k + 1);
            return 0;
        }
    }
    if (ferror(f)) {
        fatal("%s: read failed: %s", path, strerror(errno));
    }
    return -1;
}

void run_dir_check_settings(const char *dir, const RunSetting *settings, int n, int resuming) {
    char path[PATH_CAP];
    int len = snprintf(path, sizeof(path), "%s/run.txt", dir);
    if (len < 0 || (size_t)len >= sizeof(path)) {
        fatal("-o: output directory path too long: %s", dir);
    }
    FILE *f = resuming ? fopen(path, "r") : NULL;
    if (resuming && f == NULL && errno != ENOENT) {
        fatal("%s: cannot open: %s", path, strerror(errno));
    }
    if (f != NULL) {
        for (int i = 0; i < n; i++) {
            char recorded[1024];
            if (find_setting(f, path, settings[i].flag, recorded, sizeof(recorded)) != 0) {
                fatal("%s: no %s line; this file records the run's settings", path,
                      settings[i].flag);
            }
            if (strcmp(recorded, settings[i].value) != 0) {
                fatal("%s %s: this run in %s was started with %s %s (%s); resume with the same "
                      "value, or start a new run in a new folder",
                      settings[i].flag, settings[i].value, dir, settings[i].flag, recorded, path);
            }
        }
        fclose(f);
        return;
    }
    if (resuming) {
        printf("note: %s has no run.txt (checkpoints copied in?): the flags are not checked "
               "against the run's; recording this run's\n",
               dir);
    }
    SettingsFile ctx = {settings, n};
    write_file_atomic(path, write_settings, &ctx);
}

int run_dir_has_settings(const char *dir) {
    char path[PATH_CAP];
    int len = snprintf(path, sizeof(path), "%s/run.txt", dir);
    if (len < 0 || (size_t)len >= sizeof(path)) {
        fatal("-o: output directory path too long: %s", dir);
    }
    return access(path, F_OK) == 0;
}

void run_dir_print_resume_command(int argc, char **argv, int ranks) {
    printf("resume with: ");
    if (ranks > 1) {
        printf("mpirun -np %d ", ranks);
    }
    write_shell_word(stdout, argv[0]);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-y") == 0 && i + 1 < argc) {
            i++;
            continue;
        }
        putchar(' ');
        write_shell_word(stdout, argv[i]);
    }
    printf(" -y 1\n");
    fflush(stdout);
}

void run_dir_report_stop(int sig, int step, const char *dir, int argc, char **argv, int ranks) {
    if (dir == NULL) {
        printf("stopped by %s after step %d; no -o, so no checkpoint\n", stop_signal_name(sig),
               step);
        fflush(stdout);
        return;
    }
    char model_path[PATH_CAP], state_path[PATH_CAP];
    checkpoint_paths(model_path, state_path, PATH_CAP, dir, step);
    char host[300] = "";
    if (ranks > 1) { // where rank 0 wrote it: a host-local folder is on that host only
        snprintf(host, sizeof(host), " on host %s", host_name());
    }
    printf("stopped by %s after step %d; checkpoint %s + %s%s\n", stop_signal_name(sig), step,
           model_path, state_path, host);
    run_dir_print_resume_command(argc, argv, ranks);
}
