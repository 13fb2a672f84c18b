#include "vit_train_args.h"

#include <stdio.h>
#include <string.h>

#include "core/utils.h"

#define MAX_COUNT 1073741824.0 // 2^30

VitTrainArgs vit_train_args_defaults(void) {
    VitTrainArgs a = {.model = "vit",
                      .train_data = FMNIST_DIR,
                      .batch_size = 128,
                      .epochs = 3,
                      .max_steps = -1,
                      .max_train = -1,
                      .max_test = -1,
                      .learning_rate = 2e-3f,
                      .final_lr_fraction = 0.01f,
                      .warmup_steps = 100,
                      .weight_decay = 0.05f,
                      .grad_clip = 1.0f,
                      .smoothing = 0.1f,
                      .flip = 1,
                      .print_every = 50,
                      .seed = 1337,
                      .norm_mode = -1,
                      .zero_stage = 1,
                      .shape = {.centre_ops = -1, .paper_variant = -1}};
    return a;
}

int vit_train_flags(VitTrainArgs *p, CliFlag *out) {
    ShapeFlags *m = &p->shape;
    const CliFlag flags[] = {
        {"-e", CLI_STRING, &p->model, 0, 0,
         "model: vit | swin | swin-tiny (Swin-T: patch 4, embed 96, depths 2,2,6,2,\n"
         "heads 3,6,12,24, window 7, MLP 4; for 224x224 RGB shards) | a model file\n"
         "to start from (its family and config) (default vit)",
         "model", 0, 0},
        NORM_MODE_CLI_FLAGS(&p->norm_mode, "norm mode (default: the -e file's, else ln)"),
        {"-i", CLI_STRING, &p->train_data, 0, 0,
         "train data: a Fashion-MNIST folder with {train,t10k}-{images-idx3,labels-idx1}-\n"
         "ubyte.gz (default " FMNIST_DIR "), or an image shard\n"
         "PREFIX_train.bin from bin/images_to_shard (RGB, random-resized-crop + flips)",
         "path", 0, 0},
        {"-j", CLI_STRING, &p->test_data, 0, 0,
         "test data, the same kinds (default: the -i folder's t10k files, or the -i\n"
         "shard's PREFIX_val.bin)",
         "path", 0, 0},
        {"-o", CLI_STRING, &p->output_dir, 0, 0,
         "output dir for main.log and checkpoints, created with its parents\n"
         "(default: none)",
         "dir", 0, 0},
        {"-C", CLI_INT, &m->channels, 1, 8192, "ViT channels (default 64)", NULL, 0, 0},
        {"-L", CLI_INT, &m->layers, 1, 1024, "ViT layers (default 4)", NULL, 0, 0},
        {"-H", CLI_INT, &m->heads, 1, 1024, "ViT heads (default 4)", NULL, 0, 0},
        {"-P", CLI_INT, &m->patch, 1, 1024, "patch size (default: ViT 7, Swin 2)", NULL, 0, 0},
        {"-R", CLI_INT, &m->mlp_ratio, 1, 64, "MLP ratio (default: ViT 4, Swin 2)", NULL, 0, 0},
        {"-E", CLI_INT, &m->embed_dim, 1, 4096, "Swin embed dim (default 32)", NULL, 0, 0},
        {"-D", CLI_LIST, &m->depths, 1, 256, "Swin depths per stage (default 2,2)", NULL, 0, 0},
        {"-A", CLI_LIST, &m->stage_heads, 1, 256, "Swin heads per stage (default 2,4)", NULL, 0, 0},
        {"-W", CLI_INT, &m->window, 1, 64, "Swin window (default 7)", NULL, 0, 0},
        {"-K", CLI_INT, &m->centre_ops, 0, 1,
         "Swin centring ops after the patch norm and before each merge (default 0)", NULL, 0, 0},
        {"-pv", CLI_INT, &m->paper_variant, 0, 1,
         "Swin paper variant, -N cbwc only: every norm RMS, every stream-writing\n"
         "layer CBWC, no centring ops; NOT the ln model (docs/math.md section 3)\n"
         "(default 0)",
         NULL, 0, 0},
        {"-b", CLI_INT, &p->batch_size, 1, 65536,
         "images per step, per rank under mpirun (default 128)", NULL, 0, 0},
        {"-ep", CLI_INT, &p->epochs, 1, 100000, "epochs (default 3)", NULL, 0, 0},
        {"-x", CLI_INT, &p->max_steps, 1, MAX_COUNT, "max steps (default: all epochs)", NULL, 0, 0},
        {"-nt", CLI_INT, &p->max_train, 1, MAX_COUNT,
         "use only the first this many train images (default: all)", NULL, 0, 0},
        {"-ne", CLI_INT, &p->max_test, 1, MAX_COUNT,
         "use only the first this many test images (default: all)", NULL, 0, 0},
        {"-l", CLI_FLOAT, &p->learning_rate, 0, 10, "peak learning rate (default 2e-3)", NULL,
         CLI_OPEN_LO, 0},
        {"-q", CLI_FLOAT, &p->final_lr_fraction, 0, 1,
         "final learning rate as a fraction of -l (default 0.01)", NULL, 0, 0},
        {"-u", CLI_INT, &p->warmup_steps, 0, MAX_COUNT, "warmup steps (default 100)", NULL, 0, 0},
        {"-c", CLI_FLOAT, &p->weight_decay, 0, 10, "weight decay on the matrices (default 0.05)",
         NULL, 0, 0},
        {"-gc", CLI_FLOAT, &p->grad_clip, 0, 1e6,
         "gradient clipping by global norm, 0 = off (default 1.0)", NULL, 0, 0},
        {"-ls", CLI_FLOAT, &p->smoothing, 0, 1, "label smoothing (default 0.1)", NULL, 0, 0},
        {"-dp", CLI_FLOAT, &p->drop_path, 0, 0.99,
         "stochastic depth (timm's --drop-path): each residual branch of each image\n"
         "dropped with this rate at the last block, linearly less before it (default 0)",
         NULL, 0, 0},
        {"-ema", CLI_FLOAT, &p->ema, 0, 1,
         "keep an EMA of the weights with this decay (timm's --model-ema-decay, e.g.\n"
         "0.9998): after each step ema = decay * ema + (1 - decay) * w; tested\n"
         "beside the live weights, kept in the checkpoints; 0 = none (default 0)",
         NULL, CLI_OPEN_HI, 0},
        {"-f", CLI_INT, &p->flip, 0, 1, "random horizontal flips (default 1)", NULL, 0, 0},
        {"-aa", CLI_STRING, &p->auto_augment, 0, 0,
         "RandAugment as timm's --aa names it, e.g. rand-m9-mstd0.5-inc1 (Swin-T's):\n"
         "sections m (magnitude of 10), n (ops an image, default 2), mstd, mmax,\n"
         "p (each op's probability, default 0.5), inc (1: increasing ops); after\n"
         "the crop and flip, on bytes; geometric ops sample nearest; needs -f 1\n"
         "(default: none)",
         "spec", 0, 0},
        {"-reprob", CLI_FLOAT, &p->augment.erase_prob, 0, 1,
         "random erasing (timm's --reprob, mode pixel): each image's probability of\n"
         "a box of N(0, 1) pixels after normalisation (default 0; timm's recipe 0.25)",
         NULL, 0, 0},
        {"-mixup", CLI_FLOAT, &p->augment.mix.mixup_alpha, 0, 100,
         "mixup's Beta(alpha, alpha) per batch, mixed soft targets (timm's --mixup);\n"
         "0 = off (default 0; timm's recipe 0.8)", NULL, 0, 0},
        {"-cutmix", CLI_FLOAT, &p->augment.mix.cutmix_alpha, 0, 100,
         "cutmix's Beta(alpha, alpha) per batch (timm's --cutmix); with -mixup too,\n"
         "one of the two per batch at even odds; 0 = off (default 0; timm's 1.0)",
         NULL, 0, 0},
        {"-pe", CLI_INT, &p->print_every, 1, MAX_COUNT,
         "progress line every this many steps (default 50)", NULL, 0, 0},
        {"-sd", CLI_SEED, &p->seed, 0, 0, "seed for init, shuffling and flips (default 1337)", NULL,
         0, 0},
        {"-n", CLI_INT, &p->checkpoint_every, 0, MAX_COUNT,
         "checkpoint also every this many steps, 0 = only at the end of each\n"
         "epoch (default 0)", NULL, 0, 0},
        {"-nk", CLI_INT, &p->checkpoint_keep, 0, MAX_COUNT,
         "keep only the newest this many checkpoints, 0 = all (default 0)", NULL, 0, 0},
        {"-y", CLI_INT, &p->resume, 0, 1, "resume from the newest checkpoint in -o (default 0)",
         NULL, 0, 0},
        {"-z", CLI_INT, &p->zero_stage, 0, 1,
         "with several ranks: 1 = ZeRO-1, reduce-scatter the gradients, each rank\n"
         "runs AdamW on its 1/ranks of the parameters, all-gather them;\n"
         "0 = all-reduce, every rank updates all (default 1)", NULL, 0, 0},
    };
    const int n = CLI_COUNT(flags);
    if (n > VIT_TRAIN_MAX_FLAGS)
        fatal("vit_train_flags: %d flags, room for %d", n, VIT_TRAIN_MAX_FLAGS);
    memcpy(out, flags, sizeof(flags));
    return n;
}

void vit_train_args_check(const CliSpec *spec, const VitTrainArgs *a) {
    if (a->resume && a->output_dir == NULL) {
        cli_error(spec, "-y 1 needs -o, the directory to resume from");
    }
    if (a->auto_augment != NULL) {
        RandAugmentSpec ra;
        char err[256];
        if (randaugment_parse(&ra, a->auto_augment, err, sizeof(err)) != 0) {
            cli_error(spec, "-aa %s: %s", a->auto_augment, err);
        }
        if (!a->flip) {
            cli_error(spec, "-aa %s needs -f 1 (-f 0 turns the training augmentation off)",
                      a->auto_augment);
        }
    }
    if (batch_augment_active(&a->augment) && !a->flip) {
        cli_error(spec, "-reprob, -mixup and -cutmix draw from the augmentation's RNG: they need "
                        "-f 1");
    }
}

RandAugmentSpec vit_train_randaugment(const VitTrainArgs *a) {
    RandAugmentSpec ra = {0};
    char err[256];
    if (a->auto_augment != NULL && randaugment_parse(&ra, a->auto_augment, err, sizeof(err)) != 0) {
        fatal("-aa %s: %s", a->auto_augment, err);
    }
    return ra;
}

static int is_family_name(const char *model) {
    return strcmp(model, "vit") == 0 || strcmp(model, "swin") == 0 ||
           strcmp(model, "swin-tiny") == 0;
}

// A fresh ViT: the defaults, then the shape flags.
static ViTConfig vit_config_from_flags(const ShapeFlags *f) {
    ViTConfig c = {
        .patch_size = 7, .channels = 64, .num_layers = 4, .num_heads = 4, .mlp_ratio = 4};
    if (f->channels > 0)
        c.channels = f->channels;
    if (f->layers > 0)
        c.num_layers = f->layers;
    if (f->heads > 0)
        c.num_heads = f->heads;
    if (f->patch > 0)
        c.patch_size = f->patch;
    if (f->mlp_ratio > 0)
        c.mlp_ratio = f->mlp_ratio;
    return c;
}

// A fresh Swin: the small default (or the Swin-T preset), then the shape flags.
static SwinConfig swin_config_from_flags(const ShapeFlags *f, int tiny) {
    SwinConfig c = {.patch_size = 2,
                    .embed_dim = 32,
                    .num_stages = 2,
                    .depths = {2, 2},
                    .heads = {2, 4},
                    .window = 7,
                    .mlp_ratio = 2};
    if (tiny) {
        c = (SwinConfig){.patch_size = 4,
                         .embed_dim = 96,
                         .num_stages = 4,
                         .depths = {2, 2, 6, 2},
                         .heads = {3, 6, 12, 24},
                         .window = 7,
                         .mlp_ratio = 4};
    }
    if (f->patch > 0)
        c.patch_size = f->patch;
    if (f->mlp_ratio > 0)
        c.mlp_ratio = f->mlp_ratio;
    if (f->embed_dim > 0)
        c.embed_dim = f->embed_dim;
    if (f->window > 0)
        c.window = f->window;
    if (f->centre_ops >= 0)
        c.centre_ops = f->centre_ops;
    if (f->paper_variant >= 0)
        c.paper_variant = f->paper_variant;
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

void vit_train_build_model(Classifier *model, const VitTrainArgs *args, const VisionSplit *data) {
    const NormMode mode = norm_mode_from_flag(args->norm_mode);
    const int swin = strcmp(args->model, "swin") == 0 || strcmp(args->model, "swin-tiny") == 0;
    if (args->shape.paper_variant == 1 && (!swin || !norm_policy(mode)->cbwc)) {
        fatal("-pv 1 (the paper's Swin variant) needs -e swin or swin-tiny and -N cbwc, got -e %s "
              "-N %s%s",
              args->model, norm_mode_name(mode),
              swin || is_family_name(args->model) ? "" : " (a model file keeps its own variant)");
    }
    if (!is_family_name(args->model)) {
        FILE *probe = fopen(args->model, "rb");
        if (probe == NULL) {
            fatal("-e %s: neither vit, swin, swin-tiny nor a readable model file", args->model);
        }
        fclose(probe);
        classifier_load(model, args->model, -1);
        if (!norm_policy(classifier_mode(model))->trainable) {
            fatal("-e %s: a folded model is for inference only (train its ln or cbwc model; "
                  "evaluate this one with train_vit -ev 1)", args->model);
        }
        if (args->norm_mode >= 0 && !norm_policy(mode)->cbwc && model->family == FAMILY_SWIN &&
            model->swin.config.paper_variant) {
            fatal("-N %s: %s is the Swin paper variant, a cbwc model (header slot 15)",
                  norm_mode_name(mode), args->model);
        }
        if (args->norm_mode >= 0) {
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
            fatal("bad Swin config (-E %d -P %d -W %d -K %d -pv %d, %d stages): %s", c.embed_dim,
                  c.patch_size, c.window, c.centre_ops, c.paper_variant, c.num_stages, why);
        }
        classifier_init_swin(model, &c, mode, args->seed);
    }
    vit_train_check_model_fits(model, args->model, data);
}

void vit_train_check_model_fits(const Classifier *model, const char *name,
                                const VisionSplit *data) {
    if (classifier_image_size(model) != data->side ||
        classifier_image_channels(model) != data->channels ||
        classifier_num_classes(model) != data->num_classes) {
        fatal("%s: the model takes %dx%d images with %d channel(s) and %d classes; the data has "
              "%dx%d images with %d channel(s) and %d classes",
              name, classifier_image_size(model), classifier_image_size(model),
              classifier_image_channels(model), classifier_num_classes(model), data->side,
              data->side, data->channels, data->num_classes);
    }
}

void vit_train_check_resumed(const Classifier *model, const VitTrainArgs *args,
                             const VisionSplit *data) {
    vit_train_check_model_fits(model, args->output_dir, data);
    if (!norm_policy(classifier_mode(model))->trainable) {
        fatal("%s: the checkpoint's model file is folded (inference only)", args->output_dir);
    }
    if (args->norm_mode >= 0 && norm_mode_from_flag(args->norm_mode) != classifier_mode(model)) {
        fatal("-N %s: the checkpoint in %s was trained in mode %s",
              norm_mode_name(norm_mode_from_flag(args->norm_mode)),
              args->output_dir, norm_mode_name(classifier_mode(model)));
    }
}

void vit_train_describe_model(char *out, size_t size, const Classifier *model) {
    int n;
    if (model->family == FAMILY_VIT) {
        const ViTConfig *c = &model->vit.config;
        n = snprintf(out, size, "family=vit S=%d P=%d C=%d L=%d NH=%d mlp=%d K=%d", c->image_size,
                     c->patch_size, c->channels, c->num_layers, c->num_heads, c->mlp_ratio,
                     c->num_classes);
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
        if (n >= 0 && (size_t)n < size) {
            n += snprintf(out + n, size - (size_t)n, " paper-variant=%d", c->paper_variant);
        }
    }
    if (n < 0 || (size_t)n >= size) {
        fatal("vit_train_describe_model: model description longer than %zu bytes", size);
    }
}

void vit_train_run_settings(const VitTrainArgs *args, int global_batch, int train_count,
                            RunSetting *settings) {
    const char *flags[VIT_RUN_SETTINGS] = {"-e", "-b", "-i", "-nt"};
    for (int i = 0; i < VIT_RUN_SETTINGS; i++) {
        settings[i].flag = flags[i];
    }
    snprintf(settings[0].value, sizeof(settings[0].value), "%s", args->model);
    snprintf(settings[1].value, sizeof(settings[1].value), "%d", global_batch);
    snprintf(settings[2].value, sizeof(settings[2].value), "%s", args->train_data);
    snprintf(settings[3].value, sizeof(settings[3].value), "%d", train_count);
}
