// The norm policy's table (norm_mode.h): one row per mode.
#include "norm_mode.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reader.h"
#include "utils.h"

#define NUM_MODES 5
#define SHARE_UNITS 65536.0f // model files store prms's share in units of 2^-16

// -N's words, in NORM_MODE_FLAG_WORDS's order
static const NormMode FLAG_MODES[] = {MODE_LN, MODE_RMS, MODE_CBWC, MODE_PRMS};
#define NUM_FLAG_MODES ((int)(sizeof(FLAG_MODES) / sizeof(FLAG_MODES[0])))

static float prms_share = NORM_PRMS_SHARE_DEFAULT; // -nf's target

// prms_share in units of 2^-16, at least 1 (what model files store)
static int32_t prms_share_units(void) {
    const float units = roundf(prms_share * SHARE_UNITS);
    return units < 1.0f ? 1 : units > SHARE_UNITS ? (int32_t)SHARE_UNITS : (int32_t)units;
}

// Indexed by NormMode.
static const NormPolicy POLICIES[NUM_MODES] = {
    [MODE_LN] = {.name = "ln", .file_value = 0, .trainable = true, .centre_all = true},
    [MODE_RMS] = {.name = "rms",
                  .file_value = 1,
                  .trainable = true,
                  .fold_refusal = "nothing to fold (its norms are RMSNorm already), and an rms "
                                  "model is a different function of its weights"},
    [MODE_CBWC] = {.name = "cbwc",
                   .file_value = 2,
                   .trainable = true,
                   .centre_uncentred = true,
                   .cbwc = true},
    [MODE_FOLDED] = {.name = "folded",
                     .file_value = 3,
                     .centre_uncentred = true,
                     .folded = true,
                     .fold_refusal = "it is folded already"},
    [MODE_PRMS] = {.name = "prms",
                   .file_value = 4,
                   .trainable = true,
                   .partial = true,
                   .fold_refusal = "partial RMSNorm is not the ln model of its weights (its RMS "
                                   "skips features, and no centring of the layers before it "
                                   "turns a LayerNorm into it)",
                   .gpu_refusal = "partial RMSNorm runs on the CPU only (train_gpt2, train_vit)",
                   .onnx_refusal = "the ONNX export writes LayerNorm and RMSNorm, not partial "
                                   "RMSNorm"},
};

const NormPolicy *norm_policy(NormMode mode) {
    if (!((int)mode >= 0 && (int)mode < NUM_MODES)) {
        fatal("norm mode %d: no such mode", (int)mode);
    }
    return &POLICIES[mode];
}

bool norm_policy_centres(const NormPolicy *policy, LayerRole role) {
    return role == LAYER_ROLE_STREAM_WRITER && (policy->cbwc || policy->folded);
}

const char *norm_mode_name(NormMode mode) {
    return ((int)mode >= 0 && (int)mode < NUM_MODES) ? POLICIES[mode].name : "?";
}

int norm_mode_parse(const char *name, NormMode *mode) {
    for (int i = 0; i < NUM_FLAG_MODES; i++) {
        if (strcmp(name, POLICIES[FLAG_MODES[i]].name) == 0) {
            *mode = FLAG_MODES[i];
            return 0;
        }
    }
    return -1;
}

NormMode norm_mode_from_flag(int index) {
    if (index < 0) {
        return MODE_LN;
    }
    if (index >= NUM_FLAG_MODES) {
        fatal("-N: flag index %d: no such mode", index);
    }
    return FLAG_MODES[index];
}

NormKind norm_mode_kernel(NormMode mode, bool foldable) {
    const NormPolicy *p = norm_policy(mode);
    return (NormKind){.centre = p->centre_all || (p->centre_uncentred && !foldable),
                      .partial_share = p->partial ? (float)prms_share_units() / SHARE_UNITS : 0.0f};
}

int norm_mode_from_file(int32_t value, int slot, NormMode *mode, char *err, size_t err_bytes) {
    char known[128] = "";
    for (int i = 0; i < NUM_MODES; i++) {
        if (POLICIES[i].partial && (value & 255) == POLICIES[i].file_value && value >> 8 >= 1 &&
            value >> 8 <= (int32_t)SHARE_UNITS) {
            prms_share = (float)(value >> 8) / SHARE_UNITS;
            *mode = (NormMode)i;
            return 0;
        }
        if (!POLICIES[i].partial && POLICIES[i].file_value == value) { // prms needs its share
            *mode = (NormMode)i;
            return 0;
        }
        const size_t used = strlen(known);
        snprintf(known + used, sizeof(known) - used, "%s%d=%s", i > 0 ? ", " : "",
                 (int)POLICIES[i].file_value, POLICIES[i].name);
    }
    return input_error(err, err_bytes, "unknown norm mode %d in header slot %d (%s)", (int)value,
                       slot, known);
}

int32_t norm_mode_file_value(NormMode mode) {
    const int32_t units = norm_policy(mode)->partial ? prms_share_units() : 0;
    return norm_policy(mode)->file_value + units * 256;
}

float *norm_mode_prms_share_flag(void) { return &prms_share; }

void norm_mode_require_gpu(NormMode mode, const char *program) {
    const char *refusal = norm_policy(mode)->gpu_refusal;
    if (refusal != NULL) {
        fatal("%s: norm mode %s: %s", program, norm_mode_name(mode), refusal);
    }
}
