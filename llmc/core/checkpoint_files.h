// The checkpoints of a run folder, for every trainer: OUTDIR/model_STEP.bin
// and OUTDIR/state_STEP.bin (STEP as 8 digits), each written atomically, the
// state file last, so a state file whose model file exists marks a complete
// checkpoint. What the files hold is the trainer's (gpt2/checkpoint.h,
// vision/vision_checkpoint.h); the names, the listing, the resume loop and
// the pruning are shared here. Formats in docs/formats.md.
#ifndef FOLDNORM_CHECKPOINT_FILES_H
#define FOLDNORM_CHECKPOINT_FILES_H

#include <stddef.h>

// The two paths of step's checkpoint in dir; dies if they do not fit cap.
void checkpoint_paths(char *model_path, char *state_path, size_t cap, const char *dir, int step);
// Newest step with a complete checkpoint in dir, or -1 if none.
int checkpoint_find_latest(const char *dir);
// -y 1 for any trainer: try_load loads step of dir into what ctx points at
// and returns 0, or -1 with "PATH: reason" in err, leaving nothing
// allocated; it never exits. Loads the newest checkpoint that verifies and
// returns its step; each newer one that does not is named with its reason on
// stderr, and a fallback is announced. -1 if dir holds no checkpoint; dies if
// it holds some and none verifies.
typedef int (*CheckpointTryLoad)(void *ctx, const char *dir, int step, char *err,
                                 size_t err_bytes);
int checkpoint_resume_with(const char *dir, CheckpointTryLoad try_load, void *ctx);
// Removes checkpoints older than the newest keep (keep <= 0: keep all).
void checkpoint_prune(const char *dir, int keep);

#endif
