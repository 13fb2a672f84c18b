// ViT and Swin training on the CPU in fp32 with three norm modes (ln, rms,
// cbwc) on Fashion-MNIST (IDX, gzip) or image shards. The models and kernels
// live in llmc/ (vit.c, swin.c over the shared norm, CBWC, matmul, GELU and
// AdamW kernels, classifier.c dispatching on the family); this file reads top
// down: flags -> model config -> data -> model -> training loop (AdamW with
// warmup + cosine, label smoothing, gradient clipping, per-epoch test loss and
// top-1 accuracy, llm.c-style log lines and checkpoints: the vision model
// file, mode and config in its header).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "classifier.h"
#include "classifier_loss.h"
#include "cli.h"
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

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

// The shape flags; 0 (an empty list, -1 for -K) where not given: the family's
// default, or the swin-tiny preset's, applies.
typedef struct {
    int channels, layers, heads, patch, mlp_ratio; // -C -L -H -P -R
    int embed_dim, window, centre_ops;             // -E -W -K
    CliList depths, stage_heads;                   // -D -A
} ShapeFlags;

typedef struct {
    const char *model;      // vit | swin | swin-tiny | a model file
    const char *norm_mode;  // NULL: the loaded file's, ln for a fresh model
    const char *train_data; // a Fashion-MNIST folder or an image shard
    const char *test_data;  // NULL: the -i folder, or the -i shard's _val twin
    const char *output_dir; // NULL: no log, no checkpoints
    ShapeFlags shape;
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

#define MAX_COUNT 1073741824.0 // 2^30

static TrainArgs parse_args(int argc, char **argv) {
    TrainArgs a = {.model = "vit", .train_data = FMNIST_DIR, .batch_size = 128, .epochs = 3,
                   .max_steps = -1, .max_train = -1, .max_test = -1, .learning_rate = 2e-3f,
                   .final_lr_fraction = 0.01f, .warmup_steps = 100, .weight_decay = 0.05f,
                   .grad_clip = 1.0f, .smoothing = 0.1f, .flip = 1, .print_every = 50,
                   .seed = 1337, .shape = {.centre_ops = -1}};
    ShapeFlags *m = &a.shape;
    CliFlag flags[] = {
        {"-e", CLI_STRING, &a.model, 0, 0,
         "model: vit | swin | swin-tiny (Swin-T: patch 4, embed 96, depths 2,2,6,2,\n"
         "heads 3,6,12,24, window 7, MLP 4; for 224x224 RGB shards) | a model file\n"
         "to start from (its family and config) (default vit)", "model", 0, 0},
        {"-N", CLI_CHOICE, &a.norm_mode, 0, 0, "norm mode (default: the -e file's, else ln)",
         "ln|rms|cbwc", 0, 0},
        {"-i", CLI_STRING, &a.train_data, 0, 0,
         "train data: a Fashion-MNIST folder with {train,t10k}-{images-idx3,labels-idx1}-\n"
         "ubyte.gz (default " FMNIST_DIR "), or an image shard\n"
         "PREFIX_train.bin from bin/images_to_shard (RGB, random-resized-crop + flips)",
         "path", 0, 0},
        {"-j", CLI_STRING, &a.test_data, 0, 0,
         "test data, the same kinds (default: the -i folder's t10k files, or the -i\n"
         "shard's PREFIX_val.bin)", "path", 0, 0},
        {"-o", CLI_STRING, &a.output_dir, 0, 0,
         "output dir for main.log and checkpoints, created with its parents\n"
         "(default: none)", "dir", 0, 0},
        {"-C", CLI_INT, &m->channels, 1, 8192, "ViT channels (default 64)", NULL, 0, 0},
        {"-L", CLI_INT, &m->layers, 1, 1024, "ViT layers (default 4)", NULL, 0, 0},
        {"-H", CLI_INT, &m->heads, 1, 1024, "ViT heads (default 4)", NULL, 0, 0},
        {"-P", CLI_INT, &m->patch, 1, 1024, "patch size (default: ViT 7, Swin 2)", NULL, 0, 0},
        {"-R", CLI_INT, &m->mlp_ratio, 1, 64, "MLP ratio (default: ViT 4, Swin 2)", NULL, 0, 0},
        {"-E", CLI_INT, &m->embed_dim, 1, 4096, "Swin embed dim (default 32)", NULL, 0, 0},
        {"-D", CLI_LIST, &m->depths, 1, 256, "Swin depths per stage (default 2,2)", NULL, 0, 0},
        {"-A", CLI_LIST, &m->stage_heads, 1, 256, "Swin heads per stage (default 2,4)", NULL, 0,
         0},
        {"-W", CLI_INT, &m->window, 1, 64, "Swin window (default 7)", NULL, 0, 0},
        {"-K", CLI_INT, &m->centre_ops, 0, 1,
         "Swin centring ops after the patch norm and before each merge (default 0)", NULL, 0, 0},
        {"-b", CLI_INT, &a.batch_size, 1, 65536, "batch size (default 128)", NULL, 0, 0},
        {"-ep", CLI_INT, &a.epochs, 1, 100000, "epochs (default 3)", NULL, 0, 0},
        {"-x", CLI_INT, &a.max_steps, 1, MAX_COUNT, "max steps (default: all epochs)", NULL, 0,
         0},
        {"-nt", CLI_INT, &a.max_train, 1, MAX_COUNT,
         "use only the first this many train images (default: all)", NULL, 0, 0},
        {"-ne", CLI_INT, &a.max_test, 1, MAX_COUNT,
         "use only the first this many test images (default: all)", NULL, 0, 0},
        {"-l", CLI_FLOAT, &a.learning_rate, 0, 10, "peak learning rate (default 2e-3)", NULL,
         CLI_OPEN_LO, 0},
        {"-q", CLI_FLOAT, &a.final_lr_fraction, 0, 1,
         "final learning rate as a fraction of -l (default 0.01)", NULL, 0, 0},
        {"-u", CLI_INT, &a.warmup_steps, 0, MAX_COUNT, "warmup steps (default 100)", NULL, 0, 0},
        {"-c", CLI_FLOAT, &a.weight_decay, 0, 10, "weight decay on the matrices (default 0.05)",
         NULL, 0, 0},
        {"-gc", CLI_FLOAT, &a.grad_clip, 0, 1e6,
         "gradient clipping by global norm, 0 = off (default 1.0)", NULL, 0, 0},
        {"-ls", CLI_FLOAT, &a.smoothing, 0, 1, "label smoothing (default 0.1)", NULL, 0, 0},
        {"-f", CLI_INT, &a.flip, 0, 1, "random horizontal flips (default 1)", NULL, 0, 0},
        {"-pe", CLI_INT, &a.print_every, 1, MAX_COUNT,
         "progress line every this many steps (default 50)", NULL, 0, 0},
        {"-sd", CLI_SEED, &a.seed, 0, 0, "seed for init, shuffling and flips (default 1337)",
         NULL, 0, 0},
    };
    CliSpec spec = {
        .program = "train_vit",
        .synopsis = "[options]",
        .about = "ViT / Swin training on the CPU in fp32 (Fashion-MNIST or image shards).\n"
                 "Shape flags override the -e family's defaults (or the swin-tiny preset's).\n",
        .flags = flags,
        .num_flags = CLI_COUNT(flags),
    };
    cli_parse(&spec, argc, argv, NULL);
    return a;
}

static int is_family_name(const char *model) {
    return strcmp(model, "vit") == 0 || strcmp(model, "swin") == 0 ||
           strcmp(model, "swin-tiny") == 0;
}

// A fresh ViT: the defaults, then the shape flags.
static ViTConfig vit_config_from_flags(const ShapeFlags *f) {
    ViTConfig c = {.patch_size = 7, .channels = 64, .num_layers = 4, .num_heads = 4,
                   .mlp_ratio = 4};
    if (f->channels > 0) c.channels = f->channels;
    if (f->layers > 0) c.num_layers = f->layers;
    if (f->heads > 0) c.num_heads = f->heads;
    if (f->patch > 0) c.patch_size = f->patch;
    if (f->mlp_ratio > 0) c.mlp_ratio = f->mlp_ratio;
    return c;
}

// A fresh Swin: the small default (or the Swin-T preset), then the shape flags.
static SwinConfig swin_config_from_flags(const ShapeFlags *f, int tiny) {
    SwinConfig c = {.patch_size = 2, .embed_dim = 32, .num_stages = 2, .depths = {2, 2},
                    .heads = {2, 4}, .window = 7, .mlp_ratio = 2};
    if (tiny) {
        c = (SwinConfig){.patch_size = 4, .embed_dim = 96, .num_stages = 4,
                         .depths = {2, 2, 6, 2}, .heads = {3, 6, 12, 24}, .window = 7,
                         .mlp_ratio = 4};
    }
    if (f->patch > 0) c.patch_size = f->patch;
    if (f->mlp_ratio > 0) c.mlp_ratio = f->mlp_ratio;
    if (f->embed_dim > 0) c.embed_dim = f->embed_dim;
    if (f->window > 0) c.window = f->window;
    if (f->centre_ops >= 0) c.centre_ops = f->centre_ops;
    if (f->depths.count > SWIN_MAX_STAGES || f->stage_heads.count > SWIN_MAX_STAGES) {
        fatal("-D / -A: at most %d stages", SWIN_MAX_STAGES);
    }
    if (f->depths.count > 0) {
        c.num_stages = f->depths.count;
        memcpy(c.depths, f->depths.values, sizeof(int) * (size_t)f->depths.count);
    }
    if (f->stage_heads.count > 0) {
        memcpy(c.heads, f->stage_heads.values, sizeof(int) * (size_t)f->stage_heads.count);
    }
    int head_counts = f->stage_heads.count > 0 ? f->stage_heads.count : (tiny ? 4 : 2);
    if (head_counts != c.num_stages) {
        fatal("-A: %d head counts for %d stages (-D)", head_counts, c.num_stages);
    }
    return c;
}

// One split: Fashion-MNIST (IDX, grey) or an image shard (RGB).
typedef struct {
    int is_shard;
    IdxArray images, labels;
    ImageShard shard;
    int count, side, channels, num_classes;
} Split;

static void split_load_shard(Split *s, const char *path, int limit) {
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

static void split_load_fmnist(Split *s, const char *dir, const char *prefix, int limit) {
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

// A split from a Fashion-MNIST folder (its PREFIX-* files) or an image shard file.
static void split_load(Split *s, const char *path, const char *fmnist_prefix, int limit) {
    if (is_directory(path)) {
        split_load_fmnist(s, path, fmnist_prefix, limit);
    } else {
        split_load_shard(s, path, limit);
    }
}

// -i and -j: the train and test splits, which must agree on the image format.
static void load_data(const TrainArgs *args, Split *train, Split *test) {
    split_load(train, args->train_data, "train", args->max_train);
    const char *test_path = args->test_data;
    char twin[4096];
    if (test_path == NULL && !train->is_shard) {
        test_path = args->train_data;
    } else if (test_path == NULL) {
        // PREFIX_train.bin -> PREFIX_val.bin
        const char *suffix = "_train.bin";
        size_t n = strlen(args->train_data), k = strlen(suffix);
        if (n < k || strcmp(args->train_data + n - k, suffix) != 0 || n - k + 9 > sizeof(twin)) {
            fatal("-i %s: not named PREFIX_train.bin; give its test shard with -j",
                  args->train_data);
        }
        snprintf(twin, sizeof(twin), "%.*s_val.bin", (int)(n - k), args->train_data);
        test_path = twin;
    }
    split_load(test, test_path, "t10k", args->max_test);
    if (test->side != train->side || test->channels != train->channels ||
        test->num_classes != train->num_classes) {
        fatal("%s: the test data (%d px, %d channel(s), %d classes) does not match the train "
              "data %s (%d px, %d channel(s), %d classes)", test_path, test->side,
              test->channels, test->num_classes, args->train_data, train->side, train->channels,
              train->num_classes);
    }
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

// -e: a model file, or a fresh ViT / Swin from the shape flags sized for the data.
static void build_model(Classifier *model, const TrainArgs *args, const Split *data) {
    NormMode mode = MODE_LN;
    if (args->norm_mode != NULL) {
        norm_mode_parse(args->norm_mode, &mode);
    }
    if (!is_family_name(args->model)) {
        FILE *probe = fopen(args->model, "rb");
        if (probe == NULL) {
            fatal("-e %s: neither vit, swin, swin-tiny nor a readable model file", args->model);
        }
        fclose(probe);
        classifier_load(model, args->model, -1);
        if (args->norm_mode != NULL) {
            classifier_set_mode(model, mode);
        }
    } else if (strcmp(args->model, "vit") == 0) {
        ViTConfig c = vit_config_from_flags(&args->shape);
        c.image_size = data->side;
        c.image_channels = data->channels;
        c.num_classes = data->num_classes;
        const char *why = vit_config_error(&c);
        if (why != NULL) {
            fatal("bad ViT config (-C %d -L %d -H %d -P %d): %s", c.channels, c.num_layers,
                  c.num_heads, c.patch_size, why);
        }
        classifier_init_vit(model, &c, mode, args->seed);
    } else {
        SwinConfig c = swin_config_from_flags(&args->shape, strcmp(args->model, "swin-tiny") == 0);
        c.image_size = data->side;
        c.image_channels = data->channels;
        c.num_classes = data->num_classes;
        const char *why = swin_config_error(&c);
        if (why != NULL) {
            fatal("bad Swin config (-E %d -P %d -W %d, %d stages): %s", c.embed_dim, c.patch_size,
                  c.window, c.num_stages, why);
        }
        classifier_init_swin(model, &c, mode, args->seed);
    }
    if (classifier_image_size(model) != data->side ||
        classifier_image_channels(model) != data->channels ||
        classifier_num_classes(model) != data->num_classes) {
        fatal("%s: the model takes %dx%d images with %d channel(s) and %d classes; the data has "
              "%dx%d images with %d channel(s) and %d classes",
              args->model, classifier_image_size(model), classifier_image_size(model),
              classifier_image_channels(model), classifier_num_classes(model), data->side,
              data->side, data->channels, data->num_classes);
    }
}

// The model's family and shape as key=value words (the run record's config).
static void describe_model(char *out, size_t size, const Classifier *model) {
    int n;
    if (model->family == FAMILY_VIT) {
        const ViTConfig *c = &model->vit.config;
        n = snprintf(out, size, "family=vit S=%d P=%d C=%d L=%d NH=%d mlp=%d K=%d",
                     c->image_size, c->patch_size, c->channels, c->num_layers, c->num_heads,
                     c->mlp_ratio, c->num_classes);
    } else {
        const SwinConfig *c = &model->swin.config;
        n = snprintf(out, size, "family=swin S=%d P=%d E=%d window=%d mlp=%d K=%d centring-ops=%d",
                     c->image_size, c->patch_size, c->embed_dim, c->window, c->mlp_ratio,
                     c->num_classes, c->centre_ops);
        const char *key[2] = {" depths", " heads"};
        const int *values[2] = {c->depths, c->heads};
        for (int k = 0; k < 2 && n >= 0 && (size_t)n < size; k++) {
            n += snprintf(out + n, size - (size_t)n, "%s", key[k]);
            for (int s = 0; s < c->num_stages && n >= 0 && (size_t)n < size; s++) {
                n += snprintf(out + n, size - (size_t)n, "%c%d", s == 0 ? '=' : ',', values[k][s]);
            }
        }
    }
    if (n < 0 || (size_t)n >= size) {
        fatal("train_vit: model description longer than %zu bytes", size);
    }
}

static void print_model(const Classifier *model) {
    char shape[512];
    describe_model(shape, sizeof(shape), model);
    printf("train_vit: %s, %zu parameters, mode %s, matmul %s\n", shape,
           classifier_num_parameters(model), norm_mode_name(classifier_mode(model)),
           matmul_backend_name());
}

typedef struct {
    float test_loss, test_accuracy;
    double images_per_s, median_images_per_s;
} TrainResult;

// total_steps of AdamW over shuffled epochs of the train split; after each
// epoch the test loss and accuracy (logged) and a checkpoint in -o.
static TrainResult train_model(Classifier *model, const TrainArgs *args, const Split *train,
                               const Split *test, Logger *logger, int total_steps) {
    const int B = args->batch_size;
    const int batches_per_epoch = train->count / B;
    const size_t image_floats = (size_t)train->channels * train->side * train->side;
    float *images = malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"), "batch");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *eval_indices = malloc_check((size_t)B * sizeof(int), "eval indices");
    int *order = malloc_check((size_t)train->count * sizeof(int), "train order");
    for (int i = 0; i < train->count; i++) {
        order[i] = i;
    }
    Rng rng;
    rng_seed(&rng, args->seed ^ 0xDA7AULL);
    AdamWConfig adamw = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                         .weight_decay = args->weight_decay};
    double train_seconds = 0.0;
    double *step_seconds = malloc_check((size_t)total_steps * sizeof(double), "step times");
    long train_images = 0;
    TrainResult r = {0};
    int step = 0;
    for (int epoch = 0; step < total_steps; epoch++) {
        shuffle(order, train->count, &rng);
        for (int batch = 0; batch < batches_per_epoch && step < total_steps; batch++) {
            double t0 = now_seconds();
            make_batch(images, labels, train, order + (size_t)batch * B, B,
                       args->flip ? &rng : NULL);
            classifier_forward(model, images, labels, args->smoothing, B);
            float loss = classifier_mean_loss(model);
            classifier_zero_grad(model);
            classifier_backward(model, 1.0f / (float)B);
            float grad_norm = (float)classifier_grad_norm(model);
            adamw.learning_rate = lr_cosine_with_warmup(step, total_steps, args->warmup_steps,
                                                        args->learning_rate,
                                                        args->final_lr_fraction);
            classifier_update(model, &adamw, args->grad_clip);
            double dt = now_seconds() - t0;
            train_seconds += dt;
            step_seconds[step] = dt;
            train_images += B;
            step++;
            if (!isfinite(loss)) {
                fatal("step %d: the loss is not finite (%f); try a lower -l", step, loss);
            }
            logger_log_train(logger, step, loss, adamw.learning_rate, grad_norm);
            if (step % args->print_every == 0 || step == 1 || step == total_steps) {
                printf("step %5d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.0f images/s\n",
                       step, total_steps, epoch + 1, loss, adamw.learning_rate, grad_norm,
                       B / dt);
                fflush(stdout);
            }
        }
        evaluate(model, test, B, images, labels, eval_indices, &r.test_loss, &r.test_accuracy);
        printf("epoch %d | step %d | test loss %.4f | test accuracy %.4f\n", epoch + 1, step,
               r.test_loss, r.test_accuracy);
        logger_log_val(logger, step, r.test_loss);
        if (logger->file != NULL) {
            fprintf(logger->file, "s:%d tea:%.6f\n", step, r.test_accuracy);
            fflush(logger->file);
        }
        if (args->output_dir != NULL) {
            save_checkpoint(model, args->output_dir, step);
        }
    }
    r.images_per_s = train_images / train_seconds;
    r.median_images_per_s = B / median_step_seconds(step_seconds, step);
    free(step_seconds);
    free(images);
    free(labels);
    free(eval_indices);
    free(order);
    return r;
}

int main(int argc, char **argv) {
    TrainArgs args = parse_args(argc, argv);
    Split train, test;
    load_data(&args, &train, &test);
    Classifier model;
    build_model(&model, &args, &train);
    const int B = args.batch_size;
    if (train.count < B) {
        fatal("-b %d: larger than the %d train images", B, train.count);
    }
    const int batches_per_epoch = train.count / B;
    const int total_steps = args.max_steps > 0 ? args.max_steps : args.epochs * batches_per_epoch;
    if (args.output_dir != NULL) {
        make_directories(args.output_dir);
    }
    Logger logger;
    logger_init(&logger, args.output_dir, 0);
    char shape[512];
    describe_model(shape, sizeof(shape), &model);
    logger_log_run_record(&logger, argc, argv,
                          (const char *const[]){"train", args.train_data, "test", args.test_data,
                                                NULL},
                          "mode=%s seed=%llu %s B=%d steps=%d lr=%g",
                          norm_mode_name(classifier_mode(&model)), args.seed, shape, B,
                          total_steps, (double)args.learning_rate);
    print_model(&model);
    printf("data: %s, %d train / %d test images; B=%d, %d steps (%d per epoch)\n",
           args.train_data, train.count, test.count, B, total_steps, batches_per_epoch);

    TrainResult r = train_model(&model, &args, &train, &test, &logger, total_steps);
    printf("final: family %s mode %s test_accuracy %.4f test_loss %.4f train_images_per_s %.1f "
           "median_images_per_s %.1f\n",
           vision_family_name(model.family), norm_mode_name(classifier_mode(&model)),
           r.test_accuracy, r.test_loss, r.images_per_s, r.median_images_per_s);
    logger_free(&logger);
    split_free(&train);
    split_free(&test);
    classifier_free(&model);
    return 0;
}
