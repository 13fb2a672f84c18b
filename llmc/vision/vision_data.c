#include "vision_data.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/utils.h"

static void split_load_shard(VisionSplit *s, const char *path, int limit) {
    memset(s, 0, sizeof(*s));
    s->is_shard = 1;
    image_shard_read(&s->shard, path);
    s->side = s->shard.crop;
    s->channels = 3;
    s->num_classes = s->shard.num_classes;
    s->count = limit > 0 && limit < s->shard.count ? limit : s->shard.count;
}

void vision_split_free(VisionSplit *s) {
    if (s->is_shard) {
        image_shard_free(&s->shard);
    } else {
        idx_free(&s->images);
        idx_free(&s->labels);
    }
}

static void split_load_fmnist(VisionSplit *s, const char *dir, const char *prefix, int limit) {
    memset(s, 0, sizeof(*s));
    s->channels = 1;
    s->num_classes = FMNIST_CLASSES;
    char images_path[4096], labels_path[4096];
    snprintf(images_path, sizeof(images_path), "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(labels_path, sizeof(labels_path), "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    idx_read_split(&s->images, &s->labels, images_path, labels_path, FMNIST_CLASSES);
    if (s->images.rows != s->images.cols) {
        fatal("%s: images are %dx%d, expected square images", images_path, s->images.rows,
              s->images.cols);
    }
    s->side = s->images.rows;
    s->count = limit > 0 && limit < s->images.count ? limit : s->images.count;
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void vision_split_load(VisionSplit *s, const char *path, const char *fmnist_prefix, int limit) {
    if (is_directory(path)) {
        split_load_fmnist(s, path, fmnist_prefix, limit);
    } else {
        split_load_shard(s, path, limit);
    }
}

void vision_data_load(VisionSplit *train, VisionSplit *test, const char *train_path,
                      const char *test_path, int max_train, int max_test) {
    vision_split_load(train, train_path, "train", max_train);
    char twin[4096];
    if (test_path == NULL && !train->is_shard) {
        test_path = train_path;
    } else if (test_path == NULL) {
        // PREFIX_train.bin -> PREFIX_val.bin
        const char *suffix = "_train.bin";
        size_t n = strlen(train_path), k = strlen(suffix);
        if (n < k || strcmp(train_path + n - k, suffix) != 0 || n - k + 9 > sizeof(twin)) {
            fatal("-i %s: not named PREFIX_train.bin; give its test shard with -j", train_path);
        }
        snprintf(twin, sizeof(twin), "%.*s_val.bin", (int)(n - k), train_path);
        test_path = twin;
    }
    vision_split_load(test, test_path, "t10k", max_test);
    if (test->side != train->side || test->channels != train->channels ||
        test->num_classes != train->num_classes) {
        fatal("%s: the test data (%d px, %d channel(s), %d classes) does not match the train "
              "data %s (%d px, %d channel(s), %d classes)",
              test_path, test->side, test->channels, test->num_classes, train_path, train->side,
              train->channels, train->num_classes);
    }
}

void vision_draw_augment(ImageAugment *augments, const VisionSplit *s, int B, Rng *rng) {
    for (int b = 0; b < B; b++) {
        ImageAugment *a = &augments[b];
        if (s->is_shard) {
            a->crop = image_shard_draw_crop(&s->shard, rng);
        } else {
            ImageCrop whole = {0.0f, 0.0f, (float)s->side, (float)s->side, 0};
            whole.flip = rng != NULL && (rng_u32(rng) & 1u);
            a->crop = whole;
        }
        a->randaugment.num_layers = 0;
        if (rng != NULL && s->randaugment.num_layers > 0) {
            randaugment_draw(&a->randaugment, &s->randaugment, rng);
        }
    }
}

// The grey image through its flip as bytes (S, S).
static void grey_bytes(uint8_t *out, const VisionSplit *s, int index, int flip) {
    const int S = s->side;
    const uint8_t *src = s->images.data + (size_t)index * S * S;
    for (int y = 0; y < S; y++) {
        for (int x = 0; x < S; x++) out[y * S + x] = src[y * S + (flip ? S - 1 - x : x)];
    }
}

// The RandAugment path: bytes, the ops, then normalised floats.
static void render_randaugment(float *image, const VisionSplit *s, int index,
                               const ImageAugment *augment) {
    const int S = s->side, C = s->channels;
    const size_t n = (size_t)S * S * C;
    uint8_t *bytes = malloc_check(2 * n, "RandAugment image");
    if (s->is_shard) {
        image_shard_render_bytes(&s->shard, index, augment->crop, bytes);
    } else {
        grey_bytes(bytes, s, index, augment->crop.flip);
    }
    const uint8_t grey_fill = FMNIST_MEAN_BYTE;
    randaugment_apply(bytes, bytes + n, S, C, &augment->randaugment,
                      s->is_shard ? IMAGE_SHARD_MEAN_BYTES : &grey_fill);
    if (s->is_shard) {
        image_shard_normalise_bytes(bytes, S, image);
    } else {
        for (size_t i = 0; i < n; i++) image[i] = (bytes[i] / 255.0f - FMNIST_MEAN) / FMNIST_STD;
    }
    free(bytes);
}

void vision_render_image(float *image, int *label, const VisionSplit *s, int index,
                         const ImageAugment *augment) {
    *label = s->is_shard ? s->shard.labels[index] : s->labels.data[index];
    if (augment->randaugment.num_layers > 0) {
        render_randaugment(image, s, index, augment);
        return;
    }
    const ImageCrop crop = augment->crop;
    if (s->is_shard) {
        image_shard_render(&s->shard, index, crop, image);
        return;
    }
    const int S = s->side;
    const uint8_t *src = s->images.data + (size_t)index * S * S;
    for (int y = 0; y < S; y++) {
        for (int x = 0; x < S; x++) {
            float p = src[y * S + (crop.flip ? S - 1 - x : x)] / 255.0f;
            image[y * S + x] = (p - FMNIST_MEAN) / FMNIST_STD;
        }
    }
}

MixTargets vision_make_train_batch(float *images, int *labels, int *labels2, float *lam,
                                   const VisionSplit *s, const int *indices, int B, Rng *rng,
                                   const BatchAugment *aug) {
    ImageAugment *augments = malloc_check((size_t)B * sizeof(ImageAugment), "batch augments");
    vision_draw_augment(augments, s, B, rng); // in order: the draws do not depend on threads
    BatchAugmentDraws ops;
    batch_augment_draws_alloc(&ops, B);
    batch_augment_draw(&ops, aug, B, s->side, s->side, rng);
    const int C = s->channels, S = s->side;
    const size_t image_floats = (size_t)C * S * S;
#pragma omp parallel for schedule(dynamic, 1) if ((s->is_shard || s->randaugment.num_layers > 0) && B > 1)
    for (int b = 0; b < B; b++) {
        vision_render_image(images + b * image_floats, labels + b, s, indices[b], &augments[b]);
        random_erasing_apply(images + b * image_floats, C, S, S, &ops.erase[b]);
    }
    MixTargets mix = batch_augment_mix(images, labels, labels2, lam, B, C, S, &ops);
    batch_augment_draws_free(&ops);
    free(augments);
    return mix;
}

void vision_make_batch(float *images, int *labels, const VisionSplit *s, const int *indices, int B,
                       Rng *flip_rng) {
    vision_make_train_batch(images, labels, NULL, NULL, s, indices, B, flip_rng, NULL);
}

void vision_shuffle(int *order, int n, Rng *rng) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_u32(rng) % (uint32_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

unsigned long long vision_batch_flips_seed(unsigned long long seed, int rank, int epoch, int batch) {
    // distinct odd multipliers (golden ratio, splitmix64's) per coordinate
    return (seed ^ 0xF11BULL) + 0x9E3779B97F4A7C15ULL * (unsigned long long)rank +
           0xBF58476D1CE4E5B9ULL * (unsigned long long)epoch +
           0x94D049BB133111EBULL * (unsigned long long)batch;
}
