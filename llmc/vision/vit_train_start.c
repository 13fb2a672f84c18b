#include "vit_train_start.h"

#include <string.h>

#include "core/checkpoint_files.h"
#include "core/rand.h"
#include "core/run_dir.h"
#include "core/run_dir_ranks.h"

int vit_train_resume_step(const VitTrainArgs *args, const TrainRanks *ranks) {
    if (args->output_dir == NULL) {
        return -1;
    }
    const int newest = checkpoint_find_latest(args->output_dir);
    run_dir_ranks_check(ranks, args->output_dir, newest, "newest");
    run_dir_check_start(args->output_dir, args->resume, newest);
    return args->resume ? newest : -1;
}

int vit_train_start(Classifier *model, VisionProgress *start, int *order,
                    const VitTrainArgs *args, const VisionSplit *train, int global_batch,
                    int resume_step, const TrainRanks *ranks) {
    memset(start, 0, sizeof(*start)); // a new run: step 0, epoch 0, batch 0
    if (resume_step < 0) {
        vit_train_build_model(model, args, train); // the same seed on every rank
        for (int i = 0; i < train->count; i++) {
            order[i] = i;
        }
        Rng rng; // the shuffles, the same on every rank
        rng_seed(&rng, args->seed ^ 0xDA7AULL);
        start->rng_state = rng.state;
        return -1;
    }
    // without a run.txt, the trainer's check after this records this run's
    if (ranks->rank == 0 && run_dir_has_settings(args->output_dir)) {
        vit_train_check_run_settings(args, train->count, global_batch, 1);
    }
    train_ranks_max(ranks, 0); // a barrier: run.txt is checked before any rank reads on
    // a CPU run's checkpoint as well as a GPU run's
    const int resumed = vision_checkpoint_resume(model, start, order, train->count,
                                                 args->output_dir);
    run_dir_ranks_check(ranks, args->output_dir, resumed, "resumed");
    vit_train_check_resumed(model, args, train);
    return resumed;
}

void vit_train_check_run_settings(const VitTrainArgs *args, int train_count, int global_batch,
                                  int resuming) {
    RunSetting settings[VIT_RUN_SETTINGS];
    vit_train_run_settings(args, global_batch, train_count, settings);
    run_dir_check_settings(args->output_dir, settings, VIT_RUN_SETTINGS, resuming);
}
