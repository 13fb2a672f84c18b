// Incremental GPT-2 forward for generation (a KV cache): the q, k, v rows of
// every position already run are kept per layer, so extending a sequence by
// one token runs the layers on that token alone and attends over the kept
// keys and values, instead of recomputing the whole prefix. Same kernels and
// weights as gpt2_forward in every norm mode (ln, rms, cbwc with its
// effective V, folded), so the same logits up to fp32 summation order.
#ifndef FOLDNORM_KV_CACHE_H
#define FOLDNORM_KV_CACHE_H

#include "gpt2.h"

typedef struct {
    int max_len;     // the model's maxT: positions the cache can hold
    int len;         // positions held: the rows of tokens[0, len)
    int *tokens;     // (maxT) the tokens held
    float *qkv;      // (L, maxT, 3C) every held position's q, k, v, per layer
    float *lse;      // (NH, maxT) attention_forward's row statistics (not kept)
    float *x;        // (maxT, C) residual stream of the rows being run
    float *ln;       // (maxT, C) norm output
    float *mean, *rstd; // (maxT) norm statistics
    float *atty;     // (maxT, C) attention output
    float *fch, *fch_gelu; // (maxT, 4C)
    float *logits;   // (Vp) of the last position run
    float *memory;
} KVCache;

// Buffers for model's shape (about 2 L maxT 3C + 12 maxT C floats); empty.
void kv_cache_init(KVCache *cache, const GPT2 *model);
void kv_cache_free(KVCache *cache);
// Forgets what the cache holds (needed after the model's weights change).
void kv_cache_clear(KVCache *cache);
// Makes the cache hold tokens[0, n) (1 <= n <= maxT, positions 0 .. n-1) and
// returns the logits (Vp floats, valid until the next call) of position n-1.
// Rows that match what the cache already holds are kept; the rest (at least
// the last) are run, so appending one token runs one row, and a new sequence
// that shares no prefix is run from position 0 (as one block).
const float *kv_cache_forward(KVCache *cache, GPT2 *model, const int *tokens, int n);

#endif
