// GPT-2's model file (llm.c's format, magic 20240326, fp32; docs/formats.md):
// the header, the parameters, a folded model's row means, the CRC32.
#include "gpt2.h"
#include "gpt2_private.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/checksum.h"
#include "core/reader.h"
#include "core/utils.h"

int gpt2_header_parse(const int32_t header[256], GPT2Config *cfg, NormMode *mode, char *err,
                      size_t err_bytes) {
    if (header[0] != GPT2_MODEL_MAGIC) {
        return input_error(err, err_bytes, "not a GPT-2 model file (magic %d, expected %d)",
                           header[0], GPT2_MODEL_MAGIC);
    }
    if (header[1] != GPT2_MODEL_VERSION_FP32) {
        return input_error(err, err_bytes,
                           "model file version %d is not supported (expected %d, fp32)",
                           header[1], GPT2_MODEL_VERSION_FP32);
    }
    GPT2Config c = {.max_seq_len = header[2], .vocab_size = header[3], .num_layers = header[4],
                    .num_heads = header[5], .channels = header[6],
                    .padded_vocab_size = header[7]};
    const char *why = gpt2_config_error(&c);
    if (why != NULL) {
        return input_error(err, err_bytes,
                           "bad model header (maxT=%d V=%d Vp=%d L=%d NH=%d C=%d): %s",
                           c.max_seq_len, c.vocab_size, c.padded_vocab_size, c.num_layers,
                           c.num_heads, c.channels, why);
    }
    NormMode m;
    if (norm_mode_from_file(header[GPT2_HEADER_SLOT_NORM_MODE], GPT2_HEADER_SLOT_NORM_MODE, &m,
                            err, err_bytes) != 0) {
        return -1;
    }
    // folded files: all 2L+1 norms RMS and every stream layer centred (the one layout run here)
    if (norm_policy(m)->folded && (header[GPT2_HEADER_SLOT_FOLDED_NORMS] != 2 * c.num_layers + 1 ||
                             header[GPT2_HEADER_SLOT_FOLDED_LAYERS] != GPT2_FOLDED_ALL)) {
        return input_error(err, err_bytes,
                           "folded model records %d folded norms and layer flags %d (expected %d "
                           "and %d)",
                           header[GPT2_HEADER_SLOT_FOLDED_NORMS],
                           header[GPT2_HEADER_SLOT_FOLDED_LAYERS], 2 * c.num_layers + 1,
                           GPT2_FOLDED_ALL);
    }
    *cfg = c;
    *mode = m;
    return 0;
}

// The first non-finite value of tensor `name` (n values), as an error; 0 if none.
static int check_finite(const float *x, size_t n, const char *name, char *err, size_t err_bytes) {
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            return input_error(err, err_bytes, "tensor %s: value %zu of %zu is not finite (%g)",
                               name, i, n, (double)x[i]);
        }
    }
    return 0;
}

static int gpt2_read_body(GPT2 *model, Reader *r, char *err, size_t err_bytes) {
    int32_t header[256];
    if (reader_read(r, header, sizeof(header), "the model header", err, err_bytes) != 0) {
        return -1;
    }
    GPT2Config cfg;
    NormMode mode;
    if (gpt2_header_parse(header, &cfg, &mode, err, err_bytes) != 0) {
        return -1;
    }
    size_t sizes[GPT2_NUM_PARAM_TENSORS];
    gpt2_param_sizes(sizes, &cfg);
    // gpt2_config_error bounds every dimension, so these sums stay far below SIZE_MAX
    size_t total = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        total += sizes[i];
    }
    // folded: the tied head's row means m_t (Vp floats) follow the parameters
    size_t extra = norm_policy(mode)->folded ? (size_t)cfg.padded_vocab_size : 0;
    size_t expected = 256 * sizeof(int32_t) + (total + extra) * sizeof(float);
    if (r->size != expected) {
        return input_error(err, err_bytes,
                           "file is %zu bytes but its header describes %zu bytes (%zu "
                           "parameters)%s",
                           r->size, expected, total,
                           r->size < expected ? ": truncated" : ": trailing data");
    }
    if (checksum_verify(r, header, err, err_bytes) != 0) {
        return -1;
    }
    model->config = cfg;
    model->mode = mode;
    if (gpt2_allocate_params(model) != 0) {
        return input_error(err, err_bytes, "out of memory for %zu parameters", total);
    }
    if (reader_read(r, model->params_memory, total * sizeof(float), "the parameters", err,
                    err_bytes) != 0) {
        return -1;
    }
    if (norm_policy(mode)->folded) {
        model->head_row_means = malloc(extra * sizeof(float));
        if (model->head_row_means == NULL) {
            return input_error(err, err_bytes, "out of memory for the head row means");
        }
        if (reader_read(r, model->head_row_means, extra * sizeof(float), "the head row means",
                        err, err_bytes) != 0) {
            return -1;
        }
        model->folded_norms = header[GPT2_HEADER_SLOT_FOLDED_NORMS];
        model->folded_layers = header[GPT2_HEADER_SLOT_FOLDED_LAYERS];
    }
    const float *p = model->params_memory;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        if (check_finite(p, sizes[i], gpt2_param_name(i), err, err_bytes) != 0) {
            return -1;
        }
        p += sizes[i];
    }
    if (norm_policy(mode)->folded &&
        check_finite(model->head_row_means, extra, "head row mean m_t", err, err_bytes) != 0) {
        return -1;
    }
    return 0;
}

int gpt2_read(GPT2 *model, Reader *r, char *err, size_t err_bytes) {
    gpt2_reset_state(model);
    if (gpt2_read_body(model, r, err, err_bytes) != 0) {
        gpt2_free(model);
        return -1;
    }
    return 0;
}

void gpt2_load(GPT2 *model, const char *path) {
    FILE *f = fopen_check(path, "rb");
    Reader r;
    char err[READER_ERR_BYTES];
    if (reader_init_file(&r, f, err, sizeof(err)) != 0 ||
        gpt2_read(model, &r, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    fclose(f);
}

static void write_model(FILE *f, const char *path, const void *ctx) {
    const GPT2 *model = ctx;
    int32_t header[256] = {0};
    header[0] = GPT2_MODEL_MAGIC;
    header[1] = GPT2_MODEL_VERSION_FP32;
    header[2] = model->config.max_seq_len;
    header[3] = model->config.vocab_size;
    header[4] = model->config.num_layers;
    header[5] = model->config.num_heads;
    header[6] = model->config.channels;
    header[7] = model->config.padded_vocab_size;
    header[GPT2_HEADER_SLOT_NORM_MODE] = norm_mode_file_value(model->mode);
    if (norm_policy(model->mode)->folded) {
        header[GPT2_HEADER_SLOT_FOLDED_NORMS] = model->folded_norms;
        header[GPT2_HEADER_SLOT_FOLDED_LAYERS] = model->folded_layers;
    }
    fwrite_check(header, sizeof(int32_t), 256, f, path);
    fwrite_check(model->params_memory, sizeof(float), model->num_parameters, f, path);
    if (norm_policy(model->mode)->folded) {
        fwrite_check(model->head_row_means, sizeof(float), (size_t)model->config.padded_vocab_size,
                     f, path);
    }
}

void gpt2_save(const GPT2 *model, const char *path) {
    write_file_atomic_checksummed(path, write_model, model);
}
