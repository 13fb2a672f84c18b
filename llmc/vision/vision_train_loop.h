// The training loop of the ViT / Swin trainers, written once for the CPU
// (train_vit.c) and the GPU (train_vit.cu): steps over shuffled epochs of
// the train split from a start (a new run or a checkpoint), the LR schedule
// (warmup + cosine), the non-finite loss stop (before the update), the step
// line and main.log, the test after each epoch, the checkpoints (every -n
// steps, after each epoch's test, at a stop signal) and the stop report. A
// trainer fills the hooks with its model's calls; with several ranks each
// trains on its slice of every global batch and the hooks reduce.
#ifndef FOLDNORM_VISION_TRAIN_LOOP_H
#define FOLDNORM_VISION_TRAIN_LOOP_H

#include "core/logger.h"
#include "core/rand.h"
#include "kernels/adamw.h"
#include "vision_checkpoint.h"

typedef struct {
    void *ctx;
    // An epoch's batches first_batch .. end_batch - 1 are about to run (after
    // its shuffle when first_batch is 0): the GPU queues them for its prefetch.
    void (*epoch_begins)(void *ctx, int epoch, int first_batch, int end_batch); // may be NULL
    // This rank's slice of global batch (epoch, batch): forward, backward; the
    // global batch's mean loss (the mean over the ranks), or, with step_loss
    // set, anything (the loss is read after the update).
    float (*forward_backward)(void *ctx, int epoch, int batch);
    // The ranks' mean gradient, clipped to grad_clip, and one AdamW step;
    // returns the gradient norm before clipping.
    float (*update)(void *ctx, const AdamWConfig *adamw, float grad_clip);
    // NULL, or the step's loss read after update (the GPU: with the norm, at
    // the step's one wait); update must then have skipped the step itself when
    // the loss or the norm was not finite, and the loop stops after it.
    float (*step_loss)(void *ctx);
    // The test loss (no smoothing), top-1 and top-5 accuracy, the same on every rank.
    void (*evaluate)(void *ctx, float *loss, float *top1, float *top5);
    // The same for the EMA of the weights (-ema), after evaluate; NULL: no EMA.
    void (*evaluate_ema)(void *ctx, float *loss, float *top1, float *top5);
    // A checkpoint after `step` whose next batch is (epoch, next_batch); every
    // rank calls it, rank 0 writes.
    void (*checkpoint)(void *ctx, int step, int epoch, int next_batch);
    // The largest value over the ranks.
    int (*max_over_ranks)(void *ctx, int value);
    // Waits for the device's queued work, so a step's time covers it (NULL on the CPU).
    void (*synchronize)(void *ctx);
} VisionTrainHooks;

typedef struct {
    int total_steps, batches_per_epoch, global_batch;
    float learning_rate, final_lr_fraction, weight_decay, grad_clip;
    int warmup_steps;
    int print_every;      // a step line every this many steps (and the first and last)
    int checkpoint_every; // -n: also every this many steps; 0: after each epoch's test only
    const char *output_dir; // checkpoints and the stop report; NULL: none
    int lead;             // this rank prints (rank 0)
    int report_ranks;     // the -np of the resume command a stop prints
    int argc;             // the command line, for that resume command
    char **argv;
} VisionLoopConfig;

typedef struct {
    float test_loss, test_accuracy, test_top5; // the last test's (accuracy: top-1)
    float test_ema_loss, test_ema_accuracy, test_ema_top5; // the EMA's there; NAN: no EMA
    int step;                       // the steps done when the loop ended
    int stopped_by;                 // the stop signal (128 + it is the exit status), or 0
    double images_per_s;            // over the timed steps (all but a run's first)
    double median_images_per_s;     // the median step's (after 2 warm-up steps)
} VisionLoopResult;

// Runs from start to cfg->total_steps (or a stop signal): order (count
// indices) is shuffled in place with rng at each epoch's first batch; the
// hooks see rng through their ctx (the augmentation flips are drawn from it).
VisionLoopResult vision_train_loop(const VisionTrainHooks *hooks, const VisionLoopConfig *cfg,
                                   const VisionProgress *start, int *order, int count, Rng *rng,
                                   Logger *logger);

#endif
