// llmc/vision/randaugment.c's side of test/suites/randaugment.sh: writes its
// ops' inputs, draws and outputs for an independent Python reference
// (dev/reference/randaugment.py) to re-apply, and checks the spec
// parser on its own.
//   test_randaugment ops SEED FILE
//       every op on random images (1 and 3 channels, two sides), magnitudes
//       0, 10 and random, both signs: records of (op, negate, channels, side,
//       magnitude, input, output)
//   test_randaugment pipeline SPEC SEED FILE
//       vision_make_batch with -aa SPEC on a grey split (the flipped source
//       through RandAugment) and a shard split (the crop's bytes through it):
//       records of (kind, side, channels, the draws, input bytes, the floats)
//   test_randaugment draws SPEC SEED N    N images' draws, a line each layer
//   test_randaugment parse SPEC           the parsed spec, or the error (exit 1)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"
#include "vision/randaugment.h"
#include "vision/vision_data.h"

static void write_i32(FILE *f, int v, const char *path) {
    int32_t x = v;
    fwrite_check(&x, sizeof(x), 1, f, path);
}

// Pixels of one of four kinds, so that each op has something to do: noise over
// a random range [lo, hi] (AutoContrast), a gradient, few levels (Equalize's
// rare bins), a constant image (the degenerate cases).
static void random_image(uint8_t *img, int side, int C, Rng *rng) {
    const int kind = (int)(rng_u32(rng) % 4u);
    int lo = (int)(rng_u32(rng) % 200u), hi = lo + 1 + (int)(rng_u32(rng) % (uint32_t)(255 - lo));
    const int constant = (int)(rng_u32(rng) & 255u);
    for (int y = 0; y < side; y++) {
        for (int x = 0; x < side; x++) {
            for (int c = 0; c < C; c++) {
                int v;
                if (kind == 0) {
                    v = lo + (int)(rng_u32(rng) % (uint32_t)(hi - lo + 1));
                } else if (kind == 1) {
                    v = (x * 255 / side + y * 97 / side + c * 40 + (int)(rng_u32(rng) % 9u)) % 256;
                } else if (kind == 2) {
                    v = 60 * (int)(rng_u32(rng) % 4u) + c;
                } else {
                    v = constant;
                }
                img[((size_t)y * side + x) * C + c] = (uint8_t)v;
            }
        }
    }
}

static int run_ops(unsigned long long seed, const char *path) {
    Rng rng;
    rng_seed(&rng, seed);
    FILE *f = fopen_check(path, "wb");
    const int sides[2] = {13, 32};
    const uint8_t fill_rgb[3] = {124, 116, 104}, fill_grey = 73;
    int records = 0;
    for (int op = 0; op < RA_NUM_OPS; op++) {
        for (int C = 1; C <= 3; C += 2) {
            for (int s = 0; s < 2; s++) {
                for (int k = 0; k < 4; k++) {
                    const int side = sides[s];
                    const size_t n = (size_t)side * side * C;
                    uint8_t *in = malloc_check(3 * n, "op images");
                    uint8_t *out = in + n, *scratch = in + 2 * n;
                    random_image(in, side, C, &rng);
                    float m = k == 0 ? 0.0f : k == 1 ? 10.0f : 10.0f * rng_uniform(&rng);
                    const int negate = (int)(rng_u32(&rng) & 1u);
                    memcpy(out, in, n);
                    randaugment_apply_op(out, scratch, side, C, op, m, negate,
                                         C == 3 ? fill_rgb : &fill_grey);
                    write_i32(f, op, path);
                    write_i32(f, negate, path);
                    write_i32(f, C, path);
                    write_i32(f, side, path);
                    fwrite_check(&m, sizeof(m), 1, f, path);
                    fwrite_check(in, 1, 2 * n, f, path);
                    free(in);
                    records++;
                }
            }
        }
    }
    fclose_check(f, path);
    printf("test_randaugment: %d op records (seed %llu) in %s\n", records, seed, path);
    return 0;
}

static RandAugmentSpec parse_or_die(const char *text) {
    RandAugmentSpec spec;
    char err[256];
    if (randaugment_parse(&spec, text, err, sizeof(err)) != 0) fatal("%s: %s", text, err);
    return spec;
}

// Records of one batch of split s through vision_make_batch: the image's draws
// (from a twin of the Rng), its bytes before RandAugment and its floats.
static void write_batch(FILE *f, const char *path, VisionSplit *s, int B, Rng *rng) {
    Rng twin = *rng;
    const int S = s->side, C = s->channels;
    const size_t n = (size_t)S * S * C;
    int *indices = malloc_check((size_t)B * sizeof(int), "indices");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    float *images = malloc_check((size_t)B * n * sizeof(float), "images");
    ImageAugment *aug = malloc_check((size_t)B * sizeof(ImageAugment), "augments");
    uint8_t *bytes = malloc_check(n, "bytes");
    for (int b = 0; b < B; b++) indices[b] = (B - 1 - b) % s->count;
    vision_make_batch(images, labels, s, indices, B, rng);
    vision_draw_augment(aug, s, B, &twin);
    if (twin.state != rng->state) fatal("the twin Rng ends elsewhere than vision_make_batch's");
    for (int b = 0; b < B; b++) {
        write_i32(f, s->is_shard, path);
        write_i32(f, S, path);
        write_i32(f, C, path);
        write_i32(f, aug[b].crop.flip, path);
        write_i32(f, aug[b].randaugment.num_layers, path);
        for (int l = 0; l < aug[b].randaugment.num_layers; l++) {
            const RandAugmentLayer *layer = &aug[b].randaugment.layers[l];
            write_i32(f, layer->op, path);
            write_i32(f, layer->applied, path);
            write_i32(f, layer->negate, path);
            fwrite_check(&layer->magnitude, sizeof(float), 1, f, path);
        }
        if (s->is_shard) { // the window's bytes (checked below against the float render)
            image_shard_render_bytes(&s->shard, indices[b], aug[b].crop, bytes);
            float *plain = malloc_check(n * sizeof(float), "plain render");
            image_shard_render(&s->shard, indices[b], aug[b].crop, plain);
            const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
            for (size_t i = 0; i < (size_t)S * S; i++) {
                for (int c = 0; c < 3; c++) {
                    double level = ((double)plain[c * S * S + i] * std[c] + mean[c]) * 255.0;
                    // rounding: 1/2 level, + 1e-3 for the float render's normalisation
                    if (!(fabs(level - bytes[i * 3 + c]) <= 0.501)) {
                        fatal("shard bytes: pixel %zu channel %d is %d, the float render %.4f", i,
                              c, bytes[i * 3 + c], level);
                    }
                }
            }
            free(plain);
        } else { // the source image, unflipped: the reference flips it
            memcpy(bytes, s->images.data + (size_t)indices[b] * n, n);
        }
        fwrite_check(bytes, 1, n, f, path);
        fwrite_check(images + (size_t)b * n, sizeof(float), n, f, path);
    }
    free(indices);
    free(labels);
    free(images);
    free(aug);
    free(bytes);
}

static int run_pipeline(const char *spec_text, unsigned long long seed, const char *path) {
    Rng rng;
    rng_seed(&rng, seed);
    const int B = 12;
    VisionSplit grey = {0}, shard = {0};
    grey.images = (IdxArray){.count = B, .rows = 28, .cols = 28};
    grey.labels = (IdxArray){.count = B};
    grey.images.data = malloc_check((size_t)B * 28 * 28, "grey pixels");
    grey.labels.data = malloc_check((size_t)B, "grey labels");
    for (int i = 0; i < B; i++) {
        random_image(grey.images.data + (size_t)i * 28 * 28, 28, 1, &rng);
        grey.labels.data[i] = (uint8_t)(i % 10);
    }
    grey.count = B;
    grey.side = 28;
    grey.channels = 1;
    grey.num_classes = 10;
    shard.is_shard = 1;
    shard.shard = (ImageShard){.count = 4, .num_classes = 3, .side = 40, .channels = 3,
                               .kind = IMAGE_SHARD_TRAIN, .crop = 32};
    shard.shard.labels = malloc_check(4 * sizeof(int32_t), "shard labels");
    shard.shard.pixels = malloc_check((size_t)4 * 40 * 40 * 3, "shard pixels");
    for (int i = 0; i < 4; i++) {
        shard.shard.labels[i] = i % 3;
        random_image(shard.shard.pixels + (size_t)i * 40 * 40 * 3, 40, 3, &rng);
    }
    shard.count = 4;
    shard.side = 32;
    shard.channels = 3;
    shard.num_classes = 3;
    grey.randaugment = shard.randaugment = parse_or_die(spec_text);
    FILE *f = fopen_check(path, "wb");
    write_batch(f, path, &grey, B, &rng);
    write_batch(f, path, &shard, B, &rng);
    fclose_check(f, path);
    vision_split_free(&grey);
    vision_split_free(&shard);
    printf("test_randaugment: %d grey and %d shard images through -aa %s (seed %llu) in %s\n", B,
           B, spec_text, seed, path);
    return 0;
}

static int run_draws(const char *spec_text, unsigned long long seed, int n) {
    const RandAugmentSpec spec = parse_or_die(spec_text);
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        RandAugmentDraw d;
        randaugment_draw(&d, &spec, &rng);
        for (int l = 0; l < d.num_layers; l++) {
            printf("%d %d %s %d %.9g %d\n", i, l, randaugment_op_name(d.layers[l].op),
                   d.layers[l].applied, (double)d.layers[l].magnitude, d.layers[l].negate);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_randaugment",
                    .synopsis = "ops SEED FILE | pipeline SPEC SEED FILE | draws SPEC SEED N | parse SPEC",
                    .about = "Dumps RandAugment's ops, pipelines and draws for the PyTorch / PIL\n"
                             "references (test/suites/randaugment.sh); parse describes a spec.\n"};
    const char *arg[4];
    spec.min_positional = 2;
    spec.max_positional = 4;
    const int rest = cli_parse(&spec, argc, argv, arg);
    if (rest == 3 && strcmp(arg[0], "ops") == 0) {
        return run_ops(strtoull(arg[1], NULL, 10), arg[2]);
    }
    if (rest == 4 && strcmp(arg[0], "pipeline") == 0) {
        return run_pipeline(arg[1], strtoull(arg[2], NULL, 10), arg[3]);
    }
    if (rest == 4 && strcmp(arg[0], "draws") == 0) {
        return run_draws(arg[1], strtoull(arg[2], NULL, 10), atoi(arg[3]));
    }
    if (rest == 2 && strcmp(arg[0], "parse") == 0) {
        RandAugmentSpec ra;
        char err[256], text[256];
        if (randaugment_parse(&ra, arg[1], err, sizeof(err)) != 0) {
            printf("error: %s\n", err);
            return 1;
        }
        randaugment_describe(&ra, text, sizeof(text));
        printf("%s\n", text);
        return 0;
    }
    cli_error(&spec, "expected one of: %s", spec.synopsis);
    return 2;
}
