#include "vision_model.h"

#include <math.h>
#include <stdio.h>
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

// Swin's tensors in file order (swin_build's layout, docs/formats.md): returns
// the parameter count and, when name != NULL, names the tensor holding
// parameter `find`. The config is already checked by swin_config_error.
static size_t swin_layout(const SwinConfig *c, size_t find, char *name, size_t name_bytes) {
    size_t E = (size_t)c->embed_dim, res = (size_t)(c->image_size / c->patch_size);
    size_t PD = (size_t)c->image_channels * c->patch_size * c->patch_size;
    size_t total = 0, C = E;
#define SWIN_TENSOR(size, ...)                                                                     \
    do {                                                                                           \
        size_t n_ = (size);                                                                        \
        if (name != NULL && find >= total && find - total < n_) {                                  \
            snprintf(name, name_bytes, __VA_ARGS__);                                               \
        }                                                                                          \
        total += n_;                                                                               \
    } while (0)
    SWIN_TENSOR(E * PD, "patchw");
    SWIN_TENSOR(E, "patchb");
    SWIN_TENSOR(E, "pnw");
    SWIN_TENSOR(E, "pnb");
    for (int s = 0; s < c->num_stages; s++) {
        C = E << s;
        if (s > 0) {
            res /= 2;
            SWIN_TENSOR(2 * C, "s%d.mnw", s);
            SWIN_TENSOR(2 * C, "s%d.mnb", s);
            SWIN_TENSOR(C * 2 * C, "s%d.redw", s);
        }
        size_t W = res <= (size_t)c->window ? res : (size_t)c->window;
        size_t H = C * (size_t)c->mlp_ratio, NH = (size_t)c->heads[s];
        size_t table = (2 * W - 1) * (2 * W - 1);
        for (int i = 0; i < c->depths[s]; i++) {
            SWIN_TENSOR(C, "s%d.b%d.ln1w", s, i);
            SWIN_TENSOR(C, "s%d.b%d.ln1b", s, i);
            SWIN_TENSOR(3 * C * C, "s%d.b%d.qkvw", s, i);
            SWIN_TENSOR(3 * C, "s%d.b%d.qkvb", s, i);
            SWIN_TENSOR(table * NH, "s%d.b%d.rpb", s, i);
            SWIN_TENSOR(C * C, "s%d.b%d.projw", s, i);
            SWIN_TENSOR(C, "s%d.b%d.projb", s, i);
            SWIN_TENSOR(C, "s%d.b%d.ln2w", s, i);
            SWIN_TENSOR(C, "s%d.b%d.ln2b", s, i);
            SWIN_TENSOR(H * C, "s%d.b%d.fcw", s, i);
            SWIN_TENSOR(H, "s%d.b%d.fcb", s, i);
            SWIN_TENSOR(C * H, "s%d.b%d.fc2w", s, i);
            SWIN_TENSOR(C, "s%d.b%d.fc2b", s, i);
        }
    }
    SWIN_TENSOR(C, "lnfw");
    SWIN_TENSOR(C, "lnfb");
    SWIN_TENSOR((size_t)c->num_classes * C, "headw");
    SWIN_TENSOR((size_t)c->num_classes, "headb");
#undef SWIN_TENSOR
    return total;
}

// What a Swin config costs beyond its parameters: the window tables of
// every block (perm N, index T^2, mask N*T, bias N*NH*T); NULL or the reason.
static const char *swin_tables_error(const SwinConfig *c) {
    size_t res = (size_t)(c->image_size / c->patch_size);
    unsigned long long tables = 0;
    for (int s = 0; s < c->num_stages; s++) {
        res = s > 0 ? res / 2 : res;
        unsigned long long W = res <= (size_t)c->window ? res : (size_t)c->window;
        unsigned long long N = (unsigned long long)res * res, T = W * W;
        unsigned long long per_block = N + T * T + N * T + N * T * (unsigned)c->heads[s];
        tables += (unsigned long long)c->depths[s] * per_block;
        if (tables > SWIN_MAX_TABLES) {
            return "the window tables (window^2 x resolution^2 x heads) exceed 2^28 values";
        }
    }
    return NULL;
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
            why = swin_tables_error(&c);
        }
        if (why == NULL) {
            n = swin_layout(&c, 0, NULL, 0);
        }
        if (why != NULL) {
            return input_error(err, err_bytes,
                               "bad Swin header (S=%d P=%d E=%d stages=%d W=%d): %s", c.image_size,
                               c.patch_size, c.embed_dim, c.num_stages, c.window, why);
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

// Names the tensor of a checked header that holds parameter `index`.
static void vision_tensor_name(const int32_t h[VISION_HEADER_INTS], size_t index, char *name,
                               size_t name_bytes) {
    snprintf(name, name_bytes, "?");
    if (h[VH_FAMILY] == FAMILY_SWIN) {
        SwinConfig c;
        swin_config_from_header(h, &c);
        swin_layout(&c, index, name, name_bytes);
        return;
    }
    ViTConfig c = {.image_size = h[VH_IMAGE_SIZE], .image_channels = h[VH_IMAGE_CHANNELS],
                   .patch_size = h[VH_PATCH_SIZE], .num_classes = h[VH_NUM_CLASSES],
                   .channels = h[VH_CHANNELS], .num_layers = h[VH_NUM_LAYERS],
                   .num_heads = h[VH_NUM_HEADS], .mlp_ratio = h[VH_MLP_RATIO]};
    size_t sizes[VIT_NUM_PARAM_TENSORS], offset = 0;
    vit_param_sizes(sizes, &c);
    for (int i = 0; i < VIT_NUM_PARAM_TENSORS; i++) {
        if (index - offset < sizes[i]) {
            snprintf(name, name_bytes, "%s", VIT_PARAM_NAMES[i]);
            return;
        }
        offset += sizes[i];
    }
}

int vision_params_parse(Reader *r, const int32_t header[VISION_HEADER_INTS], float *params,
                        size_t n, char *err, size_t err_bytes) {
    if (reader_read(r, params, n * sizeof(float), "the parameters", err, err_bytes) != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(params[i])) {
            char name[64];
            vision_tensor_name(header, i, name, sizeof(name));
            return input_error(err, err_bytes, "tensor %s: parameter %zu is not finite (%g)",
                               name, i, (double)params[i]);
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
    if (vision_params_parse(r, header, p, n, err, err_bytes) != 0) {
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
    int32_t header[VISION_HEADER_INTS];
    char err[READER_ERR_BYTES];
    size_t expected = VISION_HEADER_INTS * sizeof(int32_t) + n * sizeof(float);
    if (fseek(f, 0, SEEK_SET) != 0 || reader_init_file(&r, f, err, sizeof(err)) != 0 ||
        reader_read(&r, header, sizeof(header), "the model header", err, sizeof(err)) != 0) {
        fatal("%s: cannot read the model header again", path);
    }
    if ((size_t)file_bytes != expected || r.size != expected) {
        fatal("%s: file is %ld bytes but its header describes %zu bytes (%zu parameters)%s", path,
              file_bytes, expected, n,
              (size_t)file_bytes < expected ? ": truncated" : ": trailing data");
    }
    if (vision_params_parse(&r, header, params, n, err, sizeof(err)) != 0) {
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
