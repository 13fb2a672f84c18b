// The image-classifier trainers' flags (train_vit on the CPU, train_vitcu on
// the GPU): one struct, one table of flags for cli.h, the model configs the
// shape flags describe and the model they build for the data.
#ifndef FOLDNORM_VIT_TRAIN_ARGS_H
#define FOLDNORM_VIT_TRAIN_ARGS_H

#include "classifier.h"
#include "core/cli.h"
#include "core/run_dir.h"
#include "vision_data.h"

// The shape flags; 0 (an empty list, -1 for -K and -pv) where not given: the family's
// default, or the swin-tiny preset's, applies.
typedef struct {
    int channels, layers, heads, patch, mlp_ratio; // -C -L -H -P -R
    int embed_dim, window, centre_ops;             // -E -W -K
    int paper_variant;                             // -pv
    CliList depths, stage_heads;                   // -D -A
} ShapeFlags;

typedef struct {
    const char *model;      // vit | swin | swin-tiny | a model file
    int norm_mode;          // -N's word index (norm_mode_from_flag); -1: the loaded file's, ln for a fresh model
    const char *train_data; // a Fashion-MNIST folder or an image shard
    const char *test_data;  // NULL: the -i folder, or the -i shard's _val twin
    const char *output_dir; // NULL: no log, no checkpoints
    ShapeFlags shape;
    int batch_size;
    int epochs;
    int max_steps; // -1: epochs * batches per epoch
    int max_train; // -1: all train images
    int max_test;  // -1: all test images
    float learning_rate;
    float final_lr_fraction;
    int warmup_steps;
    float weight_decay;
    float grad_clip;
    float smoothing;
    float drop_path; // -dp: the deepest block's stochastic-depth rate (0: off)
    float ema;       // -ema: the decay of the weights' EMA (core/ema.h), in (0, 1); 0: none
    int flip;
    const char *auto_augment; // -aa: timm's RandAugment spec ("rand-m9-mstd0.5-inc1"), or NULL
    BatchAugment augment; // -reprob, -mixup, -cutmix (batch_augment.h); zeros: off
    int print_every;
    unsigned long long seed;
    // checkpoints and data parallel, the same on the CPU and the GPU
    int checkpoint_every; // -n: 0 = only after each epoch's test
    int checkpoint_keep;  // -nk: 0 = all
    int resume;           // -y
    int zero_stage;       // -z: 1 = ZeRO-1 (several ranks), 0 = all-reduce
} VitTrainArgs;

// Room for every flag vit_train_flags writes.
#define VIT_TRAIN_MAX_FLAGS 48

// The defaults (the CPU trainer's).
VitTrainArgs vit_train_args_defaults(void);
// Writes the flags bound to a into flags (room for VIT_TRAIN_MAX_FLAGS); returns their count.
int vit_train_flags(VitTrainArgs *a, CliFlag *flags);
// After cli_parse: the rules between the flags (-y 1 needs -o; -aa a valid
// spec; -aa, -reprob, -mixup and -cutmix draw from the flips' Rng: -f 1);
// cli_error otherwise.
void vit_train_args_check(const CliSpec *spec, const VitTrainArgs *a);
// -aa's spec (checked by vit_train_args_check); a zeroed spec (off) without -aa.
RandAugmentSpec vit_train_randaugment(const VitTrainArgs *a);

// -e: a model file, or a fresh ViT / Swin from the shape flags sized for the
// data (its image side, channels and classes). Dies with the reason otherwise.
void vit_train_build_model(Classifier *model, const VitTrainArgs *args, const VisionSplit *data);

// Dies unless the model's image side, channels and classes are the data's;
// name: where the model came from (a file, a run folder).
void vit_train_check_model_fits(const Classifier *model, const char *name,
                                const VisionSplit *data);
// -y 1: the model of the checkpoint resumed from dir must fit the data, be
// trainable (not folded) and, when -N is given, be in that mode; else dies.
void vit_train_check_resumed(const Classifier *model, const VitTrainArgs *args,
                             const VisionSplit *data);

// The settings a resume must repeat (run_dir.h's run.txt): -e, the global
// batch (-b times the processes: a checkpoint counts global batches), -i and
// the train image count (-nt as loaded). settings: room for VIT_RUN_SETTINGS.
#define VIT_RUN_SETTINGS 4
void vit_train_run_settings(const VitTrainArgs *args, int global_batch, int train_count,
                            RunSetting *settings);

// The model's family and shape as key=value words (the run record's config,
// the trainers' first line) into out (size bytes); dies if it does not fit.
void vit_train_describe_model(char *out, size_t size, const Classifier *model);

#endif
