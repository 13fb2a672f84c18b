// The GPT-2 trainers' flags (train_gpt2 on the CPU, train_gpt2cu on the GPU):
// one struct, one table of flags for cli.h, one set of checks. Each trainer
// sets its own defaults first, then adds the table's groups it supports.
#ifndef FOLDNORM_GPT2_TRAIN_ARGS_H
#define FOLDNORM_GPT2_TRAIN_ARGS_H

#include "core/cli.h"
#include "core/run_dir.h"
#include "core/schedule.h"

typedef struct {
    // model and data (every trainer)
    int norm_mode;          // -N's word index (norm_mode_from_flag); -1: the model file's (ln for descriptors)
    const char *model;      // model file or descriptor (d12, d4c128h4v256t256, ...)
    const char *train_pattern;
    const char *val_pattern;
    int shuffle;            // permute train shards and samples every epoch
    const char *output_dir; // NULL: no log, no checkpoints
    // optimisation (every trainer)
    int batch_size;
    int seq_len;
    int total_batch_tokens; // -1: one micro-batch per step
    float learning_rate;
    int lr_schedule;        // an LrScheduleKind (-k)
    int warmup_steps;
    float final_lr_fraction;
    float wsd_decay_fraction; // -kd: wsd's decaying share of the steps
    float skip_loss_z;      // -sl: skip an update at a loss z-score above it; 0: off
    float skip_grad_z;      // -sg: the same for the gradient norm
    float weight_decay;
    float grad_clip;
    int max_steps;          // -1: one epoch
    int val_every;
    int val_max_steps;
    int overfit_single_batch;
    unsigned long long seed;
    // checkpoints, sampling, SFT and ZeRO (GPT2_FLAGS_EXTRAS)
    int sft;                // 1: the train shards must be SFT shards (loss masks)
    int sample_every;
    int gen_tokens;
    int top_k;
    float temperature;
    const char *vocab_dir;  // GPT-2 encoder.json + vocab.bpe, to decode samples
    int checkpoint_every;
    int checkpoint_keep;
    int resume;
    int zero_stage;         // 1: ZeRO-1 sharded AdamW across ranks, 0: all-reduce
    // regularisation (GPT2_FLAGS_DROPOUT, the CPU trainer only)
    float resid_dropout;    // Hugging Face GPT-2's resid_pdrop; 0: off
    float drop_path;        // stochastic depth's rate at the last block (-dp); 0: off
    // matmul precision (GPT2_FLAGS_PRECISION, the CPU trainer only)
    int matmul_precision;   // a MatmulPrecision (-mp): MATMUL_FP32 or MATMUL_BF16
    // gradient reduction (GPT2_FLAGS_OVERLAP, the CPU trainer only; the GPU's always overlaps)
    int overlap;            // 1: each layer's gradients reduced during the backward
    // multiple-choice eval (GPT2_FLAGS_MC, the CPU trainer only)
    const char *mc_eval_path; // -mc: llm.c's eval file, scored with every val loss; NULL: none
} Gpt2TrainArgs;

// Room for every flag gpt2_train_flags writes.
#define GPT2_TRAIN_MAX_FLAGS 45

// The groups of flags a trainer takes.
enum { GPT2_FLAGS_CORE = 1, GPT2_FLAGS_EXTRAS = 2, GPT2_FLAGS_DROPOUT = 4,
       GPT2_FLAGS_PRECISION = 8, GPT2_FLAGS_OVERLAP = 16, GPT2_FLAGS_MC = 32 };

// The defaults of the CPU trainer (train_gpt2cu overrides the model and T).
Gpt2TrainArgs gpt2_train_args_defaults(void);

// Writes the table entries of the chosen groups, pointing into args, to
// flags (room for GPT2_TRAIN_MAX_FLAGS); returns how many.
int gpt2_train_flags(Gpt2TrainArgs *args, int groups, CliFlag *flags);

// The checks that involve more than one flag, after cli_parse.
void gpt2_train_args_check(const CliSpec *spec, const Gpt2TrainArgs *args);

// The learning-rate schedule of -k -l -u -q -kd over max_steps.
LrSchedule gpt2_train_schedule(const Gpt2TrainArgs *args, int max_steps);

// The settings a resume must repeat (DIR/run.txt, llmc/core/run_dir.h): -e,
// -t and -d (total_tokens, the global batch in tokens); its split into ranks
// x -b x micro-steps may differ.
#define GPT2_RUN_SETTINGS 3
void gpt2_run_settings(const Gpt2TrainArgs *args, int total_tokens,
                       RunSetting settings[GPT2_RUN_SETTINGS]);

#endif
