// The image classifiers' configs (ViT and Swin), their checks and Swin's
// stage geometry: what vit.c, swin.c, the model file (vision_model.c) and
// the layouts (vision_layout.c) all build from.
#ifndef FOLDNORM_VISION_CONFIG_H
#define FOLDNORM_VISION_CONFIG_H

#include "core/norm_mode.h"

typedef enum { FAMILY_VIT = 0, FAMILY_SWIN = 1 } VisionFamily;

// "ViT", "Swin", or "?" for any other value.
const char *vision_family_name(VisionFamily family);

typedef struct {
    int image_size;     // S (square images)
    int image_channels; // Cin
    int patch_size;     // P, S % P == 0
    int num_classes;    // K
    int channels;       // C
    int num_layers;     // L
    int num_heads;      // NH
    int mlp_ratio;      // hidden = mlp_ratio * C
} ViTConfig;

#define SWIN_MAX_STAGES 8

typedef struct {
    int image_size, image_channels, patch_size, num_classes;
    int embed_dim;  // C of stage 1; stage s has embed_dim * 2^s
    int num_stages;
    int depths[SWIN_MAX_STAGES];
    int heads[SWIN_MAX_STAGES];
    int window;     // W (a stage whose resolution is <= W uses its resolution and no shift)
    int mlp_ratio;
    int centre_ops; // 0/1: explicit centring ops after the patch norm and before each merge
    // 0/1: cbwc is the paper's Swin: every norm RMS, every stream-writing layer
    // centred, no centring ops; NOT the ln model (docs/math.md section 3)
    int paper_variant;
} SwinConfig;

// A model of either family: what a model file's header holds.
typedef struct {
    VisionFamily family;
    NormMode mode;
    ViTConfig vit;   // when family == FAMILY_VIT
    SwinConfig swin; // when family == FAMILY_SWIN
} VisionConfig;

// Tokens per image: (S/P)^2 patches + the cls token.
int vit_num_tokens(const ViTConfig *config);
// NULL or the reason the config is unusable.
const char *vit_config_error(const ViTConfig *config);
const char *swin_config_error(const SwinConfig *config);

// Stage s's token grid side: S/P halved s times.
int swin_stage_resolution(const SwinConfig *config, int stage);
// The window a stage of resolution res uses: W, or res when res <= W.
int swin_stage_window(const SwinConfig *config, int res);
// Is the stream of stage s foldable: can the block norms reading it be RMS
// and the layers writing it be centred without changing the ln model?
int swin_stage_stream_zero_mean(const SwinConfig *config, int stage);
// What cbwc builds: are the block norms of stage s (the final norm for the
// last stage) RMS, and the layers writing stage s's stream (its merge's
// reduction, attn projs, fc2s) centred? The foldable streams, or every one
// in the paper variant.
int swin_stage_rms_in_cbwc(const SwinConfig *config, int stage);
// Is every merging norm RMS in cbwc (foldable with the centring ops; the
// paper variant)?
int swin_merge_norm_rms_in_cbwc(const SwinConfig *config);

// The number of norms of a model (ViT 2L + 1; Swin the patch norm, two per
// block, one per merge and the final norm) and how many of them are foldable,
// i.e. run as RMSNorm in exact cbwc and in a folded model (ViT all; Swin
// the patch norm, the zero-mean stages' block norms, the merges' norms with the
// centring ops, the final norm after a zero-mean last stage; the paper
// variant runs every norm as RMSNorm but is no fold).
int vision_num_norms(const VisionConfig *config);
int vision_num_foldable_norms(const VisionConfig *config);

// The family's config error, a Swin paper variant outside cbwc, or what its
// shape costs beyond the parameters being out of bounds (attention scores,
// Swin's window tables), so that a small file with a huge image or window
// cannot ask for terabytes; NULL if usable.
const char *vision_config_error(const VisionConfig *config);

int vision_config_image_size(const VisionConfig *config);
int vision_config_image_channels(const VisionConfig *config);
int vision_config_num_classes(const VisionConfig *config);

#endif
