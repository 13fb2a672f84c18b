// Text generation from a GPT2: temperature and top-k sampling, reproducible
// from the Rng state, with or without a KV cache.
#ifndef FOLDNORM_SAMPLER_H
#define FOLDNORM_SAMPLER_H

#include "gpt2.h"
#include "kv_cache.h"
#include "core/rand.h"

// Draws a token from softmax(logits[:V] / temperature) restricted to the
// top_k largest logits (top_k <= 0 or >= V: all); temperature <= 0: argmax.
int sample_token(const float *logits, int V, float temperature, int top_k, Rng *rng);
// tokens[0..prompt_len) is the prompt; fills tokens[prompt_len..total_len)
// one token at a time (total_len <= maxT), each from the logits of the last,
// by full recompute.
void generate_tokens(GPT2 *model, int *tokens, int prompt_len, int total_len, float temperature,
                     int top_k, Rng *rng);

typedef struct {
    float temperature; // <= 0: greedy
    int top_k;         // <= 0: all
    int stop_token;    // generation ends once this token is drawn (kept); -1: never
    KVCache *cache;    // NULL: full recompute of the context for every token
    float *logits;     // NULL, or (total_len - prompt_len, V): the logits each token was drawn from
} GenerateOptions;

// Tokens of the context kept when the context window is full: a sequence
// longer than maxT slides its window, see generate.
int generate_window_keep(int max_seq_len);
// generate_tokens for any length: tokens[0..prompt_len) (prompt_len >= 1) is
// the prompt, tokens[prompt_len..total_len) are drawn one at a time, each
// from the logits of the last position of its context tokens[start..t).
// The context starts at 0; when it would exceed maxT tokens it slides to its
// last generate_window_keep(maxT) tokens, at positions 0.. again (recomputed
// once, then extended token by token), so the cache and the full recompute
// see the same contexts. Returns the length reached: total_len, or less when
// stop_token was drawn (it is the last token).
int generate_text(GPT2 *model, int *tokens, int prompt_len, int total_len,
                  const GenerateOptions *options, Rng *rng);

#endif
