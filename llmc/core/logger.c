#include "logger.h"

#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_write.h"
#include "utils.h"

#ifndef FOLDNORM_COMMIT
#define FOLDNORM_COMMIT "unknown" // the Makefile passes git describe's output
#endif

typedef struct {
    const char *text; // the lines kept
    size_t bytes;
} KeptLines;

static void write_kept_lines(FILE *f, const char *path, const void *ctx_ptr) {
    const KeptLines *kept = ctx_ptr;
    fwrite_check(kept->text, 1, kept->bytes, f, path);
}

// Rewrites the log with only its lines of steps <= last_step (other lines kept).
static void truncate_log_after(const char *path, int last_step) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (errno == ENOENT) {
            return;
        }
        fatal("%s: cannot open: %s", path, strerror(errno));
    }
    long size = file_size_bytes(f, path);
    char *text = malloc_check((size_t)size + 1, "main.log");
    fread_check(text, 1, (size_t)size, f, path, "the log");
    fclose(f);
    text[size] = '\0';
    KeptLines kept = {text, 0};
    int dropped = 0;
    for (char *line = text; line < text + size;) {
        char *end = memchr(line, '\n', (size_t)(text + size - line));
        size_t len = end != NULL ? (size_t)(end - line) + 1 : (size_t)(text + size - line);
        int step;
        if (sscanf(line, "s:%d", &step) == 1 && step > last_step) {
            dropped++;
        } else {
            memmove(text + kept.bytes, line, len); // kept lines only move towards the start
            kept.bytes += len;
        }
        line += len;
    }
    if (dropped > 0) {
        write_file_atomic(path, write_kept_lines, &kept);
        printf("%s: dropped %d line(s) past step %d, written after that checkpoint\n", path,
               dropped, last_step);
    }
    free(text);
}

void logger_init(Logger *logger, const char *output_dir, int resume_step) {
    logger->file = NULL;
    logger->appending = resume_step >= 0;
    if (output_dir == NULL) {
        return;
    }
    int n = snprintf(logger->path, sizeof(logger->path), "%s/main.log", output_dir);
    if (n < 0 || (size_t)n >= sizeof(logger->path)) {
        fatal("-o: output directory path too long: %s", output_dir);
    }
    if (resume_step >= 0) {
        truncate_log_after(logger->path, resume_step);
    }
    logger->file = fopen_check(logger->path, resume_step >= 0 ? "a" : "w");
}

// Writes one argument, quoted for a POSIX shell when it holds anything but
// plain characters, so that the command line can be pasted back.
void write_shell_word(FILE *f, const char *word) {
    if (word[0] != '\0' && strspn(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+@%") == strlen(word)) {
        fputs(word, f);
        return;
    }
    fputc('\'', f);
    for (const char *c = word; *c != '\0'; c++) {
        if (*c == '\'') {
            fputs("'\\''", f);
        } else if (*c == '\n') {
            fputs("'$'\\n''", f); // one record line per key, even for odd arguments
        } else {
            fputc(*c, f);
        }
    }
    fputc('\'', f);
}

static void write_command(FILE *f, int argc, char *const *argv) {
    for (int i = 0; i < argc; i++) {
        if (i > 0) {
            fputc(' ', f);
        }
        write_shell_word(f, argv[i]);
    }
    fputc('\n', f);
}

// "# data LABEL: PATTERN -> FILE FILE ..." (the files the glob matches now)
static void write_data_line(FILE *f, const char *label, const char *pattern) {
    fprintf(f, "# data %s: ", label);
    write_shell_word(f, pattern);
    glob_t matches;
    int rc = glob(pattern, 0, NULL, &matches);
    if (rc == 0) {
        fputs(" ->", f);
        for (size_t i = 0; i < matches.gl_pathc; i++) {
            fputc(' ', f);
            write_shell_word(f, matches.gl_pathv[i]);
        }
        globfree(&matches);
    } else {
        fputs(rc == GLOB_NOMATCH ? " -> (no match)" : " -> (glob failed)", f);
    }
    fputc('\n', f);
}

void logger_log_run_record(Logger *logger, int argc, char *const *argv,
                           const char *const *data, const char *config_fmt, ...) {
    FILE *f = logger->file;
    if (f == NULL) {
        return;
    }
    if (logger->appending) {
        fputs("# resumed: ", f);
        write_command(f, argc, argv);
    } else {
        fputs("# command: ", f);
        write_command(f, argc, argv);
        fprintf(f, "# commit: %s\n# config: ", FOLDNORM_COMMIT);
        va_list ap;
        va_start(ap, config_fmt);
        vfprintf(f, config_fmt, ap);
        va_end(ap);
        fputc('\n', f);
        for (size_t i = 0; data != NULL && data[i] != NULL; i += 2) {
            if (data[i + 1] != NULL) { // a NULL pattern: that data is not used
                write_data_line(f, data[i], data[i + 1]);
            }
        }
    }
    if (fflush(f) != 0 || ferror(f)) {
        fatal("%s: cannot write the run record", logger->path);
    }
}

void logger_log_train(Logger *logger, int step, float loss, float lr, float grad_norm) {
    if (logger->file != NULL) {
        fprintf(logger->file, "s:%d trl:%.6f lr:%.6e norm:%.4f\n", step, loss, lr, grad_norm);
        fflush(logger->file);
    }
}

void logger_log_val(Logger *logger, int step, float loss) {
    if (logger->file != NULL) {
        // perplexity exp(loss) beside it: the paper reports both
        fprintf(logger->file, "s:%d tel:%.6f ppl:%.4f\n", step, loss, exp((double)loss));
        fflush(logger->file);
    }
}

void logger_log_metric(Logger *logger, int step, const char *key, float value) {
    if (logger->file != NULL) {
        fprintf(logger->file, "s:%d %s:%.6f\n", step, key, value);
        fflush(logger->file);
    }
}

void logger_free(Logger *logger) {
    if (logger->file != NULL) {
        fclose_check(logger->file, logger->path);
        logger->file = NULL;
    }
}
