#include "image_shard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/reader.h"
#include "core/utils.h"

static const float IMAGENET_MEAN[3] = {0.485f, 0.456f, 0.406f};
static const float IMAGENET_STD[3] = {0.229f, 0.224f, 0.225f};
const uint8_t IMAGE_SHARD_MEAN_BYTES[3] = {124, 116, 104}; // round(255 * IMAGENET_MEAN)

static int image_shard_parse_body(Reader *r, ImageShard *s, char *err, size_t err_bytes) {
    int32_t h[256];
    if (reader_read(r, h, sizeof(h), "the 1024-byte image shard header", err, err_bytes) != 0) {
        return -1;
    }
    if (h[0] != IMAGE_SHARD_MAGIC) {
        return input_error(err, err_bytes, "not an image shard (magic %d, expected %d)", h[0],
                           IMAGE_SHARD_MAGIC);
    }
    if (h[1] != IMAGE_SHARD_VERSION) {
        return input_error(err, err_bytes, "image shard version %d is not supported (expected %d)",
                           h[1], IMAGE_SHARD_VERSION);
    }
    s->count = h[2];
    s->num_classes = h[3];
    s->side = h[4];
    s->channels = h[5];
    s->kind = h[6];
    s->crop = h[7];
    if (s->count <= 0 || s->num_classes <= 0 || s->num_classes > (1 << 20) || s->side <= 0 ||
        s->side > 4096 || s->channels != 3 ||
        (s->kind != IMAGE_SHARD_TRAIN && s->kind != IMAGE_SHARD_EVAL) || s->crop <= 0 ||
        s->crop > s->side || (s->kind == IMAGE_SHARD_EVAL && s->crop != s->side)) {
        return input_error(err, err_bytes,
                           "bad header: count=%d classes=%d side=%d channels=%d kind=%d crop=%d",
                           s->count, s->num_classes, s->side, s->channels, s->kind, s->crop);
    }
    // side <= 4096 and count < 2^31: count * side^2 * 3 < 2^57, no overflow
    size_t per_image = (size_t)s->side * s->side * 3;
    size_t pixels = (size_t)s->count * per_image;
    size_t expected = sizeof(h) + (size_t)s->count * sizeof(int32_t) + pixels;
    if (r->size != expected) {
        return input_error(err, err_bytes, "file is %zu bytes but its header describes %zu bytes%s",
                           r->size, expected,
                           r->size < expected ? ": truncated" : ": trailing data");
    }
    s->labels = malloc((size_t)s->count * sizeof(int32_t));
    s->pixels = malloc(pixels);
    if (s->labels == NULL || s->pixels == NULL) {
        return input_error(err, err_bytes, "out of memory for %d images", s->count);
    }
    if (reader_read(r, s->labels, (size_t)s->count * sizeof(int32_t), "the labels", err,
                    err_bytes) != 0 ||
        reader_read(r, s->pixels, pixels, "the pixels", err, err_bytes) != 0) {
        return -1;
    }
    for (int i = 0; i < s->count; i++) {
        if (s->labels[i] < 0 || s->labels[i] >= s->num_classes) {
            return input_error(err, err_bytes, "label %d of image %d is not in [0, %d)",
                               s->labels[i], i, s->num_classes);
        }
    }
    return 0;
}

int image_shard_parse(Reader *r, ImageShard *shard, char *err, size_t err_bytes) {
    memset(shard, 0, sizeof(*shard));
    if (image_shard_parse_body(r, shard, err, err_bytes) != 0) {
        image_shard_free(shard);
        return -1;
    }
    return 0;
}

void image_shard_read(ImageShard *shard, const char *path) {
    FILE *f = fopen_check(path, "rb");
    Reader r;
    char err[READER_ERR_BYTES];
    if (reader_init_file(&r, f, err, sizeof(err)) != 0 ||
        image_shard_parse(&r, shard, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    fclose(f);
}

static void write_shard(FILE *f, const char *path, const void *ctx) {
    const ImageShard *s = ctx;
    int32_t h[256] = {IMAGE_SHARD_MAGIC, IMAGE_SHARD_VERSION, s->count, s->num_classes, s->side,
                      s->channels, s->kind, s->crop};
    fwrite_check(h, sizeof(int32_t), 256, f, path);
    fwrite_check(s->labels, sizeof(int32_t), (size_t)s->count, f, path);
    fwrite_check(s->pixels, 1, (size_t)s->count * s->side * s->side * 3, f, path);
}

void image_shard_write(const char *path, const ImageShard *shard) {
    write_file_atomic(path, write_shard, shard);
}

ImageCrop image_shard_draw_crop(const ImageShard *s, Rng *rng) {
    const int side = s->side, crop = s->crop;
    float centre = (float)(side - crop) / 2.0f;
    ImageCrop c = {centre, centre, (float)crop, (float)crop, 0};
    if (rng == NULL) return c;
    // torchvision's RandomResizedCrop: 10 tries of area/aspect, else the whole image
    float area = (float)side * side;
    c.h = c.w = (float)side;
    c.y0 = c.x0 = 0.0f;
    for (int attempt = 0; attempt < 10; attempt++) {
        float target = area * (0.08f + 0.92f * rng_uniform(rng));
        float log_ratio = logf(3.0f / 4.0f) + (logf(4.0f / 3.0f) - logf(3.0f / 4.0f)) * rng_uniform(rng);
        float ratio = expf(log_ratio);
        float cw = sqrtf(target * ratio), ch = sqrtf(target / ratio);
        if (cw <= side && ch <= side) {
            c.w = cw;
            c.h = ch;
            c.y0 = (side - ch) * rng_uniform(rng);
            c.x0 = (side - cw) * rng_uniform(rng);
            break;
        }
    }
    c.flip = rng_u32(rng) & 1u;
    return c;
}

// One output coordinate's bilinear taps: the two source pixels and the weight
// of the second (bilinear()'s clamp and arithmetic, computed once per column
// or row instead of once per pixel and channel).
typedef struct {
    int lo, hi;
    float frac;
} BilinearTap;

static BilinearTap bilinear_tap(float v, int side) {
    v = fminf(fmaxf(v, 0.0f), (float)(side - 1));
    BilinearTap t = {(int)v, 0, 0.0f};
    t.hi = t.lo + 1 < side ? t.lo + 1 : t.lo;
    t.frac = v - (float)t.lo;
    return t;
}

// The window's column taps, mirrored when it flips (the caller frees them).
static BilinearTap *crop_columns(ImageCrop win, int side, int crop) {
    BilinearTap *columns = malloc_check((size_t)crop * sizeof(BilinearTap), "crop columns");
    for (int x = 0; x < crop; x++) {
        int xs = win.flip ? crop - 1 - x : x;
        columns[x] = bilinear_tap(win.x0 + ((float)xs + 0.5f) * win.w / (float)crop - 0.5f, side);
    }
    return columns;
}

// Channel c's bilinear level (0..255) between the rows top and bottom.
static inline float bilinear_level(const uint8_t *top, const uint8_t *bottom, BilinearTap col,
                                   float fy, int c) {
    const float fx = col.frac;
    float a = top[col.lo * 3 + c], b = top[col.hi * 3 + c];
    float d = bottom[col.lo * 3 + c], e = bottom[col.hi * 3 + c];
    return (a * (1 - fx) + b * fx) * (1 - fy) + (d * (1 - fx) + e * fx) * fy;
}

void image_shard_render(const ImageShard *s, int index, ImageCrop win, float *out) {
    const int side = s->side, crop = s->crop;
    const uint8_t *img = s->pixels + (size_t)index * side * side * 3;
    BilinearTap *columns = crop_columns(win, side, crop);
    const size_t plane = (size_t)crop * crop;
    for (int y = 0; y < crop; y++) {
        BilinearTap row = bilinear_tap(win.y0 + ((float)y + 0.5f) * win.h / (float)crop - 0.5f, side);
        const uint8_t *top = img + (size_t)row.lo * side * 3, *bottom = img + (size_t)row.hi * side * 3;
        const float fy = row.frac;
        for (int x = 0; x < crop; x++) {
            for (int c = 0; c < 3; c++) {
                float v = bilinear_level(top, bottom, columns[x], fy, c) / 255.0f;
                out[c * plane + (size_t)y * crop + x] = (v - IMAGENET_MEAN[c]) / IMAGENET_STD[c];
            }
        }
    }
    free(columns);
}

void image_shard_render_bytes(const ImageShard *s, int index, ImageCrop win, uint8_t *out) {
    const int side = s->side, crop = s->crop;
    const uint8_t *img = s->pixels + (size_t)index * side * side * 3;
    BilinearTap *columns = crop_columns(win, side, crop);
    for (int y = 0; y < crop; y++) {
        BilinearTap row = bilinear_tap(win.y0 + ((float)y + 0.5f) * win.h / (float)crop - 0.5f, side);
        const uint8_t *top = img + (size_t)row.lo * side * 3, *bottom = img + (size_t)row.hi * side * 3;
        for (int x = 0; x < crop; x++) {
            for (int c = 0; c < 3; c++) {
                // in [0, 255]: the taps' weights sum to 1
                const float v = bilinear_level(top, bottom, columns[x], row.frac, c);
                out[((size_t)y * crop + x) * 3 + c] = (uint8_t)(v + 0.5f);
            }
        }
    }
    free(columns);
}

void image_shard_normalise_bytes(const uint8_t *hwc, int side, float *out) {
    const size_t plane = (size_t)side * side;
    for (size_t i = 0; i < plane; i++) {
        for (int c = 0; c < 3; c++) {
            float v = hwc[i * 3 + c] / 255.0f;
            out[c * plane + i] = (v - IMAGENET_MEAN[c]) / IMAGENET_STD[c];
        }
    }
}

void image_shard_sample(const ImageShard *s, int index, float *out, Rng *rng) {
    image_shard_render(s, index, image_shard_draw_crop(s, rng), out);
}

void image_shard_free(ImageShard *s) {
    free(s->labels);
    free(s->pixels);
    memset(s, 0, sizeof(*s));
}
