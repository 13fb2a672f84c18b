// Folds a GPT-2 trained in ln mode (docs/math.md sections 3-5): every norm
// becomes RMSNorm, and the layers the norm policy centres in a folded model
// (the tensor table's stream writers, gpt2.h) are centred; wte rows are centred with their means
// m_t kept for the tied head, wpe rows centred, attn/mlp c_proj hold V and
// P b. The model becomes MODE_FOLDED with the same logits up to fp32 rounding.
#ifndef FOLDNORM_GPT2_FOLD_H
#define FOLDNORM_GPT2_FOLD_H

#include "gpt2/gpt2.h"

// Dies with a message naming source if the norm policy does not fold the
// model's mode.
void gpt2_fold(GPT2 *model, const char *source);

#endif
