#include "debug_state.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

static float float_from_bits(int32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

// n values of `size` bytes each, allocated and read, or -1 (err).
static int read_array(Reader *r, void **dst, size_t n, size_t size, const char *what, char *err,
                      size_t err_bytes) {
    size_t bytes = n * size; // the caller checked the file holds n values
    *dst = malloc(bytes == 0 ? 1 : bytes);
    if (*dst == NULL) {
        return input_error(err, err_bytes, "out of memory for %s", what);
    }
    return reader_read(r, *dst, bytes, what, err, err_bytes);
}

// Sum of counts[i] 4-byte values plus the 1024-byte header, or -1 on overflow.
static int state_bytes(const size_t *counts, int k, size_t *bytes) {
    size_t total = 0;
    for (int i = 0; i < k; i++) {
        if (size_add(total, counts[i], &total) != 0) {
            return -1;
        }
    }
    if (size_mul(total, 4, &total) != 0 || size_add(total, 1024, bytes) != 0) {
        return -1;
    }
    return 0;
}

static int gpt2_state_body(GPT2DebugState *s, Reader *r, int max_seq_len, int vocab_size,
                           size_t num_parameters, char *err, size_t err_bytes) {
    int32_t h[256];
    if (reader_read(r, h, sizeof(h), "the state header", err, err_bytes) != 0) {
        return -1;
    }
    if (h[0] != GPT2_STATE_MAGIC) {
        return input_error(err, err_bytes, "not a debug state (magic %d, expected %d)", h[0],
                           GPT2_STATE_MAGIC);
    }
    if (h[1] != GPT2_STATE_VERSION) {
        return input_error(err, err_bytes, "debug state version %d is not supported (expected %d)",
                           h[1], GPT2_STATE_VERSION);
    }
    s->B = h[2];
    s->T = h[3];
    s->num_steps = h[4];
    if (s->B <= 0 || s->T <= 0 || s->T > max_seq_len || s->B > (1 << 16) || s->num_steps < 0 ||
        s->num_steps > (1 << 20)) {
        return input_error(err, err_bytes, "bad header: B=%d T=%d steps=%d (model maxT %d)", s->B,
                           s->T, s->num_steps, max_seq_len);
    }
    s->adamw = (AdamWConfig){.learning_rate = float_from_bits(h[5]), .beta1 = float_from_bits(h[6]),
                             .beta2 = float_from_bits(h[7]), .eps = float_from_bits(h[8]),
                             .weight_decay = float_from_bits(h[9])};
    s->grad_clip = float_from_bits(h[10]);
    size_t BT = (size_t)s->B * (size_t)s->T, V = (size_t)vocab_size, BTV, expected;
    if (size_mul(BT, V, &BTV) != 0) {
        return input_error(err, err_bytes, "size overflow: B*T*V for B=%d T=%d V=%zu", s->B,
                           s->T, V);
    }
    size_t counts[] = {BT, BT, BTV, 1, num_parameters, (size_t)s->num_steps};
    if (state_bytes(counts, 6, &expected) != 0 || r->size != expected) {
        return input_error(err, err_bytes,
                           "file is %zu bytes, expected %zu for B=%d T=%d V=%zu and %zu "
                           "parameters%s",
                           r->size, expected, s->B, s->T, V, num_parameters,
                           r->size < expected ? ": truncated" : "");
    }
    if (read_array(r, (void **)&s->x, BT, sizeof(int32_t), "x", err, err_bytes) != 0 ||
        read_array(r, (void **)&s->y, BT, sizeof(int32_t), "y", err, err_bytes) != 0 ||
        read_array(r, (void **)&s->logits, BTV, sizeof(float), "logits", err, err_bytes) != 0 ||
        reader_read(r, &s->loss, sizeof(float), "loss", err, err_bytes) != 0 ||
        read_array(r, (void **)&s->grads, num_parameters, sizeof(float), "grads", err,
                   err_bytes) != 0 ||
        read_array(r, (void **)&s->losses, (size_t)s->num_steps, sizeof(float), "losses", err,
                   err_bytes) != 0) {
        return -1;
    }
    for (size_t i = 0; i < BT; i++) {
        if (s->x[i] < 0 || s->x[i] >= vocab_size || s->y[i] < -1 || s->y[i] >= vocab_size) {
            return input_error(err, err_bytes,
                               "token id out of range [0, %d) at position %zu (x %d, y %d)",
                               vocab_size, i, s->x[i], s->y[i]);
        }
    }
    return 0;
}

int gpt2_debug_state_parse(GPT2DebugState *s, Reader *r, int max_seq_len, int vocab_size,
                           size_t num_parameters, char *err, size_t err_bytes) {
    memset(s, 0, sizeof(*s));
    if (gpt2_state_body(s, r, max_seq_len, vocab_size, num_parameters, err, err_bytes) != 0) {
        gpt2_debug_state_free(s);
        return -1;
    }
    return 0;
}

void gpt2_debug_state_load(GPT2DebugState *s, const char *path, const GPT2 *model) {
    FILE *f = fopen_check(path, "rb");
    Reader r;
    char err[READER_ERR_BYTES];
    if (reader_init_file(&r, f, err, sizeof(err)) != 0 ||
        gpt2_debug_state_parse(s, &r, model->config.max_seq_len, model->config.vocab_size,
                               model->num_parameters, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    fclose(f);
}

void gpt2_debug_state_free(GPT2DebugState *s) {
    free(s->x);
    free(s->y);
    free(s->logits);
    free(s->grads);
    free(s->losses);
    memset(s, 0, sizeof(*s));
}

static int vision_state_body(VisionDebugState *s, Reader *r, int family, int image_size,
                             int image_channels, int num_classes, size_t num_parameters,
                             char *err, size_t err_bytes) {
    int32_t h[256];
    if (reader_read(r, h, sizeof(h), "the state header", err, err_bytes) != 0) {
        return -1;
    }
    if (h[0] != VISION_STATE_MAGIC || h[1] != VISION_STATE_VERSION) {
        return input_error(err, err_bytes,
                           "not a vision debug state (magic %d version %d, expected %d version %d)",
                           h[0], h[1], VISION_STATE_MAGIC, VISION_STATE_VERSION);
    }
    if (h[11] != family) {
        return input_error(err, err_bytes, "state of family %d, model of family %d", h[11],
                           family);
    }
    s->B = h[2];
    s->num_steps = h[3];
    if (s->B <= 0 || s->B > (1 << 16) || s->num_steps < 0 || s->num_steps > (1 << 20)) {
        return input_error(err, err_bytes, "bad header: B=%d steps=%d", s->B, s->num_steps);
    }
    s->adamw = (AdamWConfig){.learning_rate = float_from_bits(h[4]), .beta1 = float_from_bits(h[5]),
                             .beta2 = float_from_bits(h[6]), .eps = float_from_bits(h[7]),
                             .weight_decay = float_from_bits(h[8])};
    s->grad_clip = float_from_bits(h[9]);
    s->smoothing = float_from_bits(h[10]);
    size_t B = (size_t)s->B, K = (size_t)num_classes, n_img, BK, expected;
    size_t pixels = (size_t)image_size * (size_t)image_size;
    if (size_mul(B * (size_t)image_channels, pixels, &n_img) != 0 ||
        size_mul(B, K, &BK) != 0) {
        return input_error(err, err_bytes, "size overflow for B=%d", s->B);
    }
    size_t counts[] = {n_img, B, BK, 1, num_parameters, (size_t)s->num_steps};
    if (state_bytes(counts, 6, &expected) != 0 || r->size != expected) {
        return input_error(err, err_bytes,
                           "file is %zu bytes, expected %zu for B=%zu and %zu parameters%s",
                           r->size, expected, B, num_parameters,
                           r->size < expected ? ": truncated" : "");
    }
    if (read_array(r, (void **)&s->images, n_img, sizeof(float), "images", err, err_bytes) != 0 ||
        read_array(r, (void **)&s->labels, B, sizeof(int32_t), "labels", err, err_bytes) != 0 ||
        read_array(r, (void **)&s->logits, BK, sizeof(float), "logits", err, err_bytes) != 0 ||
        reader_read(r, &s->loss, sizeof(float), "loss", err, err_bytes) != 0 ||
        read_array(r, (void **)&s->grads, num_parameters, sizeof(float), "grads", err,
                   err_bytes) != 0 ||
        read_array(r, (void **)&s->losses, (size_t)s->num_steps, sizeof(float), "losses", err,
                   err_bytes) != 0) {
        return -1;
    }
    for (size_t i = 0; i < B; i++) {
        if (s->labels[i] < 0 || s->labels[i] >= num_classes) {
            return input_error(err, err_bytes, "label %d out of range [0, %d)", s->labels[i],
                               num_classes);
        }
    }
    return 0;
}

int vision_debug_state_parse(VisionDebugState *s, Reader *r, int family, int image_size,
                             int image_channels, int num_classes, size_t num_parameters,
                             char *err, size_t err_bytes) {
    memset(s, 0, sizeof(*s));
    if (vision_state_body(s, r, family, image_size, image_channels, num_classes, num_parameters,
                          err, err_bytes) != 0) {
        vision_debug_state_free(s);
        return -1;
    }
    return 0;
}

void vision_debug_state_free(VisionDebugState *s) {
    free(s->images);
    free(s->labels);
    free(s->logits);
    free(s->grads);
    free(s->losses);
    memset(s, 0, sizeof(*s));
}
