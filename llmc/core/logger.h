// llm.c-style run log: OUTDIR/main.log with lines "s:STEP trl:LOSS",
// "s:STEP tel:LOSS ppl:PERPLEXITY" (and other "s:STEP KEY:VALUE" metrics), appended and flushed as they come. A fresh log starts
// with the run record, lines beginning "# " (docs/formats.md): readers take
// the "s:" lines and skip the rest.
#ifndef FOLDNORM_LOGGER_H
#define FOLDNORM_LOGGER_H

#include <stdio.h>

#include "utils.h"

typedef struct {
    FILE *file; // NULL: logging off
    char path[4096];
    int appending; // resumed: the log already holds its run record
} Logger;

// output_dir == NULL turns logging off. resume_step < 0: a new log;
// resume_step >= 0: the lines of steps up to resume_step are kept (the ones
// after it were written past the checkpoint resumed from and come again) and
// new lines are appended, so a resumed run's "s:" lines equal an uninterrupted one's.
void logger_init(Logger *logger, const char *output_dir, int resume_step);
// Writes the run record: "# command:" (argv), "# commit:" (git describe at
// build time), "# config: key=value ..." (config_fmt: the norm mode as
// mode=, the seed as seed=, the model's shape), and for each (label, glob
// pattern) pair in data (NULL-terminated; a NULL pattern is skipped)
// "# data LABEL: PATTERN -> FILE ...". A
// resumed log gets one "# resumed: COMMAND" line instead (its record is at
// the top already). No-op when logging is off.
void logger_log_run_record(Logger *logger, int argc, char *const *argv,
                           const char *const *data, const char *config_fmt, ...)
    FN_PRINTF(5, 6);
// Writes word to f, quoted for a POSIX shell where needed (the run record's
// command, the resume command a stopped trainer prints).
void write_shell_word(FILE *f, const char *word);
void logger_log_train(Logger *logger, int step, float loss, float lr, float grad_norm);
// "s:STEP tel:LOSS ppl:PERPLEXITY" (perplexity = exp(LOSS))
void logger_log_val(Logger *logger, int step, float loss);
// "s:STEP KEY:VALUE" for another metric (the image trainers' test accuracy: tea).
void logger_log_metric(Logger *logger, int step, const char *key, float value);
void logger_free(Logger *logger);

#endif
