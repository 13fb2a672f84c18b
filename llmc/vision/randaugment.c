#include "randaugment.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

static const char *const OP_NAMES[RA_NUM_OPS] = {
    "AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "PosterizeIncreasing",
    "Solarize", "SolarizeIncreasing", "SolarizeAdd", "Color", "ColorIncreasing", "Contrast",
    "ContrastIncreasing", "Brightness", "BrightnessIncreasing", "Sharpness",
    "SharpnessIncreasing", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"};

// timm's _RAND_TRANSFORMS and _RAND_INCREASING_TRANSFORMS, in their order
static const uint8_t PLAIN_SET[RANDAUGMENT_SET_OPS] = {
    RA_AUTO_CONTRAST, RA_EQUALIZE, RA_INVERT, RA_ROTATE, RA_POSTERIZE, RA_SOLARIZE,
    RA_SOLARIZE_ADD, RA_COLOR, RA_CONTRAST, RA_BRIGHTNESS, RA_SHARPNESS, RA_SHEAR_X,
    RA_SHEAR_Y, RA_TRANSLATE_X_REL, RA_TRANSLATE_Y_REL};
static const uint8_t INCREASING_SET[RANDAUGMENT_SET_OPS] = {
    RA_AUTO_CONTRAST, RA_EQUALIZE, RA_INVERT, RA_ROTATE, RA_POSTERIZE_INCREASING,
    RA_SOLARIZE_INCREASING, RA_SOLARIZE_ADD, RA_COLOR_INCREASING, RA_CONTRAST_INCREASING,
    RA_BRIGHTNESS_INCREASING, RA_SHARPNESS_INCREASING, RA_SHEAR_X, RA_SHEAR_Y,
    RA_TRANSLATE_X_REL, RA_TRANSLATE_Y_REL};

const char *randaugment_op_name(int op) {
    return op >= 0 && op < RA_NUM_OPS ? OP_NAMES[op] : "?";
}

static int parse_error(char *err, size_t err_bytes, const char *fmt, ...) FN_PRINTF(3, 4);
static int parse_error(char *err, size_t err_bytes, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_bytes, fmt, ap);
    va_end(ap);
    return -1;
}

// The value of section "key<value>" as a finite number in [lo, hi]; 0 or -1.
static int section_value(const char *section, size_t key_len, size_t len, double lo, double hi,
                         double *value, char *err, size_t err_bytes) {
    char text[64];
    size_t n = len - key_len;
    if (n == 0 || n >= sizeof(text)) {
        return parse_error(err, err_bytes, "section '%.*s': no value", (int)len, section);
    }
    memcpy(text, section + key_len, n);
    text[n] = '\0';
    char *end;
    *value = strtod(text, &end);
    if (*end != '\0' || !isfinite(*value) || !(*value >= lo && *value <= hi)) {
        return parse_error(err, err_bytes, "section '%.*s': %.*s wants a number in [%g, %g]",
                           (int)len, section, (int)key_len, section, lo, hi);
    }
    return 0;
}

int randaugment_parse(RandAugmentSpec *spec, const char *text, char *err, size_t err_bytes) {
    *spec = (RandAugmentSpec){.num_layers = 2, .magnitude = 10.0f, .magnitude_std = 0.0f,
                              .magnitude_max = RANDAUGMENT_LEVEL_MAX, .prob = 0.5f};
    if (strncmp(text, "rand", 4) != 0 || (text[4] != '\0' && text[4] != '-')) {
        return parse_error(err, err_bytes,
                           "not a RandAugment spec: it starts with 'rand', then '-' sections "
                           "(e.g. rand-m9-mstd0.5-inc1)");
    }
    const char *p = text + 4;
    while (*p == '-') {
        const char *section = p + 1;
        size_t len = strcspn(section, "-");
        size_t key_len = 0; // the key: the letters before the first digit (timm's split)
        while (key_len < len && !isdigit((unsigned char)section[key_len]) &&
               section[key_len] != '.') {
            key_len++;
        }
        double v;
        int rc;
        if (len == 0) {
            rc = parse_error(err, err_bytes, "an empty section ('--' or a '-' at the end)");
        } else if (key_len == 1 && section[0] == 'm') {
            rc = section_value(section, key_len, len, 0, RANDAUGMENT_LEVEL_MAX, &v, err, err_bytes);
            spec->magnitude = (float)v;
        } else if (key_len == 1 && section[0] == 'n') {
            rc = section_value(section, key_len, len, 1, RANDAUGMENT_MAX_LAYERS, &v, err, err_bytes);
            if (rc == 0 && v != floor(v)) {
                rc = parse_error(err, err_bytes, "section '%.*s': n wants a whole number",
                                 (int)len, section);
            }
            spec->num_layers = (int)v;
        } else if (key_len == 4 && strncmp(section, "mstd", 4) == 0) {
            rc = section_value(section, key_len, len, 0, 1e9, &v, err, err_bytes);
            spec->magnitude_std = (float)v;
        } else if (key_len == 4 && strncmp(section, "mmax", 4) == 0) {
            rc = section_value(section, key_len, len, 0, RANDAUGMENT_LEVEL_MAX, &v, err, err_bytes);
            if (rc == 0 && v == 0) {
                rc = parse_error(err, err_bytes, "section '%.*s': mmax must be > 0", (int)len,
                                 section);
            }
            spec->magnitude_max = (float)v;
        } else if (key_len == 1 && section[0] == 'p') {
            rc = section_value(section, key_len, len, 0, 1, &v, err, err_bytes);
            spec->prob = (float)v;
        } else if (key_len == 3 && strncmp(section, "inc", 3) == 0) {
            rc = section_value(section, key_len, len, 0, 1, &v, err, err_bytes);
            if (rc == 0 && v != 0 && v != 1) {
                rc = parse_error(err, err_bytes, "section '%.*s': inc is 0 or 1", (int)len, section);
            }
            spec->increasing = v == 1;
        } else {
            rc = parse_error(err, err_bytes,
                             "unknown section '%.*s' (known: m, n, mstd, mmax, p, inc, each "
                             "followed by its number)",
                             (int)len, section);
        }
        if (rc != 0) return -1;
        p = section + len;
    }
    return 0;
}

void randaugment_describe(const RandAugmentSpec *s, char *out, size_t out_bytes) {
    snprintf(out, out_bytes, "n=%d m=%g mstd=%g mmax=%g p=%g inc=%d", s->num_layers,
             (double)s->magnitude, (double)s->magnitude_std, (double)s->magnitude_max,
             (double)s->prob, s->increasing);
}

void randaugment_draw(RandAugmentDraw *d, const RandAugmentSpec *s, Rng *rng) {
    memset(d, 0, sizeof(*d));
    d->num_layers = s->num_layers;
    const uint8_t *set = s->increasing ? INCREASING_SET : PLAIN_SET;
    for (int l = 0; l < s->num_layers; l++) {
        RandAugmentLayer *layer = &d->layers[l];
        layer->op = set[rng_u32(rng) % RANDAUGMENT_SET_OPS];
        layer->applied = !(rng_uniform(rng) > s->prob); // timm skips when random() > prob
        float m = s->magnitude;
        if (s->magnitude_std > 100.0f) { // timm: mstd > 100 means infinite: U(0, m)
            m = s->magnitude * rng_uniform(rng);
        } else if (s->magnitude_std > 0.0f) {
            rng_normal_fill(rng, &m, 1, s->magnitude, s->magnitude_std);
        }
        layer->magnitude = fminf(fmaxf(m, 0.0f), s->magnitude_max);
        layer->negate = rng_u32(rng) & 1u;
    }
}

// timm's level functions: the op's argument at magnitude m (of 10).
double randaugment_op_level(int op, float magnitude, int negate) {
    const double level = (double)magnitude / RANDAUGMENT_LEVEL_MAX;
    const double sign = negate ? -1.0 : 1.0;
    switch (op) {
    case RA_ROTATE: return sign * (level * 30.0);
    case RA_POSTERIZE: return (int)(level * 4.0);
    case RA_POSTERIZE_INCREASING: return 4 - (int)(level * 4.0);
    case RA_SOLARIZE: return fmin(256.0, (int)(level * 256.0));
    case RA_SOLARIZE_INCREASING: return 256.0 - fmin(256.0, (int)(level * 256.0));
    case RA_SOLARIZE_ADD: return fmin(128.0, (int)(level * 110.0));
    case RA_COLOR:
    case RA_CONTRAST:
    case RA_BRIGHTNESS:
    case RA_SHARPNESS: return level * 1.8 + 0.1;
    case RA_COLOR_INCREASING:
    case RA_CONTRAST_INCREASING:
    case RA_BRIGHTNESS_INCREASING:
    case RA_SHARPNESS_INCREASING: return fmax(0.1, 1.0 + sign * (level * 0.9));
    case RA_SHEAR_X:
    case RA_SHEAR_Y: return sign * (level * 0.3);
    case RA_TRANSLATE_X_REL:
    case RA_TRANSLATE_Y_REL: return sign * (level * 0.45);
    default: return 0.0;
    }
}

// ---- pixel ops: a table per channel (PIL's Image.point)

static void apply_tables(uint8_t *image, size_t pixels, int channels, const uint8_t *tables) {
    for (size_t i = 0; i < pixels; i++) {
        for (int c = 0; c < channels; c++) {
            image[i * channels + c] = tables[c * 256 + image[i * channels + c]];
        }
    }
}

static void histograms(const uint8_t *image, size_t pixels, int channels, long long *hist) {
    memset(hist, 0, sizeof(long long) * 256 * (size_t)channels);
    for (size_t i = 0; i < pixels; i++) {
        for (int c = 0; c < channels; c++) hist[c * 256 + image[i * channels + c]]++;
    }
}

// ImageOps.autocontrast (no cutoff): [lo, hi] stretched to [0, 255], truncated.
static void auto_contrast_table(const long long *h, uint8_t *table) {
    int lo = 0, hi = 255;
    while (lo < 256 && h[lo] == 0) lo++;
    while (hi >= 0 && h[hi] == 0) hi--;
    for (int i = 0; i < 256; i++) {
        if (hi <= lo) {
            table[i] = (uint8_t)i;
            continue;
        }
        const double scale = 255.0 / (hi - lo), offset = -lo * scale;
        const int v = (int)(i * scale + offset);
        table[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

// ImageOps.equalize: step = (count - the last used level's count) // 255.
static void equalize_table(const long long *h, uint8_t *table) {
    long long total = 0, last = 0;
    int used = 0;
    for (int i = 0; i < 256; i++) {
        if (h[i] == 0) continue;
        total += h[i];
        last = h[i];
        used++;
    }
    const long long step = used <= 1 ? 0 : (total - last) / 255;
    long long n = step / 2;
    for (int i = 0; i < 256; i++) {
        if (step == 0) {
            table[i] = (uint8_t)i;
            continue;
        }
        const long long v = n / step;
        table[i] = (uint8_t)(v > 255 ? 255 : v); // Image.point clips the table to bytes
        n += h[i];
    }
}

// Image.blend(degenerate, image, alpha) on one byte, in PIL's float arithmetic.
static uint8_t blend_byte(int degenerate, int image, float alpha) {
    const float t = (float)degenerate + alpha * (float)(image - degenerate);
    if (t <= 0.0f) return 0;
    if (t >= 255.0f) return 255;
    return (uint8_t)t;
}

// PIL's RGB -> L: (299 R + 587 G + 114 B) / 1000 in 16-bit fixed point, rounded.
static int grey_level(const uint8_t *rgb) {
    return (rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16;
}

// ImageFilter.SMOOTH (3x3, 1 1 1 / 1 5 1 / 1 1 1, / 13) as PIL's 3x3 filter
// computes it: float taps, + 0.5, truncated; the border pixels copied.
static void smooth_filter(uint8_t *out, const uint8_t *in, int side, int C) {
    const float k_edge = 1.0f / 13.0f, k_centre = 5.0f / 13.0f;
    const float k[9] = {k_edge, k_edge, k_edge, k_edge, k_centre, k_edge, k_edge, k_edge, k_edge};
    memcpy(out, in, (size_t)side * side * C);
    for (int y = 1; y < side - 1; y++) {
        const uint8_t *above = in + (size_t)(y - 1) * side * C, *row = in + (size_t)y * side * C;
        const uint8_t *below = in + (size_t)(y + 1) * side * C;
        uint8_t *dst = out + (size_t)y * side * C;
        // the interior bytes of the row, channels interleaved: one contiguous (vector) loop
        for (int i = C; i < (side - 1) * C; i++) {
            float ss = 0.5f; // PIL's order: the row below with k[0..2], then this row, then above
            ss += (float)below[i - C] * k[0] + (float)below[i] * k[1] + (float)below[i + C] * k[2];
            ss += (float)row[i - C] * k[3] + (float)row[i] * k[4] + (float)row[i + C] * k[5];
            ss += (float)above[i - C] * k[6] + (float)above[i] * k[7] + (float)above[i + C] * k[8];
            dst[i] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : (uint8_t)ss;
        }
    }
}

// ImageEnhance's op: Color (against the grey image), Contrast (against the
// grey mean, rounded), Brightness (against black), Sharpness (against SMOOTH).
static void enhance(uint8_t *image, uint8_t *scratch, int side, int C, int op, float factor) {
    const size_t pixels = (size_t)side * side, n = pixels * C;
    if (op == RA_COLOR || op == RA_COLOR_INCREASING) {
        if (C == 1) return; // a grey image is its own grey version
        for (size_t i = 0; i < pixels; i++) {
            const int g = grey_level(image + i * 3);
            for (int c = 0; c < 3; c++) image[i * 3 + c] = blend_byte(g, image[i * 3 + c], factor);
        }
    } else if (op == RA_CONTRAST || op == RA_CONTRAST_INCREASING) {
        double sum = 0.0; // exact: at most 4096^2 * 255 < 2^53
        for (size_t i = 0; i < pixels; i++) sum += C == 1 ? image[i] : grey_level(image + i * 3);
        const int mean = (int)(sum / (double)pixels + 0.5);
        for (size_t i = 0; i < n; i++) image[i] = blend_byte(mean, image[i], factor);
    } else if (op == RA_BRIGHTNESS || op == RA_BRIGHTNESS_INCREASING) {
        for (size_t i = 0; i < n; i++) image[i] = blend_byte(0, image[i], factor);
    } else {
        smooth_filter(scratch, image, side, C);
        for (size_t i = 0; i < n; i++) image[i] = blend_byte(scratch[i], image[i], factor);
    }
}

// ---- geometric ops: PIL's affine transform, NEAREST

// out(x, y) = in(floor(a (x + 1/2) + b (y + 1/2) + c), floor(d (x + 1/2) + e (y + 1/2) + f)),
// the fill colour where that is outside the image.
static void affine_nearest(uint8_t *out, const uint8_t *in, int side, int C, const double m[6],
                           const uint8_t *fill) {
    for (int y = 0; y < side; y++) {
        const double py = (double)y + 0.5;
        for (int x = 0; x < side; x++) {
            const double px = (double)x + 0.5;
            const double xs = m[0] * px + m[1] * py + m[2], ys = m[3] * px + m[4] * py + m[5];
            uint8_t *o = out + ((size_t)y * side + x) * C;
            // the bounds test first: floor of a far coordinate need not fit an int
            if (xs >= 0.0 && xs < (double)side && ys >= 0.0 && ys < (double)side) {
                memcpy(o, in + ((size_t)(int)ys * side + (int)xs) * C, (size_t)C);
            } else {
                memcpy(o, fill, (size_t)C);
            }
        }
    }
}

// The inverse map of each geometric op, as timm's calls build it for PIL:
// Image.rotate(degrees) (counter-clockwise about the centre), and
// Image.transform's AFFINE data for the shears and translations.
static void geometric_matrix(int op, double level, int side, double m[6]) {
    const double identity[6] = {1, 0, 0, 0, 1, 0};
    memcpy(m, identity, sizeof(identity));
    if (op == RA_ROTATE) {
        const double t = -(level * (M_PI / 180.0)), centre = side / 2.0;
        m[0] = cos(t);
        m[1] = sin(t);
        m[3] = -sin(t);
        m[4] = cos(t);
        m[2] = m[0] * -centre + m[1] * -centre + centre;
        m[5] = m[3] * -centre + m[4] * -centre + centre;
    } else if (op == RA_SHEAR_X) {
        m[1] = level;
    } else if (op == RA_SHEAR_Y) {
        m[3] = level;
    } else if (op == RA_TRANSLATE_X_REL) {
        m[2] = level * side;
    } else {
        m[5] = level * side;
    }
}

void randaugment_apply_op(uint8_t *image, uint8_t *scratch, int side, int channels, int op,
                          float magnitude, int negate, const uint8_t *fill) {
    const int C = channels;
    const size_t pixels = (size_t)side * side;
    const double level = randaugment_op_level(op, magnitude, negate);
    uint8_t tables[3 * 256];
    long long hist[3 * 256];
    switch (op) {
    case RA_AUTO_CONTRAST:
    case RA_EQUALIZE:
        histograms(image, pixels, C, hist);
        for (int c = 0; c < C; c++) {
            if (op == RA_AUTO_CONTRAST) {
                auto_contrast_table(hist + c * 256, tables + c * 256);
            } else {
                equalize_table(hist + c * 256, tables + c * 256);
            }
        }
        break;
    case RA_INVERT:
    case RA_POSTERIZE:
    case RA_POSTERIZE_INCREASING:
    case RA_SOLARIZE:
    case RA_SOLARIZE_INCREASING:
    case RA_SOLARIZE_ADD: {
        const int arg = (int)level;
        const int posterize = op == RA_POSTERIZE || op == RA_POSTERIZE_INCREASING;
        // posterize keeps the arg (0..4) high bits
        const int keep_mask = posterize ? 0xff & ~((1 << (8 - arg)) - 1) : 0xff;
        for (int i = 0; i < 256; i++) {
            int v = i;
            if (op == RA_INVERT) {
                v = 255 - i;
            } else if (posterize) {
                v = i & keep_mask;
            } else if (op == RA_SOLARIZE || op == RA_SOLARIZE_INCREASING) {
                v = i < arg ? i : 255 - i;
            } else if (i < 128) { // SolarizeAdd, threshold 128
                v = i + arg < 255 ? i + arg : 255;
            }
            for (int c = 0; c < C; c++) tables[c * 256 + i] = (uint8_t)v;
        }
        break;
    }
    case RA_ROTATE:
    case RA_SHEAR_X:
    case RA_SHEAR_Y:
    case RA_TRANSLATE_X_REL:
    case RA_TRANSLATE_Y_REL: {
        double m[6];
        geometric_matrix(op, level, side, m);
        memcpy(scratch, image, pixels * C);
        affine_nearest(image, scratch, side, C, m, fill);
        return;
    }
    default: // the ImageEnhance ops; PIL's blend takes the factor as a float
        enhance(image, scratch, side, C, op, (float)level);
        return;
    }
    apply_tables(image, pixels, C, tables);
}

void randaugment_apply(uint8_t *image, uint8_t *scratch, int side, int channels,
                       const RandAugmentDraw *d, const uint8_t *fill) {
    for (int l = 0; l < d->num_layers; l++) {
        const RandAugmentLayer *layer = &d->layers[l];
        if (layer->applied) {
            randaugment_apply_op(image, scratch, side, channels, layer->op, layer->magnitude,
                                 layer->negate, fill);
        }
    }
}
