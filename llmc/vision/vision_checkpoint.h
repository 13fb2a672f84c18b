// train_vit's checkpoints: OUTDIR/model_STEP.bin (the vision model file) and
// OUTDIR/state_STEP.bin (magic 20261202: AdamW moments and step, the train
// order and position, the augmentation RNG, with -ema the EMA of the
// weights; a CRC32 in header slots 254-255,
// llmc/core/checksum.h), each written atomically, the state last, so the names
// and the "complete checkpoint" rule are train_gpt2's (checkpoint_find_latest,
// checkpoint_prune). docs/formats.md.
#ifndef FOLDNORM_VISION_CHECKPOINT_H
#define FOLDNORM_VISION_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "classifier.h"
#include "core/ema.h"
#include "core/reader.h"

#define VISION_TRAIN_STATE_MAGIC   20261202
// 2: slots 12-13 and the EMA after the order; version 1 files (no EMA) still read
#define VISION_TRAIN_STATE_VERSION 2

typedef struct {
    int step;           // completed training steps
    int epoch;          // the epoch of the next batch
    int next_batch;     // its index in the epoch; 0: the epoch's order is not shuffled yet
    uint64_t rng_state; // shuffling and augmentation
} VisionProgress;

// Writes model_STEP.bin and state_STEP.bin; order: the train order (count
// indices); ema: the EMA of the weights (file order), or one without values.
void vision_checkpoint_save(const Classifier *model, const VisionProgress *progress,
                            const int *order, int count, const WeightEma *ema, const char *dir);
// Parses a vision state for a model of num_parameters and a train split of
// count images: header, exact size, the checksum (if slot 254 says there is
// one), finite moments (v >= 0), order a permutation of 0..count-1, an EMA's
// decay in (0, 1) and values finite. Sets progress, the order, the model's
// AdamW state and *ema (its old values freed; then malloc'd values, or none:
// a file without an EMA);
// 0, or -1 with the reason in err (the model's AdamW state and *ema untouched).
int vision_state_read(Reader *r, int step, Classifier *model, int count, VisionProgress *progress,
                      int *order, WeightEma *ema, char *err, size_t err_bytes);
// -y 1: loads the newest checkpoint in dir that reads and verifies, as
// checkpoint_resume does for GPT-2 (newer ones that do not are named on
// stderr, the fallback announced); its step, -1 if dir holds none; dies if
// it holds some and none verifies. *ema: the state's EMA, or none.
int vision_checkpoint_resume(Classifier *model, VisionProgress *progress, int *order, int count,
                             WeightEma *ema, const char *dir);

#endif
