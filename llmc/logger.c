#include "logger.h"

#include "utils.h"

void logger_init(Logger *logger, const char *output_dir, int append) {
    logger->file = NULL;
    if (output_dir == NULL) {
        return;
    }
    int n = snprintf(logger->path, sizeof(logger->path), "%s/main.log", output_dir);
    if (n < 0 || (size_t)n >= sizeof(logger->path)) {
        fatal("-o: output directory path too long: %s", output_dir);
    }
    logger->file = fopen_check(logger->path, append ? "a" : "w");
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
