#include "vision_model.h"

#include <math.h>
#include <stdlib.h>

#include "reader.h"
#include "swin.h"
#include "utils.h"
#include "vit.h"

const char *vision_family_name(VisionFamily family) {
    return family == FAMILY_VIT ? "ViT" : family == FAMILY_SWIN ? "Swin" : "?";
}

// Limits on what a model's shape costs beyond its parameters (attention
// scores, Swin's per-block tables), so a small file with a huge image or
// window cannot ask for terabytes: ViT heads * tokens^2, Swin the summed
// window tables (perm N, index T^2, mask N*T, bias N*NH*T) over all blocks.
#define VISION_MAX_SCORES (1ull << 30)
#define SWIN_MAX_TABLES (1ull << 28)

static int vit_header_params(const int32_t *h, size_t *num_params, char *err, size_t err_bytes) {
    ViTConfig c = {.image_size = h[VH_IMAGE_SIZE], .image_channels = h[VH_IMAGE_CHANNELS],
                   .patch_size = h[VH_PATCH_SIZE], .num_classes = h[VH_NUM_CLASSES],
                   .channels = h[VH_CHANNELS], .num_layers = h[VH_NUM_LAYERS],
                   .num_heads = h[VH_NUM_HEADS], .mlp_ratio = h[VH_MLP_RATIO]};
    const char *why = vit_config_error(&c);
    unsigned long long T = why == NULL ? (unsigned long long)vit_num_tokens(&c) : 0;
    if (why == NULL && T * T * (unsigned long long)c.num_heads > VISION_MAX_SCORES) {
        why = "heads x tokens^2 exceeds 2^30 attention scores per image";
    }
    if (why != NULL) {
        return input_error(err, err_bytes,
                           "bad ViT header (S=%d Cin=%d P=%d K=%d C=%d L=%d NH=%d mlp=%d): %s",
                           c.image_size, c.image_channels, c.patch_size, c.num_classes,
                           c.channels, c.num_layers, c.num_heads, c.mlp_ratio, why);
    }
    size_t sizes[VIT_NUM_PARAM_TENSORS], total = 0;
    vit_param_sizes(sizes, &c); // the config's bounds keep every size below 2^50
    for (int i = 0; i < VIT_NUM_PARAM_TENSORS; i++) {
        total += sizes[i];
    }
    *num_params = total;
    return 0;
}

// Swin's parameter count in swin_build's layout (docs/formats.md), with its
// per-block table sizes; the config is already checked by swin_config_error.
static int swin_header_params(const SwinConfig *c, size_t *num_params, const char **why) {
    size_t E = (size_t)c->embed_dim, res = (size_t)(c->image_size / c->patch_size);
    size_t PD = (size_t)c->image_channels * c->patch_size * c->patch_size;
    size_t total = E * PD + 3 * E, C = E;
    unsigned long long tables = 0;
    for (int s = 0; s < c->num_stages; s++) {
        C = E << s;
        if (s > 0) {
            res /= 2;
            total += 4 * C + 2 * C * C; // mnw, mnb (2C each), redw (C, 2C)
        }
        size_t W = res <= (size_t)c->window ? res : (size_t)c->window;
        size_t H = C * (size_t)c->mlp_ratio, NH = (size_t)c->heads[s];
        size_t table = (2 * W - 1) * (2 * W - 1), N = res * res, T = W * W;
        size_t block = 6 * C + 3 * C * C + 3 * C + table * NH + C * C + H * C + H + C * H;
        total += (size_t)c->depths[s] * block;
        unsigned long long per_block = N + T * T + N * T + (unsigned long long)N * NH * T;
        tables += (unsigned long long)c->depths[s] * per_block;
        if (tables > SWIN_MAX_TABLES) {
            *why = "the window tables (window^2 x resolution^2 x heads) exceed 2^28 values";
            return -1;
        }
    }
    total += 2 * C + (size_t)c->num_classes * C + (size_t)c->num_classes;
    *num_params = total;
    return 0;
}

static void swin_config_from_header(const int32_t h[VISION_HEADER_INTS], SwinConfig *c) {
    *c = (SwinConfig){.image_size = h[VH_IMAGE_SIZE], .image_channels = h[VH_IMAGE_CHANNELS],
                      .patch_size = h[VH_PATCH_SIZE], .num_classes = h[VH_NUM_CLASSES],
                      .embed_dim = h[VH_CHANNELS], .num_stages = h[VH_NUM_LAYERS],
                      .window = h[VH_WINDOW], .mlp_ratio = h[VH_MLP_RATIO],
                      .center_patch = h[VH_CENTER_PATCH]};
    for (int s = 0; s < SWIN_MAX_STAGES; s++) {
        c->depths[s] = h[VH_DEPTHS + s];
        c->heads[s] = h[VH_HEADS + s];
    }
}

int vision_header_parse(const int32_t header[VISION_HEADER_INTS], VisionFamily expected,
                        size_t file_bytes, size_t *num_params, char *err, size_t err_bytes) {
    if (header[VH_MAGIC] != VISION_MODEL_MAGIC) {
        return input_error(err, err_bytes, "not a ViT/Swin model file (magic %d, expected %d)",
                           header[VH_MAGIC], VISION_MODEL_MAGIC);
    }
    if (header[VH_VERSION] != VISION_MODEL_VERSION) {
        return input_error(err, err_bytes, "model file version %d is not supported (expected %d)",
                           header[VH_VERSION], VISION_MODEL_VERSION);
    }
    if (header[VH_FAMILY] != (int32_t)expected) {
        return input_error(err, err_bytes, "holds a %s model (family %d), expected %s",
                           vision_family_name((VisionFamily)header[VH_FAMILY]), header[VH_FAMILY],
                           vision_family_name(expected));
    }
    if (header[VH_NORM_MODE] < 0 || header[VH_NORM_MODE] > 2) {
        return input_error(err, err_bytes,
                           "unknown norm mode %d in header slot %d (0=ln, 1=rms, 2=cbwc)",
                           header[VH_NORM_MODE], VH_NORM_MODE);
    }
    size_t n = 0;
    if (expected == FAMILY_VIT) {
        if (vit_header_params(header, &n, err, err_bytes) != 0) {
            return -1;
        }
    } else {
        SwinConfig c;
        swin_config_from_header(header, &c);
        const char *why = swin_config_error(&c);
        if (why == NULL) {
            swin_header_params(&c, &n, &why);
        }
        if (why != NULL) {
            return input_error(err, err_bytes, "bad Swin header (S=%d P=%d E=%d stages=%d W=%d): %s",
                               c.image_size, c.patch_size, c.embed_dim, c.num_stages, c.window,
                               why);
        }
    }
    size_t expected_bytes = VISION_HEADER_INTS * sizeof(int32_t) + n * sizeof(float);
    if (file_bytes != expected_bytes) {
        return input_error(err, err_bytes,
                           "file is %zu bytes but its header describes %zu bytes (%zu "
                           "parameters)%s",
                           file_bytes, expected_bytes, n,
                           file_bytes < expected_bytes ? ": truncated" : ": trailing data");
    }
    *num_params = n;
    return 0;
}

int vision_params_parse(Reader *r, float *params, size_t n, char *err, size_t err_bytes) {
    if (reader_read(r, params, n * sizeof(float), "the parameters", err, err_bytes) != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(params[i])) {
            return input_error(err, err_bytes, "parameter %zu is not finite (%g)", i,
                               (double)params[i]);
        }
    }
    return 0;
}

int vision_model_parse(Reader *r, VisionFamily expected, int32_t header[VISION_HEADER_INTS],
                       float **params, size_t *num_params, char *err, size_t err_bytes) {
    *params = NULL;
    *num_params = 0;
    size_t n;
    if (reader_read(r, header, VISION_HEADER_INTS * sizeof(int32_t), "the model header", err,
                    err_bytes) != 0 ||
        vision_header_parse(header, expected, r->size, &n, err, err_bytes) != 0) {
        return -1;
    }
    float *p = malloc(n == 0 ? 1 : n * sizeof(float));
    if (p == NULL) {
        return input_error(err, err_bytes, "out of memory for %zu parameters", n);
    }
    if (vision_params_parse(r, p, n, err, err_bytes) != 0) {
        free(p);
        return -1;
    }
    *params = p;
    *num_params = n;
    return 0;
}

FILE *vision_header_read(const char *path, int32_t header[VISION_HEADER_INTS],
                         VisionFamily expected, long *file_bytes) {
    FILE *f = fopen_check(path, "rb");
    Reader r;
    size_t n;
    char err[READER_ERR_BYTES];
    if (reader_init_file(&r, f, err, sizeof(err)) != 0 ||
        reader_read(&r, header, VISION_HEADER_INTS * sizeof(int32_t), "the model header", err,
                    sizeof(err)) != 0 ||
        vision_header_parse(header, expected, r.size, &n, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    *file_bytes = (long)r.size;
    return f;
}

void vision_params_read(FILE *f, const char *path, long file_bytes, float *params, size_t n) {
    Reader r;
    char err[READER_ERR_BYTES];
    if (reader_init_file(&r, f, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    size_t expected = VISION_HEADER_INTS * sizeof(int32_t) + n * sizeof(float);
    if ((size_t)file_bytes != expected || r.size != expected) {
        fatal("%s: file is %ld bytes but its header describes %zu bytes (%zu parameters)%s", path,
              file_bytes, expected, n,
              (size_t)file_bytes < expected ? ": truncated" : ": trailing data");
    }
    if (vision_params_parse(&r, params, n, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    fclose(f);
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
