// Checks train_gpt2's model against a debug state written by an independent
// reference (dev/reference/gpt2.py, or llm.c's train_gpt2.py): logits, loss,
// every parameter gradient and, when the state holds them, the losses of N
// AdamW steps on the same batch.
//
// Tolerances (fp32): a tensor passes when max|ours - ref| <= tol * max|ref|.
// Both sides sum hundreds of fp32 products in different orders; the rounding
// error of such sums is ~sqrt(n) * 6e-8 relative to the magnitude of the
// tensor, i.e. ~1e-6 at these sizes, so tol = 1e-5 leaves a 10x margin
// while a wrong formula shows up as 1e-2 or more.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2.h"
#include "utils.h"

#define STATE_MAGIC 20240327
#define STATE_VERSION 2

static const char *const PARAM_NAMES[GPT2_NUM_PARAM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};

typedef struct {
    int B, T, num_steps;
    AdamWConfig adamw;
    float grad_clip;
    int *x, *y;
    float *logits; // (B, T, V)
    float loss;
    float *grads;  // num_parameters
    float *losses; // num_steps
} DebugState;

static float float_from_bits(int32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static void state_load(DebugState *s, const char *path, const GPT2 *model) {
    FILE *f = fopen_check(path, "rb");
    long file_bytes = file_size_bytes(f, path);
    int32_t h[256];
    fread_check(h, sizeof(int32_t), 256, f, path, "the state header");
    if (h[0] != STATE_MAGIC) {
        fatal("%s: not a debug state (magic %d, expected %d)", path, h[0], STATE_MAGIC);
    }
    if (h[1] != STATE_VERSION) {
        fatal("%s: debug state version %d is not supported (expected %d)", path, h[1],
              STATE_VERSION);
    }
    s->B = h[2];
    s->T = h[3];
    s->num_steps = h[4];
    if (s->B <= 0 || s->T <= 0 || s->T > model->config.max_seq_len || s->B > (1 << 16) ||
        s->num_steps < 0 || s->num_steps > (1 << 20)) {
        fatal("%s: bad header: B=%d T=%d steps=%d (model maxT %d)", path, s->B, s->T,
              s->num_steps, model->config.max_seq_len);
    }
    s->adamw = (AdamWConfig){.learning_rate = float_from_bits(h[5]), .beta1 = float_from_bits(h[6]),
                             .beta2 = float_from_bits(h[7]), .eps = float_from_bits(h[8]),
                             .weight_decay = float_from_bits(h[9])};
    s->grad_clip = float_from_bits(h[10]);
    size_t BT = (size_t)s->B * s->T, V = (size_t)model->config.vocab_size;
    size_t expected = 1024 + 2 * BT * 4 + BT * V * 4 + 4 + model->num_parameters * 4 +
                      (size_t)s->num_steps * 4;
    if ((size_t)file_bytes != expected) {
        fatal("%s: file is %ld bytes, expected %zu for B=%d T=%d V=%zu and %zu parameters", path,
              file_bytes, expected, s->B, s->T, V, model->num_parameters);
    }
    s->x = malloc_check(BT * sizeof(int), "x");
    s->y = malloc_check(BT * sizeof(int), "y");
    s->logits = malloc_check(BT * V * sizeof(float), "logits");
    s->grads = malloc_check(model->num_parameters * sizeof(float), "grads");
    s->losses = malloc_check(((size_t)s->num_steps + 1) * sizeof(float), "losses");
    fread_check(s->x, sizeof(int), BT, f, path, "x");
    fread_check(s->y, sizeof(int), BT, f, path, "y");
    fread_check(s->logits, sizeof(float), BT * V, f, path, "logits");
    fread_check(&s->loss, sizeof(float), 1, f, path, "loss");
    fread_check(s->grads, sizeof(float), model->num_parameters, f, path, "grads");
    fread_check(s->losses, sizeof(float), (size_t)s->num_steps, f, path, "losses");
    fclose(f);
    for (size_t i = 0; i < BT; i++) {
        if (s->x[i] < 0 || s->x[i] >= (int)V || s->y[i] < -1 || s->y[i] >= (int)V) {
            fatal("%s: token id out of range [0, %zu) at position %zu", path, V, i);
        }
    }
}

// max|a - b| / max|b| over n values read with strides (row length len).
static double relative_error(const float *a, const float *b, size_t rows, size_t len,
                             size_t stride_a, size_t stride_b) {
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < len; i++) {
            double d = fabs((double)a[r * stride_a + i] - (double)b[r * stride_b + i]);
            double m = fabs((double)b[r * stride_b + i]);
            max_diff = d > max_diff ? d : max_diff;
            max_ref = m > max_ref ? m : max_ref;
        }
    }
    if (max_ref == 0.0) {
        return max_diff; // both should be zero: report the absolute difference
    }
    return max_diff / max_ref;
}

static int check(const char *what, double err, double tol) {
    int ok = isfinite(err) && err <= tol;
    printf("  %-10s %.3e  (tol %.0e)  %s\n", what, err, tol, ok ? "ok" : "FAIL");
    return ok;
}

static void usage(void) {
    fprintf(stderr,
            "usage: test_gpt2 MODEL.bin STATE.bin [-N ln|rms|cbwc] [-r rel_tol] [-l loss_tol]\n"
            "                 [--forward-only]\n"
            "  Checks logits, loss, gradients and AdamW losses against a debug state.\n"
            "  --forward-only  logits and loss only (e.g. a folded model against the\n"
            "                  state of the ln model it came from)\n"
            "  -N    norm mode (default: the one recorded in the model file)\n"
            "  -r    relative tolerance for logits and gradients (default 1e-5)\n"
            "  -l    absolute tolerance for the losses of the AdamW steps (default 1e-4)\n");
    exit(EXIT_FAILURE);
}

int main(int argc, char **argv) {
    if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-') {
        usage();
    }
    const char *mode_name = NULL;
    double rel_tol = 1e-5, loss_tol = 1e-4;
    int forward_only = 0;
    for (int i = 3; i < argc; i += 2) {
        if (strcmp(argv[i], "--forward-only") == 0) {
            forward_only = 1;
            i -= 1;
            continue;
        }
        if (i + 1 >= argc) {
            usage();
        }
        if (strcmp(argv[i], "-N") == 0) {
            mode_name = argv[i + 1];
        } else if (strcmp(argv[i], "-r") == 0) {
            rel_tol = atof(argv[i + 1]);
        } else if (strcmp(argv[i], "-l") == 0) {
            loss_tol = atof(argv[i + 1]);
        } else {
            usage();
        }
    }
    GPT2 model;
    gpt2_load(&model, argv[1]);
    if (mode_name != NULL && norm_mode_parse(mode_name, &model.mode) != 0) {
        fatal("-N: unknown norm mode '%s' (expected ln, rms or cbwc)", mode_name);
    }
    DebugState s;
    state_load(&s, argv[2], &model);
    const int V = model.config.vocab_size, Vp = model.config.padded_vocab_size;
    const size_t BT = (size_t)s.B * s.T;
    printf("test_gpt2: %s mode, L=%d C=%d V=%d B=%d T=%d, %d AdamW steps\n",
           norm_mode_name(model.mode), model.config.num_layers, model.config.channels, V, s.B,
           s.T, s.num_steps);

    int ok = 1;
    gpt2_forward(&model, s.x, s.y, s.B, s.T);
    ok &= check("logits", relative_error(model.acts.logits, s.logits, BT, V, Vp, V), rel_tol);
    ok &= check("loss", fabs(model.mean_loss - s.loss) / fabs(s.loss), rel_tol);
    if (forward_only) {
        s.num_steps = 0;
        goto done;
    }
    gpt2_zero_grad(&model);
    gpt2_backward(&model, 1.0f / (float)model.loss_tokens); // mean over unmasked targets
    size_t offset = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        size_t n = model.param_sizes[i];
        ok &= check(PARAM_NAMES[i],
                    relative_error(model.grads_memory + offset, s.grads + offset, 1, n, n, n),
                    rel_tol);
        offset += n;
    }
    // losses of N AdamW steps on the same batch: loss k is measured after k updates
    if (s.num_steps > 0) {
        double worst = 0.0;
        float last = 0.0f;
        for (int k = 0; k < s.num_steps; k++) {
            if (k > 0) {
                gpt2_update(&model, &s.adamw, s.grad_clip);
            }
            gpt2_forward(&model, s.x, s.y, s.B, s.T);
            last = model.mean_loss;
            double d = fabs(last - s.losses[k]);
            worst = d > worst ? d : worst;
            gpt2_zero_grad(&model);
            gpt2_backward(&model, 1.0f / (float)model.loss_tokens); // mean over unmasked targets
        }
        printf("  last loss  ours %.6f  reference %.6f\n", last,
               s.losses[s.num_steps - 1]);
        ok &= check("steps", worst, loss_tol);
    }
done:
    printf("%s\n", ok ? "OK" : "FAILED");
    gpt2_free(&model);
    free(s.x);
    free(s.y);
    free(s.logits);
    free(s.grads);
    free(s.losses);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
