// The set-up of a GPT-2 training run, one call for train_gpt2 (CPU) and
// train_gpt2cu (GPU) alike: -o's checks over the ranks, the resume, the model
// in -N's mode, the batch split (grad accumulation), the data loaders with
// the step count agreed over the ranks, run.txt, the logger and the loop's
// config. The trainers add their own model, hooks and lines.
#ifndef FOLDNORM_GPT2_TRAIN_SETUP_H
#define FOLDNORM_GPT2_TRAIN_SETUP_H

#include "core/logger.h"
#include "core/rand.h"
#include "core/train_ranks.h"
#include "gpt2/checkpoint.h"
#include "gpt2/dataloader.h"
#include "gpt2/gpt2.h"
#include "gpt2/gpt2_train_args.h"
#include "gpt2/gpt2_train_loop.h"
#include "gpt2/mc_eval.h"

typedef struct {
    TrainProgress progress; // the checkpoint's; zero for a new run
    Rng rng;                // sampling: from -sd, or the checkpoint's state
    int resumed_from;       // the step resumed from, or -1
    int B, T;               // -b, -t: each rank's micro-batch
    int total_tokens;       // -d: the global batch in tokens, over all ranks
    int grad_accum;         // micro-steps per step
    int max_steps;          // -x, or one epoch: the fewest batches any rank has
    DataLoader train, val;  // each rank reads its own slice of every shard
    int have_val;           // -v > 0: val is loaded
    Logger logger;          // -o/main.log on rank 0; off elsewhere
    McEvalSet mc;           // -mc's examples, checked against the vocabulary and -t
    int have_mc;            // -mc given: mc is loaded
} Gpt2TrainSetup;

// Every rank calls it, in this order: with -o, the newest checkpoint, the
// same on every rank (run_dir_ranks_check) and wanted by -y (run_dir_check_start);
// with -y 1 the resume, whose checkpoint must be the same on every rank and
// whose mode -N's; else the model (gpt2_train_setup_model). Then -t against
// the model, -d into micro-steps, the loaders (with -sft's check) and the
// step count; on rank 0, -o made and announced, run.txt checked; the train
// loader's cursor moved to the checkpoint's; the logger; -mc's set. Dies with the flag
// and the reason on bad input.
void gpt2_train_setup(Gpt2TrainSetup *s, GPT2 *model, const Gpt2TrainArgs *args,
                      const TrainRanks *ranks);

// The loop's config from the set-up and the flags (argc, argv: the resume
// command a stop prints).
Gpt2LoopConfig gpt2_train_loop_config(Gpt2TrainSetup *s, const Gpt2TrainArgs *args,
                                      const TrainRanks *ranks, int argc, char **argv);

// Frees the loaders, the logger and -mc's set.
void gpt2_train_setup_free(Gpt2TrainSetup *s);

// A descriptor (-e d12, ...) gets a random init from -sd in -N's mode (ln by
// default); a file is loaded and takes -N's mode where one is given. A folded
// model is refused: it has no norm parameters left to train.
void gpt2_train_setup_model(GPT2 *model, const Gpt2TrainArgs *args);

// After a resume: -N, where given, must be the mode the checkpoint trained in.
void gpt2_train_check_resumed_mode(const GPT2 *model, const Gpt2TrainArgs *args);

#endif
