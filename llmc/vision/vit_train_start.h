// Where a vision run starts, the same for train_vit.c and train_vit.cu: -o's
// checks (the newest checkpoint; run.txt, read before any checkpoint) and the
// model, train order and progress of a new or a resumed run. The trainers'
// ranks take part through TrainRanks (the CPU's MPI Comm, the GPU's
// MultiGpu): every rank must find the same newest and resumed checkpoint
// (run_dir_ranks_check); rank 0 checks and writes -o's run.txt.
#ifndef FOLDNORM_VIT_TRAIN_START_H
#define FOLDNORM_VIT_TRAIN_START_H

#include "core/logger.h"
#include "core/train_ranks.h"
#include "classifier.h"
#include "vision_checkpoint.h"
#include "vision_data.h"
#include "vision_train_loop.h"
#include "vit_train_args.h"


// Before the data loads: with -o, its newest checkpoint, which -y 1 needs
// and -y 0 must not find (run_dir_check_start). The step to resume from, or
// -1 for a new run.
int vit_train_resume_step(const VitTrainArgs *args, const TrainRanks *ranks);

// The run's model, train order (train->count indices) and progress, the
// shuffling RNG's state included. Resuming (resume_step >= 0): the lead
// first checks -o's run.txt, when there is one, against this run's settings
// (vit_train_check_run_settings), so another -b x ranks or -e is named before
// any checkpoint is read; then the newest checkpoint there that verifies (a
// damaged newer one is named and skipped), whose model must fit the data.
// Else a new model from args (vit_train_build_model), the identity order and
// the RNG seeded from -sd. The EMA of the weights (-ema): a new run's starts
// as a copy of them; a resumed run's is the checkpoint's, which must hold one
// of the same decay exactly when -ema is given (else dies naming the state
// file). Returns the step resumed from, or -1.
int vit_train_start(Classifier *model, VisionProgress *start, int *order, WeightEma *ema,
                    const VitTrainArgs *args, const VisionSplit *train, int global_batch,
                    int resume_step, const TrainRanks *ranks);

// -o's run.txt: what a resume must repeat (run_dir_check_settings), with
// global_batch (-b x ranks), so a run resumes on other ranks with the same
// global batch (the state holds whole moments). The lead alone calls it.
void vit_train_check_run_settings(const VitTrainArgs *args, int train_count, int global_batch,
                                  int resuming);

// The set-up of a vision training run, one call for train_vit (CPU) and
// train_vitcu (GPU) alike.
typedef struct {
    VisionSplit train, test;
    int *order;              // the train order (train.count indices)
    VisionProgress start;    // where the run starts: a checkpoint's, or step 0
    WeightEma ema;           // -ema: the EMA of the weights where the run starts; else none
    int resumed_from;        // the step resumed from, or -1
    int B, global_B;         // -b, and -b x ranks
    int batches_per_epoch;   // of global_B images
    int total_steps;         // -x, or -ep epochs
    Logger logger;           // -o/main.log on rank 0; off elsewhere
} VitTrainSetup;

// Every rank calls it: -o's newest checkpoint (vit_train_resume_step), the
// data, -b x ranks against the train images, the model, order and progress
// (vit_train_start), the checkpoint's batch against an epoch, the step
// count; on rank 0, -o made and announced and run.txt checked; the logger.
// Dies with the flag and the reason on bad input.
void vit_train_setup(VitTrainSetup *s, Classifier *model, const VitTrainArgs *args,
                     const TrainRanks *ranks);

// The loop's config from the set-up and the flags (argc, argv: the resume
// command a stop prints).
VisionLoopConfig vit_train_loop_config(const VitTrainSetup *s, const VitTrainArgs *args,
                                       const TrainRanks *ranks, int argc, char **argv);

// Frees the splits, the order, the EMA and the logger.
void vit_train_setup_free(VitTrainSetup *s);

#endif
