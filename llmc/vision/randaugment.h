// RandAugment (Cubuk et al. 2019) as timm's rand_augment_transform builds it
// (timm/data/auto_augment.py; Swin's recipe uses "rand-m9-mstd0.5-inc1"), on
// one uint8 image (side x side, HWC, 1 or 3 channels), per image on the host:
// num_layers ops drawn with replacement from 15, each applied with
// probability prob at a magnitude drawn from N(m, mstd) clipped to
// [0, mmax] (of 10), with a random sign for the signed ops. The pixel ops
// follow PIL's arithmetic, bytes out (ImageOps, ImageEnhance, Image.blend, the
// SMOOTH filter), which timm calls. The geometric ops (Rotate, Shear*,
// Translate*Rel) use PIL's affine conventions (pixel centres, rotation about
// (side/2, side/2)) with NEAREST sampling, where timm samples bilinear or
// bicubic; pixels mapped from outside the image take the fill colour (timm's
// img_mean: the data's mean pixel, rounded to bytes).
#ifndef FOLDNORM_RANDAUGMENT_H
#define FOLDNORM_RANDAUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/rand.h"

// timm's op names; the *_INCREASING ones make the image stronger as the
// magnitude grows (the "inc1" set).
typedef enum {
    RA_AUTO_CONTRAST,
    RA_EQUALIZE,
    RA_INVERT,
    RA_ROTATE,
    RA_POSTERIZE,
    RA_POSTERIZE_INCREASING,
    RA_SOLARIZE,
    RA_SOLARIZE_INCREASING,
    RA_SOLARIZE_ADD,
    RA_COLOR,
    RA_COLOR_INCREASING,
    RA_CONTRAST,
    RA_CONTRAST_INCREASING,
    RA_BRIGHTNESS,
    RA_BRIGHTNESS_INCREASING,
    RA_SHARPNESS,
    RA_SHARPNESS_INCREASING,
    RA_SHEAR_X,
    RA_SHEAR_Y,
    RA_TRANSLATE_X_REL,
    RA_TRANSLATE_Y_REL,
    RA_NUM_OPS
} RandAugmentOp;

// Ops in a set (timm's _RAND_TRANSFORMS and _RAND_INCREASING_TRANSFORMS).
#define RANDAUGMENT_SET_OPS 15
#define RANDAUGMENT_MAX_LAYERS 8
// The magnitudes' scale: timm's _LEVEL_DENOM.
#define RANDAUGMENT_LEVEL_MAX 10.0f

// A parsed "rand-..." spec (timm's sections: m, n, mstd, mmax, inc, p).
typedef struct {
    int num_layers;      // n: ops an image (default 2); 0 in a zeroed spec: RandAugment off
    float magnitude;     // m, of 10 (default 10)
    float magnitude_std; // mstd: magnitude ~ N(m, mstd); > 100: U(0, m); 0: m (default 0)
    float magnitude_max; // mmax: the upper end of the clip, in (0, 10] (default 10)
    float prob;          // p: each op's probability (default 0.5)
    int increasing;      // inc: 1: the increasing set (default 0)
} RandAugmentSpec;

// One layer's draws: which op, whether it applies, its magnitude and sign.
typedef struct {
    uint8_t op, applied, negate;
    float magnitude;
} RandAugmentLayer;

typedef struct {
    int num_layers; // 0: no RandAugment for this image
    RandAugmentLayer layers[RANDAUGMENT_MAX_LAYERS];
} RandAugmentDraw;

// Parses text ("rand-m9-mstd0.5-inc1"); 0, or -1 with the reason in err.
int randaugment_parse(RandAugmentSpec *spec, const char *text, char *err, size_t err_bytes);
// The spec as its sections, e.g. "n=2 m=9 mstd=0.5 mmax=10 p=0.5 inc=1".
void randaugment_describe(const RandAugmentSpec *spec, char *out, size_t out_bytes);
// One image's draws from rng: per layer, in order, the op (u32), whether it
// applies (uniform), the magnitude (a normal or uniform when mstd > 0) and
// the sign (u32): a fixed count of draws per layer, applied or not.
void randaugment_draw(RandAugmentDraw *d, const RandAugmentSpec *spec, Rng *rng);
// timm's name of op ("PosterizeIncreasing").
const char *randaugment_op_name(int op);
// The op's parameter at this magnitude and sign, as timm's level functions
// give it: degrees, bits, threshold, added level, enhance factor, shear
// factor or translate fraction (0 for the ops without one).
double randaugment_op_level(int op, float magnitude, int negate);
// op on image (side x side x channels, HWC) in place; scratch: room for
// one image. fill: channels bytes.
void randaugment_apply_op(uint8_t *image, uint8_t *scratch, int side, int channels, int op,
                          float magnitude, int negate, const uint8_t *fill);
// The draws' applied layers in order.
void randaugment_apply(uint8_t *image, uint8_t *scratch, int side, int channels,
                       const RandAugmentDraw *d, const uint8_t *fill);

#endif
