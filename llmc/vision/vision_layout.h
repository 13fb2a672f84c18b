// Where each parameter of a ViT or Swin lives in the flat buffer and the
// model file (docs/formats.md, "Vision model file"): the only place the
// tensor order, names and sizes are written down. vit.c and swin.c point
// their tensors by it; vision_model.c counts and names parameters by it.
#ifndef FOLDNORM_VISION_LAYOUT_H
#define FOLDNORM_VISION_LAYOUT_H

#include <stddef.h>

#include "core/norm_mode.h"
#include "core/tensor_table.h"
#include "vision_config.h"

// ViT's parameter tensors, in the model file's order.
typedef enum {
    VIT_PATCHW, VIT_PATCHB, VIT_CLS, VIT_POS, VIT_LN1W, VIT_LN1B, VIT_QKVW, VIT_QKVB,
    VIT_ATTPROJW, VIT_ATTPROJB, VIT_LN2W, VIT_LN2B, VIT_FCW, VIT_FCB, VIT_FCPROJW, VIT_FCPROJB,
    VIT_LNFW, VIT_LNFB, VIT_HEADW, VIT_HEADB,
    VIT_NUM_PARAM_TENSORS
} ViTTensor;
extern const char *const VIT_PARAM_NAMES[VIT_NUM_PARAM_TENSORS];
void vit_param_sizes(size_t sizes[VIT_NUM_PARAM_TENSORS], const ViTConfig *config);
// Does parameter tensor i get weight decay (the matrices: patchw, qkvw,
// attprojw, fcw, fcprojw, headw)?
int vit_param_decayed(int i);
// Tensor i's role for the norm policy (norm_mode.h): the stream writers
// (patch embedding, cls, pos, every attn proj and mlp fc2, biases included)
// are the layers cbwc centres.
LayerRole vit_param_role(int i);

// Swin's parameter offsets, per block and per patch merging.
typedef struct {
    size_t ln1w, ln1b, qkvw, qkvb, rpb, projw, projb, ln2w, ln2b, fcw, fcb, fc2w, fc2b;
} SwinBlockOffsets;
typedef struct {
    size_t normw, normb, redw;
} SwinMergeOffsets;
typedef struct {
    size_t patchw, patchb, pnw, pnb, lnfw, lnfb, headw, headb;
    SwinMergeOffsets merges[SWIN_MAX_STAGES]; // [s] merges into stage s >= 1
    SwinBlockOffsets *blocks;                 // (sum of depths), allocated by swin_layout
} SwinOffsets;

int swin_num_blocks(const SwinConfig *config);
// Swin's tensors in file order into table (initialised here) and, when
// offsets != NULL, their offsets (offsets->blocks allocated; the caller frees).
// The config must pass swin_config_error.
void swin_layout(const SwinConfig *config, TensorTable *table, SwinOffsets *offsets);

// The table of either family (initialised here; the config must pass
// vision_config_error).
void vision_layout(const VisionConfig *config, TensorTable *table);

#endif
