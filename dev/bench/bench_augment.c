// Host augmentation throughput (issue 15): how many training images per
// second the host builds (random-resized-crop + flip, bilinear, normalise:
// llmc/vision/image_shard.c; a flip for Fashion-MNIST), on one thread and through
// llmc/vision/batch_prefetch.c's worker pool, against the rate a GPU trains at.
// Synthetic data: random pixels (the bilinear work does not depend on them).
//   train shard: stored side -S (default 256, images_to_shard's for 224),
//     crop -cs (default 224): Swin-Tiny's input;
//   grey: 28x28 Fashion-MNIST-style images with flips.
// Per configuration: images/s (wall) over -r timed batches of -b images, after
// one untimed batch, and the process CPU time per image (all threads).
// With -reprob / -mixup / -cutmix (train_vit's flags), a second caller-thread
// line per configuration with those batch-level ops on: their cost per core.
// Usage: bench_augment [-b 128] [-r 8] [-S 256] [-cs 224] [-dw 4]
//                      [-reprob 0.25 -mixup 0.8 -cutmix 1.0]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vision/batch_prefetch.h"
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

int main(int argc, char **argv) {
    int B = 128, rounds = 8, side = 256, crop = 224, max_workers = 4;
    BatchAugment ops = {0.0f, {0.0f, 0.0f}};
    CliFlag flags[] = {
        {"-b", CLI_INT, &B, 1, 65536, "images per batch (default 128)", NULL, 0, 0},
        {"-r", CLI_INT, &rounds, 1, 100000, "timed batches (default 8)", NULL, 0, 0},
        {"-S", CLI_INT, &side, 2, 4096, "stored side of the shard images (default 256)", NULL, 0, 0},
        {"-cs", CLI_INT, &crop, 1, 4096, "crop side, <= -S (default 224)", NULL, 0, 0},
        {"-dw", CLI_INT, &max_workers, 1, 1024, "most worker threads: 1, 2, 4, .. (default 4)",
         NULL, 0, 0},
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
    vision_split_free(&shard);
    vision_split_free(&grey);
    return 0;
}
