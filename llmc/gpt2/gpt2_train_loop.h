// The training loop of the GPT-2 trainers, written once for the CPU
// (train_gpt2.c) and the GPU (train_gpt2.cu): at the top of each step, and
// after the last, the val loss (every -v steps and at the end), a sample
// (every -s steps and at the end), a checkpoint (every -n steps, at the end
// and at a stop signal) and the stop report; then the step: forward and
// backward over the micro-batches, the LR schedule (-k, core/schedule.h), the
// clip and the AdamW update (skipped after a non-finite loss or norm, which
// stops the run, or, with -sl / -sg, after an outlier loss or norm, which the
// run counts and goes on from: core/outlier.h) and main.log. A trainer fills the hooks with its model's
// calls; with several ranks each trains on its slice of every batch and the
// hooks reduce.
#ifndef FOLDNORM_GPT2_TRAIN_LOOP_H
#define FOLDNORM_GPT2_TRAIN_LOOP_H

#include "core/logger.h"
#include "core/outlier.h"
#include "core/schedule.h"
#include "kernels/adamw.h"

typedef struct {
    void *ctx;
    // The mean val loss over -m batches, the same on every rank (the mean over the ranks).
    float (*evaluate)(void *ctx);
    // With -mc: the multiple-choice accuracy over all ranks (each scores its
    // share of the examples, the counts summed), beside every val loss; NULL: none.
    float (*mc_eval)(void *ctx);
    // Draws a sample and prints it (the lead alone calls it).
    void (*sample)(void *ctx);
    // A checkpoint after `step`; every rank calls it, the lead writes.
    void (*checkpoint)(void *ctx, int step);
    // Step `step`'s micro-batches, forward and backward, and the gradients'
    // reduction (the GPU queues them: nothing waits for it).
    void (*forward_backward)(void *ctx, int step);
    // The step's mean loss over the micro-batches and the ranks, the
    // gradient's global norm, and one AdamW step (adamw's learning rate is
    // the step's) on the gradient clipped to grad_clip (clip_grad_scale),
    // skipped when the loss or the norm is not finite or when (double)loss >
    // loss_limit or (double)(float)norm > norm_limit (an outlier: the AdamW step count still
    // advances, as llm.c's t = step + 1). The GPU decides on the device and
    // the host reads loss and norm once, after the update is queued. Returns
    // whether the update ran.
    int (*update)(void *ctx, const AdamWConfig *adamw, float grad_clip, double loss_limit,
                  double norm_limit, float *loss, double *grad_norm);
    // After the update of step `step` (0-based): the trainer's step line.
    void (*step_done)(void *ctx, int step, float loss, float grad_norm, float learning_rate);
    // The largest value over the ranks (every rank calls it: a barrier too).
    int (*max_over_ranks)(void *ctx, int value);
} Gpt2TrainHooks;

typedef struct {
    int max_steps;
    int first_step;   // the step a run starts at: 0, or the checkpoint's
    int resumed_from; // the step resumed from, or -1 (a new run)
    LrSchedule schedule;  // -k -l -u -q -kd (its max_steps: max_steps)
    float weight_decay, grad_clip;
    float skip_loss_z;    // -sl: skip an update whose loss z-score exceeds it; 0: off
    float skip_grad_z;    // -sg: the same for the gradient norm
    StepOutliers *outliers; // the windows, from the checkpoint resumed from (or empty)
    int val_every;        // -v: a val loss every this many steps; 0: never
    int sample_every;     // -s: a sample every this many steps; 0: never
    int checkpoint_every; // -n: also every this many steps; 0: at the end only
    const char *output_dir; // checkpoints and the stop report; NULL: none
    int lead;             // this rank prints and samples (rank 0)
    int report_ranks;     // the -np of the resume command a stop prints
    int argc;             // the command line, for that resume command
    char **argv;
} Gpt2LoopConfig;

// Runs from cfg->first_step to cfg->max_steps (or a stop signal); returns
// the stop signal (128 + it is the exit status), or 0.
int gpt2_train_loop(const Gpt2TrainHooks *hooks, const Gpt2LoopConfig *cfg, Logger *logger);

#endif
