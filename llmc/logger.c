#include "logger.h"

#include <glob.h>
#include <stdarg.h>
#include <string.h>

#ifndef FOLDNORM_COMMIT
#define FOLDNORM_COMMIT "unknown" // the Makefile passes git describe's output
#endif

void logger_init(Logger *logger, const char *output_dir, int append) {
    logger->file = NULL;
    logger->appending = append;
    if (output_dir == NULL) {
        return;
    }
    int n = snprintf(logger->path, sizeof(logger->path), "%s/main.log", output_dir);
    if (n < 0 || (size_t)n >= sizeof(logger->path)) {
        fatal("-o: output directory path too long: %s", output_dir);
    }
    logger->file = fopen_check(logger->path, append ? "a" : "w");
}

// Writes one argument, quoted for a POSIX shell when it holds anything but
// plain characters, so that the command line can be pasted back.
static void write_shell_word(FILE *f, const char *word) {
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
        fprintf(logger->file, "s:%d tel:%.6f\n", step, loss);
        fflush(logger->file);
    }
}

void logger_free(Logger *logger) {
    if (logger->file != NULL) {
        fclose_check(logger->file, logger->path);
        logger->file = NULL;
    }
}
