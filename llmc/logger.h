// llm.c-style run log: OUTDIR/main.log with lines "s:STEP trl:LOSS",
// "s:STEP tel:LOSS", appended and flushed as they come.
#ifndef FOLDNORM_LOGGER_H
#define FOLDNORM_LOGGER_H

#include <stdio.h>

typedef struct {
    FILE *file; // NULL: logging off
    char path[4096];
} Logger;

// output_dir == NULL turns logging off; resuming appends, else truncates.
void logger_init(Logger *logger, const char *output_dir, int append);
void logger_log_train(Logger *logger, int step, float loss, float lr, float grad_norm);
void logger_log_val(Logger *logger, int step, float loss);
void logger_free(Logger *logger);

#endif
