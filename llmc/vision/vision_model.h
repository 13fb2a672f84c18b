// The model file shared by the image classifiers (ViT and Swin): a 256-slot
// int32 header naming the family, the norm mode and the config, then the
// fp32 parameters in the family's order (vision_layout.h; docs/formats.md,
// "Vision model file"). This file owns the header <-> config mapping.
#ifndef FOLDNORM_VISION_MODEL_H
#define FOLDNORM_VISION_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/reader.h"
#include "vision_config.h"

#define VISION_MODEL_MAGIC 20261129
#define VISION_MODEL_VERSION 1
#define VISION_HEADER_INTS 256

enum {
    VH_MAGIC = 0,
    VH_VERSION = 1,
    VH_FAMILY = 2,
    VH_NORM_MODE = 3,
    VH_IMAGE_SIZE = 4,
    VH_IMAGE_CHANNELS = 5,
    VH_PATCH_SIZE = 6,
    VH_NUM_CLASSES = 7,
    VH_CHANNELS = 8,     // ViT width; Swin embed dim (stage 1)
    VH_NUM_LAYERS = 9,   // ViT depth; Swin number of stages
    VH_NUM_HEADS = 10,   // ViT heads
    VH_MLP_RATIO = 11,
    VH_WINDOW = 12,      // Swin window size
    VH_CENTRE_OPS = 13, // Swin: explicit centring after the patch norm (0/1)
    VH_FOLDED_NORMS = 14, // folded models: norms run as RMSNorm (vision_num_foldable_norms); else 0
    VH_PAPER_VARIANT = 15, // Swin: the paper's variant of cbwc (0/1; 0 in older files)
    VH_DEPTHS = 16,      // Swin: slots 16..23, blocks per stage
    VH_HEADS = 24,       // Swin: slots 24..31, heads per stage
};

// The header of a model with this config (magic, version, family, mode, config;
// a folded model's count of RMS norms).
void vision_header_from_config(const VisionConfig *config, int32_t header[VISION_HEADER_INTS]);
// The config a header describes, unchecked (vision_header_parse checks it).
void vision_config_from_header(const int32_t header[VISION_HEADER_INTS], VisionConfig *config);

// Checks a model header for family `expected`: magic, version, family, norm
// mode (ln, rms, cbwc, or folded with the RMS norm count its config gives), the family's config and its cost beyond the parameters
// (vision_config_error), then that the input is exactly file_bytes =
// header + *num_params floats. 0, or -1 with the reason in err. Never exits.
int vision_header_parse(const int32_t header[VISION_HEADER_INTS], VisionFamily expected,
                        size_t file_bytes, size_t *num_params, char *err, size_t err_bytes);
// Reads the n parameters of a checked header from r and checks each is
// finite (naming the tensor otherwise); 0 or -1 (err).
int vision_params_parse(Reader *r, const int32_t header[VISION_HEADER_INTS], float *params,
                        size_t n, char *err, size_t err_bytes);
// Header and parameters of a whole model file from r (*params: caller frees);
// 0, or -1 with the reason in err and nothing allocated. Never exits.
int vision_model_parse(Reader *r, VisionFamily expected, int32_t header[VISION_HEADER_INTS],
                       float **params, size_t *num_params, char *err, size_t err_bytes);

// Reads a model file once: its config and its parameters (*params: caller
// frees), checked as vision_model_parse does. expected_family < 0 takes the
// header's family. 0, or -1 with "PATH: reason" in err and nothing
// allocated. Never exits.
int vision_model_load_file(const char *path, int expected_family, VisionConfig *config,
                           float **params, size_t *num_params, char *err, size_t err_bytes);
// The same; dies with that message on any defect.
void vision_model_read(const char *path, int expected_family, VisionConfig *config,
                       float **params, size_t *num_params);
// Writes header + parameters atomically.
void vision_model_write(const char *path, const VisionConfig *config, const float *params,
                        size_t n);

#endif
