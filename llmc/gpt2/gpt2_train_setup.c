// The set-up of a GPT-2 training run and the model it starts from
// (gpt2_train_setup.h).
#include "gpt2_train_setup.h"

#include <string.h>

#include "core/checkpoint_files.h"
#include "core/run_dir.h"
#include "core/run_dir_ranks.h"
#include "core/utils.h"

void gpt2_train_setup(Gpt2TrainSetup *s, GPT2 *model, const Gpt2TrainArgs *args,
                      const TrainRanks *ranks) {
    memset(s, 0, sizeof(*s));
    rng_seed(&s->rng, args->seed);
    s->resumed_from = -1;
    if (args->output_dir != NULL) {
        // every rank reads the checkpoint it resumes from: all must see the same
        const int newest = checkpoint_find_latest(args->output_dir);
        run_dir_ranks_check(ranks, args->output_dir, newest, "newest");
        run_dir_check_start(args->output_dir, args->resume, newest);
        if (args->resume) {
            s->resumed_from = checkpoint_resume(model, &s->progress, args->output_dir);
            run_dir_ranks_check(ranks, args->output_dir, s->resumed_from, "resumed");
        }
    }
    if (s->resumed_from >= 0) {
        gpt2_train_check_resumed_mode(model, args);
        s->rng.state = s->progress.rng_state;
    } else {
        gpt2_train_setup_model(model, args); // the same seed on every rank: the same weights
    }
    const GPT2Config *cfg = &model->config;
    const int B = args->batch_size, T = args->seq_len;
    s->B = B;
    s->T = T;
    if (T > cfg->max_seq_len) {
        fatal("-t %d: sequence length exceeds the model's maxT %d", T, cfg->max_seq_len);
    }
    const int tokens_per_micro = B * T * ranks->world; // over all ranks
    s->total_tokens = args->total_batch_tokens < 0 ? tokens_per_micro : args->total_batch_tokens;
    if (s->total_tokens <= 0 || s->total_tokens % tokens_per_micro != 0) {
        fatal("-d %d: total batch size must be a positive multiple of B*T*ranks = %d",
              s->total_tokens, tokens_per_micro);
    }
    s->grad_accum = s->total_tokens / tokens_per_micro;
    dataloader_init(&s->train, args->train_pattern, B, T, cfg->vocab_size, ranks->rank,
                    ranks->world, args->shuffle, args->seed);
    if (args->sft && !s->train.is_sft) {
        fatal("-sft 1: %s holds plain token shards, not SFT shards (bin/alpaca_to_sft)",
              args->train_pattern);
    }
    s->have_val = args->val_every > 0;
    if (s->have_val) {
        dataloader_init(&s->val, args->val_pattern, B, T, cfg->vocab_size, ranks->rank,
                        ranks->world, 0, 0);
    }
    s->max_steps = args->max_steps;
    if (s->max_steps < 0) {
        // rank r of W gets batches r, r+W, ... of each shard, so the ranks' counts can
        // differ by one per shard: every rank takes the smallest, or a collective hangs
        const int batches =
            train_ranks_min(ranks, (int)dataloader_batches_per_epoch(&s->train));
        s->max_steps = batches / s->grad_accum;
        s->max_steps = s->max_steps > 0 ? s->max_steps : 1;
    }
    // rank 0 alone writes to -o (on a host-local folder the other hosts' stay untouched)
    const int lead = ranks->rank == 0;
    if (args->output_dir != NULL && lead) {
        make_directories(args->output_dir);
        run_dir_ranks_announce(ranks, args->output_dir);
        run_dir_remove_stale_tmp(args->output_dir);
        RunSetting settings[GPT2_RUN_SETTINGS];
        gpt2_run_settings(args, s->total_tokens, settings);
        run_dir_check_settings(args->output_dir, settings, GPT2_RUN_SETTINGS,
                               s->resumed_from >= 0);
    }
    if (s->resumed_from >= 0) {
        // the cursor of this run's ranks x B (a checkpoint may come from another split
        // of the same global batch: -d, checked in run.txt)
        dataloader_seek(&s->train, s->progress.epoch, s->progress.shard_index,
                        (size_t)train_progress_cursor(&s->progress, B * ranks->world));
    }
    logger_init(&s->logger, lead ? args->output_dir : NULL, s->resumed_from);
    s->have_mc = mc_eval_load_for_trainer(&s->mc, args->mc_eval_path, model->config.vocab_size, s->T);
}

Gpt2LoopConfig gpt2_train_loop_config(Gpt2TrainSetup *s, const Gpt2TrainArgs *args,
                                      const TrainRanks *ranks, int argc, char **argv) {
    const Gpt2LoopConfig loop = {
        .max_steps = s->max_steps, .first_step = s->progress.step,
        .resumed_from = s->resumed_from, .schedule = gpt2_train_schedule(args, s->max_steps),
        .weight_decay = args->weight_decay, .grad_clip = args->grad_clip,
        .skip_loss_z = args->skip_loss_z, .skip_grad_z = args->skip_grad_z,
        .outliers = &s->progress.outliers, .val_every = args->val_every,
        .sample_every = args->sample_every, .checkpoint_every = args->checkpoint_every,
        .output_dir = args->output_dir, .lead = ranks->rank == 0,
        .report_ranks = ranks->report_ranks, .argc = argc, .argv = argv};
    return loop;
}

void gpt2_train_setup_free(Gpt2TrainSetup *s) {
    logger_free(&s->logger);
    dataloader_free(&s->train);
    if (s->have_val) {
        dataloader_free(&s->val);
    }
    if (s->have_mc) mc_eval_free(&s->mc);
}

void gpt2_train_setup_model(GPT2 *model, const Gpt2TrainArgs *args) {
    const NormMode mode = norm_mode_from_flag(args->norm_mode);
    GPT2Config cfg;
    if (gpt2_parse_descriptor(args->model, &cfg) == 0) {
        gpt2_init_random(model, &cfg, mode, args->seed);
    } else {
        gpt2_load(model, args->model);
        if (args->norm_mode >= 0) {
            model->mode = mode;
        }
    }
    if (!norm_policy(model->mode)->trainable) {
        fatal("-e %s: a folded model cannot be trained (it is for inference only: train the ln "
              "model, then fold it)", args->model);
    }
}

void gpt2_train_check_resumed_mode(const GPT2 *model, const Gpt2TrainArgs *args) {
    if (args->norm_mode >= 0 && norm_mode_from_flag(args->norm_mode) != model->mode) {
        fatal("-N %s: the checkpoint in %s was trained in mode %s",
              norm_mode_name(norm_mode_from_flag(args->norm_mode)), args->output_dir,
              norm_mode_name(model->mode));
    }
}
