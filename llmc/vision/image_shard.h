// Image shards for ImageNet-style data sets, written by bin/images_to_shard
// (docs/formats.md, "Image shard"): a 256-slot int32 header, int32 labels,
// then uint8 RGB pixels, HWC, one side x side square per image.
//   train shards (kind 0): the shorter side resized to `side`, centre-cropped
//     square; random-resized-crop + flip to `crop` happen at load time;
//   eval shards (kind 1): the shorter side resized to crop * 8 / 7, then
//     centre-cropped to side == crop: used as stored.
#ifndef FOLDNORM_IMAGE_SHARD_H
#define FOLDNORM_IMAGE_SHARD_H

#include <stdint.h>

#include "core/rand.h"
#include "core/reader.h"

#define IMAGE_SHARD_MAGIC 20261201
#define IMAGE_SHARD_VERSION 1
#define IMAGE_SHARD_TRAIN 0
#define IMAGE_SHARD_EVAL 1

typedef struct {
    int count, num_classes, side, channels, kind, crop;
    int32_t *labels;
    uint8_t *pixels; // count * side * side * channels
} ImageShard;

// Parses an image shard from r; 0, or -1 with the reason in err (nothing
// allocated). Checks as image_shard_read. Never exits.
int image_shard_parse(Reader *r, ImageShard *shard, char *err, size_t err_bytes);
// Dies naming the file on a wrong magic/version, bad sizes, a file size other
// than header + labels + pixels, or a label outside [0, num_classes).
void image_shard_read(ImageShard *shard, const char *path);
void image_shard_write(const char *path, const ImageShard *shard);
// The source window (top-left y0, x0, size h x w, in stored pixels) that one
// image's crop x crop output samples, and whether it is mirrored.
typedef struct {
    float y0, x0, h, w;
    int flip;
} ImageCrop;

// rng != NULL (training): a random resized crop (area 8%-100%, aspect
// 3/4-4/3) and a random horizontal flip, drawn from rng; rng == NULL: the
// centre crop of size crop. Only draws: the pixels are image_shard_render's.
ImageCrop image_shard_draw_crop(const ImageShard *shard, Rng *rng);
// Image index through window as floats (3, crop, crop), bilinear, normalized
// with the ImageNet mean and std. Reads only: safe from several threads.
void image_shard_render(const ImageShard *shard, int index, ImageCrop window, float *out);
// The same window's bilinear levels rounded to bytes, HWC (crop, crop, 3), not
// normalised: the uint8 image RandAugment works on (as timm's crop gives PIL).
void image_shard_render_bytes(const ImageShard *shard, int index, ImageCrop window, uint8_t *out);
// HWC bytes (side, side, 3) to floats (3, side, side), normalised as image_shard_render.
void image_shard_normalise_bytes(const uint8_t *hwc, int side, float *out);
// The ImageNet mean pixel in bytes, round(255 * mean): timm's RandAugment fill colour.
extern const uint8_t IMAGE_SHARD_MEAN_BYTES[3];
// image_shard_render of image_shard_draw_crop(shard, rng).
void image_shard_sample(const ImageShard *shard, int index, float *out, Rng *rng);
void image_shard_free(ImageShard *shard);

#endif
