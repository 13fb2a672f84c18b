#include "norm_mode.h"

#include <string.h>

static const char *const NORM_MODE_NAMES[] = {"ln", "rms", "cbwc", "folded"};

const char *norm_mode_name(NormMode mode) {
    return (mode >= MODE_LN && mode <= MODE_FOLDED) ? NORM_MODE_NAMES[mode] : "?";
}

int norm_mode_parse(const char *name, NormMode *mode) {
    for (int i = MODE_LN; i <= MODE_CBWC; i++) {
        if (strcmp(name, NORM_MODE_NAMES[i]) == 0) {
            *mode = (NormMode)i;
            return 0;
        }
    }
    return -1;
}
