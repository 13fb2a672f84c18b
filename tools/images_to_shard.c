// Converts an ImageNet-style folder (one subfolder of JPEGs per class) into
// two image shards (llmc/vision/image_shard.h, docs/formats.md): PREFIX_train.bin
// and PREFIX_val.bin, split per class. Decodes with libjpeg-turbo; training
// images are stored with the shorter side resized to crop*8/7 and
// centre-cropped square (random-resized-crop and flips happen at load time),
// validation images resized the same way and centre-cropped to crop.
// A file that is not a readable JPEG is skipped with a warning; a class with
// no readable image is an error.
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h> // after stdio.h: it uses FILE

#include "core/atomic_write.h"
#include "core/cli.h"
#include "vision/image_shard.h"
#include "core/rand.h"
#include "core/utils.h"

// ---------------------------------------------------------------- decoding

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf escape;
    char message[JMSG_LENGTH_MAX];
} JpegErrors;

static void jpeg_error_exit(j_common_ptr cinfo) {
    JpegErrors *e = (JpegErrors *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->message);
    longjmp(e->escape, 1);
}

// Counts corrupt-data warnings (level < 0) instead of printing each; trace messages are dropped.
static void jpeg_count_warnings(j_common_ptr cinfo, int level) {
    if (level < 0) {
        cinfo->err->num_warnings++;
    }
}

// Decodes path to RGB (*w x *h x 3), shrinking by libjpeg's DCT scaling while
// the shorter side stays >= 2 * min_side. Returns NULL and a reason on failure.
static uint8_t *decode_jpeg(const char *path, int min_side, int *w, int *h, char *why, size_t cap,
                            int report_warnings) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(why, cap, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct jpeg_decompress_struct cinfo;
    JpegErrors errors;
    uint8_t *volatile pixels = NULL;
    cinfo.err = jpeg_std_error(&errors.base);
    errors.base.error_exit = jpeg_error_exit;
    errors.base.emit_message = jpeg_count_warnings;
    if (setjmp(errors.escape)) {
        snprintf(why, cap, "not a readable JPEG: %s", errors.message);
        jpeg_destroy_decompress(&cinfo);
        fclose(f);
        free(pixels);
        return NULL;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, f);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    unsigned shorter = cinfo.image_width < cinfo.image_height ? cinfo.image_width : cinfo.image_height;
    cinfo.scale_num = 1;
    cinfo.scale_denom = 1;
    // keep at least 2x the target so that the area filter, not the DCT scaling, shapes the result
    while (cinfo.scale_denom < 8 && shorter / (cinfo.scale_denom * 2) >= 2 * (unsigned)min_side) {
        cinfo.scale_denom *= 2;
    }
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_components != 3 || cinfo.output_width == 0 || cinfo.output_height == 0 ||
        cinfo.output_width > 65535 || cinfo.output_height > 65535) {
        snprintf(why, cap, "unsupported JPEG (%u components, %ux%u)", cinfo.output_components,
                 cinfo.output_width, cinfo.output_height);
        jpeg_destroy_decompress(&cinfo);
        fclose(f);
        return NULL;
    }
    *w = (int)cinfo.output_width;
    *h = (int)cinfo.output_height;
    pixels = malloc_check((size_t)*w * *h * 3, "decoded image");
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = pixels + (size_t)cinfo.output_scanline * *w * 3;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    if (report_warnings && errors.base.num_warnings > 0) { // e.g. a truncated file: libjpeg pads it with grey
        fprintf(stderr, "warning: %s: corrupt JPEG data (%ld warning(s)), kept as decoded\n", path,
                errors.base.num_warnings);
    }
    jpeg_destroy_decompress(&cinfo);
    fclose(f);
    return pixels;
}

// ---------------------------------------------------------------- resizing

// Resizes so that the shorter side becomes `shorter`, then centre-crops a
// side x side square into out (HWC RGB). Each output pixel averages the source
// pixels its footprint covers (area filter: no aliasing when shrinking;
// nearest-to-bilinear-like when enlarging).
static void resize_centre_crop(uint8_t *out, int side, const uint8_t *src, int w, int h, int shorter) {
    double scale = (double)(w < h ? w : h) / shorter; // source pixels per output pixel
    double rw = w / scale, rh = h / scale;             // resized size
    double off_x = (rw - side) / 2.0, off_y = (rh - side) / 2.0;
    for (int y = 0; y < side; y++) {
        double sy0 = (y + off_y) * scale, sy1 = sy0 + scale;
        for (int x = 0; x < side; x++) {
            double sx0 = (x + off_x) * scale, sx1 = sx0 + scale;
            double acc[3] = {0, 0, 0}, weight = 0;
            int iy1 = (int)ceil(sy1), ix1 = (int)ceil(sx1);
            for (int iy = (int)floor(sy0); iy < iy1; iy++) {
                double wy = fmin(iy + 1, sy1) - fmax(iy, sy0);
                int cy = iy < 0 ? 0 : iy >= h ? h - 1 : iy;
                for (int ix = (int)floor(sx0); ix < ix1; ix++) {
                    double wx = fmin(ix + 1, sx1) - fmax(ix, sx0);
                    int cx = ix < 0 ? 0 : ix >= w ? w - 1 : ix;
                    const uint8_t *p = src + ((size_t)cy * w + cx) * 3;
                    for (int c = 0; c < 3; c++) {
                        acc[c] += wy * wx * p[c];
                    }
                    weight += wy * wx;
                }
            }
            for (int c = 0; c < 3; c++) {
                double v = acc[c] / weight;
                out[((size_t)y * side + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
            }
        }
    }
}

// ---------------------------------------------------------------- folders

typedef struct {
    char **items;
    int count, cap;
} StringList;

static void list_push(StringList *l, const char *s) {
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        char **grown = realloc(l->items, (size_t)l->cap * sizeof(char *));
        if (grown == NULL) {
            fatal("out of memory growing a file list");
        }
        l->items = grown;
    }
    size_t n = strlen(s) + 1;
    l->items[l->count] = malloc_check(n, "file name");
    memcpy(l->items[l->count++], s, n);
}

static int compare_strings(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

// Entries of dir (sorted, no dot files); want_dirs selects subfolders or files.
static StringList list_dir(const char *dir, int want_dirs) {
    StringList l = {0};
    DIR *d = opendir(dir);
    if (d == NULL) {
        fatal("%s: cannot open the folder: %s", dir, strerror(errno));
    }
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (is_directory(path) == want_dirs) {
            list_push(&l, e->d_name);
        }
    }
    closedir(d);
    if (l.count > 1) { // qsort's base may not be NULL, even for 0 items
        qsort(l.items, (size_t)l.count, sizeof(char *), compare_strings);
    }
    return l;
}

// PREFIX_classes.txt: one class name a line, label order
static void write_class_list(FILE *f, const char *path, const void *ctx) {
    const StringList *classes = ctx;
    for (int c = 0; c < classes->count; c++) {
        fwrite_check(classes->items[c], 1, strlen(classes->items[c]), f, path);
        fwrite_check("\n", 1, 1, f, path);
    }
}

static StringList read_class_list(const char *path, const char *root) {
    StringList l = {0};
    FILE *f = fopen_check(path, "r");
    char line[4096];
    int line_no = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        line_no++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#') {
            continue;
        }
        if (strchr(line, '/') != NULL || strcmp(line, "..") == 0) {
            fatal("%s:%d: '%s' is not a folder name", path, line_no, line);
        }
        char dir[8192];
        snprintf(dir, sizeof(dir), "%s/%s", root, line);
        if (!is_directory(dir)) {
            fatal("%s:%d: class '%s' has no folder %s", path, line_no, line, dir);
        }
        for (int i = 0; i < l.count; i++) {
            if (strcmp(l.items[i], line) == 0) {
                fatal("%s:%d: class '%s' listed twice", path, line_no, line);
            }
        }
        list_push(&l, line);
    }
    fclose(f);
    if (l.count == 0) {
        fatal("%s: the class list is empty", path);
    }
    return l;
}

// ---------------------------------------------------------------- shards

typedef struct {
    ImageShard shard;
    int cap;
} ShardBuilder;

static void builder_add(ShardBuilder *b, int label, const uint8_t *pixels) {
    ImageShard *s = &b->shard;
    size_t per_image = (size_t)s->side * s->side * 3;
    if (s->count == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        int32_t *labels = realloc(s->labels, (size_t)b->cap * sizeof(int32_t));
        uint8_t *grown = realloc(s->pixels, mul_size_check((size_t)b->cap, per_image, "shard"));
        if (labels == NULL || grown == NULL) {
            fatal("out of memory growing an image shard to %d images", b->cap);
        }
        s->labels = labels;
        s->pixels = grown;
    }
    s->labels[s->count] = label;
    memcpy(s->pixels + (size_t)s->count * per_image, pixels, per_image);
    s->count++;
}

int main(int argc, char **argv) {
    const char *input = NULL, *prefix = NULL, *class_file = NULL;
    int crop = 224;
    double val_fraction = 0.1;
    unsigned long long seed = 1337;
    CliFlag flags[] = {
        {"-i", CLI_STRING, &input, 0, 0, "folder with one subfolder of JPEGs per class (required)",
         "dir", 0, 0},
        {"-o", CLI_STRING, &prefix, 0, 0,
         "writes PREFIX_train.bin, PREFIX_val.bin, PREFIX_classes.txt, creating\n"
         "missing folders (required)", "prefix", 0, 0},
        {"-cl", CLI_STRING, &class_file, 0, 0,
         "class list, one subfolder name per line (default: every\n"
         "subfolder, sorted); the line number is the label", "file", 0, 0},
        {"-cs", CLI_INT, &crop, 8, 2048, "crop size: the model's image size (default 224)", NULL,
         0, 0},
        {"-vf", CLI_DOUBLE, &val_fraction, 0, 1,
         "fraction of each class for validation (default 0.1; at least one\n"
         "image per class when it has two or more)", NULL, CLI_OPEN_HI, 0},
        {"-sd", CLI_SEED, &seed, 0, 0, "seed of the per-class split (default 1337)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "images_to_shard", .synopsis = "-i DIR -o PREFIX [options]",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    if (input == NULL || prefix == NULL) {
        cli_error(&spec, "-i and -o are required");
    }
    if (!is_directory(input)) {
        fatal("-i: %s is not a folder", input);
    }
    StringList classes = class_file != NULL ? read_class_list(class_file, input) : list_dir(input, 1);
    if (classes.count == 0) {
        fatal("%s: no class subfolders", input);
    }
    const int stored = (crop * 8 + 6) / 7; // shorter side before the crop (256 for 224)
    ShardBuilder train = {.shard = {.num_classes = classes.count, .side = stored, .channels = 3,
                                    .kind = IMAGE_SHARD_TRAIN, .crop = crop}};
    ShardBuilder val = {.shard = {.num_classes = classes.count, .side = crop, .channels = 3,
                                  .kind = IMAGE_SHARD_EVAL, .crop = crop}};
    uint8_t *train_img = malloc_check((size_t)stored * stored * 3, "train image");
    uint8_t *val_img = malloc_check((size_t)crop * crop * 3, "val image");
    Rng rng;
    rng_seed(&rng, seed);
    int skipped = 0;
    for (int c = 0; c < classes.count; c++) {
        char dir[8192], path[16384], why[JMSG_LENGTH_MAX + 64];
        snprintf(dir, sizeof(dir), "%s/%s", input, classes.items[c]);
        StringList files = list_dir(dir, 0);
        // decodable files first, then a seeded shuffle picks the validation ones
        int *usable = malloc_check((size_t)(files.count + 1) * sizeof(int), "usable files");
        int n = 0;
        for (int i = 0; i < files.count; i++) {
            snprintf(path, sizeof(path), "%s/%s", dir, files.items[i]);
            int w, h;
            uint8_t *px = decode_jpeg(path, stored, &w, &h, why, sizeof(why), 1);
            if (px == NULL) {
                fprintf(stderr, "warning: skipping %s: %s\n", path, why);
                skipped++;
                continue;
            }
            free(px);
            usable[n++] = i;
        }
        if (n == 0) {
            fatal("%s: class '%s' has no readable JPEG image (%d file(s))", dir, classes.items[c],
                  files.count);
        }
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(rng_u32(&rng) % (uint32_t)(i + 1));
            int t = usable[i];
            usable[i] = usable[j];
            usable[j] = t;
        }
        int n_val = (int)floor(val_fraction * n + 0.5);
        if (val_fraction > 0.0 && n >= 2 && n_val == 0) {
            n_val = 1;
        }
        if (n_val >= n) {
            n_val = n - 1;
        }
        for (int k = 0; k < n; k++) {
            snprintf(path, sizeof(path), "%s/%s", dir, files.items[usable[k]]);
            int w, h;
            uint8_t *px = decode_jpeg(path, stored, &w, &h, why, sizeof(why), 0);
            if (px == NULL) {
                fatal("%s: decoded before, now: %s", path, why);
            }
            if (k < n_val) {
                resize_centre_crop(val_img, crop, px, w, h, stored);
                builder_add(&val, c, val_img);
            } else {
                resize_centre_crop(train_img, stored, px, w, h, stored);
                builder_add(&train, c, train_img);
            }
            free(px);
        }
        printf("class %d %s: %d image(s), %d train, %d val\n", c, classes.items[c], n, n - n_val,
               n_val);
        for (int i = 0; i < files.count; i++) {
            free(files.items[i]);
        }
        free(files.items);
        free(usable);
    }
    char out[8192];
    // -o data/in100: the folder data/ may not exist yet
    snprintf(out, sizeof(out), "%s", prefix);
    char *slash = strrchr(out, '/');
    if (slash != NULL && slash != out) {
        *slash = '\0';
        make_directories(out);
    }
    snprintf(out, sizeof(out), "%s_train.bin", prefix);
    image_shard_write(out, &train.shard);
    printf("wrote %s: %d images, %dx%d stored for random-resized-crop to %d\n", out,
           train.shard.count, stored, stored, crop);
    if (val.shard.count > 0) {
        snprintf(out, sizeof(out), "%s_val.bin", prefix);
        image_shard_write(out, &val.shard);
        printf("wrote %s: %d images, %dx%d centre crops\n", out, val.shard.count, crop, crop);
    }
    snprintf(out, sizeof(out), "%s_classes.txt", prefix);
    write_file_atomic(out, write_class_list, &classes);
    printf("%d class(es), %d file(s) skipped\n", classes.count, skipped);
    free(train_img);
    free(val_img);
    image_shard_free(&train.shard);
    image_shard_free(&val.shard);
    for (int c = 0; c < classes.count; c++) {
        free(classes.items[c]);
    }
    free(classes.items);
    return 0;
}
