#include "vision_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/checksum.h"
#include "core/reader.h"
#include "core/tensor_table.h"
#include "core/utils.h"
#include "vision_layout.h"

enum { PATH_CAP = 4096 };

void vision_header_from_config(const VisionConfig *config, int32_t h[VISION_HEADER_INTS]) {
    memset(h, 0, VISION_HEADER_INTS * sizeof(int32_t));
    h[VH_MAGIC] = VISION_MODEL_MAGIC;
    h[VH_VERSION] = VISION_MODEL_VERSION;
    h[VH_FAMILY] = (int32_t)config->family;
    h[VH_NORM_MODE] = norm_mode_file_value(config->mode);
    h[VH_IMAGE_SIZE] = vision_config_image_size(config);
    h[VH_IMAGE_CHANNELS] = vision_config_image_channels(config);
    h[VH_NUM_CLASSES] = vision_config_num_classes(config);
    h[VH_FOLDED_NORMS] = norm_policy(config->mode)->folded ? vision_num_foldable_norms(config) : 0;
    if (config->family == FAMILY_VIT) {
        const ViTConfig *c = &config->vit;
        h[VH_PATCH_SIZE] = c->patch_size;
        h[VH_CHANNELS] = c->channels;
        h[VH_NUM_LAYERS] = c->num_layers;
        h[VH_NUM_HEADS] = c->num_heads;
        h[VH_MLP_RATIO] = c->mlp_ratio;
        return;
    }
    const SwinConfig *c = &config->swin;
    h[VH_PATCH_SIZE] = c->patch_size;
    h[VH_CHANNELS] = c->embed_dim;
    h[VH_NUM_LAYERS] = c->num_stages;
    h[VH_MLP_RATIO] = c->mlp_ratio;
    h[VH_WINDOW] = c->window;
    h[VH_CENTRE_OPS] = c->centre_ops;
    h[VH_PAPER_VARIANT] = c->paper_variant;
    for (int s = 0; s < c->num_stages; s++) {
        h[VH_DEPTHS + s] = c->depths[s];
        h[VH_HEADS + s] = c->heads[s];
    }
}

void vision_config_from_header(const int32_t h[VISION_HEADER_INTS], VisionConfig *config) {
    memset(config, 0, sizeof(*config));
    config->family = (VisionFamily)h[VH_FAMILY];
    char err[160];
    if (norm_mode_from_file(h[VH_NORM_MODE], VH_NORM_MODE, &config->mode, err, sizeof(err)) != 0) {
        fatal("vision model header: %s", err); // vision_header_parse refuses it first
    }
    config->vit = (ViTConfig){.image_size = h[VH_IMAGE_SIZE],
                              .image_channels = h[VH_IMAGE_CHANNELS],
                              .patch_size = h[VH_PATCH_SIZE],
                              .num_classes = h[VH_NUM_CLASSES],
                              .channels = h[VH_CHANNELS],
                              .num_layers = h[VH_NUM_LAYERS],
                              .num_heads = h[VH_NUM_HEADS],
                              .mlp_ratio = h[VH_MLP_RATIO]};
    SwinConfig *c = &config->swin;
    *c = (SwinConfig){.image_size = h[VH_IMAGE_SIZE], .image_channels = h[VH_IMAGE_CHANNELS],
                      .patch_size = h[VH_PATCH_SIZE], .num_classes = h[VH_NUM_CLASSES],
                      .embed_dim = h[VH_CHANNELS], .num_stages = h[VH_NUM_LAYERS],
                      .window = h[VH_WINDOW], .mlp_ratio = h[VH_MLP_RATIO],
                      .centre_ops = h[VH_CENTRE_OPS], .paper_variant = h[VH_PAPER_VARIANT]};
    for (int s = 0; s < SWIN_MAX_STAGES; s++) {
        c->depths[s] = h[VH_DEPTHS + s];
        c->heads[s] = h[VH_HEADS + s];
    }
}

// "bad ViT header (...): why" / "bad Swin header (...): why" with the slots read.
static int bad_config(const VisionConfig *config, const char *why, char *err, size_t err_bytes) {
    if (config->family == FAMILY_VIT) {
        const ViTConfig *c = &config->vit;
        return input_error(err, err_bytes,
                           "bad ViT header (S=%d Cin=%d P=%d K=%d C=%d L=%d NH=%d mlp=%d): %s",
                           c->image_size, c->image_channels, c->patch_size, c->num_classes,
                           c->channels, c->num_layers, c->num_heads, c->mlp_ratio, why);
    }
    const SwinConfig *c = &config->swin;
    return input_error(err, err_bytes, "bad Swin header (S=%d P=%d E=%d stages=%d W=%d): %s",
                       c->image_size, c->patch_size, c->embed_dim, c->num_stages, c->window, why);
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
    NormMode mode;
    if (norm_mode_from_file(header[VH_NORM_MODE], VH_NORM_MODE, &mode, err, err_bytes) != 0) {
        return -1;
    }
    VisionConfig config;
    vision_config_from_header(header, &config);
    const char *why = vision_config_error(&config);
    if (why != NULL) {
        return bad_config(&config, why, err, err_bytes);
    }
    // a folded file and this reader must agree on which norms run as RMSNorm
    const int folded_norms = norm_policy(config.mode)->folded ? vision_num_foldable_norms(&config) : 0;
    if (header[VH_FOLDED_NORMS] != folded_norms) {
        return input_error(err, err_bytes,
                           "%s model records %d folded norms in header slot %d; its config "
                           "gives %d",
                           norm_mode_name(config.mode), header[VH_FOLDED_NORMS], VH_FOLDED_NORMS,
                           folded_norms);
    }
    TensorTable table;
    vision_layout(&config, &table);
    const size_t n = table.num_parameters;
    tensor_table_free(&table);
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

int vision_params_parse(Reader *r, const int32_t header[VISION_HEADER_INTS], float *params,
                        size_t n, char *err, size_t err_bytes) {
    if (checksum_verify(r, header, err, err_bytes) != 0) {
        return -1;
    }
    if (reader_read(r, params, n * sizeof(float), "the parameters", err, err_bytes) != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(params[i])) {
            VisionConfig config;
            vision_config_from_header(header, &config);
            TensorTable table;
            vision_layout(&config, &table);
            int t = tensor_table_find(&table, i);
            int ret = input_error(err, err_bytes, "tensor %s: parameter %zu is not finite (%g)",
                                  t >= 0 ? table.names[t] : "?", i, (double)params[i]);
            tensor_table_free(&table);
            return ret;
        }
    }
    return 0;
}

int vision_model_parse(Reader *r, VisionFamily expected, int32_t header[VISION_HEADER_INTS],
                       float **params, size_t *num_params, char *err, size_t err_bytes) {
    *params = NULL;
    *num_params = 0;
    size_t n = 0;
    if (reader_read(r, header, VISION_HEADER_INTS * sizeof(int32_t), "the model header", err,
                    err_bytes) != 0 ||
        vision_header_parse(header, expected, r->size, &n, err, err_bytes) != 0) {
        return -1;
    }
    float *p = malloc(n == 0 ? 1 : n * sizeof(float));
    if (p == NULL) {
        return input_error(err, err_bytes, "out of memory for %zu parameters", n);
    }
    if (vision_params_parse(r, header, p, n, err, err_bytes) != 0) {
        free(p);
        return -1;
    }
    *params = p;
    *num_params = n;
    return 0;
}

int vision_model_load_file(const char *path, int expected_family, VisionConfig *config,
                           float **params, size_t *num_params, char *err, size_t err_bytes) {
    *params = NULL;
    *num_params = 0;
    char why[READER_ERR_BYTES];
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return input_error(err, err_bytes, "%s: cannot open: %s", path, strerror(errno));
    }
    Reader r;
    int32_t header[VISION_HEADER_INTS];
    int rc = -1;
    if (reader_init_file(&r, f, why, sizeof(why)) != 0) {
        // why says it
    } else if (r.size < sizeof(header)) {
        input_error(why, sizeof(why), "%zu bytes, shorter than the %zu-byte model header", r.size,
                    sizeof(header));
    } else if (reader_read(&r, header, sizeof(header), "the model header", why, sizeof(why)) ==
               0) {
        // any family: the header's (an unknown one is reported against ViT)
        VisionFamily family = expected_family >= 0               ? (VisionFamily)expected_family
                              : header[VH_FAMILY] == FAMILY_SWIN ? FAMILY_SWIN
                                                                 : FAMILY_VIT;
        size_t n;
        float *p = NULL;
        if (vision_header_parse(header, family, r.size, &n, why, sizeof(why)) == 0) {
            p = malloc(n == 0 ? 1 : n * sizeof(float));
            if (p == NULL) {
                input_error(why, sizeof(why), "out of memory for %zu parameters", n);
            } else if (vision_params_parse(&r, header, p, n, why, sizeof(why)) == 0) {
                vision_config_from_header(header, config);
                *params = p;
                *num_params = n;
                p = NULL;
                rc = 0;
            }
        }
        free(p);
    }
    fclose(f);
    return rc == 0 ? 0 : input_error(err, err_bytes, "%s: %s", path, why);
}

void vision_model_read(const char *path, int expected_family, VisionConfig *config,
                       float **params, size_t *num_params) {
    char err[PATH_CAP + READER_ERR_BYTES];
    if (vision_model_load_file(path, expected_family, config, params, num_params, err,
                               sizeof(err)) != 0) {
        fatal("%s", err);
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

void vision_model_write(const char *path, const VisionConfig *config, const float *params,
                        size_t n) {
    int32_t header[VISION_HEADER_INTS];
    vision_header_from_config(config, header);
    ModelWriteContext ctx = {header, params, n};
    write_file_atomic_checksummed(path, write_model, &ctx);
}
