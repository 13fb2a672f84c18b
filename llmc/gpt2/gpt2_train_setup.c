// The model a GPT-2 trainer starts from (gpt2_train_setup.h).
#include "gpt2_train_setup.h"

#include "core/utils.h"

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
