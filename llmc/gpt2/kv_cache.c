#include "kv_cache.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/encoder.h"
#include "kernels/gelu.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
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
    size_t total = 0;
    for (int i = 0; i < KV_CACHE_NUM_TENSORS; i++) {
        total += sizes[i];
    }
    cache->memory = malloc_check(mul_size_check(total, sizeof(float), "KV cache"), "KV cache");
    float **fields[KV_CACHE_NUM_TENSORS] = {&cache->qkv,  &cache->lse,  &cache->x,
                                            &cache->ln,   &cache->mean, &cache->rstd,
                                            &cache->atty, &cache->fch,  &cache->fch_gelu,
                                            &cache->logits};
    float *p = cache->memory;
    for (int i = 0; i < KV_CACHE_NUM_TENSORS; i++) {
        *fields[i] = p;
        p += sizes[i];
    }
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
    for (int l = 0; l < L; l++) {
        const size_t lc = (size_t)l * C;
        float *qkv = cache->qkv + (size_t)l * T * 3 * C; // this layer's rows 0 .. maxT-1
        norm_forward(norm, ln, cache->mean, cache->rstd, x, p.ln1w + lc, p.ln1b + lc, n, C);
        matmul_forward(qkv + (size_t)t0 * 3 * C, ln, p.qkvw + 3 * lc * C, p.qkvb + 3 * lc, n, C,
                       3 * C);
        if (t0 == 0) { // a whole sequence: the blocked kernel of the full forward
            attention_forward(cache->atty, cache->lse, qkv, 1, n, C, NH);
        } else {
            attention_forward_rows(cache->atty, qkv, t0, n, C, NH);
        }
        matmul_forward_residual(x, x, cache->atty, sw.attprojw + lc * C, sw.attprojb + lc, n, C,
                                C);
        norm_forward(norm, ln, cache->mean, cache->rstd, x, p.ln2w + lc, p.ln2b + lc, n, C);
        matmul_forward(cache->fch, ln, p.fcw + 4 * lc * C, p.fcb + 4 * lc, n, C, 4 * C);
        gelu_forward(cache->fch_gelu, cache->fch, (size_t)n * 4 * C);
        matmul_forward_residual(x, x, cache->fch_gelu, sw.fcprojw + 4 * lc * C, sw.fcprojb + lc,
                                n, 4 * C, C);
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
