// ViT and Swin training on the CPU in fp32 with three norm modes (ln, rms,
// cbwc) on Fashion-MNIST (IDX, gzip). The models and kernels live in llmc/
// (vit.c, swin.c over the shared norm, CBWC, matmul, GELU and AdamW
// kernels, classifier.c dispatching on the family); this file is the training loop: AdamW with warmup + cosine, label smoothing, gradient
// clipping, per-epoch test loss and top-1 accuracy, llm.c-style log lines and
// checkpoints (the vision model file, mode and config in its header).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "classifier.h"
#include "classifier_loss.h"
#include "idx.h"
#include "image_shard.h"
#include "logger.h"
#include "matmul.h"
#include "rand.h"
#include "schedule.h"
#include "utils.h"

// Fashion-MNIST pixel statistics (train split), for x = (p/255 - mean) / std.
#define FMNIST_MEAN 0.2860f
#define FMNIST_STD 0.3530f
#define FMNIST_CLASSES 10

typedef struct {
    const char *family;     // "vit" or "swin"
    const char *norm_mode;  // NULL: the loaded file's, ln for a fresh model
    const char *data_dir;
    const char *shard_prefix; // image shards PREFIX_{train,val}.bin instead of Fashion-MNIST
    const char *init_path;  // model file to start from, or NULL
    const char *output_dir; // NULL: no log, no checkpoints
    ViTConfig vit;
    SwinConfig swin;
    int batch_size;
    int epochs;
    int max_steps;          // -1: epochs * batches per epoch
    int max_train;          // -1: all train images
    int max_test;           // -1: all test images
    float learning_rate;
    float final_lr_fraction;
    int warmup_steps;
    float weight_decay;
    float grad_clip;
    float smoothing;
    int flip;
    int print_every;
    unsigned long long seed;
} TrainArgs;

static void usage(void) {
    fprintf(stderr,
            "usage: train_vit [options]\n"
            "  -m <family>  model family: vit | swin (default vit)\n"
            "  -c <preset>  swin-tiny: Swin-T (patch 4, embed 96, depths 2,2,6,2, heads\n"
            "               3,6,12,24, window 7, MLP 4; 224x224 RGB from -sh shards); later\n"
            "               flags override it\n"
            "  -N <mode>    norm mode: ln | rms | cbwc (default: the -i file's, else ln)\n"
            "  -d <dir>     Fashion-MNIST dir with {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz\n"
            "               (default /usr/share/datasets/fashion-mnist)\n"
            "  -sh <prefix> train on image shards PREFIX_train.bin / PREFIX_val.bin from\n"
            "               bin/images_to_shard (RGB, random-resized-crop + flips)\n"
            "  -i <file>    start from this model file (its config; must be of the -m family)\n"
            "  -o <dir>     output dir for main.log and checkpoints (default: none)\n"
            "  -C <int>     channels (default 64)      -L <int> layers (default 4)\n"
            "  -H <int>     heads (default 4)          -p <int> patch size (default 7)\n"
            "  -r <int>     MLP ratio (default 4; Swin 2)\n"
            "  Swin (-m swin): -E <int> embed dim (default 32), -D <list> depths (default 2,2),\n"
            "               -A <list> heads (default 2,4), -w <int> window (default 7),\n"
            "               -p <int> patch (default 2), -k <0|1> centring ops after the patch norm\n"
            "               and before each merge (default 0)\n"
            "  -b <int>     batch size (default 128)\n"
            "  -e <int>     epochs (default 3)\n"
            "  -x <int>     max steps (default: all epochs)\n"
            "  -nt <int>    use only the first this many train images (default: all)\n"
            "  -ne <int>    use only the first this many test images (default: all)\n"
            "  -l <float>   peak learning rate (default 2e-3)\n"
            "  -q <float>   final learning rate as a fraction of -l (default 0.01)\n"
            "  -u <int>     warmup steps (default 100)\n"
            "  -c <float>   weight decay on the matrices (default 0.05)\n"
            "  -gc <float>  gradient clipping by global norm, 0 = off (default 1.0)\n"
            "  -ls <float>  label smoothing (default 0.1)\n"
            "  -f <0|1>     random horizontal flips (default 1)\n"
            "  -pe <int>    progress line every this many steps (default 50)\n"
            "  -sd <int>    seed for init, shuffling and flips (default 1337)\n"
            "  -h           this help\n");
}

static long parse_long(const char *flag, const char *value, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || *end != '\0' || end == value || v < lo || v > hi) {
        fatal("%s: expected an integer in [%ld, %ld], got '%s'", flag, lo, hi, value);
    }
    return v;
}

static float parse_float(const char *flag, const char *value, float lo, float hi) {
    char *end;
    errno = 0;
    float v = strtof(value, &end);
    if (errno != 0 || *end != '\0' || end == value || !(v >= lo && v <= hi)) {
        fatal("%s: expected a number in [%g, %g], got '%s'", flag, lo, hi, value);
    }
    return v;
}

// Comma-separated positive integers into values[SWIN_MAX_STAGES]; returns the count.
static int parse_list(const char *flag, const char *text, int *values) {
    int n = 0;
    const char *s = text;
    while (*s != '\0') {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno != 0 || end == s || v <= 0 || v > 256 || n == SWIN_MAX_STAGES ||
            (*end != ',' && *end != '\0')) {
            fatal("%s: expected up to %d comma-separated integers in [1, 256], got '%s'", flag,
                  SWIN_MAX_STAGES, text);
        }
        values[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    if (n == 0) {
        fatal("%s: empty list", flag);
    }
    return n;
}

static TrainArgs parse_args(int argc, char **argv) {
    TrainArgs a = {.family = "vit", .data_dir = "/usr/share/datasets/fashion-mnist",
                   .vit = {.image_size = 28, .image_channels = 1, .patch_size = 7,
                           .num_classes = FMNIST_CLASSES, .channels = 64, .num_layers = 4,
                           .num_heads = 4, .mlp_ratio = 4},
                   .batch_size = 128, .epochs = 3, .max_steps = -1, .max_train = -1,
                   .max_test = -1, .learning_rate = 2e-3f, .final_lr_fraction = 0.01f,
                   .warmup_steps = 100, .weight_decay = 0.05f, .grad_clip = 1.0f,
                   .smoothing = 0.1f, .flip = 1, .print_every = 50, .seed = 1337};
    a.swin = (SwinConfig){.image_size = 28, .image_channels = 1, .patch_size = 2,
                          .num_classes = FMNIST_CLASSES, .embed_dim = 32, .num_stages = 2,
                          .depths = {2, 2}, .heads = {2, 4}, .window = 7, .mlp_ratio = 2};
    int heads_given = 2;
    int patch_given = 0, ratio_given = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i];
        patch_given |= strcmp(f, "-p") == 0;
        ratio_given |= strcmp(f, "-r") == 0;
        if (strcmp(f, "-h") == 0) {
            usage();
            exit(EXIT_SUCCESS);
        }
        if (f[0] != '-' || i + 1 >= argc) {
            usage();
            fatal("%s: expected a flag with a value", f);
        }
        const char *v = argv[i + 1];
        if (strcmp(f, "-m") == 0) a.family = v;
        else if (strcmp(f, "-c") == 0) {
            if (strcmp(v, "swin-tiny") != 0) {
                fatal("-c: unknown preset '%s' (expected swin-tiny)", v);
            }
            a.family = "swin";
            a.swin.embed_dim = 96;
            a.swin.num_stages = 4;
            int depths[4] = {2, 2, 6, 2}, heads[4] = {3, 6, 12, 24};
            memcpy(a.swin.depths, depths, sizeof(depths));
            memcpy(a.swin.heads, heads, sizeof(heads));
            heads_given = 4;
            a.swin.window = 7;
            a.swin.patch_size = 4;
            a.swin.mlp_ratio = 4;
            patch_given = ratio_given = 1;
        }
        else if (strcmp(f, "-N") == 0) a.norm_mode = v;
        else if (strcmp(f, "-d") == 0) a.data_dir = v;
        else if (strcmp(f, "-sh") == 0) a.shard_prefix = v;
        else if (strcmp(f, "-i") == 0) a.init_path = v;
        else if (strcmp(f, "-o") == 0) a.output_dir = v;
        else if (strcmp(f, "-C") == 0) a.vit.channels = (int)parse_long(f, v, 1, 8192);
        else if (strcmp(f, "-L") == 0) a.vit.num_layers = (int)parse_long(f, v, 1, 1024);
        else if (strcmp(f, "-H") == 0) a.vit.num_heads = (int)parse_long(f, v, 1, 1024);
        else if (strcmp(f, "-p") == 0) a.vit.patch_size = a.swin.patch_size = (int)parse_long(f, v, 1, 28);
        else if (strcmp(f, "-r") == 0) a.vit.mlp_ratio = a.swin.mlp_ratio = (int)parse_long(f, v, 1, 64);
        else if (strcmp(f, "-E") == 0) a.swin.embed_dim = (int)parse_long(f, v, 1, 4096);
        else if (strcmp(f, "-D") == 0) a.swin.num_stages = parse_list(f, v, a.swin.depths);
        else if (strcmp(f, "-A") == 0) heads_given = parse_list(f, v, a.swin.heads);
        else if (strcmp(f, "-w") == 0) a.swin.window = (int)parse_long(f, v, 1, 64);
        else if (strcmp(f, "-k") == 0) a.swin.center_patch = (int)parse_long(f, v, 0, 1);
        else if (strcmp(f, "-b") == 0) a.batch_size = (int)parse_long(f, v, 1, 1 << 16);
        else if (strcmp(f, "-e") == 0) a.epochs = (int)parse_long(f, v, 1, 100000);
        else if (strcmp(f, "-x") == 0) a.max_steps = (int)parse_long(f, v, 1, 1L << 30);
        else if (strcmp(f, "-nt") == 0) a.max_train = (int)parse_long(f, v, 1, 1L << 30);
        else if (strcmp(f, "-ne") == 0) a.max_test = (int)parse_long(f, v, 1, 1L << 30);
        else if (strcmp(f, "-l") == 0) a.learning_rate = parse_float(f, v, 0.0f, 10.0f);
        else if (strcmp(f, "-q") == 0) a.final_lr_fraction = parse_float(f, v, 0.0f, 1.0f);
        else if (strcmp(f, "-u") == 0) a.warmup_steps = (int)parse_long(f, v, 0, 1L << 30);
        else if (strcmp(f, "-c") == 0) a.weight_decay = parse_float(f, v, 0.0f, 10.0f);
        else if (strcmp(f, "-gc") == 0) a.grad_clip = parse_float(f, v, 0.0f, 1e6f);
        else if (strcmp(f, "-ls") == 0) a.smoothing = parse_float(f, v, 0.0f, 1.0f);
        else if (strcmp(f, "-f") == 0) a.flip = (int)parse_long(f, v, 0, 1);
        else if (strcmp(f, "-pe") == 0) a.print_every = (int)parse_long(f, v, 1, 1L << 30);
        else if (strcmp(f, "-sd") == 0) a.seed = (unsigned long long)parse_long(f, v, 0, 1L << 62);
        else {
            usage();
            fatal("unknown flag %s", f);
        }
    }
    if (strcmp(a.family, "vit") != 0 && strcmp(a.family, "swin") != 0) {
        fatal("-m: unknown model family '%s' (expected vit or swin)", a.family);
    }
    if (heads_given != a.swin.num_stages) {
        fatal("-A: %d head counts for %d stages (-D)", heads_given, a.swin.num_stages);
    }
    if (!patch_given) {
        a.swin.patch_size = 2;
    }
    if (!ratio_given) {
        a.swin.mlp_ratio = 2;
    }
    NormMode mode;
    if (a.norm_mode != NULL && norm_mode_parse(a.norm_mode, &mode) != 0) {
        fatal("-N: unknown norm mode '%s' (expected ln, rms or cbwc)", a.norm_mode);
    }
    return a;
}

// One split: Fashion-MNIST (IDX, grey) or an image shard (RGB).
typedef struct {
    int is_shard;
    IdxArray images, labels;
    ImageShard shard;
    int count, side, channels, num_classes;
} Split;

static void split_load_shard(Split *s, const char *prefix, const char *which, int limit) {
    char path[4096];
    snprintf(path, sizeof(path), "%s_%s.bin", prefix, which);
    memset(s, 0, sizeof(*s));
    s->is_shard = 1;
    image_shard_read(&s->shard, path);
    s->side = s->shard.crop;
    s->channels = 3;
    s->num_classes = s->shard.num_classes;
    s->count = limit > 0 && limit < s->shard.count ? limit : s->shard.count;
}

static void split_free(Split *s) {
    if (s->is_shard) {
        image_shard_free(&s->shard);
    } else {
        idx_free(&s->images);
        idx_free(&s->labels);
    }
}

static void split_load(Split *s, const char *dir, const char *prefix, int limit) {
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

// Normalized images (B, Cin, S, S) and labels for the given indices; with
// aug_rng, training augmentation (flips; random-resized-crop for shards).
static void make_batch(float *images, int *labels, const Split *s, const int *indices, int B,
                       Rng *flip_rng) {
    const int S = s->side;
    if (s->is_shard) {
        for (int b = 0; b < B; b++) {
            image_shard_sample(&s->shard, indices[b], images + (size_t)b * 3 * S * S, flip_rng);
            labels[b] = s->shard.labels[indices[b]];
        }
        return;
    }
    for (int b = 0; b < B; b++) {
        const uint8_t *src = s->images.data + (size_t)indices[b] * S * S;
        int flip = flip_rng != NULL && (rng_u32(flip_rng) & 1u);
        float *dst = images + (size_t)b * S * S;
        for (int y = 0; y < S; y++) {
            for (int x = 0; x < S; x++) {
                float p = src[y * S + (flip ? S - 1 - x : x)] / 255.0f;
                dst[y * S + x] = (p - FMNIST_MEAN) / FMNIST_STD;
            }
        }
        labels[b] = s->labels.data[indices[b]];
    }
}

// Mean loss (no smoothing) and top-1 accuracy over the whole split.
static void evaluate(Classifier *model, const Split *s, int B, float *images, int *labels,
                     int *indices, float *mean_loss, float *accuracy) {
    double loss_sum = 0.0;
    int correct = 0;
    const int K = classifier_num_classes(model);
    for (int start = 0; start < s->count; start += B) {
        int n = s->count - start < B ? s->count - start : B;
        for (int b = 0; b < n; b++) {
            indices[b] = start + b;
        }
        make_batch(images, labels, s, indices, n, NULL);
        classifier_forward(model, images, labels, 0.0f, n);
        loss_sum += (double)classifier_mean_loss(model) * n;
        correct += classifier_correct_count(classifier_logits(model), labels, n, K);
    }
    *mean_loss = (float)(loss_sum / s->count);
    *accuracy = (float)correct / (float)s->count;
}

static void shuffle(int *order, int n, Rng *rng) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_u32(rng) % (uint32_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Median of the step times after the first two (warm-up), or of all if fewer.
static double median_step_seconds(double *times, int n) {
    int skip = n > 4 ? 2 : 0;
    qsort(times + skip, (size_t)(n - skip), sizeof(double), compare_doubles);
    return times[skip + (n - skip) / 2];
}

static void save_checkpoint(const Classifier *model, const char *dir, int step) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/model_%08d.bin", dir, step);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fatal("-o: output directory path too long: %s", dir);
    }
    classifier_save(model, path);
    printf("checkpoint: %s\n", path);
}

int main(int argc, char **argv) {
    TrainArgs args = parse_args(argc, argv);
    Split train, test;
    if (args.shard_prefix != NULL) {
        split_load_shard(&train, args.shard_prefix, "train", args.max_train);
        split_load_shard(&test, args.shard_prefix, "val", args.max_test);
        if (test.side != train.side || test.num_classes != train.num_classes) {
            fatal("%s: the val shard (%d px, %d classes) does not match the train shard (%d px, "
                  "%d classes)", args.shard_prefix, test.side, test.num_classes, train.side,
                  train.num_classes);
        }
    } else {
        split_load(&train, args.data_dir, "train", args.max_train);
        split_load(&test, args.data_dir, "t10k", args.max_test);
    }
    // a fresh model takes the data's image size, channels and classes
    args.vit.image_size = args.swin.image_size = train.side;
    args.vit.image_channels = args.swin.image_channels = train.channels;
    args.vit.num_classes = args.swin.num_classes = train.num_classes;
    Classifier model;
    NormMode mode = MODE_LN;
    if (args.norm_mode != NULL) {
        norm_mode_parse(args.norm_mode, &mode);
    }
    const int swin = strcmp(args.family, "swin") == 0;
    if (args.init_path != NULL) {
        classifier_load(&model, args.init_path, swin ? FAMILY_SWIN : FAMILY_VIT);
        if (args.norm_mode != NULL) {
            classifier_set_mode(&model, mode);
        }
    } else if (swin) {
        const char *why = swin_config_error(&args.swin);
        if (why != NULL) {
            fatal("bad Swin config (-E %d -p %d -w %d, %d stages): %s", args.swin.embed_dim,
                  args.swin.patch_size, args.swin.window, args.swin.num_stages, why);
        }
        classifier_init_swin(&model, &args.swin, mode, args.seed);
    } else {
        const char *why = vit_config_error(&args.vit);
        if (why != NULL) {
            fatal("bad ViT config (-C %d -L %d -H %d -p %d): %s", args.vit.channels,
                  args.vit.num_layers, args.vit.num_heads, args.vit.patch_size, why);
        }
        classifier_init_vit(&model, &args.vit, mode, args.seed);
    }
    if (classifier_image_size(&model) != train.side ||
        classifier_image_channels(&model) != train.channels ||
        classifier_num_classes(&model) != train.num_classes) {
        fatal("%s: the model takes %dx%d images with %d channel(s) and %d classes; the data has "
              "%dx%d images with %d channel(s) and %d classes",
              args.init_path != NULL ? args.init_path : "model", classifier_image_size(&model),
              classifier_image_size(&model), classifier_image_channels(&model),
              classifier_num_classes(&model), train.side, train.side, train.channels,
              train.num_classes);
    }
    const int B = args.batch_size;
    if (train.count < B) {
        fatal("-b %d: larger than the %d train images", B, train.count);
    }
    const int batches_per_epoch = train.count / B;
    const int total_steps = args.max_steps > 0 ? args.max_steps : args.epochs * batches_per_epoch;
    if (args.output_dir != NULL && mkdir(args.output_dir, 0755) != 0 && errno != EEXIST) {
        fatal("-o: cannot create %s: %s", args.output_dir, strerror(errno));
    }
    Logger logger;
    logger_init(&logger, args.output_dir, 0);
    if (model.family == FAMILY_VIT) {
        const ViTConfig *c = &model.vit.config;
        printf("train_vit: ViT S=%d P=%d C=%d L=%d NH=%d mlp=%d K=%d", c->image_size,
               c->patch_size, c->channels, c->num_layers, c->num_heads, c->mlp_ratio,
               c->num_classes);
    } else {
        const SwinConfig *c = &model.swin.config;
        printf("train_vit: Swin S=%d P=%d E=%d window=%d mlp=%d K=%d centring-ops=%d depths", c->image_size,
               c->patch_size, c->embed_dim, c->window, c->mlp_ratio, c->num_classes,
               c->center_patch);
        for (int s = 0; s < c->num_stages; s++) {
            printf("%c%d", s == 0 ? '=' : ',', c->depths[s]);
        }
        printf(" heads");
        for (int s = 0; s < c->num_stages; s++) {
            printf("%c%d", s == 0 ? '=' : ',', c->heads[s]);
        }
    }
    printf(", %zu parameters, mode %s, matmul %s\n", classifier_num_parameters(&model),
           norm_mode_name(classifier_mode(&model)), matmul_backend_name());
    printf("data: %s, %d train / %d test images; B=%d, %d steps (%d per epoch)\n",
           args.shard_prefix != NULL ? args.shard_prefix : args.data_dir,
           train.count, test.count, B, total_steps, batches_per_epoch);

    const size_t image_floats = (size_t)train.channels * train.side * train.side;
    float *images = malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"), "batch");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *eval_indices = malloc_check((size_t)B * sizeof(int), "eval indices");
    int *order = malloc_check((size_t)train.count * sizeof(int), "train order");
    for (int i = 0; i < train.count; i++) {
        order[i] = i;
    }
    Rng rng;
    rng_seed(&rng, args.seed ^ 0xDA7AULL);
    AdamWConfig adamw = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                         .weight_decay = args.weight_decay};
    double train_seconds = 0.0;
    double *step_seconds = malloc_check((size_t)total_steps * sizeof(double), "step times");
    long train_images = 0;
    float test_loss = 0.0f, test_acc = 0.0f;
    int step = 0;
    for (int epoch = 0; step < total_steps; epoch++) {
        shuffle(order, train.count, &rng);
        for (int batch = 0; batch < batches_per_epoch && step < total_steps; batch++) {
            double t0 = now_seconds();
            make_batch(images, labels, &train, order + (size_t)batch * B, B,
                       args.flip ? &rng : NULL);
            classifier_forward(&model, images, labels, args.smoothing, B);
            float loss = classifier_mean_loss(&model);
            classifier_zero_grad(&model);
            classifier_backward(&model, 1.0f / (float)B);
            float grad_norm = (float)classifier_grad_norm(&model);
            adamw.learning_rate = lr_cosine_with_warmup(step, total_steps, args.warmup_steps,
                                                        args.learning_rate, args.final_lr_fraction);
            classifier_update(&model, &adamw, args.grad_clip);
            double dt = now_seconds() - t0;
            train_seconds += dt;
            step_seconds[step] = dt;
            train_images += B;
            step++;
            if (!isfinite(loss)) {
                fatal("step %d: the loss is not finite (%f); try a lower -l", step, loss);
            }
            logger_log_train(&logger, step, loss, adamw.learning_rate, grad_norm);
            if (step % args.print_every == 0 || step == 1 || step == total_steps) {
                printf("step %5d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.0f images/s\n",
                       step, total_steps, epoch + 1, loss, adamw.learning_rate, grad_norm,
                       B / dt);
                fflush(stdout);
            }
        }
        evaluate(&model, &test, B, images, labels, eval_indices, &test_loss, &test_acc);
        printf("epoch %d | step %d | test loss %.4f | test accuracy %.4f\n", epoch + 1, step,
               test_loss, test_acc);
        logger_log_val(&logger, step, test_loss);
        if (logger.file != NULL) {
            fprintf(logger.file, "s:%d tea:%.6f\n", step, test_acc);
            fflush(logger.file);
        }
        if (args.output_dir != NULL) {
            save_checkpoint(&model, args.output_dir, step);
        }
    }
    double median_rate = B / median_step_seconds(step_seconds, step);
    free(step_seconds);
    printf("final: family %s mode %s test_accuracy %.4f test_loss %.4f train_images_per_s %.1f "
           "median_images_per_s %.1f\n",
           vision_family_name(model.family), norm_mode_name(classifier_mode(&model)), test_acc,
           test_loss,
           train_images / train_seconds, median_rate);
    logger_free(&logger);
    free(images);
    free(labels);
    free(eval_indices);
    free(order);
    split_free(&train);
    split_free(&test);
    classifier_free(&model);
    return 0;
}
