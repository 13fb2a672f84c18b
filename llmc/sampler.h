// Text generation from a GPT2: temperature and top-k sampling, reproducible
// from the Rng state.
#ifndef FOLDNORM_SAMPLER_H
#define FOLDNORM_SAMPLER_H

#include "gpt2.h"
#include "rand.h"

// Draws a token from softmax(logits[:V] / temperature) restricted to the
// top_k largest logits (top_k <= 0 or >= V: all); temperature <= 0: argmax.
int sample_token(const float *logits, int V, float temperature, int top_k, Rng *rng);
// tokens[0..prompt_len) is the prompt; fills tokens[prompt_len..total_len)
// one token at a time (total_len <= maxT), each from the logits of the last.
void generate_tokens(GPT2 *model, int *tokens, int prompt_len, int total_len, float temperature,
                     int top_k, Rng *rng);

#endif
