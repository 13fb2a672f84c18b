// Data-parallel training of an image classifier over MPI ranks (comm.h), as
// train_gpt2 does it: each rank runs forward and backward on its own slice of
// the global batch (loss scale 1 / its images), then every rank makes the
// same update from the mean gradient: -z 0 all-reduces it and each rank
// updates every parameter; -z 1 (ZeRO-1) reduce-scatters it, each rank runs
// AdamW on its 1/ranks shard (moments current on that shard only) and an
// all-gather shares the parameters. With one rank both are classifier_update.
// The data side (train_vit.c, as train_vit.cu): batch b of an epoch is the
// images order[b*ranks*B ...], rank r taking the r-th B of them; the shuffle
// is the same on every rank; with several ranks each flips its images from
// a stream of its own per batch (vision_data.h: vision_batch_flips_seed).
#ifndef FOLDNORM_CLASSIFIER_PARALLEL_H
#define FOLDNORM_CLASSIFIER_PARALLEL_H

#include "classifier.h"
#include "core/comm.h"
#include "core/ema.h"

// After each rank's backward: the mean gradient over ranks, its global norm
// (returned) and the AdamW step (clipped at grad_clip as classifier_update
// does); afterwards every rank holds the same parameters.
double classifier_parallel_update(Classifier *model, const Comm *comm, int zero_stage,
                                  const AdamWConfig *cfg, float grad_clip);

// Before a checkpoint: under ZeRO-1 with several ranks each rank's shard of the
// AdamW moments is sent to every rank, so rank 0 writes them whole (as one
// rank's run would); otherwise nothing to do. Every rank must call it.
void classifier_parallel_gather_moments(Classifier *model, const Comm *comm, int zero_stage);

// After classifier_parallel_update: one step of the EMA of the weights (whole,
// file order) over the parameters this rank updated: all of them, or under
// ZeRO-1 with several ranks its shard only (each rank keeps its shard's EMA).
void classifier_parallel_update_ema(Classifier *model, const Comm *comm, int zero_stage,
                                    WeightEma *ema);
// Before the EMA is tested or checkpointed: under ZeRO-1 with several ranks
// each rank's shard of it is sent to every rank, so every rank holds it whole;
// otherwise nothing to do. Every rank must call it.
void classifier_parallel_gather_ema(const Classifier *model, const Comm *comm, int zero_stage,
                                    WeightEma *ema);

#endif
