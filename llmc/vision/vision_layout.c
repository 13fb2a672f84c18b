#include "vision_layout.h"

#include <stdio.h>
#include <string.h>

#include "core/utils.h"

const char *const VIT_PARAM_NAMES[VIT_NUM_PARAM_TENSORS] = {
    "patchw", "patchb", "cls", "pos", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb", "headw", "headb"};

void vit_param_sizes(size_t s[VIT_NUM_PARAM_TENSORS], const ViTConfig *c) {
    size_t C = (size_t)c->channels, L = (size_t)c->num_layers, H = C * (size_t)c->mlp_ratio;
    size_t PD = (size_t)c->image_channels * c->patch_size * c->patch_size;
    size_t T = (size_t)vit_num_tokens(c), K = (size_t)c->num_classes;
    size_t sizes[VIT_NUM_PARAM_TENSORS] = {
        C * PD, C, C, T * C,                      // patchw, patchb, cls, pos
        L * C, L * C, L * 3 * C * C, L * 3 * C,   // ln1w, ln1b, qkvw, qkvb
        L * C * C, L * C, L * C, L * C,           // attprojw, attprojb, ln2w, ln2b
        L * H * C, L * H, L * C * H, L * C,       // fcw, fcb, fcprojw, fcprojb
        C, C, K * C, K};                          // lnfw, lnfb, headw, headb
    memcpy(s, sizes, sizeof(sizes));
}

int vit_param_decayed(int i) {
    return i == VIT_PATCHW || i == VIT_QKVW || i == VIT_ATTPROJW || i == VIT_FCW ||
           i == VIT_FCPROJW || i == VIT_HEADW;
}

LayerRole vit_param_role(int i) {
    switch (i) {
    case VIT_PATCHW: case VIT_PATCHB: case VIT_CLS: case VIT_POS:
    case VIT_ATTPROJW: case VIT_ATTPROJB: case VIT_FCPROJW: case VIT_FCPROJB:
        return LAYER_ROLE_STREAM_WRITER;
    case VIT_LN1W: case VIT_LN1B: case VIT_LN2W: case VIT_LN2B: case VIT_LNFW: case VIT_LNFB:
        return LAYER_ROLE_NORM;
    default:
        return LAYER_ROLE_INNER;
    }
}

// the tensors CBWC centres in cbwc: those the cbwc policy centres
static int vit_param_centred(int i) {
    return norm_policy_centres(norm_policy(MODE_CBWC), vit_param_role(i));
}

static void vit_layout(const ViTConfig *c, TensorTable *table) {
    size_t sizes[VIT_NUM_PARAM_TENSORS];
    vit_param_sizes(sizes, c); // the config's bounds keep every size below 2^50
    tensor_table_init(table, VIT_NUM_PARAM_TENSORS);
    for (int i = 0; i < VIT_NUM_PARAM_TENSORS; i++) {
        tensor_table_add(table, VIT_PARAM_NAMES[i], sizes[i], vit_param_decayed(i),
                         vit_param_centred(i));
    }
}

int swin_num_blocks(const SwinConfig *c) {
    int n = 0;
    for (int s = 0; s < c->num_stages; s++) {
        n += c->depths[s];
    }
    return n;
}

// Adds tensor "<prefix><label>"; decayed: a matrix; centred: CBWC in cbwc.
static size_t add(TensorTable *t, const char *prefix, const char *label, size_t size, int decayed,
                  int centred) {
    char name[2 * TENSOR_NAME_BYTES]; // the longest, "s7.b255.projw", fits either way
    snprintf(name, sizeof(name), "%s%s", prefix, label);
    return tensor_table_add(t, name, size, decayed, centred);
}

void swin_layout(const SwinConfig *c, TensorTable *t, SwinOffsets *offsets) {
    const int num_blocks = swin_num_blocks(c);
    SwinOffsets unused;
    SwinOffsets *o = offsets != NULL ? offsets : &unused;
    memset(o, 0, sizeof(*o));
    if (offsets != NULL) {
        o->blocks = calloc_check((size_t)num_blocks, sizeof(SwinBlockOffsets), "block offsets");
    }
    tensor_table_init(t, 8 + 3 * c->num_stages + 13 * num_blocks);
    const size_t E = (size_t)c->embed_dim;
    const size_t PD = (size_t)c->image_channels * c->patch_size * c->patch_size;
    o->patchw = add(t, "", "patchw", E * PD, 1, 1);
    o->patchb = add(t, "", "patchb", E, 0, 1);
    o->pnw = add(t, "", "pnw", E, 0, 0);
    o->pnb = add(t, "", "pnb", E, 0, 0);
    char prefix[TENSOR_NAME_BYTES];
    size_t C = E;
    for (int s = 0, b = 0; s < c->num_stages; s++) {
        C = E << s;
        const int centred = swin_stage_rms_in_cbwc(c, s); // CBWC in cbwc
        if (s > 0) {
            SwinMergeOffsets *mg = &o->merges[s];
            snprintf(prefix, sizeof(prefix), "s%d.", s);
            mg->normw = add(t, prefix, "mnw", 2 * C, 0, 0);
            mg->normb = add(t, prefix, "mnb", 2 * C, 0, 0);
            mg->redw = add(t, prefix, "redw", C * 2 * C, 1, centred);
        }
        const size_t W = (size_t)swin_stage_window(c, swin_stage_resolution(c, s));
        const size_t H = C * (size_t)c->mlp_ratio, NH = (size_t)c->heads[s];
        const size_t table = (2 * W - 1) * (2 * W - 1);
        for (int i = 0; i < c->depths[s]; i++, b++) {
            SwinBlockOffsets k;
            snprintf(prefix, sizeof(prefix), "s%d.b%d.", s, i);
            k.ln1w = add(t, prefix, "ln1w", C, 0, 0);
            k.ln1b = add(t, prefix, "ln1b", C, 0, 0);
            k.qkvw = add(t, prefix, "qkvw", 3 * C * C, 1, 0);
            k.qkvb = add(t, prefix, "qkvb", 3 * C, 0, 0);
            k.rpb = add(t, prefix, "rpb", table * NH, 0, 0);
            k.projw = add(t, prefix, "projw", C * C, 1, centred);
            k.projb = add(t, prefix, "projb", C, 0, centred);
            k.ln2w = add(t, prefix, "ln2w", C, 0, 0);
            k.ln2b = add(t, prefix, "ln2b", C, 0, 0);
            k.fcw = add(t, prefix, "fcw", H * C, 1, 0);
            k.fcb = add(t, prefix, "fcb", H, 0, 0);
            k.fc2w = add(t, prefix, "fc2w", C * H, 1, centred);
            k.fc2b = add(t, prefix, "fc2b", C, 0, centred);
            if (offsets != NULL) {
                o->blocks[b] = k;
            }
        }
    }
    o->lnfw = add(t, "", "lnfw", C, 0, 0);
    o->lnfb = add(t, "", "lnfb", C, 0, 0);
    o->headw = add(t, "", "headw", (size_t)c->num_classes * C, 1, 0);
    o->headb = add(t, "", "headb", (size_t)c->num_classes, 0, 0);
}

void vision_layout(const VisionConfig *config, TensorTable *table) {
    if (config->family == FAMILY_SWIN) {
        swin_layout(&config->swin, table, NULL);
    } else {
        vit_layout(&config->vit, table);
    }
}
