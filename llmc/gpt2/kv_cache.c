#include "kv_cache.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/encoder.h"
#include "kernels/norm.h"
#include "kernels/transformer_block.h"
#include "core/tensor_table.h"
#include "core/utils.h"

#define KV_CACHE_NUM_TENSORS 10

void kv_cache_init(KVCache *cache, const GPT2 *model) {
    const GPT2Config *c = &model->config;
    const size_t L = (size_t)c->num_layers, C = (size_t)c->channels, NH = (size_t)c->num_heads;
    const size_t T = (size_t)c->max_seq_len, Vp = (size_t)c->padded_vocab_size;
    memset(cache, 0, sizeof(*cache));
    size_t sizes[KV_CACHE_NUM_TENSORS] = {
        L * T * 3 * C, // qkv
        NH * T,        // lse
        T * C,         // x
        T * C,         // ln
        T, T,          // mean, rstd
        T * C,         // atty
        T * 4 * C,     // fch
        T * 4 * C,     // fch_gelu
        Vp,            // logits
    };
    cache->memory = alloc_tensors(&cache->qkv, sizes, KV_CACHE_NUM_TENSORS, 0, "KV cache");
    cache->tokens = malloc_check(T * sizeof(int), "KV cache tokens");
    cache->max_len = (int)T;
    cache->len = 0;
}

void kv_cache_clear(KVCache *cache) {
    cache->len = 0;
}

void kv_cache_free(KVCache *cache) {
    free(cache->memory);
    free(cache->tokens);
    memset(cache, 0, sizeof(*cache));
}

// Runs the n new tokens at positions t0 .. t0+n-1 through every layer (the
// rows before t0 are in the cache) and leaves the last one's logits.
static void forward_rows(KVCache *cache, GPT2 *model, const int *tokens, int t0, int n) {
    const GPT2Config *cfg = &model->config;
    const int L = cfg->num_layers, C = cfg->channels, NH = cfg->num_heads;
    const size_t T = (size_t)cfg->max_seq_len;
    // as gpt2_forward: LayerNorm in ln, RMSNorm otherwise; cbwc centres the
    // embedding rows at run time, a folded file holds them centred
    const NormKind norm = norm_mode_kernel(model->mode, true);
    const int centred = norm_policy(model->mode)->cbwc;
    const ParameterTensors p = model->params;
    const GPT2StreamWeights sw = gpt2_stream_weights(model);
    float *x = cache->x, *ln = cache->ln;

    for (int r = 0; r < n; r++) {
        encoder_forward(x + (size_t)r * C, tokens + t0 + r, p.wte, p.wpe + (size_t)(t0 + r) * C,
                        1, 1, C, centred);
    }
    // the shared block (transformer_block.h) on the n rows in place in x,
    // causal attention over this layer's cached rows, fp32 and no dropout
    const BlockConfig c = {n, C, NH, 4 * C, norm, 0, NULL,
                           .attention = {.causal = 1, .groups = 1, .T = n, .t0 = t0}};
    const BlockActs a = {ln, cache->mean, cache->rstd, NULL, cache->atty, cache->lse, x,
                         ln, cache->mean, cache->rstd, cache->fch, cache->fch_gelu, x};
    for (int l = 0; l < L; l++) {
        const size_t lc = (size_t)l * C;
        const BlockWeights w = {p.ln1w + lc, p.ln1b + lc, p.qkvb + 3 * lc, sw.attprojb + lc,
                                p.ln2w + lc, p.ln2b + lc, p.fcb + 4 * lc, sw.fcprojb + lc,
                                {p.qkvw + 3 * lc * C, NULL}, {sw.attprojw + lc * C, NULL},
                                {p.fcw + 4 * lc * C, NULL}, {sw.fcprojw + 4 * lc * C, NULL}};
        BlockActs layer = a;
        layer.qkv = cache->qkv + (size_t)l * T * 3 * C; // this layer's rows 0 .. maxT-1
        block_forward(&c, &w, &layer, x, &(BlockScratch){0});
    }
    // the final norm and the head on the last row only
    const float *last = x + (size_t)(n - 1) * C;
    norm_forward(norm, ln, cache->mean, cache->rstd, last, p.lnfw, p.lnfb, 1, C);
    gpt2_head_forward(model, cache->logits, ln, 1);
}

const float *kv_cache_forward(KVCache *cache, GPT2 *model, const int *tokens, int n) {
    if (n < 1 || n > cache->max_len) {
        fatal("kv_cache_forward: %d tokens; the cache holds 1 .. %d (the model's maxT)", n,
              cache->max_len);
    }
    // keep the longest held prefix, but run at least the last token for its logits
    int keep = 0;
    while (keep < cache->len && keep < n - 1 && cache->tokens[keep] == tokens[keep]) {
        keep++;
    }
    memcpy(cache->tokens + keep, tokens + keep, (size_t)(n - keep) * sizeof(int));
    forward_rows(cache, model, tokens, keep, n - keep);
    cache->len = n;
    return cache->logits;
}
