// What gpt2.c (the model) and gpt2_file.c (its file format) share and no
// other file needs.
#ifndef FOLDNORM_GPT2_PRIVATE_H
#define FOLDNORM_GPT2_PRIVATE_H

#include "gpt2.h"

// A model with nothing allocated: zero, no loss yet, every cached copy stale.
void gpt2_reset_state(GPT2 *model);
// Parameters and gradients for model->config; -1 when memory runs out.
int gpt2_allocate_params(GPT2 *model);

#endif
