// Host augmentation throughput (issue 15): how many training images per
// second the host builds (random-resized-crop + flip, bilinear, normalise:
// llmc/vision/image_shard.c; a flip for Fashion-MNIST), on one thread and through
// llmc/vision/batch_prefetch.c's worker pool, against the rate a GPU trains at.
// Synthetic data: random pixels (the bilinear work does not depend on them).
//   train shard: stored side -S (default 256, images_to_shard's for 224),
//     crop -cs (default 224): Swin-Tiny's input;
//   grey: 28x28 Fashion-MNIST-style images with flips.
// Each also with RandAugment (-aa, default Swin-T's rand-m9-mstd0.5-inc1:
// the crop rendered to bytes, the ops, then normalised), and RandAugment
// alone: each op's time on one crop x crop RGB image, and the spec's mean
// per image (its draws: ~1 op applied an image at n 2, p 0.5).
// Per configuration: images/s (wall) over -r timed batches of -b images, after
// one untimed batch, and the process CPU time per image (all threads).
// With -reprob / -mixup / -cutmix (train_vit's flags), a second caller-thread
// line per configuration with those batch-level ops on: their cost per core.
// Usage: bench_augment [-b 128] [-r 8] [-S 256] [-cs 224] [-dw 4] [-aa SPEC]
//                      [-reprob 0.25 -mixup 0.8 -cutmix 1.0]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vision/batch_prefetch.h"
#include "vision/randaugment.h"
#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"
#include "vision/vision_data.h"

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void make_shard(VisionSplit *s, int count, int side, int crop, Rng *rng) {
    memset(s, 0, sizeof(*s));
    s->is_shard = 1;
    ImageShard *sh = &s->shard;
    *sh = (ImageShard){.count = count, .num_classes = 100, .side = side, .channels = 3,
                       .kind = IMAGE_SHARD_TRAIN, .crop = crop};
    sh->labels = malloc_check((size_t)count * sizeof(int32_t), "labels");
    sh->pixels = malloc_check(mul_size_check((size_t)count * side, (size_t)side * 3, "pixels"), "pixels");
    for (int i = 0; i < count; i++) sh->labels[i] = (int32_t)(rng_u32(rng) % 100u);
    for (size_t i = 0; i < (size_t)count * side * side * 3; i++) sh->pixels[i] = rng_u32(rng) & 255u;
    s->count = count;
    s->side = crop;
    s->channels = 3;
    s->num_classes = 100;
}

static void make_grey(VisionSplit *s, int count, Rng *rng) {
    memset(s, 0, sizeof(*s));
    s->images = (IdxArray){.count = count, .rows = 28, .cols = 28};
    s->labels = (IdxArray){.count = count};
    s->images.data = malloc_check((size_t)count * 28 * 28, "grey pixels");
    s->labels.data = malloc_check((size_t)count, "grey labels");
    for (size_t i = 0; i < (size_t)count * 28 * 28; i++) s->images.data[i] = rng_u32(rng) & 255u;
    for (int i = 0; i < count; i++) s->labels.data[i] = (uint8_t)(rng_u32(rng) % 10u);
    s->count = count;
    s->side = 28;
    s->channels = 1;
    s->num_classes = 10;
}

// images/s of (rounds + 1) batches through a prefetcher, the first untimed;
// the process CPU seconds per image in *cpu_per_image
static double prefetch_rate(const VisionSplit *s, const int *indices, int B, int rounds, int workers,
                            const BatchAugment *ops, double *cpu_per_image) {
    Rng rng;
    rng_seed(&rng, 1);
    const int depth = 2;
    BatchPrefetch *p = batch_prefetch_create(s, B, depth, workers, (BatchBufferAllocator){0});
    batch_prefetch_set_augment(p, ops);
    const float *images;
    const int *labels;
    batch_prefetch_submit(p, indices, &rng);
    batch_prefetch_take(p, &images, &labels); // untimed: page faults of the buffers, thread start
    const double t0 = now_seconds(), c0 = cpu_seconds();
    int submitted = 0;
    for (; submitted < depth && submitted < rounds; submitted++) batch_prefetch_submit(p, indices, &rng);
    for (int k = 0; k < rounds; k++) {
        batch_prefetch_take(p, &images, &labels);
        if (submitted < rounds) {
            batch_prefetch_submit(p, indices, &rng);
            submitted++;
        }
    }
    const double seconds = now_seconds() - t0;
    *cpu_per_image = (cpu_seconds() - c0) / ((double)rounds * B);
    batch_prefetch_free(p);
    return (double)rounds * B / seconds;
}

static void bench_split(const char *name, const VisionSplit *s, int B, int rounds, int max_workers,
                        const BatchAugment *ops) {
    int *indices = malloc_check((size_t)B * sizeof(int), "indices");
    for (int b = 0; b < B; b++) indices[b] = b % s->count;
    // 0 workers: each batch built on the calling thread, as train_vit.cu did between steps
    // the CPU time per image is the figure that moves least on a shared machine
    double cpu;
    const double one = prefetch_rate(s, indices, B, rounds, 0, NULL, &cpu);
    printf("%-34s  caller thread  %9.0f images/s  CPU %.4f ms/image = %.0f images/s per core\n",
           name, one, 1e3 * cpu, 1.0 / cpu);
    if (batch_augment_active(ops)) {
        double cpu_ops;
        const double with_ops = prefetch_rate(s, indices, B, rounds, 0, ops, &cpu_ops);
        printf("%-34s  + erase/mix    %9.0f images/s  CPU %.4f ms/image = %.0f images/s per core "
               "(the ops: %.4f ms/image)\n",
               name, with_ops, 1e3 * cpu_ops, 1.0 / cpu_ops, 1e3 * (cpu_ops - cpu));
    }
    for (int w = 1; w <= max_workers; w *= 2) {
        const double rate = prefetch_rate(s, indices, B, rounds, w, NULL, &cpu);
        printf("%-34s  %2d worker(s)   %9.0f images/s  CPU %.4f ms/image\n", name, w, rate,
               1e3 * cpu);
    }
    free(indices);
}

// RandAugment alone on crop x crop RGB images of random pixels: each op's
// CPU time at magnitude 9, then the spec's draws over many images.
static void bench_randaugment(const RandAugmentSpec *spec, int crop, Rng *rng) {
    const size_t n = (size_t)crop * crop * 3;
    uint8_t *source = malloc_check(3 * n, "RandAugment images");
    uint8_t *image = source + n, *scratch = source + 2 * n;
    for (size_t i = 0; i < n; i++) source[i] = rng_u32(rng) & 255u;
    const int reps = crop >= 128 ? 20 : 2000;
    printf("RandAugment alone, %dx%d RGB, magnitude 9, one thread (CPU ms per op):\n", crop, crop);
    for (int op = 0; op < RA_NUM_OPS; op++) {
        const double c0 = cpu_seconds();
        for (int r = 0; r < reps; r++) {
            memcpy(image, source, n);
            randaugment_apply_op(image, scratch, crop, 3, op, 9.0f, r & 1, IMAGE_SHARD_MEAN_BYTES);
        }
        printf("  %-22s %.3f%s", randaugment_op_name(op), 1e3 * (cpu_seconds() - c0) / reps,
               op % 3 == 2 ? "\n" : "");
    }
    printf("\n");
    const int images = crop >= 128 ? 200 : 20000;
    double total = 0.0; // the ops alone: not the draws, not the copy of the source
    for (int i = 0; i < images; i++) {
        RandAugmentDraw d;
        randaugment_draw(&d, spec, rng);
        memcpy(image, source, n);
        const double c0 = cpu_seconds();
        randaugment_apply(image, scratch, crop, 3, &d, IMAGE_SHARD_MEAN_BYTES);
        total += cpu_seconds() - c0;
    }
    char text[128];
    randaugment_describe(spec, text, sizeof(text));
    printf("RandAugment %s: CPU %.4f ms/image = %.0f images/s per core (mean over %d images)\n",
           text, 1e3 * total / images, images / total, images);
    free(source);
}

int main(int argc, char **argv) {
    int B = 128, rounds = 8, side = 256, crop = 224, max_workers = 4;
    const char *aa = "rand-m9-mstd0.5-inc1";
    BatchAugment ops = {0.0f, {0.0f, 0.0f}};
    CliFlag flags[] = {
        {"-b", CLI_INT, &B, 1, 65536, "images per batch (default 128)", NULL, 0, 0},
        {"-r", CLI_INT, &rounds, 1, 100000, "timed batches (default 8)", NULL, 0, 0},
        {"-S", CLI_INT, &side, 2, 4096, "stored side of the shard images (default 256)", NULL, 0, 0},
        {"-cs", CLI_INT, &crop, 1, 4096, "crop side, <= -S (default 224)", NULL, 0, 0},
        {"-dw", CLI_INT, &max_workers, 1, 1024, "most worker threads: 1, 2, 4, .. (default 4)",
         NULL, 0, 0},
        {"-aa", CLI_STRING, &aa, 0, 0,
         "the RandAugment spec timed (default rand-m9-mstd0.5-inc1)", "spec", 0, 0},
        {"-reprob", CLI_FLOAT, &ops.erase_prob, 0, 1, "random erasing's probability (default 0)",
         NULL, 0, 0},
        {"-mixup", CLI_FLOAT, &ops.mix.mixup_alpha, 0, 100, "mixup's alpha (default 0)", NULL, 0, 0},
        {"-cutmix", CLI_FLOAT, &ops.mix.cutmix_alpha, 0, 100, "cutmix's alpha (default 0)", NULL, 0,
         0},
    };
    CliSpec spec = {.program = "bench_augment", .synopsis = "[options]",
                    .about = "Host augmentation throughput: one thread and the prefetch pool.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    if (crop > side) cli_error(&spec, "-cs %d: larger than -S %d", crop, side);
    RandAugmentSpec ra;
    char err[256];
    if (randaugment_parse(&ra, aa, err, sizeof(err)) != 0) cli_error(&spec, "-aa %s: %s", aa, err);
    Rng rng;
    rng_seed(&rng, 20261130);
    VisionSplit shard, grey;
    const int count = B < 64 ? B : 64; // distinct images, reused: 64 x 256^2 x 3 = 12.6 MB
    make_shard(&shard, count, side, crop, &rng);
    make_grey(&grey, B, &rng);
    char name[80];
    snprintf(name, sizeof(name), "shard %dx%d -> crop %d, B=%d", side, side, crop, B);
    bench_split(name, &shard, B, rounds, max_workers, &ops);
    snprintf(name, sizeof(name), "grey 28x28 + flips, B=%d", B);
    bench_split(name, &grey, B, rounds * 16, max_workers, &ops);
    shard.randaugment = grey.randaugment = ra;
    snprintf(name, sizeof(name), "shard -> crop %d + RandAugment", crop);
    bench_split(name, &shard, B, rounds, max_workers, &ops);
    snprintf(name, sizeof(name), "grey 28x28 + RandAugment");
    bench_split(name, &grey, B, rounds * 16, max_workers, &ops);
    bench_randaugment(&ra, crop, &rng);
    vision_split_free(&shard);
    vision_split_free(&grey);
    return 0;
}
