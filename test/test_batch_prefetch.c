// llmc/vision/batch_prefetch.c: batches built ahead by worker threads are bit-identical
// to batches built one by one in training order as before it (per pixel and
// channel, the render image_shard.c had; the Fashion-MNIST flip), from the
// same Rng, for image shards with
// random-resized-crop + flip, Fashion-MNIST-style grey images with flips, and
// no augmentation; the Rng ends in the same state; the pending Rng state is
// the sequential one; a taken batch is untouched while the queue refills; and
// freeing with batches queued or being rendered joins the threads and frees
// everything (LeakSanitizer in the SAN=1 build). With random erasing and
// mixup / cutmix on, the prefetched batches and their mixed targets equal
// vision_make_train_batch's bit for bit.
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vision/batch_prefetch.h"
#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"
#include "vision/vision_data.h"

static int failures = 0;

static void expect(int cond, const char *what, const char *fmt, ...) FN_PRINTF(3, 4);
static void expect(int cond, const char *what, const char *fmt, ...) {
    if (cond) return;
    printf("FAIL %s: ", what);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    failures++;
}

// A train shard of random pixels: count images of side x side, crop x crop out.
static void make_shard_split(VisionSplit *s, int count, int side, int crop, int classes, Rng *rng) {
    memset(s, 0, sizeof(*s));
    s->is_shard = 1;
    ImageShard *sh = &s->shard;
    sh->count = count;
    sh->num_classes = classes;
    sh->side = side;
    sh->channels = 3;
    sh->kind = IMAGE_SHARD_TRAIN;
    sh->crop = crop;
    sh->labels = malloc_check((size_t)count * sizeof(int32_t), "labels");
    sh->pixels = malloc_check((size_t)count * side * side * 3, "pixels");
    for (int i = 0; i < count; i++) sh->labels[i] = (int32_t)(rng_u32(rng) % (uint32_t)classes);
    for (size_t i = 0; i < (size_t)count * side * side * 3; i++) sh->pixels[i] = rng_u32(rng) & 255u;
    s->count = count;
    s->side = crop;
    s->channels = 3;
    s->num_classes = classes;
}

// Fashion-MNIST-like: grey side x side images, 10 classes.
static void make_grey_split(VisionSplit *s, int count, int side, Rng *rng) {
    memset(s, 0, sizeof(*s));
    s->images.count = s->labels.count = count;
    s->images.rows = s->images.cols = side;
    s->images.data = malloc_check((size_t)count * side * side, "grey pixels");
    s->labels.data = malloc_check((size_t)count, "grey labels");
    for (size_t i = 0; i < (size_t)count * side * side; i++) s->images.data[i] = rng_u32(rng) & 255u;
    for (int i = 0; i < count; i++) s->labels.data[i] = (uint8_t)(rng_u32(rng) % FMNIST_CLASSES);
    s->count = count;
    s->side = side;
    s->channels = 1;
    s->num_classes = FMNIST_CLASSES;
}

// Bilinear sample of channel c at (y, x) in pixel-centre coordinates, clamped:
// image_shard.c's render before it shared the taps between pixels.
static float reference_bilinear(const uint8_t *img, int side, int c, float y, float x) {
    y = fminf(fmaxf(y, 0.0f), (float)(side - 1));
    x = fminf(fmaxf(x, 0.0f), (float)(side - 1));
    int y0 = (int)y, x0 = (int)x;
    int y1 = y0 + 1 < side ? y0 + 1 : y0, x1 = x0 + 1 < side ? x0 + 1 : x0;
    float fy = y - (float)y0, fx = x - (float)x0;
    float a = img[((size_t)y0 * side + x0) * 3 + c], b = img[((size_t)y0 * side + x1) * 3 + c];
    float d = img[((size_t)y1 * side + x0) * 3 + c], e = img[((size_t)y1 * side + x1) * 3 + c];
    return (a * (1 - fx) + b * fx) * (1 - fy) + (d * (1 - fx) + e * fx) * fy;
}

// The crop as image_shard_sample rendered it before (one pixel and channel at a time).
static void reference_render(const ImageShard *s, int index, ImageCrop w, float *out) {
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    const int side = s->side, crop = s->crop;
    const uint8_t *img = s->pixels + (size_t)index * side * side * 3;
    for (int c = 0; c < 3; c++) {
        for (int y = 0; y < crop; y++) {
            float sy = w.y0 + ((float)y + 0.5f) * w.h / (float)crop - 0.5f;
            for (int x = 0; x < crop; x++) {
                int xs = w.flip ? crop - 1 - x : x;
                float sx = w.x0 + ((float)xs + 0.5f) * w.w / (float)crop - 0.5f;
                float v = reference_bilinear(img, side, c, sy, sx) / 255.0f;
                out[((size_t)c * crop + y) * crop + x] = (v - mean[c]) / std[c];
            }
        }
    }
}

// The batch as the trainers built it before the prefetcher, one image after
// the other from rng: for shards the same draws (image_shard_draw_crop, the
// code that drew them then) and the per-pixel render above; for grey images a flip
// bit per image (rng_u32 & 1) and (p / 255 - mean) / std.
static void sequential_batch(float *images, int *labels, const VisionSplit *s, const int *indices,
                             int B, Rng *rng) {
    const int S = s->side;
    const size_t floats = (size_t)s->channels * S * S;
    for (int b = 0; b < B; b++) {
        float *dst = images + b * floats;
        if (s->is_shard) {
            reference_render(&s->shard, indices[b], image_shard_draw_crop(&s->shard, rng), dst);
            labels[b] = s->shard.labels[indices[b]];
            continue;
        }
        int flip = rng != NULL && (rng_u32(rng) & 1u);
        const uint8_t *src = s->images.data + (size_t)indices[b] * S * S;
        for (int y = 0; y < S; y++) {
            for (int x = 0; x < S; x++) {
                dst[y * S + x] = (src[y * S + (flip ? S - 1 - x : x)] / 255.0f - FMNIST_MEAN) / FMNIST_STD;
            }
        }
        labels[b] = s->labels.data[indices[b]];
    }
}

static int allocations = 0; // the counting allocator's live buffers (this test's own)
static void *counting_alloc(size_t bytes) {
    allocations++;
    return malloc(bytes);
}
static void counting_free(void *p) {
    allocations--;
    free(p);
}

// steps batches of B from a shuffled order, sequential vs prefetched with
// (depth, workers), augmentation from rngs seeded alike (or none).
static void compare_runs(const char *name, const VisionSplit *s, int B, int steps, int depth,
                         int workers, int augment, uint64_t seed) {
    char what[160];
    snprintf(what, sizeof(what), "%s depth %d workers %d%s", name, depth, workers,
             augment ? "" : " no augmentation");
    const size_t floats = (size_t)B * s->channels * s->side * s->side;
    float *expected = malloc_check((size_t)steps * floats * sizeof(float), "expected");
    int *expected_labels = malloc_check((size_t)steps * B * sizeof(int), "expected labels");
    uint64_t *rng_before = malloc_check((size_t)steps * sizeof(uint64_t), "rng states");
    int *order = malloc_check((size_t)s->count * sizeof(int), "order");
    Rng ref, pre, shuffle;
    rng_seed(&ref, seed);
    rng_seed(&pre, seed);
    rng_seed(&shuffle, seed ^ 0x5A5AULL);
    for (int i = 0; i < s->count; i++) order[i] = i;
    vision_shuffle(order, s->count, &shuffle);
    const int per_pass = s->count / B;
    for (int k = 0; k < steps; k++) {
        rng_before[k] = ref.state;
        sequential_batch(expected + k * floats, expected_labels + (size_t)k * B, s,
                         order + (size_t)(k % per_pass) * B, B, augment ? &ref : NULL);
    }
    BatchBufferAllocator counting = {counting_alloc, counting_free};
    BatchPrefetch *p = batch_prefetch_create(s, B, depth, workers, counting);
    int submitted = 0, mismatched = -1, held_changed = -1, rng_wrong = -1;
    for (; submitted < depth && submitted < steps; submitted++) {
        batch_prefetch_submit(p, order + (size_t)(submitted % per_pass) * B, augment ? &pre : NULL);
    }
    const float *held = NULL; // the previous batch: must stay as it was until the next submit
    for (int k = 0; k < steps; k++) {
        uint64_t pending = 0;
        if (augment && (!batch_prefetch_pending_rng(p, &pending) || pending != rng_before[k])) {
            if (rng_wrong < 0) rng_wrong = k;
        }
        const float *images;
        const int *labels;
        batch_prefetch_take(p, &images, &labels);
        if (held != NULL && memcmp(held, expected + (k - 1) * floats, floats * sizeof(float)) != 0) {
            if (held_changed < 0) held_changed = k - 1;
        }
        if (memcmp(images, expected + k * floats, floats * sizeof(float)) != 0 ||
            memcmp(labels, expected_labels + (size_t)k * B, (size_t)B * sizeof(int)) != 0) {
            if (mismatched < 0) mismatched = k;
        }
        held = images;
        if (submitted < steps) {
            batch_prefetch_submit(p, order + (size_t)(submitted % per_pass) * B, augment ? &pre : NULL);
            submitted++;
        }
    }
    expect(batch_prefetch_queued(p) == 0, what, "%d batches still queued", batch_prefetch_queued(p));
    uint64_t none;
    expect(!batch_prefetch_pending_rng(p, &none), what, "a pending Rng with nothing queued");
    batch_prefetch_free(p);
    expect(mismatched < 0, what, "batch %d differs from the sequential one (bits)", mismatched);
    expect(held_changed < 0, what, "batch %d changed after it was taken", held_changed);
    expect(rng_wrong < 0, what, "pending Rng state before batch %d is not the sequential one", rng_wrong);
    expect(pre.state == ref.state, what, "the Rng ends elsewhere than the sequential one's");
    expect(allocations == 0, what, "%d pinned-style buffers not freed", allocations);
    if (mismatched < 0 && held_changed < 0 && rng_wrong < 0 && pre.state == ref.state) {
        printf("ok   %s: %d batches bit-identical, Rng states equal\n", what, steps);
    }
    free(expected);
    free(expected_labels);
    free(rng_before);
    free(order);
}

// vision_make_batch (OpenMP over images) equals the sequential build too.
static void compare_make_batch(const char *name, const VisionSplit *s, int B, uint64_t seed) {
    const size_t floats = (size_t)B * s->channels * s->side * s->side;
    float *a = malloc_check(floats * sizeof(float), "a"), *b = malloc_check(floats * sizeof(float), "b");
    int *la = malloc_check((size_t)B * sizeof(int), "la"), *lb = malloc_check((size_t)B * sizeof(int), "lb");
    int *indices = malloc_check((size_t)B * sizeof(int), "indices");
    for (int i = 0; i < B; i++) indices[i] = (i * 7 + 3) % s->count;
    Rng r1, r2;
    rng_seed(&r1, seed);
    rng_seed(&r2, seed);
    sequential_batch(a, la, s, indices, B, &r1);
    vision_make_batch(b, lb, s, indices, B, &r2);
    int same = memcmp(a, b, floats * sizeof(float)) == 0 && memcmp(la, lb, (size_t)B * sizeof(int)) == 0;
    expect(same && r1.state == r2.state, name, "vision_make_batch differs from the sequential build");
    if (same && r1.state == r2.state) printf("ok   %s: vision_make_batch bit-identical\n", name);
    free(a);
    free(b);
    free(la);
    free(lb);
    free(indices);
}

// With RandAugment on (-aa): the prefetched batches (depth 2, 3 workers) equal
// vision_make_batch's from the same Rng, bit for bit, and the Rngs end alike.
static void compare_randaugment(const char *name, VisionSplit *s, int B, int steps, uint64_t seed) {
    char err[256];
    if (randaugment_parse(&s->randaugment, "rand-m9-mstd0.5-inc1", err, sizeof(err)) != 0) {
        fatal("rand-m9-mstd0.5-inc1: %s", err);
    }
    const size_t floats = (size_t)B * s->channels * s->side * s->side;
    float *expected = malloc_check(floats * sizeof(float), "expected");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *indices = malloc_check((size_t)B * sizeof(int), "indices");
    for (int i = 0; i < B; i++) indices[i] = (i * 5 + 1) % s->count;
    Rng ref, pre;
    rng_seed(&ref, seed);
    rng_seed(&pre, seed);
    BatchPrefetch *p = batch_prefetch_create(s, B, 2, 3, (BatchBufferAllocator){0});
    int mismatched = -1;
    for (int k = 0; k < steps; k++) {
        batch_prefetch_submit(p, indices, &pre);
        const float *images;
        const int *got_labels;
        batch_prefetch_take(p, &images, &got_labels);
        vision_make_batch(expected, labels, s, indices, B, &ref);
        if (memcmp(images, expected, floats * sizeof(float)) != 0 && mismatched < 0) mismatched = k;
    }
    batch_prefetch_free(p);
    expect(mismatched < 0 && pre.state == ref.state, name,
           "with -aa, prefetched batch %d differs from vision_make_batch's (or the Rngs end apart)",
           mismatched);
    if (mismatched < 0 && pre.state == ref.state) {
        printf("ok   %s with -aa rand-m9-mstd0.5-inc1: %d prefetched batches bit-identical\n", name,
               steps);
    }
    s->randaugment = (RandAugmentSpec){0};
    free(expected);
    free(labels);
    free(indices);
}

// With the batch-level ops (erasing, mixup / cutmix; batch_augment.h): steps
// batches prefetched with (depth, workers) equal vision_make_train_batch's
// built one by one from an Rng seeded alike, images, labels and mixed
// targets bit for bit, with the same pending and final Rng states.
static void compare_batch_ops(const char *name, const VisionSplit *s, int B, int steps, int depth,
                              int workers, const BatchAugment *aug, uint64_t seed) {
    char what[160];
    snprintf(what, sizeof(what), "%s with erasing and mixup / cutmix, depth %d workers %d", name,
             depth, workers);
    const size_t floats = (size_t)B * s->channels * s->side * s->side;
    float *images = malloc_check(floats * sizeof(float), "images");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *labels2 = malloc_check((size_t)B * sizeof(int), "labels2");
    float *lam = malloc_check((size_t)B * sizeof(float), "lam");
    int *indices = malloc_check((size_t)steps * B * sizeof(int), "indices");
    for (int i = 0; i < steps * B; i++) indices[i] = (i * 5 + 1) % s->count;
    Rng ref, pre;
    rng_seed(&ref, seed);
    rng_seed(&pre, seed);
    BatchPrefetch *p = batch_prefetch_create(s, B, depth, workers, (BatchBufferAllocator){0});
    batch_prefetch_set_augment(p, aug);
    int submitted = 0, mismatched = -1, mixed = 0;
    for (; submitted < depth && submitted < steps; submitted++) {
        batch_prefetch_submit(p, indices + (size_t)submitted * B, &pre);
    }
    for (int k = 0; k < steps; k++) {
        uint64_t pending = 0;
        const int has_pending = batch_prefetch_pending_rng(p, &pending);
        const uint64_t before = ref.state;
        MixTargets want = vision_make_train_batch(images, labels, labels2, lam, s,
                                                  indices + (size_t)k * B, B, &ref, aug);
        const float *got_images;
        const int *got_labels;
        batch_prefetch_take(p, &got_images, &got_labels);
        MixTargets got = batch_prefetch_taken_mix(p);
        int same = has_pending && pending == before &&
                   memcmp(got_images, images, floats * sizeof(float)) == 0 &&
                   memcmp(got_labels, labels, (size_t)B * sizeof(int)) == 0 &&
                   (got.labels2 == NULL) == (want.labels2 == NULL);
        if (same && want.labels2 != NULL) {
            mixed++;
            same = memcmp(got.labels2, want.labels2, (size_t)B * sizeof(int)) == 0 &&
                   memcmp(got.lam, want.lam, (size_t)B * sizeof(float)) == 0;
        }
        if (!same && mismatched < 0) mismatched = k;
        if (submitted < steps) {
            batch_prefetch_submit(p, indices + (size_t)submitted * B, &pre);
            submitted++;
        }
    }
    batch_prefetch_free(p);
    expect(mismatched < 0, what, "batch %d differs from vision_make_train_batch's", mismatched);
    expect(pre.state == ref.state, what, "the Rng ends elsewhere than the sequential one's");
    expect(mixed == steps, what, "%d of %d batches mixed", mixed, steps);
    if (mismatched < 0 && pre.state == ref.state && mixed == steps) {
        printf("ok   %s: %d batches bit-identical, Rng states equal\n", what, steps);
    }
    free(images);
    free(labels);
    free(labels2);
    free(lam);
    free(indices);
}

// Freed with batches queued and workers mid-image, or never used: joins, frees.
static void early_exit(const VisionSplit *s, int B) {
    Rng rng;
    rng_seed(&rng, 7);
    int *indices = malloc_check((size_t)B * sizeof(int), "indices");
    for (int i = 0; i < B; i++) indices[i] = i % s->count;
    BatchBufferAllocator counting = {counting_alloc, counting_free};
    BatchPrefetch *p = batch_prefetch_create(s, B, 3, 4, counting);
    for (int k = 0; k < 3; k++) batch_prefetch_submit(p, indices, &rng);
    const float *images;
    const int *labels;
    batch_prefetch_take(p, &images, &labels);
    batch_prefetch_submit(p, indices, &rng);
    batch_prefetch_free(p); // 3 queued, some being rendered
    batch_prefetch_free(batch_prefetch_create(s, B, 2, 3, counting)); // idle workers
    batch_prefetch_free(NULL);
    expect(allocations == 0, "early exit", "%d buffers not freed", allocations);
    if (allocations == 0) printf("ok   early exit: freed with batches queued and being rendered\n");
    free(indices);
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_batch_prefetch", .synopsis = "",
                    .about = "Prefetched training batches vs the sequential ones (bit for bit).\n"};
    cli_parse(&spec, argc, argv, NULL);
    const char *seed_text = getenv("FOLDNORM_TEST_SEED");
    const uint64_t seed = seed_text != NULL ? strtoull(seed_text, NULL, 10) : 20261130ull;
    printf("test_batch_prefetch: seed %llu\n", (unsigned long long)seed);
    Rng data_rng;
    rng_seed(&data_rng, seed);
    VisionSplit shard, grey;
    make_shard_split(&shard, 37, 40, 32, 5, &data_rng);
    make_grey_split(&grey, 29, 12, &data_rng);
    compare_make_batch("shard", &shard, 9, seed + 1);
    compare_make_batch("grey", &grey, 9, seed + 2);
    VisionSplit large; // Swin-Tiny's crop from images_to_shard's stored side
    make_shard_split(&large, 3, 256, 224, 100, &data_rng);
    compare_make_batch("shard 256 -> 224", &large, 6, seed + 30);
    vision_split_free(&large);
    const int configs[][2] = {{1, 0}, {1, 1}, {2, 3}, {3, 4}}; // depth, workers
    for (int i = 0; i < 4; i++) {
        compare_runs("shard", &shard, 6, 11, configs[i][0], configs[i][1], 1, seed + 3 + i);
        compare_runs("grey", &grey, 5, 11, configs[i][0], configs[i][1], 1, seed + 13 + i);
    }
    compare_runs("shard", &shard, 6, 7, 2, 3, 0, seed + 23);
    compare_randaugment("shard", &shard, 6, 4, seed + 24);
    compare_randaugment("grey", &grey, 5, 4, seed + 25);
    const BatchAugment ops = {0.5f, {0.8f, 1.0f}};
    for (int i = 0; i < 4; i++) {
        compare_batch_ops("shard", &shard, 7, 9, configs[i][0], configs[i][1], &ops, seed + 40 + i);
        compare_batch_ops("grey", &grey, 6, 9, configs[i][0], configs[i][1], &ops, seed + 50 + i);
    }
    early_exit(&shard, 16);
    vision_split_free(&shard);
    vision_split_free(&grey);
    printf("%s\n", failures == 0 ? "test_batch_prefetch: passed" : "test_batch_prefetch: FAILED");
    return failures == 0 ? 0 : 1;
}
