// The model file shared by the image classifiers (ViT and Swin): a 256-slot
// int32 header naming the family, the norm mode and the config, then the
// fp32 parameters in the family's order (docs/formats.md, "Vision model file").
#ifndef FOLDNORM_VISION_MODEL_H
#define FOLDNORM_VISION_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reader.h"

#define VISION_MODEL_MAGIC 20261129
#define VISION_MODEL_VERSION 1
#define VISION_HEADER_INTS 256

typedef enum { FAMILY_VIT = 0, FAMILY_SWIN = 1 } VisionFamily;

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
    VH_CENTER_PATCH = 13, // Swin: explicit centring after the patch norm (0/1)
    VH_DEPTHS = 16,      // Swin: slots 16..23, blocks per stage
    VH_HEADS = 24,       // Swin: slots 24..31, heads per stage
};

const char *vision_family_name(VisionFamily family);

// Checks a model header for family `expected`: magic, version, family, norm
// mode, the family's config (vit_config_error / swin_config_error) and its
// cost beyond the parameters, then that the input is exactly file_bytes =
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

// Opens path, reads and checks the header and the file size as
// vision_header_parse does; dies naming the file otherwise. Returns the open
// file positioned after the header and its size in bytes.
FILE *vision_header_read(const char *path, int32_t header[VISION_HEADER_INTS],
                         VisionFamily expected, long *file_bytes);
// Reads n parameters after the header, checking the file size is exactly
// header + n floats and that every value is finite; closes the file.
void vision_params_read(FILE *f, const char *path, long file_bytes, float *params, size_t n);
// Writes header + parameters atomically.
void vision_model_write(const char *path, const int32_t header[VISION_HEADER_INTS],
                        const float *params, size_t n);

#endif
