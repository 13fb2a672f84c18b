// GPT-2's training checkpoints: OUTDIR/model_STEP.bin (llm.c's model format)
// and OUTDIR/state_STEP.bin (AdamW moments and step, data position, RNG), the
// names, listing and resume loop of core/checkpoint_files.h. Format in
// docs/formats.md.
#ifndef FOLDNORM_CHECKPOINT_H
#define FOLDNORM_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/checkpoint_files.h"
#include "core/outlier.h"
#include "core/reader.h"
#include "gpt2.h"

#define TRAIN_STATE_MAGIC 20241129
#define TRAIN_STATE_VERSION 1

typedef struct {
    int step;             // completed training steps
    int shard_index;      // train loader position
    uint64_t position;
    uint64_t rng_state;
    int epoch;            // train loader epoch (slot 12; shard_index is its shard cursor,
                          // position its batch cursor: see dataloader.h)
    int batch_samples;    // ranks x B of the run that saved it: the samples one step of
                          // the batch cursor spans (slot 13; 0 in older files: unknown)
    StepOutliers outliers; // -sl / -sg's windows and skip count (slots 14-16, after the
                           // moments; empty in older files)
} TrainProgress;

void checkpoint_save(const GPT2 *model, const TrainProgress *progress, const char *dir);
// Parses a training state (magic 20241129) for model and step from r: the
// header must match (parameter count, step), the size be exact, the moments
// finite (v >= 0). Sets progress, model->adamw_step and the AdamW moments;
// 0, or -1 with the reason in err (nothing set on the model). Never exits.
int train_state_read(Reader *r, int step, GPT2 *model, TrainProgress *progress, char *err,
                     size_t err_bytes);
// Loads model_STEP.bin into model (mode from the file) and the state into
// progress, the AdamW moments into model.
void checkpoint_load(GPT2 *model, TrainProgress *progress, const char *dir, int step);
// -y 1: loads the newest checkpoint in dir that reads and verifies (sizes,
// checksums, finite values) and returns its step; each newer one that does
// not is named with its reason on stderr, and a fallback is announced. -1 if
// dir holds no checkpoint; dies if it holds some and none verifies.
int checkpoint_resume(GPT2 *model, TrainProgress *progress, const char *dir);
// The batch cursor of progress for a run of batch_samples = ranks x B: the
// saved one rescaled when the saving run split the same global batch into
// other ranks x B (the cursor counts per-rank batches; rank r's batch k is
// the shard's batch k * ranks + r, so a step's samples are the same either
// way). Dies naming both layouts when the cursor does not map to a whole
// batch of the new one.
uint64_t train_progress_cursor(const TrainProgress *progress, int batch_samples);

#endif
