// Where a vision run starts and its set-up (vit_train_start.h).
#include "vit_train_start.h"

#include <stdlib.h>
#include <string.h>

#include "core/checkpoint_files.h"
#include "core/rand.h"
#include "core/run_dir.h"
#include "core/run_dir_ranks.h"
#include "core/utils.h"

int vit_train_resume_step(const VitTrainArgs *args, const TrainRanks *ranks) {
    if (args->output_dir == NULL) {
        return -1;
    }
    const int newest = checkpoint_find_latest(args->output_dir);
    run_dir_ranks_check(ranks, args->output_dir, newest, "newest");
    run_dir_check_start(args->output_dir, args->resume, newest);
    return args->resume ? newest : -1;
}

// -y 1: the checkpoint of step in args->output_dir holds an EMA of -ema's
// decay, or none and -ema is not given; else dies naming its state file.
static void check_resumed_ema(const WeightEma *ema, const VitTrainArgs *args, int step) {
    if ((ema->values != NULL) == (args->ema > 0.0f) && ema->decay == args->ema) {
        return;
    }
    char model_path[4096], state_path[4096];
    checkpoint_paths(model_path, state_path, sizeof(state_path), args->output_dir, step);
    if (ema->values == NULL) {
        fatal("-ema %g: %s holds no EMA of the weights (its run had no -ema): resume without "
              "-ema, or start a new run", (double)args->ema, state_path);
    }
    fatal("%s holds an EMA of the weights of decay %g: resume with -ema %g%s", state_path,
          (double)ema->decay, (double)ema->decay,
          args->ema > 0.0f ? ", the decay it was trained with" : " (without it the EMA is lost)");
}

int vit_train_start(Classifier *model, VisionProgress *start, int *order, WeightEma *ema,
                    const VitTrainArgs *args, const VisionSplit *train, int global_batch,
                    int resume_step, const TrainRanks *ranks) {
    memset(start, 0, sizeof(*start)); // a new run: step 0, epoch 0, batch 0
    *ema = (WeightEma){0};
    if (resume_step < 0) {
        vit_train_build_model(model, args, train); // the same seed on every rank
        for (int i = 0; i < train->count; i++) {
            order[i] = i;
        }
        Rng rng; // the shuffles, the same on every rank
        rng_seed(&rng, args->seed ^ 0xDA7AULL);
        start->rng_state = rng.state;
        if (args->ema > 0.0f) {
            *ema = ema_start(classifier_params(model), classifier_num_parameters(model), args->ema);
        }
        return -1;
    }
    // without a run.txt, the trainer's check after this records this run's
    if (ranks->rank == 0 && run_dir_has_settings(args->output_dir)) {
        vit_train_check_run_settings(args, train->count, global_batch, 1);
    }
    train_ranks_max(ranks, 0); // a barrier: run.txt is checked before any rank reads on
    // a CPU run's checkpoint as well as a GPU run's
    const int resumed = vision_checkpoint_resume(model, start, order, train->count, ema,
                                                 args->output_dir);
    run_dir_ranks_check(ranks, args->output_dir, resumed, "resumed");
    vit_train_check_resumed(model, args, train);
    check_resumed_ema(ema, args, resumed);
    return resumed;
}

void vit_train_check_run_settings(const VitTrainArgs *args, int train_count, int global_batch,
                                  int resuming) {
    RunSetting settings[VIT_RUN_SETTINGS];
    vit_train_run_settings(args, global_batch, train_count, settings);
    run_dir_check_settings(args->output_dir, settings, VIT_RUN_SETTINGS, resuming);
}

void vit_train_setup(VitTrainSetup *s, Classifier *model, const VitTrainArgs *args,
                     const TrainRanks *ranks) {
    memset(s, 0, sizeof(*s));
    const int resume_step = vit_train_resume_step(args, ranks);
    vision_data_load(&s->train, &s->test, args->train_data, args->test_data, args->max_train,
                     args->max_test);
    s->train.randaugment = vit_train_randaugment(args); // the test split takes none
    s->B = args->batch_size;
    s->global_B = s->B * ranks->world;
    if (s->train.count < s->global_B) {
        fatal("-b %d x %d ranks: larger than the %d train images", s->B, ranks->world,
              s->train.count);
    }
    s->order = malloc_check((size_t)s->train.count * sizeof(int), "train order");
    s->resumed_from = vit_train_start(model, &s->start, s->order, &s->ema, args, &s->train,
                                      s->global_B, resume_step, ranks);
    s->batches_per_epoch = s->train.count / s->global_B;
    if (s->start.next_batch >= s->batches_per_epoch) {
        fatal("%s: the checkpoint's next batch %d is past the %d batches of an epoch of -b %d x "
              "%d ranks",
              args->output_dir, s->start.next_batch, s->batches_per_epoch, s->B, ranks->world);
    }
    s->total_steps =
        args->max_steps > 0 ? args->max_steps : args->epochs * s->batches_per_epoch;
    // rank 0 alone writes to -o (on a host-local folder the other hosts' stay untouched)
    const int lead = ranks->rank == 0;
    if (args->output_dir != NULL && lead) {
        make_directories(args->output_dir);
        run_dir_ranks_announce(ranks, args->output_dir);
        run_dir_remove_stale_tmp(args->output_dir);
        vit_train_check_run_settings(args, s->train.count, s->global_B, s->resumed_from >= 0);
    }
    logger_init(&s->logger, lead ? args->output_dir : NULL, s->resumed_from);
}

VisionLoopConfig vit_train_loop_config(const VitTrainSetup *s, const VitTrainArgs *args,
                                       const TrainRanks *ranks, int argc, char **argv) {
    const VisionLoopConfig loop = {
        .total_steps = s->total_steps, .batches_per_epoch = s->batches_per_epoch,
        .global_batch = s->global_B, .learning_rate = args->learning_rate,
        .final_lr_fraction = args->final_lr_fraction, .weight_decay = args->weight_decay,
        .grad_clip = args->grad_clip, .warmup_steps = args->warmup_steps,
        .print_every = args->print_every, .checkpoint_every = args->checkpoint_every,
        .output_dir = args->output_dir, .lead = ranks->rank == 0,
        .report_ranks = ranks->report_ranks, .argc = argc, .argv = argv};
    return loop;
}

void vit_train_setup_free(VitTrainSetup *s) {
    logger_free(&s->logger);
    free(s->order);
    ema_free(&s->ema);
    vision_split_free(&s->train);
    vision_split_free(&s->test);
}
