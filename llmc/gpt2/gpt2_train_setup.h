// The model a GPT-2 trainer starts from, for train_gpt2 (CPU) and
// train_gpt2cu (GPU) alike: a descriptor's random init or a model file, in
// the mode -N names; and the check that a resumed checkpoint's mode is -N's.
#ifndef FOLDNORM_GPT2_TRAIN_SETUP_H
#define FOLDNORM_GPT2_TRAIN_SETUP_H

#include "gpt2/gpt2.h"
#include "gpt2/gpt2_train_args.h"

// A descriptor (-e d12, ...) gets a random init from -sd in -N's mode (ln by
// default); a file is loaded and takes -N's mode where one is given. A folded
// model is refused: it has no norm parameters left to train.
void gpt2_train_setup_model(GPT2 *model, const Gpt2TrainArgs *args);

// After a resume: -N, where given, must be the mode the checkpoint trained in.
void gpt2_train_check_resumed_mode(const GPT2 *model, const Gpt2TrainArgs *args);

#endif
