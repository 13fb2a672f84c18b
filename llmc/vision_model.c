#include "vision_model.h"

#include <math.h>

#include "utils.h"

const char *vision_family_name(VisionFamily family) {
    return family == FAMILY_VIT ? "ViT" : family == FAMILY_SWIN ? "Swin" : "?";
}

FILE *vision_header_read(const char *path, int32_t header[VISION_HEADER_INTS],
                         VisionFamily expected, long *file_bytes) {
    FILE *f = fopen_check(path, "rb");
    *file_bytes = file_size_bytes(f, path);
    if (*file_bytes < (long)(VISION_HEADER_INTS * sizeof(int32_t))) {
        fatal("%s: %ld bytes, shorter than the %zu-byte model header", path, *file_bytes,
              VISION_HEADER_INTS * sizeof(int32_t));
    }
    fread_check(header, sizeof(int32_t), VISION_HEADER_INTS, f, path, "the model header");
    if (header[VH_MAGIC] != VISION_MODEL_MAGIC) {
        fatal("%s: not a ViT/Swin model file (magic %d, expected %d)", path, header[VH_MAGIC],
              VISION_MODEL_MAGIC);
    }
    if (header[VH_VERSION] != VISION_MODEL_VERSION) {
        fatal("%s: model file version %d is not supported (expected %d)", path,
              header[VH_VERSION], VISION_MODEL_VERSION);
    }
    if (header[VH_FAMILY] != (int32_t)expected) {
        fatal("%s: holds a %s model (family %d), expected %s", path,
              vision_family_name((VisionFamily)header[VH_FAMILY]), header[VH_FAMILY],
              vision_family_name(expected));
    }
    if (header[VH_NORM_MODE] < 0 || header[VH_NORM_MODE] > 2) {
        fatal("%s: unknown norm mode %d in header slot %d (0=ln, 1=rms, 2=cbwc)", path,
              header[VH_NORM_MODE], VH_NORM_MODE);
    }
    return f;
}

void vision_params_read(FILE *f, const char *path, long file_bytes, float *params, size_t n) {
    size_t expected = VISION_HEADER_INTS * sizeof(int32_t) + mul_size_check(n, sizeof(float), path);
    if ((size_t)file_bytes != expected) {
        fatal("%s: file is %ld bytes but its header describes %zu bytes (%zu parameters)%s", path,
              file_bytes, expected, n,
              (size_t)file_bytes < expected ? ": truncated" : ": trailing data");
    }
    fread_check(params, sizeof(float), n, f, path, "the parameters");
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(params[i])) {
            fatal("%s: parameter %zu is not finite", path, i);
        }
    }
}

typedef struct {
    const int32_t *header;
    const float *params;
    size_t n;
} ModelWriteContext;

static void write_model(FILE *f, const char *path, const void *ctx) {
    const ModelWriteContext *c = ctx;
    fwrite_check(c->header, sizeof(int32_t), VISION_HEADER_INTS, f, path);
    fwrite_check(c->params, sizeof(float), c->n, f, path);
}

void vision_model_write(const char *path, const int32_t header[VISION_HEADER_INTS],
                        const float *params, size_t n) {
    ModelWriteContext ctx = {header, params, n};
    write_file_atomic(path, write_model, &ctx);
}
